package session

import (
	"bytes"
	"crypto/mlkem"
	"crypto/mlkem/mlkemtest"
	"crypto/sha256"
	"crypto/sha3"
	"encoding/hex"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/testing/pqkat"
)

// TestMLKEMAccumulated reproduces Go's own accumulated ML-KEM-768 check
// (crypto/mlkem's TestAccumulated) through the public API: keys from a
// SHAKE128 stream of seeds, deterministic encapsulation (mlkemtest),
// decapsulation of the real and of a random ciphertext (implicit
// rejection), everything hashed into one SHAKE128 digest.
func TestMLKEMAccumulated(t *testing.T) {
	n, want := 10000, "8a518cc63da366322a8e7a818c7a0d63483cb3528d34a4cf42f35d5ad73f22fc"
	if testing.Short() {
		n, want = 100, "1114b1b6699ed191734fa339376afa7e285c9e6acf6ff0177d346696ce564415"
	}
	s, o := sha3.NewSHAKE128(), sha3.NewSHAKE128()
	seed, msg, ct1 := make([]byte, mlkem.SeedSize), make([]byte, 32), make([]byte, mlkem.CiphertextSize768)
	for range n {
		s.Read(seed)
		dk, err := mlkem.NewDecapsulationKey768(seed)
		if err != nil {
			t.Fatal(err)
		}
		ek := dk.EncapsulationKey()
		o.Write(ek.Bytes())
		s.Read(msg)
		k, ct, err := mlkemtest.Encapsulate768(ek, msg)
		if err != nil {
			t.Fatal(err)
		}
		o.Write(ct)
		o.Write(k)
		kk, err := dk.Decapsulate(ct)
		if err != nil || !bytes.Equal(kk, k) {
			t.Fatalf("decapsulate: %x, %v; want %x", kk, err, k)
		}
		s.Read(ct1)
		k1, err := dk.Decapsulate(ct1)
		if err != nil {
			t.Fatal(err)
		}
		o.Write(k1)
	}
	sum := make([]byte, 32)
	o.Read(sum)
	if got := hex.EncodeToString(sum); got != want {
		t.Fatalf("accumulated %d vectors: %s, want %s", n, got, want)
	}
}

// pqVector is one deterministic upgrade, inputs and outputs, as
// testing/pqkat/vectors.json holds it for the independent check.
type pqVector struct {
	Seed       string   `json:"dk_seed"`         // ML-KEM-768 d ‖ z
	EncapsMsg  string   `json:"encaps_random"`   // encapsulation randomness m
	ID         string   `json:"exchange_id"`     // offer id
	Exporter   string   `json:"exporter"`        // the classical epoch's exporter
	Offerer    string   `json:"offerer_static"`  // x-only
	Answerer   string   `json:"answerer_static"` // x-only
	Suite      string   `json:"suite"`
	EKSHA256   string   `json:"ek_sha256"`
	CTSHA256   string   `json:"ct_sha256"`
	Shared     string   `json:"shared_secret"`
	Transcript string   `json:"transcript_hash"`
	KO2A       string   `json:"key_offerer_to_answerer"`
	KA2O       string   `json:"key_answerer_to_offerer"`
	KConfirm   string   `json:"key_confirm"`
	NextExp    string   `json:"next_exporter"`
	AcceptTag  string   `json:"accept_tag"`
	ConfirmTag string   `json:"confirm_tag"`
	Offer      []string `json:"offer_fragments"`   // each PQFragmentSize bytes, hex
	Accept     []string `json:"accept_fragments"`  // each PQFragmentSize bytes, hex
	Confirm    []string `json:"confirm_fragments"` // each PQFragmentSize bytes, hex
}

func fragmentsHex(t *testing.T, kind wire.PQKind, id [8]byte, payload []byte) []string {
	t.Helper()
	frags, err := wire.PQFragments(kind, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range frags {
		b := make([]byte, wire.PQFragmentSize)
		if _, err := f.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		out = append(out, hex.EncodeToString(b))
	}
	return out
}

func computePQVector(t *testing.T) pqVector {
	t.Helper()
	seed, msg := pqkat.Seq(64, 0x00), pqkat.Seq(32, 0x40)
	var id [8]byte
	copy(id[:], pqkat.Seq(8, 0x01))
	var exporter [32]byte
	copy(exporter[:], pqkat.Seq(32, 0xa0))
	var off, ans identity.PublicKey
	copy(off[:], bytes.Repeat([]byte{0x11}, 32))
	copy(ans[:], bytes.Repeat([]byte{0x22}, 32))

	dk, err := mlkem.NewDecapsulationKey768(seed)
	if err != nil {
		t.Fatal(err)
	}
	ek := dk.EncapsulationKey().Bytes()
	shared, ct, err := mlkemtest.Encapsulate768(dk.EncapsulationKey(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := dk.Decapsulate(ct); err != nil || !bytes.Equal(back, shared) {
		t.Fatal("decapsulation disagrees")
	}
	th := PQTranscript(id, ek, ct)
	k, err := DerivePQKeys(exporter, shared, off, ans, th)
	if err != nil {
		t.Fatal(err)
	}
	at, ctag := PQConfirmTag(k, "accept", th), PQConfirmTag(k, "confirm", th)
	h := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	x := hex.EncodeToString
	return pqVector{
		Seed: x(seed), EncapsMsg: x(msg), ID: x(id[:]), Exporter: x(exporter[:]), Offerer: x(off[:]), Answerer: x(ans[:]),
		Suite: PQSuite, EKSHA256: h(ek), CTSHA256: h(ct), Shared: x(shared), Transcript: x(th[:]),
		KO2A: x(k.OffererToAnswerer[:]), KA2O: x(k.AnswererToOfferer[:]), KConfirm: x(k.Confirm[:]), NextExp: x(k.Exporter[:]),
		AcceptTag: x(at[:]), ConfirmTag: x(ctag[:]),
		Offer:   fragmentsHex(t, wire.PQKindOffer, id, ek),
		Accept:  fragmentsHex(t, wire.PQKindAccept, id, append(bytes.Clone(ct), at[:]...)),
		Confirm: fragmentsHex(t, wire.PQKindConfirm, id, ctag[:]),
	}
}

const pqVectorsPath = "../../testing/pqkat/vectors.json"

// TestPQKAT pins the upgrade's derived keys and exact message bytes for
// deterministic inputs, and keeps testing/pqkat/vectors.json in step
// (FIPS_UPDATE_DOCS=1 rewrites it).
func TestPQKAT(t *testing.T) {
	v := computePQVector(t)
	pinned := map[string]string{
		"shared":      v.Shared,
		"transcript":  v.Transcript,
		"k_o2a":       v.KO2A,
		"k_a2o":       v.KA2O,
		"k_confirm":   v.KConfirm,
		"exporter":    v.NextExp,
		"accept_tag":  v.AcceptTag,
		"confirm_tag": v.ConfirmTag,
		"ek_sha256":   v.EKSHA256,
		"ct_sha256":   v.CTSHA256,
	}
	for k, got := range pinned {
		if want := pqKATPins[k]; got != want {
			t.Errorf("%s: %s, want %s", k, got, want)
		}
	}
	all := append(append(append([]string{}, v.Offer...), v.Accept...), v.Confirm...)
	h := sha256.New()
	for _, f := range all {
		b, _ := hex.DecodeString(f)
		if len(b) != wire.PQFragmentSize {
			t.Fatalf("fragment of %d bytes", len(b))
		}
		h.Write(b)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != pqKATPins["fragments_sha256"] {
		t.Errorf("fragments sha256: %s, want %s", got, pqKATPins["fragments_sha256"])
	}
	// The first offer fragment's header, byte for byte.
	if got := v.Offer[0][:32]; got != "010100020102030405060708a0045802" {
		t.Errorf("offer header %s", got)
	}
	pqkat.Golden(t, pqVectorsPath, v, "go test ./control/session -run TestPQKAT")
}

// TestPQKATIndependent recomputes testing/pqkat/vectors.json outside Go:
// testing/pqkat/check.mjs with @noble/post-quantum and @noble/hashes (npm
// ci by testing/deps.sh unit). It fails, rather than skips, without them.
func TestPQKATIndependent(t *testing.T) {
	pqkat.Check(t, pqVectorsPath)
}

// pqKATPins are computePQVector's outputs, pinned (self-derived, and
// recomputed independently by testing/pqkat/check.mjs).
var pqKATPins = map[string]string{
	"ek_sha256":        "0b7934c83125c788995e2ba6bd761e33046b3e40571be53e023309a29f398cc9",
	"ct_sha256":        "dbf4e9aa48b078ad46ec1c9c47bda8c2d2fec9d0e7a21bd48d2238a2abedb856",
	"shared":           "9cddd089ffe70e3996e76f7c8d06746df34d07e8657bc0fcf2bb0e1c3084aea1",
	"transcript":       "b65202ee91365e1f4dbbb6eb62f5833b1d233bdff45589321de9132d6fa72c39",
	"k_o2a":            "6a0b354589f773c155371d15208b345b687e56e7e5405f8568be1d03937a16cf",
	"k_a2o":            "188a9df04564290568317c83c13f2807835d69514388d112b1da5e29201d6d00",
	"k_confirm":        "a3e477b3200dcc4dee7ce0b90d989a19e5a8d61bc7fd76dae378221b55466a03",
	"exporter":         "8db7110ab63e4bbfed4e6fbff9554f78b963ea255c838be609bd4c012679f28f",
	"accept_tag":       "7c0b36e3c2b34bf5c95597a04508e71f867753d7e838dcf146c02597d5ee458f",
	"confirm_tag":      "9f7f3e47e044b170182c915a284b539f894bb20de259a475cb5dac7128c91d28",
	"fragments_sha256": "d07498385504799fba57ac8e63d8bff6e8bc06e7386e840243d14c10d838fb0c",
}

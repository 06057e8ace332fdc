package peer

import (
	"bytes"
	"crypto/mlkem"
	"crypto/mlkem/mlkemtest"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/testing/pqkat"
)

// linkPQVector is one deterministic link upgrade, inputs and outputs, as
// testing/pqkat/link_vectors.json holds it for the independent check.
type linkPQVector struct {
	Layer       string   `json:"layer"` // "link"
	Label       string   `json:"label"`
	Seed        string   `json:"dk_seed"`       // ML-KEM-768 d ‖ z
	EncapsMsg   string   `json:"encaps_random"` // encapsulation randomness m
	ID          string   `json:"exchange_id"`
	OfferIndex  uint32   `json:"offer_index"`  // the offerer's new receiver index
	AcceptIndex uint32   `json:"accept_index"` // the answerer's
	Exporter    string   `json:"exporter"`     // the classical session's exporter
	Offerer     string   `json:"offerer_static"`
	Answerer    string   `json:"answerer_static"`
	Suite       string   `json:"suite"`
	EKSHA256    string   `json:"ek_sha256"`
	CTSHA256    string   `json:"ct_sha256"`
	Shared      string   `json:"shared_secret"`
	Transcript  string   `json:"transcript_hash"`
	KO2A        string   `json:"key_offerer_to_answerer"`
	KA2O        string   `json:"key_answerer_to_offerer"`
	KConfirm    string   `json:"key_confirm"`
	NextExp     string   `json:"next_exporter"`
	AcceptTag   string   `json:"accept_tag"`
	Offer       []string `json:"offer_messages"`  // MsgLinkPQ messages (type byte first), hex
	Accept      []string `json:"accept_messages"` // MsgLinkPQ messages, hex
}

func linkPQMessagesHex(t *testing.T, kind wire.PQKind, id [8]byte, payload []byte) []string {
	t.Helper()
	frags, err := wire.LinkPQFragments(kind, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range frags {
		b := make([]byte, wire.LinkPQMsgSize)
		if _, err := wire.MarshalLinkPQ(b, f); err != nil {
			t.Fatal(err)
		}
		out = append(out, hex.EncodeToString(b))
	}
	return out
}

// computeLinkPQVector runs the link key schedule and message encoding the
// Manager uses (linkSchedule, linkPQPayload, LinkPQFragments) on the
// session vector's deterministic inputs plus two receiver indices.
func computeLinkPQVector(t *testing.T) linkPQVector {
	t.Helper()
	seed, msg := pqkat.Seq(64, 0x00), pqkat.Seq(32, 0x40)
	var id [8]byte
	copy(id[:], pqkat.Seq(8, 0x01))
	var exporter [32]byte
	copy(exporter[:], pqkat.Seq(32, 0xa0))
	var off, ans identity.PublicKey
	copy(off[:], bytes.Repeat([]byte{0x11}, 32))
	copy(ans[:], bytes.Repeat([]byte{0x22}, 32))
	const offIdx, ansIdx = 0x44332211, 0x88776655

	dk, err := mlkem.NewDecapsulationKey768(seed)
	if err != nil {
		t.Fatal(err)
	}
	ek := dk.EncapsulationKey().Bytes()
	shared, ct, err := mlkemtest.Encapsulate768(dk.EncapsulationKey(), msg)
	if err != nil {
		t.Fatal(err)
	}
	offer := linkPQPayload(offIdx, ek, wire.LinkPQOfferSize)
	body := linkPQPayload(ansIdx, ct, wire.LinkPQAcceptSize)
	th := linkSchedule.Transcript(id, offer, body)
	k, err := linkSchedule.Derive(exporter, shared, off, ans, th)
	if err != nil {
		t.Fatal(err)
	}
	at := linkSchedule.ConfirmTag(k, "accept", th)
	h := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	x := hex.EncodeToString
	return linkPQVector{
		Layer: "link", Label: linkSchedule.Label,
		Seed: x(seed), EncapsMsg: x(msg), ID: x(id[:]), OfferIndex: offIdx, AcceptIndex: ansIdx,
		Exporter: x(exporter[:]), Offerer: x(off[:]), Answerer: x(ans[:]),
		Suite: LinkPQSuite, EKSHA256: h(ek), CTSHA256: h(ct), Shared: x(shared), Transcript: x(th[:]),
		KO2A: x(k.OffererToAnswerer[:]), KA2O: x(k.AnswererToOfferer[:]), KConfirm: x(k.Confirm[:]), NextExp: x(k.Exporter[:]),
		AcceptTag: x(at[:]),
		Offer:     linkPQMessagesHex(t, wire.PQKindOffer, id, offer),
		Accept:    linkPQMessagesHex(t, wire.PQKindAccept, id, append(body, at[:]...)),
	}
}

const linkPQVectorsPath = "../../testing/pqkat/link_vectors.json"

// TestLinkPQKAT pins the link upgrade's derived keys and exact message
// bytes for deterministic inputs, and keeps testing/pqkat/link_vectors.json
// in step (FIPS_UPDATE_DOCS=1 rewrites it).
func TestLinkPQKAT(t *testing.T) {
	v := computeLinkPQVector(t)
	got := map[string]string{
		"transcript": v.Transcript, "k_o2a": v.KO2A, "k_a2o": v.KA2O, "k_confirm": v.KConfirm,
		"exporter": v.NextExp, "accept_tag": v.AcceptTag, "shared": v.Shared,
	}
	for k, g := range got {
		if want := linkPQKATPins[k]; g != want {
			t.Errorf("%s: %s, want %s", k, g, want)
		}
	}
	hm := sha256.New()
	for _, m := range append(append([]string{}, v.Offer...), v.Accept...) {
		b, _ := hex.DecodeString(m)
		if len(b) != wire.LinkPQMsgSize {
			t.Fatalf("message of %d bytes", len(b))
		}
		hm.Write(b)
	}
	if g := hex.EncodeToString(hm.Sum(nil)); g != linkPQKATPins["messages_sha256"] {
		t.Errorf("messages sha256: %s, want %s", g, linkPQKATPins["messages_sha256"])
	}
	// The first offer message's head, byte for byte: type, version,
	// kind, index, count, id, total 1,188, chunk 600, the offerer's index.
	if g := v.Offer[0][:42]; g != "e0010100020102030405060708a404580211223344" {
		t.Errorf("offer head %s", g)
	}
	// The accept's last message: total 1,124, chunk 524.
	if g := v.Accept[1][:34]; g != "e001020102010203040506070864040c02" {
		t.Errorf("accept head %s", g)
	}
	pqkat.Golden(t, linkPQVectorsPath, v, "go test ./control/peer -run TestLinkPQKAT")
}

// TestLinkPQKATIndependent recomputes testing/pqkat/link_vectors.json
// outside Go (testing/pqkat/check.mjs, @noble/post-quantum and
// @noble/hashes; npm ci by testing/deps.sh unit). It fails, rather than
// skips, without them.
func TestLinkPQKATIndependent(t *testing.T) {
	pqkat.Check(t, linkPQVectorsPath)
}

// linkPQKATPins are computeLinkPQVector's outputs, pinned (self-derived,
// and recomputed independently by testing/pqkat/check.mjs).
var linkPQKATPins = map[string]string{
	"shared":          "9cddd089ffe70e3996e76f7c8d06746df34d07e8657bc0fcf2bb0e1c3084aea1",
	"transcript":      "878b13a07a56904f8443f84176c03f679c3fecd5dcd27ece591f395656e4068d",
	"k_o2a":           "e3cf2957c401e685259d5a228dfa66b70bd8f91c94e83fee032c62da85b72f1a",
	"k_a2o":           "d3f1ab73fe0e967227af669f22a90d409dd7e2aacedafd2c413cc24d87b845fa",
	"k_confirm":       "231194f19d754ab9e2ef5b93b8d46305b812c86afe10128626ca6ea8f7c8c0db",
	"exporter":        "4abe024bb37be076fcf7f3a69ed835265138e899dee12df7822b902aa9117aff",
	"accept_tag":      "494c4e9c2868652928e2c81236807c9b42fc10ea48f0c2a3365b422eba2d90eb",
	"messages_sha256": "84252e57623ba83f2893a169789d883cbc432459c0a3b0205e85a731228fc333",
}

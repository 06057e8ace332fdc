package pq

import (
	"bytes"
	"crypto/mlkem"
	"errors"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// TestExchange: Answer and Finish agree on the keys; a changed ciphertext
// or tag is ErrConfirm, a bad key ErrKey; two schedules' keys differ.
func TestExchange(t *testing.T) {
	s := Schedule{Label: "test/v1", Suite: "suite"}
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		t.Fatal(err)
	}
	var exp [32]byte
	var off, ans identity.PublicKey
	off[0], ans[0] = 1, 2
	id := [wire.PQIDSize]byte{9}
	head := []byte{0xaa, 0xbb}
	offer := append(bytes.Clone(head), dk.EncapsulationKey().Bytes()...)
	xa, accept, err := s.Answer(exp, off, ans, id, offer, offer[2:], head)
	if err != nil {
		t.Fatal(err)
	}
	if len(accept) != 2+wire.PQCiphertextSize+32 || !bytes.Equal(accept[:2], head) {
		t.Fatalf("accept of %d bytes", len(accept))
	}
	xo, err := s.Finish(dk, exp, off, ans, id, offer, accept, 2)
	if err != nil || xo != xa {
		t.Fatalf("finish: %v, keys agree %v", err, xo == xa)
	}
	for _, i := range []int{0, 10, len(accept) - 1} {
		bad := bytes.Clone(accept)
		bad[i] ^= 1
		if _, err := s.Finish(dk, exp, off, ans, id, offer, bad, 2); !errors.Is(err, ErrConfirm) {
			t.Errorf("byte %d changed: %v", i, err)
		}
	}
	if _, _, err := s.Answer(exp, off, ans, id, offer, make([]byte, 10), head); !errors.Is(err, ErrKey) {
		t.Errorf("bad key: %v", err)
	}
	other := Schedule{Label: "test/v2", Suite: "suite"}
	if k2, _ := other.Derive(exp, []byte("secret"), off, ans, xa.TH); k2 == xa.Keys {
		t.Error("labels do not separate the keys")
	}
}

// TestReassembly: one payload at a time, resent fragments ignored,
// another exchange's fragment refused and counted.
func TestReassembly(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, wire.PQOfferSize)
	frags, err := wire.PQFragments(wire.PQKindOffer, [8]byte{1}, payload)
	if err != nil {
		t.Fatal(err)
	}
	var r Reassembly
	var refused uint64
	if _, done := r.AddCounted(frags[0], &refused); done || !r.Pending() {
		t.Fatal("done after one fragment")
	}
	if _, done := r.AddCounted(frags[0], &refused); done || refused != 0 {
		t.Fatal("a resent fragment")
	}
	other := frags[1]
	other.ID = [8]byte{2}
	if _, done := r.AddCounted(other, &refused); done || refused != 1 {
		t.Fatalf("conflict: refused %d", refused)
	}
	got, done := r.AddCounted(frags[1], &refused)
	if !done || !bytes.Equal(got, payload) || r.Pending() {
		t.Fatal("not reassembled")
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Mode{"": Off, "off": Off, "preferred": Preferred, "required": Required} {
		if got, err := ParseMode(s); err != nil || got != want {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	if _, err := ParseMode("on"); !errors.Is(err, ErrMode) {
		t.Errorf("on: %v", err)
	}
}

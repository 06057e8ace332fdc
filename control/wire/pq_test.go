package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

func TestPQFragmentsRoundTrip(t *testing.T) {
	for _, k := range []wire.PQKind{wire.PQKindOffer, wire.PQKindAccept, wire.PQKindConfirm} {
		payload := make([]byte, k.PayloadSize())
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		frags, err := wire.PQFragments(k, [8]byte{9}, payload)
		if err != nil {
			t.Fatal(err)
		}
		if len(frags) != wire.PQFragmentCount(k.PayloadSize()) {
			t.Fatalf("%s: %d fragments", k, len(frags))
		}
		got := make([]byte, len(payload))
		for _, fr := range frags {
			b := make([]byte, wire.PQFragmentSize)
			if n, err := fr.MarshalTo(b); err != nil || n != wire.PQFragmentSize {
				t.Fatalf("marshal: %d, %v", n, err)
			}
			back, err := wire.ParsePQFragment(b)
			if err != nil {
				t.Fatal(err)
			}
			copy(got[back.Offset():], back.Chunk)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("%s: reassembled payload differs", k)
		}
	}
	if _, err := wire.PQFragments(wire.PQKindOffer, [8]byte{}, make([]byte, 10)); !errors.Is(err, wire.ErrLength) {
		t.Fatalf("short offer: %v", err)
	}
}

func TestPQFragmentRejects(t *testing.T) {
	frags, _ := wire.PQFragments(wire.PQKindAccept, [8]byte{}, make([]byte, wire.PQAcceptSize))
	good := make([]byte, wire.PQFragmentSize)
	if _, err := frags[1].MarshalTo(good); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mut  func(b []byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:len(b)-1] }, wire.ErrLength},
		{"version", func(b []byte) []byte { b[0] = 2; return b }, wire.ErrVersion},
		{"kind", func(b []byte) []byte { b[1] = 4; return b }, wire.ErrType},
		{"index", func(b []byte) []byte { b[2] = 2; return b }, wire.ErrValue},
		{"count", func(b []byte) []byte { b[3] = 3; return b }, wire.ErrLength},
		{"total", func(b []byte) []byte { binary.LittleEndian.PutUint16(b[12:], 1184); return b }, wire.ErrLength},
		{"chunk_len", func(b []byte) []byte { binary.LittleEndian.PutUint16(b[14:], 600); return b }, wire.ErrLength},
		{"padding", func(b []byte) []byte { b[len(b)-1] = 1; return b }, wire.ErrValue},
	}
	for _, c := range cases {
		b := c.mut(bytes.Clone(good))
		if _, err := wire.ParsePQFragment(b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestPQFragmentAllocs: decoding and encoding a fragment allocate nothing.
func TestPQFragmentAllocs(t *testing.T) {
	frags, err := wire.PQFragments(wire.PQKindOffer, [8]byte{5}, make([]byte, wire.PQOfferSize))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, wire.PQFragmentSize)
	sink := 0
	if n := testing.AllocsPerRun(100, func() { n, _ := frags[1].MarshalTo(b); sink += n }); n != 0 {
		t.Errorf("MarshalTo: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { f, _ := wire.ParsePQFragment(b); sink += len(f.Chunk) }); n != 0 {
		t.Errorf("ParsePQFragment: %v allocs", n)
	}
	_ = sink
}

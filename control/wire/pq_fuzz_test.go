package wire_test

import (
	"bytes"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// FuzzPQFragment: the fragment decoder either fails with a *DecodeError or
// decodes a value that re-encodes to exactly its input (one encoding per
// value: lengths, count, padding are all fixed).
func FuzzPQFragment(f *testing.F) {
	for _, k := range []wire.PQKind{wire.PQKindOffer, wire.PQKindAccept, wire.PQKindConfirm} {
		frags, err := wire.PQFragments(k, [8]byte{1, 2, 3}, bytes.Repeat([]byte{0xab}, k.PayloadSize()))
		if err != nil {
			f.Fatal(err)
		}
		for _, fr := range frags {
			b := make([]byte, wire.PQFragmentSize)
			if _, err := fr.MarshalTo(b); err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, wire.PQFragmentSize))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := wire.ParsePQFragment(in)
		fspCheckDecode(t, in, fr, err)
		if err == nil && fr.Offset()+len(fr.Chunk) > int(fr.Total) {
			t.Fatalf("chunk past the payload: offset %d + %d > %d", fr.Offset(), len(fr.Chunk), fr.Total)
		}
	})
}

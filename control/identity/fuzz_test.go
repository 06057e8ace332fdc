package identity

import (
	"errors"
	"testing"
)

// FuzzDecodeNpub: any string either decodes to an on-curve key that
// re-encodes to the same (lowercase) npub, or fails with a typed error.
func FuzzDecodeNpub(f *testing.F) {
	for _, p := range fixturePairs {
		f.Add(p.npub)
	}
	f.Add("npub1" + "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq")
	f.Add("NPUB1SX42MJ99AQL52AKLSG70Y2JMR95U7UZ2P40K769AW46PPJV302KQKHMU5R")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		pk, err := DecodeNpub(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidBech32) && !errors.Is(err, ErrWrongHRP) &&
				!errors.Is(err, ErrInvalidLength) && !errors.Is(err, ErrInvalidPublicKey) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		again, err := DecodeNpub(pk.Npub())
		if err != nil || again != pk {
			t.Fatalf("re-encode of %q failed: %v", s, err)
		}
	})
}

// FuzzParseSecretKey covers everything a key file or node.identity.nsec can hold.
func FuzzParseSecretKey(f *testing.F) {
	for _, p := range fixturePairs {
		f.Add(p.secret)
	}
	f.Add("nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5")
	f.Add("0000000000000000000000000000000000000000000000000000000000000000")
	f.Add(" \n")
	f.Fuzz(func(t *testing.T, s string) {
		sk, err := ParseSecretKey(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidBech32) && !errors.Is(err, ErrWrongHRP) && !errors.Is(err, ErrInvalidLength) &&
				!errors.Is(err, ErrInvalidHex) && !errors.Is(err, ErrInvalidSecret) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, enc := range []string{sk.Nsec(), sk.Hex()} {
			again, err := ParseSecretKey(enc)
			if err != nil || again.Hex() != sk.Hex() {
				t.Fatalf("re-parse of %q failed: %v", enc, err)
			}
		}
	})
}

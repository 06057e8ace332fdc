package noise

import (
	"testing"

	"golang.org/x/crypto/chacha20poly1305"
)

// BenchmarkAnchorChaChaSeal1400 is the raw x/crypto AEAD with a fixed
// nonce and dst: the performance anchor (ANCHORS.md item 3) that
// BenchmarkSeal1400 is reported against, measured in the same run.
func BenchmarkAnchorChaChaSeal1400(b *testing.B) {
	aead, _ := chacha20poly1305.New(make([]byte, 32))
	nonce := make([]byte, chacha20poly1305.NonceSize)
	payload := make([]byte, 1400)
	dst := make([]byte, 0, len(payload)+TagSize)
	ad := make([]byte, 16)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		aead.Seal(dst[:0], nonce, payload, ad)
	}
}

// BenchmarkAnchorChaChaOpen1400 is the Open counterpart.
func BenchmarkAnchorChaChaOpen1400(b *testing.B) {
	aead, _ := chacha20poly1305.New(make([]byte, 32))
	nonce := make([]byte, chacha20poly1305.NonceSize)
	ad := make([]byte, 16)
	sealed := aead.Seal(nil, nonce, make([]byte, 1400), ad)
	out := make([]byte, 0, 1400)
	b.SetBytes(1400)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := aead.Open(out[:0], nonce, sealed, ad); err != nil {
			b.Fatal(err)
		}
	}
}

package wire_test

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// The golden NodeAddr (secret [0xAB; 32]) and its v1 bit positions,
// computed by two independent re-implementations of upstream's hashing.
const fmpGoldenNodeAddr = "1b4788b7ab7a436a611fc59fb1e34c6e"

var fmpGoldenBits = []uint32{2183, 3391, 4599, 5807, 7015}

func TestBloomBitsGoldenVector(t *testing.T) {
	addr, err := identity.ParseNodeAddr(fmpGoldenNodeAddr)
	if err != nil {
		t.Fatal(err)
	}
	got := wire.BloomBits(nil, addr, wire.BloomHashCount)
	if !slices.Equal(got, fmpGoldenBits) {
		t.Fatalf("bits %v, want %v", got, fmpGoldenBits)
	}

	// Recompute from first principles so a change to the helper cannot
	// hide behind the constant: d = SHA-256(addr), h1/h2 little-endian.
	d := sha256.Sum256(addr[:])
	h1, h2 := binary.LittleEndian.Uint64(d[0:]), binary.LittleEndian.Uint64(d[8:])
	g1, g2 := wire.BloomHashes(addr)
	if g1 != h1 || g2 != h2 {
		t.Fatalf("hashes %#x %#x, want %#x %#x", g1, g2, h1, h2)
	}
	for i, bit := range got {
		if want := uint32((h1 + uint64(i)*h2) % 8192); bit != want {
			t.Fatalf("bit %d = %d, want %d", i, bit, want)
		}
	}

	// BloomSet places each bit LSB-first within its byte: bit 2183 is
	// byte 272, mask 0x80.
	f := make([]byte, wire.BloomFilterBytes)
	wire.BloomSet(f, addr, wire.BloomHashCount)
	want := make([]byte, wire.BloomFilterBytes)
	for _, b := range fmpGoldenBits {
		want[b/8] |= 1 << (b % 8)
	}
	equal(t, "filter", f, want)
	if f[272] != 0x80 {
		t.Fatalf("byte 272 = %#x, want 0x80", f[272])
	}
	if !wire.BloomTest(f, addr, wire.BloomHashCount) {
		t.Fatal("inserted address not found")
	}
	// Clearing any one of its bits removes it.
	f[2183/8] = 0
	if wire.BloomTest(f, addr, wire.BloomHashCount) {
		t.Fatal("found with a bit missing")
	}
}

func TestBloomSizesAndEdges(t *testing.T) {
	if wire.BloomFilterBits != 8192 || wire.BloomFilterBytes != 1024 || wire.BloomHashCount != 5 {
		t.Fatal("v1 parameters changed")
	}
	addr := addrOf(42)
	// The filter size comes from the slice, as upstream's from_slice does.
	small := make([]byte, 128)
	wire.BloomSet(small, addr, 5)
	if !wire.BloomTest(small, addr, 5) {
		t.Fatal("1024-bit filter")
	}
	h1, h2 := wire.BloomHashes(addr)
	for i := 0; i < 5; i++ {
		bit := (h1 + uint64(i)*h2) % 1024
		if small[bit/8]&(1<<(bit%8)) == 0 {
			t.Fatalf("bit %d not set in 1024-bit filter", bit)
		}
	}
	// An empty filter holds nothing and is not written.
	wire.BloomSet(nil, addr, 5)
	if wire.BloomTest(nil, addr, 5) {
		t.Fatal("empty filter contains an address")
	}
	// BloomBits appends.
	if b := wire.BloomBits([]uint32{9}, addr, 2); len(b) != 3 || b[0] != 9 {
		t.Fatalf("append: %v", b)
	}
}

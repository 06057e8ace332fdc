package wire

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/fips-go/fips/control/identity"
)

// Bloom filter bit positions, as FilterAnnounce filters are built: the k
// positions of a NodeAddr come from one SHA-256 by double hashing, and bit
// i of the filter is bit i%8 (LSB first) of byte i/8. Filter maintenance
// (merging, split horizon, FPR caps) belongs to control/bloom; only the
// part two nodes must agree on bit for bit lives here.

// v1 filter parameters.
const (
	BloomFilterBits  = 8192
	BloomFilterBytes = BloomFilterBits / 8
	BloomHashCount   = 5
)

// BloomHashes returns the two base hashes of addr: the first and second
// little-endian u64 of SHA-256(addr).
func BloomHashes(addr identity.NodeAddr) (h1, h2 uint64) {
	d := sha256.Sum256(addr[:])
	return binary.LittleEndian.Uint64(d[0:]), binary.LittleEndian.Uint64(d[8:])
}

// bloomBit is hash function i in a filter of m bits. The sum and product
// wrap at 2^64 before the reduction, exactly as upstream's wrapping_add
// and wrapping_mul do.
func bloomBit(h1, h2 uint64, i int, m uint64) uint64 {
	return (h1 + uint64(i)*h2) % m
}

// BloomBits appends the k bit indices of addr in a v1 (8192-bit) filter to
// dst and returns it. With enough capacity in dst it does not allocate.
func BloomBits(dst []uint32, addr identity.NodeAddr, k int) []uint32 {
	h1, h2 := BloomHashes(addr)
	for i := 0; i < k; i++ {
		dst = append(dst, uint32(bloomBit(h1, h2, i, BloomFilterBits)))
	}
	return dst
}

// BloomSet inserts addr into filter using k hash functions. The filter
// size in bits is 8*len(filter), as upstream derives it from the received
// bytes. An empty filter is left alone.
func BloomSet(filter []byte, addr identity.NodeAddr, k int) {
	m := uint64(len(filter)) * 8
	if m == 0 {
		return
	}
	h1, h2 := BloomHashes(addr)
	for i := 0; i < k; i++ {
		bit := bloomBit(h1, h2, i, m)
		filter[bit/8] |= 1 << (bit % 8)
	}
}

// BloomTest reports whether filter may contain addr (false positives are
// possible, false negatives are not). An empty filter contains nothing.
func BloomTest(filter []byte, addr identity.NodeAddr, k int) bool {
	m := uint64(len(filter)) * 8
	if m == 0 {
		return false
	}
	h1, h2 := BloomHashes(addr)
	for i := 0; i < k; i++ {
		bit := bloomBit(h1, h2, i, m)
		if filter[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
	}
	return true
}

package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// v1 filter parameters.
const (
	FilterBits       = wire.BloomFilterBits  // m, 8192
	FilterBytes      = wire.BloomFilterBytes // 1024
	DefaultHashCount = wire.BloomHashCount   // k, 5
	SizeClassV1      = wire.FilterSizeClassV1
)

// Filter is a v1 bloom filter: 8192 bits and a hash count. The zero value
// is an empty filter with the default hash count; a Filter is a plain value
// (1 KiB), so copying one copies its bits.
type Filter struct {
	bits [FilterBytes]byte
	k    uint8 // 0 means DefaultHashCount
}

// NewFilter returns an empty filter with the default hash count.
func NewFilter() Filter { return Filter{k: DefaultHashCount} }

// FilterFromBytes builds a filter from announced bits and hash count. The
// bits must be exactly FilterBytes long (v1) and k must be non-zero.
func FilterFromBytes(b []byte, k uint8) (Filter, error) {
	var f Filter
	if len(b) != FilterBytes {
		return f, fmt.Errorf("bloom: filter is %d bytes, want %d", len(b), FilterBytes)
	}
	if k == 0 {
		return f, fmt.Errorf("bloom: hash count must be positive")
	}
	copy(f.bits[:], b)
	f.k = k
	return f, nil
}

// HashCount is the number of hash functions membership uses.
func (f *Filter) HashCount() uint8 {
	if f.k == 0 {
		return DefaultHashCount
	}
	return f.k
}

// Bytes returns the filter bits (a view; do not keep it across changes).
func (f *Filter) Bytes() []byte { return f.bits[:] }

// Insert adds addr.
func (f *Filter) Insert(addr identity.NodeAddr) {
	wire.BloomSet(f.bits[:], addr, int(f.HashCount()))
}

// Contains reports whether addr may be in the filter (false positives are
// possible, false negatives are not).
func (f *Filter) Contains(addr identity.NodeAddr) bool {
	return wire.BloomTest(f.bits[:], addr, int(f.HashCount()))
}

// Merge ORs other's bits into f. Only the bits are merged; f keeps its own
// hash count, as upstream's merge does.
func (f *Filter) Merge(other *Filter) { orBits(&f.bits, &other.bits) }

// Clear empties the filter, keeping its hash count.
func (f *Filter) Clear() { f.bits = [FilterBytes]byte{} }

// IsEmpty reports whether no bit is set.
func (f *Filter) IsEmpty() bool { return f.bits == [FilterBytes]byte{} }

// Equal reports whether both filters have the same bits and hash count.
func (f *Filter) Equal(other *Filter) bool {
	return f.HashCount() == other.HashCount() && f.bits == other.bits
}

// CountOnes is the number of set bits.
func (f *Filter) CountOnes() int { return popcount(f.bits[:]) }

// Fill is the fraction of bits set.
func (f *Filter) Fill() float64 { return float64(f.CountOnes()) / FilterBits }

// FPR is the false-positive rate, fill^k.
func (f *Filter) FPR() float64 { return fpr(f.Fill(), f.HashCount()) }

// EstimateCount estimates how many distinct addresses were inserted:
// -(m/k)·ln(1 - fill). It reports false when the filter is saturated or its
// FPR exceeds maxFPR (pass math.Inf(1) for no cap).
func (f *Filter) EstimateCount(maxFPR float64) (float64, bool) {
	return estimate(f.CountOnes(), FilterBits, f.HashCount(), maxFPR)
}

// String summarises the filter for logs.
func (f *Filter) String() string {
	est := "saturated"
	if n, ok := f.EstimateCount(math.Inf(1)); ok {
		est = fmt.Sprintf("%.0f", n)
	}
	return fmt.Sprintf("BloomFilter{bits: %d, hash_count: %d, fill_ratio: %.2f%%, est_count: %s}",
		FilterBits, f.HashCount(), f.Fill()*100, est)
}

func estimate(ones, m int, k uint8, maxFPR float64) (float64, bool) {
	if ones >= m {
		return 0, false
	}
	fill := float64(ones) / float64(m)
	if fpr(fill, k) > maxFPR {
		return 0, false
	}
	return -(float64(m) / float64(k)) * math.Log(1-fill), true
}

// fpr is fill^k by square-and-multiply, the exact sequence of IEEE-754
// multiplications upstream uses, so a filter on the cap boundary is
// accepted or rejected identically on every node.
func fpr(fill float64, k uint8) float64 { return powi(fill, uint32(k)) }

func powi(base float64, exp uint32) float64 {
	result, b := 1.0, base
	for {
		if exp&1 == 1 {
			result *= b
		}
		exp >>= 1
		if exp == 0 {
			return result
		}
		b *= b
	}
}

func popcount(b []byte) int {
	n := 0
	for len(b) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	for _, c := range b {
		n += bits.OnesCount8(c)
	}
	return n
}

func orBits(dst, src *[FilterBytes]byte) {
	for i := 0; i < FilterBytes; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])|binary.LittleEndian.Uint64(src[i:]))
	}
}

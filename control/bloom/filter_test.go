package bloom

import (
	"math"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

func TestFilterInsertContains(t *testing.T) {
	f := NewFilter()
	if !f.IsEmpty() || f.CountOnes() != 0 || f.HashCount() != 5 {
		t.Fatalf("new filter: %v", f.String())
	}
	a, b := addr(1), addr(2)
	f.Insert(a)
	if !f.Contains(a) || f.Contains(b) || f.IsEmpty() {
		t.Fatal("membership after one insert")
	}
	// Insert sets exactly the wire package's bit positions.
	want := map[uint32]bool{}
	for _, bit := range wire.BloomBits(nil, a, 5) {
		want[bit] = true
	}
	for i := 0; i < FilterBits; i++ {
		set := f.Bytes()[i/8]&(1<<(i%8)) != 0
		if set != want[uint32(i)] {
			t.Fatalf("bit %d set=%v, want %v", i, set, want[uint32(i)])
		}
	}
	if f.CountOnes() != len(want) {
		t.Fatalf("CountOnes %d, want %d", f.CountOnes(), len(want))
	}
}

func TestFilterZeroValueIsDefault(t *testing.T) {
	var z Filter
	n := NewFilter()
	if !z.Equal(&n) || z.HashCount() != DefaultHashCount {
		t.Fatal("zero Filter should equal NewFilter")
	}
	z.Insert(addr(3))
	n.Insert(addr(3))
	if !z.Equal(&n) {
		t.Fatal("zero Filter inserts with k=5")
	}
}

func TestFilterMergeClearEqual(t *testing.T) {
	f1, f2 := filterOf(addr(1)), filterOf(addr(2))
	u := f1
	u.Merge(&f2)
	if !u.Contains(addr(1)) || !u.Contains(addr(2)) || f1.Contains(addr(2)) {
		t.Fatal("merge")
	}
	both := filterOf(addr(1), addr(2))
	if !u.Equal(&both) {
		t.Fatal("merge of singletons should equal the filter of both")
	}
	k3, _ := FilterFromBytes(both.Bytes(), 3)
	if k3.Equal(&both) {
		t.Fatal("equality must include the hash count")
	}
	u.Clear()
	if !u.IsEmpty() || u.HashCount() != 5 {
		t.Fatal("clear")
	}
}

func TestFilterFromBytes(t *testing.T) {
	f := filterOf(addr(7), addr(8))
	g, err := FilterFromBytes(f.Bytes(), 5)
	if err != nil || !g.Equal(&f) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := FilterFromBytes(make([]byte, 512), 5); err == nil {
		t.Fatal("512 bytes accepted")
	}
	if _, err := FilterFromBytes(nil, 5); err == nil {
		t.Fatal("empty accepted")
	}
	if _, err := FilterFromBytes(make([]byte, FilterBytes), 0); err == nil {
		t.Fatal("k=0 accepted")
	}
}

// The golden bits pin powi to upstream's square-and-multiply order, so
// FPR comparisons at the cap agree bit for bit across nodes.
func TestPowiGolden(t *testing.T) {
	golden := []struct {
		base float64
		exp  uint32
		bits uint64
	}{
		{0.5469, 4, 4591110734581567521},
		{0.5, 2, 4598175219545276416},
		{2.0, 10, 4652218415073722368},
		{0.9999, 64, 4607124953935219716},
		{1.5, 8, 4627907113471967232},
		{3.7, 5, 4649310774781981293},
		{0.1, 3, 4562254508917369341},
		{0.5493, 4, 4591224636877479401},
		{0.5508, 4, 4591296588123960286},
		{0.5469, 14, 4552032634403898040},
	}
	for _, g := range golden {
		if got := math.Float64bits(powi(g.base, g.exp)); got != g.bits {
			t.Errorf("powi(%v, %d) bits %d, want %d", g.base, g.exp, got, g.bits)
		}
	}
	if powi(0.3, 0) != 1 {
		t.Error("x^0")
	}
}

func TestEstimateCountEmptyAndSaturated(t *testing.T) {
	f := NewFilter()
	if n, ok := f.EstimateCount(math.Inf(1)); !ok || n != 0 {
		t.Fatalf("empty: %v %v", n, ok)
	}
	full, _ := FilterFromBytes(allOnes(), 5)
	if _, ok := full.EstimateCount(math.Inf(1)); ok {
		t.Fatal("saturated filter estimated without a cap")
	}
	if _, ok := full.EstimateCount(0.05); ok {
		t.Fatal("saturated filter estimated")
	}
	if full.FPR() != 1 || full.Fill() != 1 {
		t.Fatal("full filter fill/FPR")
	}
}

func TestEstimateCountCapBoundary(t *testing.T) {
	mk := func(ffBytes int) Filter {
		b := make([]byte, FilterBytes)
		for i := 0; i < ffBytes; i++ {
			b[i] = 0xff
		}
		f, _ := FilterFromBytes(b, 5)
		return f
	}
	below, above := mk(560), mk(564) // fill 0.5469 (FPR 0.0488), 0.5508 (0.0506)
	if _, ok := below.EstimateCount(0.05); !ok {
		t.Error("fill 0.5469 refused at cap 0.05")
	}
	if _, ok := above.EstimateCount(0.05); ok {
		t.Error("fill 0.5508 accepted at cap 0.05")
	}
	if _, ok := above.EstimateCount(0.10); !ok {
		t.Error("fill 0.5508 refused at cap 0.10")
	}
}

// Estimates for known counts are within a few percent (the estimator's
// standard error at these fills is well under 2%).
func TestEstimateCountKnownCounts(t *testing.T) {
	for _, tc := range []struct {
		n   int
		tol float64
	}{{1, 0.5}, {10, 1}, {50, 2}, {100, 3}, {1000, 30}, {2000, 80}} {
		f := NewFilter()
		for i := 0; i < tc.n; i++ {
			f.Insert(addr(100000 + i))
		}
		got, ok := f.EstimateCount(0.20)
		if !ok {
			t.Fatalf("n=%d refused (fpr %v)", tc.n, f.FPR())
		}
		if math.Abs(got-float64(tc.n)) > tc.tol {
			t.Errorf("n=%d: estimate %.1f, tolerance %v", tc.n, got, tc.tol)
		}
	}
}

// The 0.20 cap sits at fill 0.2^(1/5) = 0.72478 of 8192 bits: 5937 set
// bits pass, 5938 do not.
func TestFPRCapBitBoundary(t *testing.T) {
	mk := func(ones int) Filter {
		f := NewFilter()
		for i := 0; i < ones; i++ {
			f.bits[i/8] |= 1 << (i % 8)
		}
		return f
	}
	f1, f2 := mk(5937), mk(5938)
	if f1.FPR() > 0.20 || f2.FPR() <= 0.20 {
		t.Fatalf("FPR(5937)=%v FPR(5938)=%v", f1.FPR(), f2.FPR())
	}
}

func TestFilterString(t *testing.T) {
	f := filterOf(addr(1))
	if s := f.String(); !strings.Contains(s, "est_count: 1}") {
		t.Errorf("String() = %q", s)
	}
	full, _ := FilterFromBytes(allOnes(), 5)
	if s := full.String(); !strings.Contains(s, "saturated") {
		t.Errorf("String() = %q", s)
	}
}

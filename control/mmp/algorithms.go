package mmp

import "math"

// jitterEstimator is the RFC 3550 §6.4.1 interarrival jitter, gain 1/16, kept
// ×16 in integers.
type jitterEstimator struct{ q4 int64 }

// update takes D = (R_i − R_{i−1}) − (S_i − S_{i−1}) in µs.
func (j *jitterEstimator) update(d int32) {
	a := int64(d)
	if a < 0 {
		a = -a
	}
	j.q4 += a - (j.q4 >> 4)
}

func (j *jitterEstimator) us() uint32 { return uint32(j.q4 >> 4) }

// srttEstimator is Jacobson/RFC 6298 in integer µs (α 1/8, β 1/4 as shifts).
type srttEstimator struct {
	srtt, rttvar int64
	init         bool
}

func (s *srttEstimator) update(rttUS int64) {
	if !s.init {
		s.srtt = rttUS
		s.rttvar = rttUS / 2
		s.init = true
		return
	}
	e := s.srtt - rttUS
	if e < 0 {
		e = -e
	}
	s.rttvar = s.rttvar - (s.rttvar >> 2) + (e >> 2)
	s.srtt = s.srtt - (s.srtt >> 3) + (rttUS >> 3)
}

// rtoUS is SRTT + max(4·RTTVAR, 1 s), at least 1 s.
func (s *srttEstimator) rtoUS() int64 {
	return max(s.srtt+max(s.rttvar<<2, 1_000_000), 1_000_000)
}

// dualEWMA tracks a short (α 1/4) and a long (α 1/32) average.
type dualEWMA struct {
	short, long float64
	init        bool
}

func (e *dualEWMA) update(x float64) {
	if !e.init {
		e.short, e.long, e.init = x, x, true
		return
	}
	e.short += EWMAShortAlpha * (x - e.short)
	e.long += EWMALongAlpha * (x - e.long)
}

type owdSample struct {
	seq uint32
	owd int64
}

// owdTrend is a least-squares slope over a ring of (seq, owd µs) samples.
type owdTrend struct {
	buf   []owdSample
	cap   int
	start int
}

func newOWDTrend(capacity int) owdTrend {
	return owdTrend{cap: capacity, buf: make([]owdSample, 0, max(capacity, 0))}
}

func (t *owdTrend) clear() { t.buf, t.start = t.buf[:0], 0 }

func (t *owdTrend) push(seq uint32, owd int64) {
	if t.cap <= 0 {
		// Upstream's VecDeque with capacity 0 pops nothing and grows; a
		// zero window is not a configuration anyone runs. Keep one sample.
		t.buf = append(t.buf[:0], owdSample{seq, owd})
		return
	}
	if len(t.buf) < t.cap {
		t.buf = append(t.buf, owdSample{seq, owd})
		return
	}
	t.buf[t.start] = owdSample{seq, owd}
	t.start = (t.start + 1) % t.cap
}

// usPerSec is the slope in µs per sample, ×1000 (upstream's wire unit),
// 0 with fewer than two samples or no spread in seq.
func (t *owdTrend) usPerSec() int32 {
	n := len(t.buf)
	if n < 2 {
		return 0
	}
	// Sum in insertion order, as upstream iterates its deque front to back.
	var sx, sy float64
	t.each(func(s owdSample) { sx += float64(s.seq); sy += float64(s.owd) })
	mx, my := sx/float64(n), sy/float64(n)
	var num, den float64
	t.each(func(s owdSample) {
		dx, dy := float64(s.seq)-mx, float64(s.owd)-my
		num += dx * dy
		den += dx * dx
	})
	if den < 2.220446049250313e-16 {
		return 0
	}
	return satI32(num / den * 1000)
}

func (t *owdTrend) each(f func(owdSample)) {
	n := len(t.buf)
	for i := 0; i < n; i++ {
		f(t.buf[(t.start+i)%n])
	}
}

// ETX is 1/(df·dr) clamped to [1, 100]; 100 when the product is ≤ 0.
func ETX(dForward, dReverse float64) float64 {
	p := dForward * dReverse
	if p <= 0 {
		return 100
	}
	return min(max(1/p, 1), 100)
}

// spinBit is upstream's asymmetric spin bit: the initiator flips on each
// reflected edge (its RTT samples are discarded upstream), the responder
// reflects the highest-counter bit.
type spinBit struct {
	initiator bool
	value     bool
	highest   uint64
	lastEdge  int64
	hasEdge   bool
}

// observe returns an RTT sample in ms on an initiator edge after the first.
func (s *spinBit) observe(bit bool, counter uint64, nowMS int64) (int64, bool) {
	if s.initiator {
		if bit != s.value {
			return 0, false
		}
		rtt, ok := satSub(nowMS, s.lastEdge), s.hasEdge
		s.lastEdge, s.hasEdge = nowMS, true
		s.value = !s.value
		return rtt, ok
	}
	if counter > s.highest {
		s.highest = counter
		s.value = bit
	}
	return 0, false
}

// satSub is a − b floored at 0 (upstream's u64 saturating_sub).
func satSub(a, b int64) int64 {
	if a < b {
		return 0
	}
	return a - b
}

// satI32 and satU16 are Rust's saturating float→int `as` casts (NaN → 0).
func satI32(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

func satU16(f float64) uint16 {
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= math.MaxUint16:
		return math.MaxUint16
	}
	return uint16(f)
}

func satU64(f float64) uint64 {
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= math.MaxUint64:
		return math.MaxUint64
	}
	return uint64(f)
}

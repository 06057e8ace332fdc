package dataplane

import (
	"math"
	"testing"
	"time"
)

// TestCodelDropsOnlyAStandingQueue: a sojourn above target for less
// than an interval (a burst) drops nothing; one that stays above drops
// at 100 ms, then at intervals shrinking as 1/√count, and stops as soon
// as the sojourn is back under target.
func TestCodelDropsOnlyAStandingQueue(t *testing.T) {
	c := NewCoDel()
	t0 := time.Unix(1000, 0)
	step := time.Millisecond
	// A 90 ms burst at 20 ms sojourn: never an interval above target.
	for i := range 90 {
		if c.Drop(t0.Add(time.Duration(i)*step), 20*time.Millisecond) {
			t.Fatalf("burst: dropped at %d ms", i)
		}
	}
	if c.Drop(t0.Add(90*step), time.Millisecond) || c.Drops.Load() != 0 {
		t.Fatal("dropped below target")
	}
	// A standing queue from t1 on.
	t1 := t0.Add(time.Second)
	var at []time.Duration
	for i := range 1000 { // one packet per ms for a second
		now := t1.Add(time.Duration(i) * step)
		if c.Drop(now, 20*time.Millisecond) {
			at = append(at, now.Sub(t1))
		}
	}
	if len(at) < 5 || at[0] != 100*time.Millisecond {
		t.Fatalf("drops at %v, want the first at 100 ms", at)
	}
	// Intervals shrink: 100/√1, 100/√2, 100/√3 … (the schedule is exact;
	// a drop lands on the first packet after it, so ± a packet's ms).
	for k := 1; k < len(at); k++ {
		got := at[k] - at[k-1]
		want := time.Duration(float64(100*time.Millisecond) / math.Sqrt(float64(k)))
		if got < want-step || got > want+step {
			t.Errorf("gap before drop %d: %v, want %v", k+1, got, want)
		}
	}
	n := c.Drops.Load()
	// Below target again: no more drops, and out of the dropping state.
	t2 := t1.Add(time.Second)
	for i := range 300 {
		if c.Drop(t2.Add(time.Duration(i)*step), 2*time.Millisecond) {
			t.Fatalf("dropped below target after the standing queue")
		}
	}
	if c.dropping || c.Drops.Load() != n {
		t.Errorf("still dropping (%v) or counted %d drops after %d", c.dropping, c.Drops.Load(), n)
	}
}

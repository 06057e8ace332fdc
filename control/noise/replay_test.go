package noise

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestReplayZeroOnce(t *testing.T) {
	var w ReplayWindow
	if !w.Check(0) {
		t.Fatal("fresh window must accept 0")
	}
	w.Accept(0)
	if w.Check(0) {
		t.Fatal("0 accepted twice")
	}
	if w.Highest() != 0 {
		t.Fatal("highest")
	}
}

func TestReplayDuplicates(t *testing.T) {
	var w ReplayWindow
	for c := range uint64(1000) {
		if !w.Check(c) {
			t.Fatalf("%d rejected", c)
		}
		w.Accept(c)
	}
	for c := range uint64(1000) {
		if w.Check(c) {
			t.Fatalf("duplicate %d accepted", c)
		}
	}
	if w.Highest() != 999 {
		t.Fatal("highest")
	}
}

func TestReplayWindowEdge(t *testing.T) {
	var w ReplayWindow
	const hi = 10_000
	w.Accept(hi)
	if !w.Check(hi - (ReplayWindowSize - 1)) {
		t.Error("highest-2047 must be accepted")
	}
	if w.Check(hi - ReplayWindowSize) {
		t.Error("highest-2048 must be rejected")
	}
	w.Accept(hi - (ReplayWindowSize - 1))
	if w.Check(hi - (ReplayWindowSize - 1)) {
		t.Error("highest-2047 accepted twice")
	}
	// Moving forward by one pushes that counter out of the window.
	w.Accept(hi + 1)
	if w.Check(hi - (ReplayWindowSize - 1)) {
		t.Error("old edge still accepted")
	}
	if !w.Check(hi + 1 - (ReplayWindowSize - 1)) {
		t.Error("new edge rejected")
	}

	// Upstream's boundary test: from the initial state accept 2047, then 0
	// is exactly at the edge; after accepting 2048 it falls out and 1 does not.
	var u ReplayWindow
	u.Accept(ReplayWindowSize - 1)
	if !u.Check(0) {
		t.Error("0 at the edge rejected")
	}
	u.Accept(0)
	u.Accept(ReplayWindowSize)
	if u.Check(0) || !u.Check(1) {
		t.Error("after the window moved by 1")
	}
}

func TestReplayBigJumps(t *testing.T) {
	var w ReplayWindow
	w.Accept(0)
	w.Accept(5)
	w.Accept(ReplayWindowSize + 100)
	if w.Check(0) || w.Check(50) || w.Check(100) {
		t.Error("counters behind the window accepted")
	}
	if !w.Check(ReplayWindowSize+99) || !w.Check(ReplayWindowSize+50) || !w.Check(101) {
		t.Error("counters inside the window rejected")
	}
	if w.Check(ReplayWindowSize + 100) {
		t.Error("highest accepted twice")
	}
	// A jump of exactly the window size clears everything but the new highest.
	var x ReplayWindow
	for c := range uint64(64) {
		x.Accept(c)
	}
	x.Accept(63 + ReplayWindowSize)
	for c := uint64(64); c < 63+ReplayWindowSize; c++ {
		if !x.Check(c) {
			t.Fatalf("%d rejected after a full-window jump", c)
		}
	}
	// Near the top of the counter space.
	x.Accept(math.MaxUint64 - 1)
	if !x.Check(math.MaxUint64) || x.Check(math.MaxUint64-1) || !x.Check(math.MaxUint64-2) {
		t.Error("near MaxUint64")
	}
	x.Reset()
	if x.Highest() != 0 || !x.Check(0) {
		t.Error("reset")
	}
}

func TestReplayOutOfOrder(t *testing.T) {
	var w ReplayWindow
	w.Accept(1)
	w.Accept(10)
	for _, c := range []uint64{5, 2, 9, 0, 3} {
		if !w.Check(c) {
			t.Fatalf("%d rejected", c)
		}
		w.Accept(c)
		if w.Check(c) {
			t.Fatalf("%d accepted twice", c)
		}
	}
	for _, c := range []uint64{4, 6, 7, 8} {
		if !w.Check(c) {
			t.Fatalf("unseen %d rejected", c)
		}
	}
	if w.Highest() != 10 {
		t.Fatal("highest moved backwards")
	}
}

// The window must behave exactly like the obvious model: a set of accepted
// counters, with everything 2048 or more below the highest rejected.
func TestReplayMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var w ReplayWindow
		seen := map[uint64]bool{}
		var hi uint64
		model := func(c uint64) bool {
			if c > hi {
				return true
			}
			return hi-c < ReplayWindowSize && !seen[c]
		}
		for range 5000 {
			var c uint64
			switch rng.IntN(6) {
			case 0:
				c = hi + uint64(rng.IntN(3*ReplayWindowSize)) // jumps, some beyond the window
			case 1:
				c = hi + 1
			default:
				c = hi - min(hi, uint64(rng.IntN(ReplayWindowSize+200)))
			}
			got, want := w.Check(c), model(c)
			if got != want {
				t.Fatalf("round %d: Check(%d) = %v, model %v (highest %d)", round, c, got, want, hi)
			}
			if got && rng.IntN(4) != 0 { // sometimes the frame fails to decrypt
				w.Accept(c)
				seen[c] = true
				hi = max(hi, c)
			}
		}
	}
}

// BenchmarkReplayInOrder is the steady state: each counter one above the
// last, checked and accepted.
func BenchmarkReplayInOrder(b *testing.B) {
	var w ReplayWindow
	for i := range b.N {
		c := uint64(i) + 1
		if !w.Check(c) {
			b.Fatal("refused")
		}
		w.Accept(c)
	}
}

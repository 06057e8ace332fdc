package tree

import (
	"errors"
	"testing"
	"time"
)

// TestAnnounceChecksAreBudgeted: every TreeAnnounce costs a signature
// check, about a hundred times what its sender spent. A peer that floods
// them (a genuine one sends at most one per announce_min_interval_ms)
// gets 16 checked at once and 8 a second after; the newest announce past
// that is kept, not lost, and handled at the next tick with budget.
func TestAnnounceChecksAreBudgeted(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p := f.peer(2)
	for seq := uint64(10); seq < 110; seq++ {
		msg := rootAnnounce(t, p, seq)
		msg[len(msg)-1] ^= 1 // a bad signature: each one is checked in full
		f.deliver(p.NodeAddr(), msg)
	}
	s := f.tr.Stats()
	if s.SigFailed != 16 || s.VerifyDeferred != 84 {
		t.Fatalf("sig_failed %d verify_deferred %d", s.SigFailed, s.VerifyDeferred)
	}
	// The newest announce, genuine, arrives while the budget is spent: it
	// is deferred, and accepted at the next tick.
	err := f.deliver(p.NodeAddr(), rootAnnounce(t, p, 200))
	if !errors.Is(err, ReasonDeferred) {
		t.Fatalf("over budget: %v", err)
	}
	f.advance(time.Second)
	f.tr.Tick(f.now)
	if s := f.tr.Stats(); s.Accepted != 1 || s.SigFailed != 16 {
		t.Fatalf("after tick: accepted %d sig_failed %d", s.Accepted, s.SigFailed)
	}
	snap := f.tr.Snapshot()
	if len(snap.Peers) != 1 || snap.Peers[0].Root != p.NodeAddr() {
		t.Fatalf("peers %+v", snap.Peers)
	}
	// Refilled: a later genuine announce is handled at once.
	f.advance(time.Second)
	if err := f.deliver(p.NodeAddr(), rootAnnounce(t, p, 201)); err != nil {
		t.Fatal(err)
	}
}

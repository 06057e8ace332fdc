package route

import (
	"errors"
	"testing"
	"time"
)

// TestOnePeerCannotFillLookupDedup: a peer sending LookupRequests with
// fresh ids must not fill the request-id table and so stop every other
// peer's lookups through this node (upstream refuses all newcomers while
// it is full, for the 10 s dedup window). When it is full, an entry of
// the peer holding the most makes room for a peer holding fewer; the
// flooder alone is refused.
func TestOnePeerCannotFillLookupDedup(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LookupMaxRecent = 8
	f := newFixture(t, cfg)
	flooder, good, target := addr(0x10), addr(0x20), addr(0x30)
	f.child(flooder)
	f.child(good)
	f.flt.add(good, target)
	for id := range uint64(8) {
		f.r.HandleLookupRequest(t0, flooder, lookupRequest(t, 100+id, addr(0x40+byte(id)), addr(0xCC), 5))
	}
	if len(f.r.recent) != 8 {
		t.Fatalf("%d ids remembered", len(f.r.recent))
	}
	// The flooder, holding everything, is refused more.
	if err := f.r.HandleLookupRequest(t0, flooder, lookupRequest(t, 200, addr(0x50), addr(0xCC), 5)); !errors.Is(err, ErrLimit) {
		t.Fatalf("flooder's ninth: %v", err)
	}
	// Another peer's request is still remembered and forwarded.
	f.links.take()
	if err := f.r.HandleLookupRequest(t0, good, lookupRequest(t, 300, target, addr(0xDD), 5)); err != nil {
		t.Fatalf("good peer's request: %v", err)
	}
	if out := f.links.take(); len(out) != 1 || out[0].to != good {
		t.Fatalf("forwarded %+v", out)
	}
	if _, ok := f.r.recent[300]; !ok || len(f.r.recent) != 8 {
		t.Fatalf("good request not remembered (%d ids)", len(f.r.recent))
	}
	if _, ok := f.r.recent[100]; ok {
		t.Fatal("the flooder's oldest id should have made room")
	}
	s := f.r.Stats()
	if s.Lookup.ReqDedupCacheFull != 1 || s.Limits.RecentEvictedFairShare != 1 {
		t.Fatalf("lookup %+v limits %+v", s.Lookup, s.Limits)
	}
	// The window still expires everything, the per-peer bookkeeping too.
	f.r.Tick(t0.Add(11 * time.Second))
	if len(f.r.recent) != 0 || len(f.r.recentBy) != 0 || len(f.r.recentOrder) != 0 {
		t.Fatalf("left: %d ids, %d peers, order %d", len(f.r.recent), len(f.r.recentBy), len(f.r.recentOrder))
	}
}

// TestLookupProofWorkIsBudgeted: each LookupRequest naming us costs a
// signature and each LookupResponse a signature check, a hundred times
// what the peer spent sending it. A peer gets a budget of them (burst
// 32, 8 a second); past it, requests naming us and unsolicited responses
// are dropped unanswered and unchecked. A pending lookup is checked
// regardless, up to 4 bad proofs per attempt.
func TestLookupProofWorkIsBudgeted(t *testing.T) {
	t.Run("requests naming us", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		from := addr(0x10)
		f.child(from)
		for id := range uint64(100) {
			f.r.HandleLookupRequest(t0, from, lookupRequest(t, 1000+id, f.self, addr(0xCC), 5))
		}
		if got := len(f.links.take()); got != 32 {
			t.Fatalf("%d responses signed, want the burst of 32", got)
		}
		if got := f.r.Stats().Limits.ProofsRateLimited; got != 68 {
			t.Fatalf("proofs_rate_limited %d", got)
		}
		// Refilled at 8 a second; another peer has its own budget.
		f.r.HandleLookupRequest(t0.Add(time.Second), from, lookupRequest(t, 2000, f.self, addr(0xCC), 5))
		other := addr(0x11)
		f.child(other)
		f.r.HandleLookupRequest(t0.Add(time.Second), other, lookupRequest(t, 2001, f.self, addr(0xCC), 5))
		if got := len(f.links.take()); got != 2 {
			t.Fatalf("%d responses after refill", got)
		}
	})
	t.Run("unsolicited responses", func(t *testing.T) {
		f, _, ta, coords, _ := originatorFixture(t)
		delete(f.r.pending, ta)
		wrong := mustIdentity(t, newSeeded(8))
		bad := signedResponse(t, wrong, 7, ta, coords, 1280)
		for range 100 {
			f.r.HandleLookupResponse(t0, addr(0xAA), bad)
		}
		s := f.r.Stats()
		if s.Lookup.RespProofFailed != 32 || s.Limits.ProofsRateLimited != 68 {
			t.Fatalf("lookup %+v limits %+v", s.Lookup, s.Limits)
		}
	})
	t.Run("pending lookup", func(t *testing.T) {
		f, target, ta, coords, evs := originatorFixture(t)
		f.child(addr(0xAA))
		f.flt.add(addr(0xAA), ta)
		f.r.StartLookup(t0, ta)
		if !f.r.LookupPending(ta) {
			t.Fatal("fixture has no pending lookup")
		}
		wrong := mustIdentity(t, newSeeded(8))
		bad := signedResponse(t, wrong, 7, ta, coords, 1280)
		for range 10 {
			f.r.HandleLookupResponse(t0, addr(0xAA), bad)
		}
		s := f.r.Stats()
		if s.Lookup.RespProofFailed != 4 || s.Limits.BadProofsLimited != 6 {
			t.Fatalf("lookup %+v limits %+v", s.Lookup, s.Limits)
		}
		// The next attempt checks again, and a genuine answer ends it.
		f.r.Tick(t0.Add(time.Second))
		if err := f.r.HandleLookupResponse(t0.Add(time.Second), addr(0xAA), signedResponse(t, target, 8, ta, coords, 1280)); err != nil {
			t.Fatal(err)
		}
		if len(*evs) != 1 || (*evs)[0].Outcome != LookupFound {
			t.Fatalf("events %+v", *evs)
		}
	})
}

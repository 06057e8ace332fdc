package tree

import "time"

// Each TreeAnnounce costs a Schnorr signature check, about a hundred
// times what its sender spent on it, and a genuine peer sends at most one
// per announce_min_interval_ms (500 ms by default). A peer gets
// checkBurst checks at once, refilled at checkRate a second; an announce
// past that is not checked but kept, the newest per peer, and handled at
// the next tick with budget, so a genuine burst is delayed, never lost.
// Ours: upstream checks every announce.
const (
	checkBurst = 16
	checkRate  = 8 // per second
)

// checkBudget is one peer's token bucket of signature checks; the zero
// value is full.
type checkBudget struct {
	spent float64 // tokens used, 0..checkBurst
	last  time.Time
}

func (b *checkBudget) refill(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.spent = max(0, b.spent-now.Sub(b.last).Seconds()*checkRate)
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
}

func (b *checkBudget) take(now time.Time) bool {
	b.refill(now)
	if b.spent+1 > checkBurst {
		return false
	}
	b.spent++
	return true
}

func (b *checkBudget) available(now time.Time) bool {
	b.refill(now)
	return b.spent+1 <= checkBurst
}

// handleDeferred handles each peer's deferred announce once its budget
// allows.
func (t *Tree) handleDeferred(now time.Time) {
	for _, a := range t.order {
		ps := t.peers[a]
		if ps == nil || len(ps.deferred) == 0 || !ps.checks.available(now) {
			continue
		}
		msg := ps.deferred
		ps.deferred = nil
		if err := t.HandleAnnounce(now, a, msg); err != nil {
			t.log.Debug("deferred TreeAnnounce rejected", "from", a.Short(), "error", err)
		}
	}
}

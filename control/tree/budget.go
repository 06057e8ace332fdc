package tree

import (
	"time"

	"github.com/fips-go/fips/control/ratelimit"
)

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

// checkBudget is each peer's token bucket of signature checks (a
// peerState's checks, full as the zero value).
var checkBudget = ratelimit.PerSecond(checkBurst, checkRate)

// handleDeferred handles each peer's deferred announce once its budget
// allows.
func (t *Tree) handleDeferred(now time.Time) {
	for _, a := range t.order {
		ps := t.peers[a]
		if ps == nil || len(ps.deferred) == 0 || !ps.checks.Ready(now, checkBudget) {
			continue
		}
		msg := ps.deferred
		ps.deferred = nil
		if err := t.HandleAnnounce(now, a, msg); err != nil {
			t.log.Debug("deferred TreeAnnounce rejected", "from", a.Short(), "error", err)
		}
	}
}

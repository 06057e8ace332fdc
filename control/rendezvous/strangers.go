package rendezvous

import (
	"sync"
	"time"

	"github.com/fips-go/fips/control/ratelimit"
)

// A stranger is a sender of a traversal offer that is neither one of the
// node's configured peers, nor an open-discovery peer it has linked to,
// nor a peer it is initiating to. Upstream answers
// anyone's offer, and an npub costs nothing, so an unbounded answer would
// let anyone make the node probe addresses of its choice. Strangers are
// still answered (open discovery from an upstream node needs it), within
// these bounds.
const (
	// StrangerOfferBurst and StrangerOfferEveryMs are the token bucket
	// shared by every stranger: at most this many offers at once, one
	// more per interval.
	StrangerOfferBurst   = 4
	StrangerOfferEveryMs = 15_000
	// StrangerAuthorIntervalMs is the least time between two admitted
	// offers of one stranger.
	StrangerAuthorIntervalMs = 20_000
	// strangerAuthorsMax bounds the per-author table (the bucket admits
	// far fewer authors per interval; this is a backstop).
	strangerAuthorsMax = 1024
	// MaxStrangerPunchTargets caps the addresses probed for a stranger:
	// upstream's plan puts the reflexive pairing first and the same-/24
	// LAN pairings next.
	MaxStrangerPunchTargets = 2
)

// StrangerGate admits strangers' offers: per author, globally by rate,
// and to at most half the concurrent offer slots, so strangers can never
// hold every slot a configured peer's offer needs. Safe for concurrent
// use.
type StrangerGate struct {
	mu      sync.Mutex
	offers  ratelimit.Bucket         // shared by every stranger
	authors *ratelimit.Keyed[string] // one offer per author per interval
	active  int
	maxAct  int
	// RefusedRate, RefusedAuthor and RefusedSlots count offers refused
	// by the shared rate, the per-author interval (or a full author
	// table) and the concurrency share.
	RefusedRate, RefusedAuthor, RefusedSlots uint64
}

var strangerOffers = ratelimit.Every(StrangerOfferBurst, StrangerOfferEveryMs*time.Millisecond)

// NewStrangerGate makes a gate letting strangers hold at most half of
// maxIncoming concurrent offers (at least one).
func NewStrangerGate(maxIncoming int) *StrangerGate {
	return &StrangerGate{
		authors: ratelimit.NewKeyed[string](ratelimit.KeyedConfig{
			Rates:    []ratelimit.Rate{ratelimit.Every(1, StrangerAuthorIntervalMs*time.Millisecond)},
			Max:      strangerAuthorsMax,
			WhenFull: ratelimit.Refuse, // after forgetting the authors past their interval
			Forget:   ratelimit.Refilled,
		}),
		maxAct: max(maxIncoming/2, 1),
	}
}

// Acquire admits one offer from author at nowMs (Unix milliseconds); on
// true the caller must Release when its answer and punch are over.
func (g *StrangerGate) Acquire(author string, nowMs uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.UnixMilli(int64(nowMs))
	if !g.authors.Ready(now, author) {
		g.RefusedAuthor++
		return false
	}
	if g.active >= g.maxAct {
		g.RefusedSlots++
		return false
	}
	if !g.offers.Ready(now, strangerOffers) {
		g.RefusedRate++
		return false
	}
	if g.authors.Take(now, author) != ratelimit.Admitted {
		g.RefusedAuthor++
		return false
	}
	g.offers.Take(now, strangerOffers)
	g.active++
	return true
}

// Release ends an admitted offer.
func (g *StrangerGate) Release() {
	g.mu.Lock()
	g.active--
	g.mu.Unlock()
}

// Counts reads the refusal counters.
func (g *StrangerGate) Counts() (rate, author, slots uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.RefusedRate, g.RefusedAuthor, g.RefusedSlots
}

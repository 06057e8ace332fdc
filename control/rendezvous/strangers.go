package rendezvous

import "sync"

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
	mu       sync.Mutex
	tokens   float64
	lastMs   uint64
	authors  map[string]uint64 // author → when its last offer was admitted
	active   int
	maxAct   int
	observed bool
	// RefusedRate, RefusedAuthor and RefusedSlots count offers refused
	// by the shared rate, the per-author interval (or a full author
	// table) and the concurrency share.
	RefusedRate, RefusedAuthor, RefusedSlots uint64
}

// NewStrangerGate makes a gate letting strangers hold at most half of
// maxIncoming concurrent offers (at least one).
func NewStrangerGate(maxIncoming int) *StrangerGate {
	return &StrangerGate{authors: map[string]uint64{}, maxAct: max(maxIncoming/2, 1)}
}

// Acquire admits one offer from author at nowMs; on true the caller must
// Release when its answer and punch are over.
func (g *StrangerGate) Acquire(author string, nowMs uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.observed {
		g.tokens, g.lastMs, g.observed = StrangerOfferBurst, nowMs, true
	}
	if nowMs > g.lastMs {
		g.tokens = min(g.tokens+float64(nowMs-g.lastMs)/StrangerOfferEveryMs, StrangerOfferBurst)
		g.lastMs = nowMs
	}
	if last, ok := g.authors[author]; ok && nowMs < last+StrangerAuthorIntervalMs {
		g.RefusedAuthor++
		return false
	}
	if g.active >= g.maxAct {
		g.RefusedSlots++
		return false
	}
	if g.tokens < 1 {
		g.RefusedRate++
		return false
	}
	if len(g.authors) >= strangerAuthorsMax {
		for a, last := range g.authors {
			if nowMs >= last+StrangerAuthorIntervalMs {
				delete(g.authors, a)
			}
		}
		if len(g.authors) >= strangerAuthorsMax {
			g.RefusedAuthor++
			return false
		}
	}
	g.tokens--
	g.authors[author] = nowMs
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

package route

import (
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ratelimit"
)

// Bounds on what one peer's lookup messages may cost this node. Ours:
// upstream has neither.
//
// The request-id table is shared by every peer, so upstream's rule —
// refuse new ids while it is full — let one peer sending fresh ids stop
// all lookups through the node. Here a full table makes room for a peer
// holding fewer ids than the peer holding the most, by dropping the
// latter's oldest: a flooder only displaces its own.
//
// A LookupRequest naming us costs a Schnorr signature, a LookupResponse
// a signature check: roughly a hundred times what a peer spends sending
// either. Each peer gets proofBurst of them, refilled at proofRate a
// second, for requests naming us and for responses to no pending lookup
// (a genuine neighbour forwards requests for us at most one per
// forward_min_interval, 2 s, and answers our own lookups, which are
// checked outside the budget). Responses to a pending lookup are always
// checked, up to maxBadProofs failures per attempt.
const (
	proofBurst      = 32
	proofRate       = 8 // per second
	maxBadProofs    = 4
	maxProofBuckets = 4096
)

// peerRecent is one peer's remembered request ids, oldest first; refs
// whose entry has gone (purged, evicted, replaced) are skipped lazily.
type peerRecent struct {
	refs []recentRef
	n    int // live entries
}

type recentRef struct {
	id uint64
	ts int64
}

func (r *Router) addRecent(id uint64, from identity.NodeAddr, ts int64) {
	r.recent[id] = &recentRequest{from: from, ts: ts}
	r.recentOrder = append(r.recentOrder, id)
	pr := r.recentBy[from]
	if pr == nil {
		pr = &peerRecent{}
		r.recentBy[from] = pr
	}
	pr.refs = append(pr.refs, recentRef{id, ts})
	pr.n++
}

func (r *Router) dropRecent(id uint64) {
	e, ok := r.recent[id]
	if !ok {
		return
	}
	delete(r.recent, id)
	if pr := r.recentBy[e.from]; pr != nil {
		pr.n--
		r.trimRecent(e.from, pr)
	}
}

// trimRecent drops the refs at the front of pr that name no live entry.
func (r *Router) trimRecent(from identity.NodeAddr, pr *peerRecent) {
	if pr.n <= 0 {
		delete(r.recentBy, from)
		return
	}
	for len(pr.refs) > 0 {
		e, ok := r.recent[pr.refs[0].id]
		if ok && e.from == from && e.ts == pr.refs[0].ts {
			break
		}
		pr.refs = pr.refs[1:]
	}
}

// makeRecentRoom drops the oldest id of the peer holding the most when
// from holds fewer, and reports whether it did.
func (r *Router) makeRecentRoom(from identity.NodeAddr) bool {
	var top identity.NodeAddr
	var tp *peerRecent
	for a, pr := range r.recentBy {
		if tp == nil || pr.n > tp.n || (pr.n == tp.n && a.Less(top)) {
			top, tp = a, pr
		}
	}
	mine := 0
	if pr := r.recentBy[from]; pr != nil {
		mine = pr.n
	}
	if tp == nil || top == from || mine >= tp.n || len(tp.refs) == 0 {
		return false
	}
	r.dropRecent(tp.refs[0].id)
	r.stats.Limits.RecentEvictedFairShare++
	return true
}

// newProofBuckets makes the per-peer budgets of signatures and signature
// checks, at most maxProofBuckets of them: a new peer finding the table
// full is refused (ProofBucketsFull) unless a budget that has refilled can
// be forgotten (a new one starts full).
func newProofBuckets() *ratelimit.Keyed[identity.NodeAddr] {
	return ratelimit.NewKeyed[identity.NodeAddr](ratelimit.KeyedConfig{
		Rates:    []ratelimit.Rate{ratelimit.PerSecond(proofBurst, proofRate)},
		Max:      maxProofBuckets,
		WhenFull: ratelimit.Refuse,
		Forget:   ratelimit.Refilled,
	})
}

// takeProof draws one unit of proof work from from's budget.
func (r *Router) takeProof(from identity.NodeAddr, now int64) bool {
	switch r.proofs.Take(msTime(now), from) {
	case ratelimit.NoRoom:
		r.stats.Limits.ProofBucketsFull++
		return false
	case ratelimit.Limited:
		r.stats.Limits.ProofsRateLimited++
		return false
	}
	return true
}

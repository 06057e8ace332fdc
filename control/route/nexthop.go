package route

import (
	"time"

	"github.com/fips-go/fips/control/identity"
)

// FindNextHop chooses the peer to send a datagram for dest through. Steps
// 1–3 are common to both rules (Config.NextHop):
//
//  1. dest is us: no next hop (local delivery);
//  2. dest is a sendable peer: that peer;
//  3. dest's coordinates from the cache, refreshing their TTL; a miss is
//     no route (bloom filters are not consulted without coordinates);
//
// With NextHopUpstream, upstream's find_next_hop priority order follows:
//
//  4. among sendable peers whose filter may reach dest and whose tree
//     distance to dest is strictly less than ours, the least
//     (link cost, distance, address);
//  5. greedy tree routing, only within our root: the peer with the least
//     distance to dest (then the smaller address), if strictly closer than
//     us and sendable;
//  6. no route.
//
// With NextHopDistance (the default), one step replaces 4 and 5: among
// sendable peers whose tree distance to dest is strictly less than ours,
// the least (distance, no bloom hit, link cost, address); else no route.
// Both rules only ever name a peer strictly closer to dest in the tree
// than we are, so a mesh mixing them stays loop-free (docs/routing.md).
//
// Route reports the step (for NextHopDistance: StepBloom when the chosen
// peer's filter holds dest, else StepTree) and upstream's route class of
// the choice.
func (r *Router) FindNextHop(now time.Time, dest identity.NodeAddr) (identity.NodeAddr, Route, bool) {
	n := ms(now)
	p, step, ok := r.findNextHop(n, dest)
	if !ok {
		return identity.NodeAddr{}, Route{}, false
	}
	return p, Route{Step: step, Class: r.classify(n, dest, p)}, true
}

func (r *Router) findNextHop(now int64, dest identity.NodeAddr) (identity.NodeAddr, Step, bool) {
	var none identity.NodeAddr
	if dest == r.self {
		return none, 0, false
	}
	if r.links.CanSend(dest) {
		return dest, StepDirectPeer, true
	}
	destCoords, ok := r.cache.getAndTouch(now, dest)
	if !ok {
		return none, 0, false
	}
	mine := r.topo.Coords()
	peers := r.links.Peers()
	if r.cfg.NextHop == NextHopDistance {
		return r.closestInTree(peers, dest, destCoords, mine)
	}
	if p, ok := r.bestBloomCandidate(peers, dest, destCoords, mine); ok {
		return p, StepBloom, true
	}
	if p, ok := r.greedyTree(peers, destCoords, mine); ok {
		return p, StepTree, true
	}
	return none, 0, false
}

// bestBloomCandidate is upstream's select_best_candidate.
func (r *Router) bestBloomCandidate(peers []identity.NodeAddr, dest identity.NodeAddr, destCoords, mine []identity.NodeAddr) (identity.NodeAddr, bool) {
	myDist := Distance(mine, destCoords)
	var (
		best     identity.NodeAddr
		bestCost float64
		bestDist int
		found    bool
	)
	for _, p := range peers {
		if !r.flt.MayReach(p, dest) || !r.links.CanSend(p) || !r.transitPeer(p) {
			continue
		}
		cost := r.links.LinkCost(p)
		pc, _ := r.topo.PeerCoords(p)
		dist := Distance(pc, destCoords) // MaxInt without coordinates
		if dist >= myDist {
			continue
		}
		if !found || cost < bestCost ||
			(cost == bestCost && dist < bestDist) ||
			(cost == bestCost && dist == bestDist && p.Less(best)) {
			best, bestCost, bestDist, found = p, cost, dist, true
		}
	}
	return best, found
}

// closestInTree is the NextHopDistance rule: the sendable peer with the
// least tree distance to dest, strictly less than ours; ties go to a
// bloom hit, then the cheaper link, then the smaller address.
func (r *Router) closestInTree(peers []identity.NodeAddr, dest identity.NodeAddr, destCoords, mine []identity.NodeAddr) (identity.NodeAddr, Step, bool) {
	myDist := Distance(mine, destCoords)
	var (
		best     identity.NodeAddr
		bestDist int
		bestHit  bool
		bestCost float64
		found    bool
	)
	for _, p := range peers {
		pc, ok := r.topo.PeerCoords(p)
		if !ok {
			continue
		}
		dist := Distance(pc, destCoords) // MaxInt on another root
		if dist >= myDist || (found && dist > bestDist) || !r.links.CanSend(p) || !r.transitPeer(p) {
			continue
		}
		hit := r.flt.MayReach(p, dest)
		cost := r.links.LinkCost(p)
		if found && dist == bestDist {
			if bestHit && !hit {
				continue
			}
			// Peers come in ascending address order: on a full tie the
			// smaller address, seen first, stays.
			if hit == bestHit && cost >= bestCost {
				continue
			}
		}
		best, bestDist, bestHit, bestCost, found = p, dist, hit, cost, true
	}
	if !found {
		return identity.NodeAddr{}, 0, false
	}
	if bestHit {
		return best, StepBloom, true
	}
	return best, StepTree, true
}

// greedyTree is upstream's TreeState::find_next_hop followed by the
// can_send check on its single winner.
func (r *Router) greedyTree(peers []identity.NodeAddr, destCoords, mine []identity.NodeAddr) (identity.NodeAddr, bool) {
	myRoot, ok1 := rootOf(mine)
	destRoot, ok2 := rootOf(destCoords)
	if !ok1 || !ok2 || myRoot != destRoot {
		return identity.NodeAddr{}, false
	}
	myDist := Distance(mine, destCoords)
	var (
		best     identity.NodeAddr
		bestDist int
		found    bool
	)
	for _, p := range peers {
		pc, ok := r.topo.PeerCoords(p)
		if !ok || !r.transitPeer(p) {
			continue
		}
		d := Distance(pc, destCoords)
		if !found || d < bestDist || (d == bestDist && p.Less(best)) {
			best, bestDist, found = p, d, true
		}
	}
	if !found || bestDist >= myDist || !r.links.CanSend(best) {
		return identity.NodeAddr{}, false
	}
	return best, true
}

// classify is upstream's Node::classify_forward: destination coordinates
// read without touching the cache.
func (r *Router) classify(now int64, dest, next identity.NodeAddr) RouteClass {
	destCoords, _ := r.cache.get(now, dest)
	pc, _ := r.topo.PeerCoords(next)
	return Classify(dest, next, r.self, r.topo.Coords(), destCoords, pc)
}

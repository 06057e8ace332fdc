package route

import (
	"math"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

func TestDistance(t *testing.T) {
	r, a, b, c, d := addr(1), addr(2), addr(3), addr(4), addr(5)
	cases := []struct {
		x, y []identity.NodeAddr
		want int
	}{
		{path(r), path(r), 0},
		{path(a, r), path(r), 1},
		{path(a, r), path(b, r), 2},
		{path(c, a, r), path(d, a, r), 2},
		{path(c, a, r), path(b, r), 3},
		{path(c, a, r), path(a, r), 1},
		{path(a, r), path(a, b), math.MaxInt}, // different roots
		{nil, path(r), math.MaxInt},
	}
	for _, tc := range cases {
		if got := Distance(tc.x, tc.y); got != tc.want {
			t.Errorf("Distance(%v, %v) = %d, want %d", tc.x, tc.y, got, tc.want)
		}
		if got := Distance(tc.y, tc.x); got != tc.want {
			t.Errorf("Distance is not symmetric for %v, %v", tc.x, tc.y)
		}
	}
}

func TestRoutingLocalDelivery(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	if _, _, ok := f.r.FindNextHop(t0, f.self); ok {
		t.Fatal("next hop for ourselves")
	}
}

func TestRoutingDirectPeer(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p := addr(0x10)
	f.links.add(p)
	got, rt, ok := f.r.FindNextHop(t0, p)
	if !ok || got != p || rt.Step != StepDirectPeer || rt.Class != ClassDirectPeer {
		t.Fatalf("got %v %v %v", got, rt, ok)
	}
	// A peer that cannot send falls through to the cache, which is empty.
	f.links.peers[p].blocked = true
	if _, _, ok := f.r.FindNextHop(t0, p); ok {
		t.Fatal("unsendable direct peer chosen")
	}
}

func TestRoutingUnknownDestination(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p := addr(0x10)
	f.child(p)
	dest := addr(0x99)
	f.flt.add(p, dest) // a bloom hit does not help without coordinates
	if _, _, ok := f.r.FindNextHop(t0, dest); ok {
		t.Fatal("routed without cached coordinates")
	}
}

func TestRoutingBloomHit(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p1, p2 := addr(0x10), addr(0x20)
	f.child(p1)
	f.child(p2)
	dest := addr(0x99)
	f.r.Cache().Insert(t0, dest, path(dest, p1, f.self), 0)
	f.flt.add(p1, dest)
	got, rt, ok := f.r.FindNextHop(t0, dest)
	if !ok || got != p1 || rt.Step != StepBloom || rt.Class != ClassTreeDown {
		t.Fatalf("got %v %v %v", got, rt, ok)
	}
}

func TestRoutingBloomMultipleHitsDistanceFilter(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	ps := []identity.NodeAddr{addr(0x30), addr(0x10), addr(0x20)}
	for _, p := range ps {
		f.child(p)
	}
	dest := addr(0x99)
	f.r.Cache().Insert(t0, dest, path(dest, ps[0], f.self), 0)
	for _, p := range ps {
		f.flt.add(p, dest)
	}
	// We are at distance 2; only ps[0] (distance 1) is strictly closer;
	// the others (distance 3) are excluded even though they sort first.
	if got, _, _ := f.r.FindNextHop(t0, dest); got != ps[0] {
		t.Fatalf("got %v, want %v", got, ps[0])
	}
}

// upstreamConfig is DefaultConfig with upstream's next-hop order.
func upstreamConfig() Config {
	c := DefaultConfig()
	c.NextHop = NextHopUpstream
	return c
}

// Upstream's order: link cost is the primary key, then distance, then
// address.
func TestRoutingBloomRankingCostDistanceAddress(t *testing.T) {
	// We are the root; dest sits under m under a.
	a, m, dest := addr(0x40), addr(0x70), addr(0x99)
	setup := func() *fixture {
		f := newFixture(t, upstreamConfig())
		f.r.Cache().Insert(t0, dest, path(dest, m, a, f.self), 0) // our distance 3
		return f
	}
	peer := func(f *fixture, p identity.NodeAddr, cost float64, coords ...identity.NodeAddr) {
		f.links.add(p).cost = cost
		f.topo.peerCoords[p] = append(path(p), coords...)
		f.flt.add(p, dest)
	}

	f := setup()
	far, near := addr(0x10), addr(0x20)
	peer(f, far, 1.0, f.self)              // distance 4: not closer
	peer(f, a, 1.0, f.self)                // distance 2
	peer(f, near, 2.5, dest, m, a, f.self) // distance 1
	if got, _, _ := f.r.FindNextHop(t0, dest); got != a {
		t.Fatalf("cheaper but farther peer not preferred: got %v", got)
	}
	f.links.peers[near].cost = 1.0
	if got, _, _ := f.r.FindNextHop(t0, dest); got != near {
		t.Fatalf("equal cost: closer peer not preferred: got %v", got)
	}

	f = setup()
	x, y := addr(0x60), addr(0x50)
	peer(f, x, 1.0, m, a, f.self) // distance 2
	peer(f, y, 1.0, m, a, f.self) // distance 2
	if got, _, _ := f.r.FindNextHop(t0, dest); got != y {
		t.Fatalf("tie on cost and distance: got %v, want the smaller %v", got, y)
	}
	f.links.peers[y].cost = 1.5
	if got, _, _ := f.r.FindNextHop(t0, dest); got != x {
		t.Fatalf("got %v, want %v", got, x)
	}
}

// A bloom hit that is not strictly closer falls through to the tree.
func TestRoutingBloomHitNotCloserFallsThroughToTree(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	treePeer, bloomPeer, dest := addr(0x10), addr(0x20), addr(0x99)
	f.child(treePeer)
	f.child(bloomPeer)
	f.r.Cache().Insert(t0, dest, path(dest, treePeer, f.self), 0)
	f.flt.add(bloomPeer, dest) // distance 3 ≥ our 2
	got, rt, ok := f.r.FindNextHop(t0, dest)
	if !ok || got != treePeer || rt.Step != StepTree {
		t.Fatalf("got %v %v %v", got, rt, ok)
	}
}

// A candidate at exactly our distance is not strictly closer.
func TestRoutingEqualDistanceNotCloser(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	root, parent, sib, dest := addr(0x01), addr(0x02), addr(0x30), addr(0x99)
	f.topo.coords = path(f.self, parent, root)
	f.links.add(sib)
	f.topo.peerCoords[sib] = path(sib, parent, root) // sibling: same distance as us
	f.r.Cache().Insert(t0, dest, path(dest, root), 0)
	f.flt.add(sib, dest)
	if got, _, ok := f.r.FindNextHop(t0, dest); ok {
		t.Fatalf("equal-distance peer chosen: %v", got)
	}
}

func TestRoutingUnsendableBloomCandidateSkipped(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	good, bad, mid, dest := addr(0x20), addr(0x10), addr(0x50), addr(0x99)
	f.r.Cache().Insert(t0, dest, path(dest, mid, f.self), 0) // our distance 2
	for _, p := range []identity.NodeAddr{good, bad} {
		f.links.add(p)
		f.topo.peerCoords[p] = path(p, dest, mid, f.self) // distance 1
		f.flt.add(p, dest)
	}
	f.links.peers[bad].blocked = true
	if got, rt, _ := f.r.FindNextHop(t0, dest); got != good || rt.Step != StepBloom {
		t.Fatalf("got %v %v", got, rt)
	}
}

func TestRoutingPeerWithoutCoordsNeverChosen(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, dest := addr(0x10), addr(0x99)
	f.links.add(p) // no tree coordinates
	f.flt.add(p, dest)
	f.r.Cache().Insert(t0, dest, path(dest, p, f.self), 0)
	if got, _, ok := f.r.FindNextHop(t0, dest); ok {
		t.Fatalf("peer without coordinates chosen: %v", got)
	}
}

func TestRoutingTreeFallback(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, dest := addr(0x10), addr(0x99)
	f.child(p)
	f.r.Cache().Insert(t0, dest, path(dest, p, f.self), 0)
	got, rt, ok := f.r.FindNextHop(t0, dest)
	if !ok || got != p || rt.Step != StepTree || rt.Class != ClassTreeDown {
		t.Fatalf("got %v %v %v", got, rt, ok)
	}
}

func TestRoutingTreeFallbackTieSmallerAddress(t *testing.T) {
	f := newFixture(t, upstreamConfig())
	root, parent, dest := addr(0x01), addr(0x05), addr(0x99)
	a, b := addr(0x30), addr(0x20)
	f.topo.coords = path(f.self, parent, root)
	f.links.add(a)
	f.links.add(b)
	f.topo.peerCoords[a] = path(a, root) // both distance 1 from dest (dest under root)
	f.topo.peerCoords[b] = path(b, root)
	f.r.Cache().Insert(t0, dest, path(dest, root), 0)
	if got, _, _ := f.r.FindNextHop(t0, dest); got != b {
		t.Fatalf("got %v, want the smaller %v", got, b)
	}
	// The single winner cannot send: no second choice.
	f.links.peers[b].blocked = true
	if got, _, ok := f.r.FindNextHop(t0, dest); ok {
		t.Fatalf("tree fallback took the runner-up %v", got)
	}
}

func TestRoutingDifferentRootNoTreeFallback(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, dest, otherRoot := addr(0x10), addr(0x99), addr(0x00)
	f.child(p)
	f.r.Cache().Insert(t0, dest, path(dest, otherRoot), 0)
	if _, _, ok := f.r.FindNextHop(t0, dest); ok {
		t.Fatal("tree fallback across roots")
	}
	// A bloom hit on a peer in dest's tree still counts (our distance is
	// infinite, the peer's finite), as upstream.
	q := addr(0x20)
	f.links.add(q)
	f.topo.peerCoords[q] = path(q, otherRoot)
	f.flt.add(q, dest)
	if got, rt, ok := f.r.FindNextHop(t0, dest); !ok || got != q || rt.Step != StepBloom {
		t.Fatalf("got %v %v %v", got, rt, ok)
	}
}

func TestRoutingRefreshesCoordCacheTTL(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CoordCacheTTL = 10 * time.Second
	f := newFixture(t, cfg)
	p, dest := addr(0x10), addr(0x99)
	f.child(p)
	f.r.Cache().Insert(t0, dest, path(dest, p, f.self), 0)
	e1, _ := f.r.Cache().Entry(dest)
	later := t0.Add(9 * time.Second)
	if _, _, ok := f.r.FindNextHop(later, dest); !ok {
		t.Fatal("no route")
	}
	e2, _ := f.r.Cache().Entry(dest)
	if e2.ExpiresMs != e1.ExpiresMs+9000 || e2.LastUsedMs != ms(later) {
		t.Fatalf("TTL not refreshed: %+v → %+v", e1, e2)
	}
	// Expired at the moment of use: removed, no route.
	if _, _, ok := f.r.FindNextHop(later.Add(10*time.Second+time.Millisecond), dest); ok {
		t.Fatal("routed on expired coordinates")
	}
	if f.r.Cache().Len() != 0 {
		t.Fatal("expired entry not removed by the routing read")
	}
}

func TestRoutingDiscoveryCoordCache(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, dest := addr(0x10), addr(0x99)
	f.child(p)
	f.flt.add(p, dest)
	if _, _, ok := f.r.FindNextHop(t0, dest); ok {
		t.Fatal("route before coordinates")
	}
	f.r.Cache().Insert(t0, dest, path(dest, p, f.self), 1280)
	if got, _, _ := f.r.FindNextHop(t0, dest); got != p {
		t.Fatalf("got %v", got)
	}
}

func TestClassify(t *testing.T) {
	me, root, parent, child, lateral, sibParent := addr(0x50), addr(0x01), addr(0x0A), addr(0x14), addr(0x1E), addr(0x02)
	dest := addr(0x3C)
	cases := []struct {
		name               string
		next               identity.NodeAddr
		mine, destC, peerC []identity.NodeAddr
		want               RouteClass
	}{
		{"tree_up", parent, path(me, parent, root), path(dest, root), path(parent, root), ClassTreeUp},
		{"tree_down", child, path(me, root), path(dest, child, me, root), path(child, me, root), ClassTreeDown},
		{"tree_down_cross", child, path(me, root), path(dest, root), path(child, me, root), ClassTreeDownCross},
		{"crosslink_descend", lateral, path(me, root), path(dest, lateral, sibParent, root), path(lateral, sibParent, root), ClassCrosslinkDescend},
		{"crosslink_ascend", lateral, path(me, root), path(dest, root), path(lateral, sibParent, root), ClassCrosslinkAscend},
		{"no_dest_coords", lateral, path(me, root), nil, path(lateral, sibParent, root), ClassCrosslinkAscend},
		{"direct_peer", dest, path(me, root), nil, nil, ClassDirectPeer},
	}
	for _, tc := range cases {
		if got := Classify(dest, tc.next, me, tc.mine, tc.destC, tc.peerC); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if tc.want.String() != tc.name && tc.name != "no_dest_coords" {
			t.Errorf("%s: String() = %q", tc.name, tc.want.String())
		}
	}
}

// The distance rule: tree distance is the primary key, then a bloom hit,
// then link cost, then address; an unsendable winner yields the
// runner-up.
func TestRoutingDistanceRanking(t *testing.T) {
	// We are the root; dest sits under m under a: our distance 3.
	a, m, dest := addr(0x40), addr(0x70), addr(0x99)
	f := newFixture(t, DefaultConfig())
	f.r.Cache().Insert(t0, dest, path(dest, m, a, f.self), 0)
	peer := func(p identity.NodeAddr, cost float64, hit bool, coords ...identity.NodeAddr) {
		f.links.add(p).cost = cost
		f.topo.peerCoords[p] = append(path(p), coords...)
		if hit {
			f.flt.add(p, dest)
		}
	}
	far, near, x, y := addr(0x10), addr(0x20), addr(0x60), addr(0x50)
	peer(far, 1.0, true, f.self)               // distance 4: not closer
	peer(a, 1.0, true, f.self)                 // distance 2
	peer(near, 2.5, false, dest, m, a, f.self) // distance 1, dear, no bloom hit
	got, rt, ok := f.r.FindNextHop(t0, dest)
	if !ok || got != near || rt.Step != StepTree {
		t.Fatalf("closest peer not preferred: got %v %v %v", got, rt, ok)
	}
	f.links.peers[near].blocked = true
	if got, rt, _ := f.r.FindNextHop(t0, dest); got != a || rt.Step != StepBloom {
		t.Fatalf("unsendable winner: got %v %v, want the runner-up %v", got, rt, a)
	}
	delete(f.links.peers, near)
	delete(f.topo.peerCoords, near)

	// Equal distance 2: a bloom hit beats a cheaper link without one.
	peer(x, 0.5, false, m, a, f.self)
	if got, _, _ := f.r.FindNextHop(t0, dest); got != a {
		t.Fatalf("bloom hit not preferred on a distance tie: got %v", got)
	}
	f.flt.add(x, dest) // now both hit: the cheaper link wins
	if got, _, _ := f.r.FindNextHop(t0, dest); got != x {
		t.Fatalf("cheaper link not preferred: got %v", got)
	}
	peer(y, 0.5, true, m, a, f.self) // full tie with x: the smaller address
	if got, _, _ := f.r.FindNextHop(t0, dest); got != y {
		t.Fatalf("full tie: got %v, want the smaller %v", got, y)
	}
}

// Both rules only ever name a peer strictly closer to the destination in
// the tree than we are: random coordinates, peers, filters and costs.
func TestRoutingBothRulesStrictlyDecreaseDistance(t *testing.T) {
	rnd := newSeeded(77)
	b := make([]byte, 8)
	next := func(n int) int { rnd.Read(b); return int(b[0]) % n }
	for _, rule := range []NextHopRule{NextHopDistance, NextHopUpstream} {
		chosen := 0
		for trial := range 2000 {
			cfg := DefaultConfig()
			cfg.NextHop = rule
			f := newFixture(t, cfg)
			// A small universe of addresses; the root is the smallest.
			root := addr(0x01)
			chain := func() []identity.NodeAddr {
				c := []identity.NodeAddr{root}
				for range next(4) {
					c = append([]identity.NodeAddr{addr(byte(0x02 + next(12)))}, c...)
				}
				return c
			}
			f.topo.coords = append([]identity.NodeAddr{f.self}, chain()...)
			dest := addr(0xf0)
			destCoords := append([]identity.NodeAddr{dest}, chain()...)
			f.r.Cache().Insert(t0, dest, destCoords, 0)
			for i := range 1 + next(5) {
				p := addr(byte(0x20 + i))
				f.links.add(p).cost = 1 + float64(next(3))
				f.topo.peerCoords[p] = append([]identity.NodeAddr{p}, chain()...)
				if next(2) == 0 {
					f.flt.add(p, dest)
				}
			}
			got, _, ok := f.r.FindNextHop(t0, dest)
			if !ok {
				continue
			}
			chosen++
			if d, mine := Distance(f.topo.peerCoords[got], destCoords), Distance(f.topo.coords, destCoords); d >= mine {
				t.Fatalf("%v, trial %d: chose %v at distance %d, ours %d", rule, trial, got, d, mine)
			}
		}
		if chosen < 500 {
			t.Fatalf("%v: only %d of 2000 trials routed; the test does not exercise the rule", rule, chosen)
		}
	}
}

package mesh

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/route"
)

// walk follows next hops from src towards dst, as a packet would: each
// node on the way has dst's coordinates in its cache (a SessionSetup or a
// CP-flagged header warms transit caches the same way). It fails on a
// loop, a missing hop or more than 64 hops.
func walk(net *Net, byAddr map[identity.NodeAddr]*Node, src, dst *Node) (int, string) {
	coords := dst.Core.Tree().Coords()
	cur := src
	seen := map[int]bool{}
	for hops := 0; hops <= 64; hops++ {
		if cur == dst {
			return hops, ""
		}
		if seen[cur.Index] {
			return hops, "loop"
		}
		seen[cur.Index] = true
		cur.Core.Router().Cache().Insert(net.Now(), dst.ID.NodeAddr(), coords, 0)
		next, _, ok := cur.Core.Router().FindNextHop(net.Now(), dst.ID.NodeAddr())
		if !ok {
			return hops, "no next hop"
		}
		cur = byAddr[next]
	}
	return 64, "too many hops"
}

// walkAll walks from every node to each of the sampled destinations.
func walkAll(t *testing.T, net *Net, nodes, dests []*Node) (walks, totalHops int) {
	t.Helper()
	byAddr := map[identity.NodeAddr]*Node{}
	for _, nd := range nodes {
		byAddr[nd.ID.NodeAddr()] = nd
	}
	for _, src := range nodes {
		for _, dst := range dests {
			hops, fail := walk(net, byAddr, src, dst)
			if fail != "" {
				t.Fatalf("walk %d→%d failed after %d hops: %s", src.Index, dst.Index, hops, fail)
			}
			walks++
			totalHops += hops
		}
	}
	return walks, totalHops
}

// TestMesh1000RoutesAndReroutes is issue 4's scale acceptance: a
// 1,000-node random mesh converges to one root with consistent
// coordinates; from every node a next-hop walk reaches 200 sampled
// destinations without loops; after 5% of the links fail it reconverges
// and the walks succeed again. (Stretch, lookups, churn and 10,000 nodes
// are testing/sim's, under make sim.)
func TestMesh1000RoutesAndReroutes(t *testing.T) {
	wall := time.Now()
	net := New(Options{Seed: 1000})
	nodes := randomMesh(net, 1000, 5, 1000)
	took, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 10*time.Minute)
	if !ok {
		_, why := converged(nodes)
		t.Fatalf("not converged after %v: %s", took, why)
	}
	// Filters travel a hop per debounce interval: let them settle too.
	net.Run(30 * time.Second)
	t.Logf("1000 nodes, %d links: tree converged in %v simulated (%v wall)", len(net.Links()), took, time.Since(wall).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(9, 9))
	dests := make([]*Node, 200)
	for i := range dests {
		dests[i] = nodes[rng.IntN(len(nodes))]
	}
	w := time.Now()
	walks, hops := walkAll(t, net, nodes, dests)
	t.Logf("%d walks, mean %.2f hops, %v wall", walks, float64(hops)/float64(walks), time.Since(w).Round(time.Millisecond))

	cut := cutLinks(net, nodes, 20)
	w = time.Now()
	took, ok = net.RunUntil(func() bool { ok, _ := converged(nodes); return ok && deadLinksGone(net) }, 10*time.Minute)
	if !ok {
		_, why := converged(nodes)
		t.Fatalf("not reconverged after cutting %d links: %s", cut, why)
	}
	net.Run(30 * time.Second)
	t.Logf("cut %d links: reconverged in %v simulated, %v wall", cut, took, time.Since(w).Round(time.Millisecond))
	walks, hops = walkAll(t, net, nodes, dests)
	t.Logf("after the cut: %d walks, mean %.2f hops", walks, float64(hops)/float64(walks))
}

// cutLinks cuts 1/div of the links at random, keeping the mesh connected.
func cutLinks(net *Net, nodes []*Node, div int) int {
	rng := rand.New(rand.NewPCG(5, 5))
	links := net.Links()
	sortLinks(links)
	cut := 0
	for cut < len(links)/div {
		l := links[rng.IntN(len(links))]
		if !l.Up() {
			continue
		}
		l.SetUp(false)
		if !connected(nodes, net) {
			l.SetUp(true)
			continue
		}
		cut++
	}
	return cut
}

// TestLookupChainAndAcross100: a lookup resolves the target's
// coordinates over a 3-node chain and across a 100-node mesh.
func TestLookupChainAndAcross100(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(net *Net) []*Node
	}{
		{"chain3", func(net *Net) []*Node {
			nodes := net.AddNodes(3)
			net.Connect(nodes[0], nodes[1], 5*time.Millisecond, 0)
			net.Connect(nodes[1], nodes[2], 5*time.Millisecond, 0)
			return nodes
		}},
		{"mesh100", func(net *Net) []*Node { return randomMesh(net, 100, 4, 100) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := New(Options{Seed: 11})
			nodes := tc.build(net)
			if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
				t.Fatal("not converged")
			}
			net.Run(30 * time.Second)
			src, dst := nodes[0], nodes[len(nodes)-1]
			if out := src.Core.StartLookup(net.Now(), dst.ID.PublicKey()); out != route.StartSent {
				t.Fatalf("lookup not sent: %v", out)
			}
			took, ok := net.RunUntil(func() bool { _, done := src.Core.LookupResult(dst.ID.NodeAddr()); return done }, time.Minute)
			ev, _ := src.Core.LookupResult(dst.ID.NodeAddr())
			if !ok || ev.Outcome != route.LookupFound {
				t.Fatalf("lookup: %+v after %v", ev, took)
			}
			want := dst.Core.Tree().Coords()
			if len(ev.Coords) != len(want) || ev.Coords[0] != want[0] {
				t.Errorf("coords %v, want %v", ev.Coords, want)
			}
			if _, ok := src.Core.Router().Cache().Get(net.Now(), dst.ID.NodeAddr()); !ok {
				t.Error("coordinates not cached")
			}
			t.Logf("%s: found in %v simulated", tc.name, took)
		})
	}
}

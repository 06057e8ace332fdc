package tree

import (
	"slices"
	"testing"
	"time"
)

func runTopology(t *testing.T, n int, edges [][2]int, secs int) *simNet {
	t.Helper()
	s := newSimNet(t, n, 1, DefaultConfig())
	for _, e := range edges {
		s.connect(e[0], e[1])
	}
	s.run(secs)
	return s
}

func TestSpanningTreeRing(t *testing.T) {
	s := runTopology(t, 5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}}, 10)
	s.verify()
}

func TestSpanningTreeStar(t *testing.T) {
	s := runTopology(t, 5, [][2]int{{0, 1}, {0, 2}, {0, 3}, {0, 4}}, 10)
	s.verify()
}

func TestSpanningTreeChain(t *testing.T) {
	s := runTopology(t, 5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}}, 10)
	s.verify()
}

func TestSpanningTreeDisconnected(t *testing.T) {
	s := runTopology(t, 6, [][2]int{{0, 1}, {1, 2}, {3, 4}, {4, 5}}, 10)
	if c := s.components(); len(c) != 2 {
		t.Fatalf("components %v", c)
	}
	s.verify()
	if s.nodes[0].tr.Root() == s.nodes[3].tr.Root() {
		t.Fatal("two components share a root")
	}
}

func TestSpanningTreeConvergence100Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("100-node mesh")
	}
	s := runTopology(t, 100, randomEdges(100, 250, 42), 30)
	s.verify()
	if s.minGap < 500*time.Millisecond {
		t.Fatalf("two announces on one link %v apart", s.minGap)
	}
	t.Logf("%d announces", s.sends)
}

// The rate limit holds across a whole convergence: at most one announce
// per directed link per 500 ms, with the rest flushed by the tick.
func TestRateLimitDuringConvergence(t *testing.T) {
	s := runTopology(t, 12, randomEdges(12, 24, 7), 15)
	s.verify()
	if s.minGap < 500*time.Millisecond {
		t.Fatalf("two announces on one link %v apart", s.minGap)
	}
	var limited uint64
	for _, n := range s.nodes {
		limited += n.tr.Stats().RateLimited
	}
	if limited == 0 {
		t.Fatal("convergence never hit the rate limit; the test proves nothing")
	}
}

// Converging with measured links: the tree follows link costs but still
// ends on the global minimum root.
func TestConvergenceWithMeasuredCosts(t *testing.T) {
	s := newSimNet(t, 10, 30, DefaultConfig())
	edges := randomEdges(10, 20, 3)
	for k, e := range edges {
		s.connect(e[0], e[1])
		cost := 1 + float64(k%4)
		s.nodes[e[0]].links[s.nodes[e[1]].addr()] = &simLink{cost: cost, measured: true}
		s.nodes[e[1]].links[s.nodes[e[0]].addr()] = &simLink{cost: cost, measured: true}
	}
	for _, n := range s.nodes {
		for a := range n.links {
			n.tr.FirstRTT(s.now, a)
		}
	}
	s.run(20)
	s.verify()
}

// A partition elects its own minimum root; healing it re-merges on the
// global minimum.
func TestPartitionAndMerge(t *testing.T) {
	s := newSimNet(t, 10, 100, DefaultConfig())
	// Two rings of five joined by one bridge (0-5).
	for i := range 5 {
		s.connect(i, (i+1)%5)
		s.connect(5+i, 5+(i+1)%5)
	}
	s.connect(0, 5)
	s.run(10)
	s.verify()
	global := s.nodes[0].tr.Root()

	s.disconnect(0, 5)
	s.run(15)
	comps := s.components()
	if len(comps) != 2 {
		t.Fatalf("components %v", comps)
	}
	s.verify()
	roots := map[string]bool{}
	for _, n := range s.nodes {
		roots[n.tr.Root().String()] = true
	}
	if len(roots) != 2 {
		t.Fatalf("partition has roots %v", roots)
	}

	s.connect(0, 5)
	s.run(15)
	s.verify()
	for i, n := range s.nodes {
		if n.tr.Root() != global {
			t.Fatalf("node %d root %s after merge, want %s", i, n.tr.Root().Short(), global.Short())
		}
	}
}

// Removing the root's only link in a chain makes the cut-off fragment
// elect its own minimum with every node re-declaring.
func TestChainParentLossCascade(t *testing.T) {
	s := runTopology(t, 6, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}, 10)
	s.verify()
	root := s.nodes[0].tr.Root()
	ri := slices.IndexFunc(s.nodes, func(n *simNode) bool { return n.addr() == root })
	// Cut the root off from whichever side it has a neighbour on.
	switch {
	case ri > 0:
		s.disconnect(ri-1, ri)
	default:
		s.disconnect(0, 1)
	}
	s.run(15)
	s.verify()
	var losses uint64
	for _, n := range s.nodes {
		losses += n.tr.Stats().ParentLosses
	}
	if losses == 0 {
		t.Fatal("no parent loss counted")
	}
}

// With every first announce lost the mesh still converges through the
// echo on worse roots and the periodic re-broadcast.
func TestConvergenceDespiteLostAnnounces(t *testing.T) {
	s := newSimNet(t, 6, 200, DefaultConfig())
	seen := map[[2]string]bool{}
	s.drop = func(d delivery) bool {
		k := [2]string{d.from.String(), d.to.String()}
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	for _, e := range [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}, {1, 4}} {
		s.connect(e[0], e[1])
	}
	s.run(130)
	s.verify()
}

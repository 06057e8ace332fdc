package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func cycle(n int) *Topology {
	t := &Topology{Name: "cycle", N: n}
	for i := range n {
		t.Edges = append(t.Edges, Edge{A: i, B: (i + 1) % n})
	}
	return t
}

// On the 6-cycle the breadth-first tree from 0 is 0-1-2-3 and 0-5-4 (3
// takes 2, the smaller of its two depth-2 neighbours): 3→4 is one hop
// (the destination itself), but from 2 to 4 the shortest path 2-3-4
// first moves away from 4 in the tree (distance 4, then 5), so the
// shortest strictly decreasing path is 2-1-0-5-4, twice as long.
func TestDecreasingHopsOnACycle(t *testing.T) {
	topo := cycle(6)
	adj := graphAdj(topo)
	tr, err := newSpanTree(0, bfsParents(adj, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{-1, 0, 1, 2, 5, 0}; !slices.Equal(tr.parent, want) {
		t.Fatalf("parents %v, want %v", tr.parent, want)
	}
	if d := tr.dist(3, 4); d != 5 {
		t.Errorf("tree distance 3–4 = %d, want 5", d)
	}
	seen := []int{-1, -1, -1, -1, -1, -1}
	for _, c := range []struct{ src, dst, want int }{{3, 4, 1}, {4, 3, 1}, {2, 4, 4}, {1, 4, 3}, {0, 3, 3}, {2, 2, 0}} {
		if got := decreasingHops(adj, tr, c.src, c.dst, seen); got != c.want {
			t.Errorf("decreasing hops %d→%d = %d, want %d", c.src, c.dst, got, c.want)
		}
		if got := greedyHops(adj, tr, c.src, c.dst); got != c.want {
			t.Errorf("greedy hops %d→%d = %d, want %d", c.src, c.dst, got, c.want)
		}
	}
	for i, s := range seen {
		if s != -1 {
			t.Fatalf("scratch not reset at %d: %d", i, s)
		}
	}
}

func TestNewSpanTreeRejectsACycle(t *testing.T) {
	if _, err := newSpanTree(0, []int{-1, 2, 1}); err == nil {
		t.Fatal("parents 1→2→1 accepted")
	}
}

// On a random mesh, for every sampled pair: the bound is at least the
// shortest path and at most what the distance rule walks (itself a
// strictly decreasing path), and the search returns a spanning tree of
// the graph whose bound on its own training pairs is no worse than the
// start's.
func TestBoundBetweenShortestAndGreedy(t *testing.T) {
	topo, err := Generate(TopoRandom, 200, 4)
	if err != nil {
		t.Fatal(err)
	}
	adj := graphAdj(topo)
	r := rand.New(rand.NewPCG(1, 2))
	tr, err := newSpanTree(7, bfsParents(adj, 7))
	if err != nil {
		t.Fatal(err)
	}
	p := samplePairs(adj, 200, r)
	seen := make([]int, topo.N)
	for i := range seen {
		seen[i] = -1
	}
	for i, pr := range p.pairs {
		b := decreasingHops(adj, tr, pr[0], pr[1], seen)
		g := greedyHops(adj, tr, pr[0], pr[1])
		if b < p.sp[i] || b > g || b > tr.dist(pr[0], pr[1]) {
			t.Fatalf("%d→%d: shortest %d, bound %d, greedy %d, tree distance %d", pr[0], pr[1], p.sp[i], b, g, tr.dist(pr[0], pr[1]))
		}
	}
	start := meanBound(adj, tr, p, seen)
	st, err := searchTree(adj, 7, bfsParents(adj, 7), 300, p, r)
	if err != nil {
		t.Fatal(err)
	}
	for i, par := range st.parent {
		if i == 7 {
			continue
		}
		if !slices.Contains(adj[i], par) {
			t.Fatalf("searched tree: parent %d of %d is not a neighbour", par, i)
		}
	}
	if got := meanBound(adj, st, p, seen); got > start {
		t.Errorf("search raised its own objective: %.4f → %.4f", start, got)
	}
	study, err := StudyBound(topo, StudyConfig{Roots: 3, Pairs: 100, SearchSteps: 50, SearchPairs: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(study.Roots) != 4 || study.Searched == nil || study.SearchStart == nil {
		t.Fatalf("study: %d trees, searched %v", len(study.Roots), study.Searched != nil)
	}
	for _, tb := range append(study.Roots, *study.Searched, *study.SearchStart) {
		if tb.Bound < 1 || tb.Greedy < tb.Bound || tb.Pairs != 100 {
			t.Errorf("%s root %d: bound %.3f greedy %.3f over %d pairs", tb.Tree, tb.Root, tb.Bound, tb.Greedy, tb.Pairs)
		}
	}
}

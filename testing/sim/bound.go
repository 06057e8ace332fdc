package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The bound study: how short can next-hop paths be on a topology when every
// hop must strictly decrease tree distance to the destination — the
// invariant that keeps a mesh mixing routing rules loop-free
// (docs/routing.md) — whatever the next-hop rule and whichever spanning
// tree the nodes build? It works on the graph alone (no nodes, no
// protocol): for a given spanning tree, the bound of a pair is the
// shortest path along which every hop strictly decreases tree distance to
// the destination (a BFS restricted to such hops), so no rule keeping the
// invariant does better on that tree. The study evaluates it on
// breadth-first trees (the shallowest a root allows) from several roots
// and, on small graphs, on trees improved by a local search that
// minimises the bound itself.

// TreeBound is the bound and the greedy rule on one spanning tree.
type TreeBound struct {
	Tree      string  // "bfs", "bfs best root", "searched"
	Root      int     // the root's index
	RootDeg   int     // its degree
	DepthMean float64 // hops from the root, mean over nodes
	// Bound is the mean over the evaluation pairs of the shortest
	// strictly-decreasing path over the shortest path; Greedy is the
	// same for the distance rule (the peer least distant from the
	// destination in the tree, strictly closer than us).
	Bound, Greedy float64
	BoundP90      float64
	// Pairs is how many pairs were evaluated.
	Pairs int
}

// BoundStudy is the study of one topology.
type BoundStudy struct {
	Topology string
	N        int
	// Roots are breadth-first trees from sampled roots (uniformly random
	// nodes, as the smallest address is) and from the highest-degree
	// node.
	Roots []TreeBound
	// RootMean is Roots' mean bound over the random roots only.
	RootMean float64
	// Searched, when the study ran a local search, is the best tree it
	// found, evaluated on pairs it did not train on; SearchStart is the
	// breadth-first tree it started from, on the same pairs.
	Searched, SearchStart *TreeBound
	SearchSteps           int
}

// StudyConfig says how much of the study to run.
type StudyConfig struct {
	Roots int // random roots (default 8)
	Pairs int // evaluation pairs per tree (default 300)
	// SearchSteps > 0 runs a local search from the first random root's
	// breadth-first tree: that many proposed parent changes, each kept
	// when it does not raise the mean bound over SearchPairs training
	// pairs (default 1,000); the result is evaluated on other pairs.
	SearchSteps int
	SearchPairs int
	Seed        uint64
}

// spanTree is a spanning tree: parent links and each node's ancestry
// (root first), from which tree distance is computed as the coordinates
// do.
type spanTree struct {
	root   int
	parent []int
	anc    [][]int
}

func newSpanTree(root int, parent []int) (*spanTree, error) {
	n := len(parent)
	t := &spanTree{root: root, parent: parent, anc: make([][]int, n)}
	t.anc[root] = []int{root}
	for i := range n {
		if t.anc[i] != nil {
			continue
		}
		// Walk up to a node with a known ancestry, then fill back down.
		var chain []int
		for x := i; t.anc[x] == nil; x = parent[x] {
			if x < 0 || len(chain) > n {
				return nil, fmt.Errorf("sim: node %d has no path to the root %d", i, root)
			}
			chain = append(chain, x)
		}
		for k := len(chain) - 1; k >= 0; k-- {
			x := chain[k]
			up := t.anc[parent[x]]
			a := make([]int, len(up)+1)
			copy(a, up)
			a[len(up)] = x
			t.anc[x] = a
		}
	}
	return t, nil
}

// dist is tree distance: depth(a) + depth(b) − 2·depth(lca(a, b)).
func (t *spanTree) dist(a, b int) int {
	x, y := t.anc[a], t.anc[b]
	l := 0
	for l < len(x) && l < len(y) && x[l] == y[l] {
		l++
	}
	return len(x) + len(y) - 2*l
}

func (t *spanTree) depthMean() float64 {
	s := 0
	for _, a := range t.anc {
		s += len(a) - 1
	}
	return float64(s) / float64(len(t.anc))
}

// inSubtree reports whether x lies in the subtree of v.
func (t *spanTree) inSubtree(x, v int) bool {
	a := t.anc[x]
	d := len(t.anc[v]) - 1
	return d < len(a) && a[d] == v
}

// graphAdj is the adjacency of a topology.
func graphAdj(topo *Topology) [][]int {
	adj := make([][]int, topo.N)
	for _, e := range topo.Edges {
		adj[e.A] = append(adj[e.A], e.B)
		adj[e.B] = append(adj[e.B], e.A)
	}
	return adj
}

// hopsFrom is BFS distance from src (-1: unreachable), through the nodes
// up accepts (nil: all).
func hopsFrom(adj [][]int, src int, up func(int) bool) []int {
	d := make([]int, len(adj))
	for i := range d {
		d[i] = -1
	}
	d[src] = 0
	q := []int{src}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		for _, y := range adj[x] {
			if d[y] < 0 && (up == nil || up(y)) {
				d[y] = d[x] + 1
				q = append(q, y)
			}
		}
	}
	return d
}

// bfsParents is a breadth-first tree from root: each node's parent is its
// smallest-index neighbour one hop nearer the root.
func bfsParents(adj [][]int, root int) []int {
	d := hopsFrom(adj, root, nil)
	p := make([]int, len(adj))
	for i := range p {
		p[i] = -1
		if i == root {
			continue
		}
		for _, y := range adj[i] {
			if d[y] == d[i]-1 && (p[i] < 0 || y < p[i]) {
				p[i] = y
			}
		}
	}
	return p
}

// decreasingHops is the shortest path from src to dst along which every
// hop strictly decreases tree distance to dst, or -1. seen is scratch of
// len(adj), all -1 on entry and on return.
func decreasingHops(adj [][]int, t *spanTree, src, dst int, seen []int) int {
	seen[src] = 0
	q := []int{src}
	touched := q[:1:1]
	res := -1
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if x == dst {
			res = seen[x]
			break
		}
		tx := t.dist(x, dst)
		for _, y := range adj[x] {
			if seen[y] >= 0 || t.dist(y, dst) >= tx {
				continue
			}
			seen[y] = seen[x] + 1
			q = append(q, y)
			touched = append(touched, y)
		}
	}
	for _, x := range touched {
		seen[x] = -1
	}
	return res
}

// greedyHops follows the distance rule: deliver to dst when it is a
// neighbour, else the neighbour least distant from dst in the tree
// (smallest index on ties), which is always strictly closer because the
// tree path's next node is a neighbour.
func greedyHops(adj [][]int, t *spanTree, src, dst int) int {
	h := 0
	for x := src; x != dst; h++ {
		best, bd := -1, t.dist(x, dst)
		for _, y := range adj[x] {
			if y == dst {
				best = y
				break
			}
			if d := t.dist(y, dst); d < bd || (d == bd && best >= 0 && y < best) {
				best, bd = y, d
			}
		}
		if best < 0 {
			return -1 // cannot happen on a spanning tree of the graph
		}
		x = best
	}
	return h
}

// studyPairs are sampled (src, dst) pairs with their shortest-path hops.
type studyPairs struct {
	pairs [][2]int
	sp    []int
}

func samplePairs(adj [][]int, k int, r *rand.Rand) studyPairs {
	var p studyPairs
	byDst := map[int][]int{}
	for range k {
		s, d := r.IntN(len(adj)), r.IntN(len(adj))
		for s == d {
			d = r.IntN(len(adj))
		}
		if byDst[d] == nil {
			byDst[d] = hopsFrom(adj, d, nil)
		}
		p.pairs = append(p.pairs, [2]int{s, d})
		p.sp = append(p.sp, byDst[d][s])
	}
	return p
}

// evalTree is the bound and the greedy rule of tree t over pairs p.
func evalTree(adj [][]int, t *spanTree, p studyPairs, greedy bool) TreeBound {
	seen := make([]int, len(adj))
	for i := range seen {
		seen[i] = -1
	}
	var bs []float64
	sumG := 0.0
	for i, pr := range p.pairs {
		bs = append(bs, float64(decreasingHops(adj, t, pr[0], pr[1], seen))/float64(p.sp[i]))
		if greedy {
			sumG += float64(greedyHops(adj, t, pr[0], pr[1])) / float64(p.sp[i])
		}
	}
	tb := TreeBound{Root: t.root, RootDeg: len(adj[t.root]), DepthMean: t.depthMean(), Pairs: len(bs)}
	sum := 0.0
	for _, b := range bs {
		sum += b
	}
	tb.Bound = sum / float64(len(bs))
	slices.Sort(bs)
	tb.BoundP90 = pct(bs, 0.90)
	if greedy {
		tb.Greedy = sumG / float64(len(bs))
	}
	return tb
}

// meanBound is the mean bound only (the search's objective).
func meanBound(adj [][]int, t *spanTree, p studyPairs, seen []int) float64 {
	s := 0.0
	for i, pr := range p.pairs {
		s += float64(decreasingHops(adj, t, pr[0], pr[1], seen)) / float64(p.sp[i])
	}
	return s / float64(len(p.pairs))
}

// searchTree improves the tree from parent by single re-parentings (a node
// takes another neighbour as parent, never one in its own subtree), kept
// when the mean bound over train does not rise.
func searchTree(adj [][]int, root int, parent []int, steps int, train studyPairs, r *rand.Rand) (*spanTree, error) {
	parent = slices.Clone(parent)
	t, err := newSpanTree(root, parent)
	if err != nil {
		return nil, err
	}
	seen := make([]int, len(adj))
	for i := range seen {
		seen[i] = -1
	}
	cur := meanBound(adj, t, train, seen)
	for range steps {
		i := r.IntN(len(adj))
		if i == root {
			continue
		}
		y := adj[i][r.IntN(len(adj[i]))]
		if y == parent[i] || t.inSubtree(y, i) {
			continue
		}
		next := slices.Clone(parent)
		next[i] = y
		t2, err := newSpanTree(root, next)
		if err != nil {
			return nil, err
		}
		if v := meanBound(adj, t2, train, seen); v <= cur {
			cur, t, parent = v, t2, next
		}
	}
	return t, nil
}

// StudyBound runs the bound study on topo.
func StudyBound(topo *Topology, cfg StudyConfig) (*BoundStudy, error) {
	setDefault(&cfg.Roots, 8)
	setDefault(&cfg.Pairs, 300)
	setDefault(&cfg.SearchPairs, 1000)
	adj := graphAdj(topo)
	r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed))
	eval := samplePairs(adj, cfg.Pairs, r)
	st := &BoundStudy{Topology: topo.Name, N: topo.N}
	roots := make([]int, 0, cfg.Roots+1)
	for range cfg.Roots {
		roots = append(roots, r.IntN(topo.N))
	}
	hub := 0
	for i := range adj {
		if len(adj[i]) > len(adj[hub]) {
			hub = i
		}
	}
	sum := 0.0
	for k, root := range append(roots, hub) {
		t, err := newSpanTree(root, bfsParents(adj, root))
		if err != nil {
			return nil, err
		}
		tb := evalTree(adj, t, eval, true)
		tb.Tree = "bfs"
		if k == len(roots) {
			tb.Tree = "bfs from the highest-degree node"
		} else {
			sum += tb.Bound
		}
		st.Roots = append(st.Roots, tb)
	}
	st.RootMean = sum / float64(len(roots))
	if cfg.SearchSteps > 0 {
		train := samplePairs(adj, cfg.SearchPairs, r)
		start := bfsParents(adj, roots[0])
		t0, err := newSpanTree(roots[0], start)
		if err != nil {
			return nil, err
		}
		s0 := evalTree(adj, t0, eval, true)
		s0.Tree = "bfs (search start)"
		t, err := searchTree(adj, roots[0], start, cfg.SearchSteps, train, r)
		if err != nil {
			return nil, err
		}
		s1 := evalTree(adj, t, eval, true)
		s1.Tree = "searched"
		st.SearchStart, st.Searched, st.SearchSteps = &s0, &s1, cfg.SearchSteps
	}
	return st, nil
}

// WriteBoundReport writes the study as markdown to path: intro, one row
// per topology and size, then the command and commit that made it.
func WriteBoundReport(path, intro, command, commit string, studies []*BoundStudy) error {
	var b strings.Builder
	b.WriteString(intro)
	b.WriteString("\n## Breadth-first trees\n\n" +
		"Bound and distance rule (mean stretch over the evaluation pairs) on breadth-first trees from the sampled random roots — " +
		"mean, and the best and worst root — and from the highest-degree node.\n\n" +
		"| topology | nodes | pairs | random roots | depth mean | bound mean | bound best / worst root | bound p90 (mean) | distance rule mean | highest-degree root: degree, depth, bound, distance rule |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n")
	for _, st := range studies {
		var depth, p90, greedy float64
		best, worst := 0.0, 0.0
		k := 0
		var hub TreeBound
		for _, tb := range st.Roots {
			if tb.Tree != "bfs" {
				hub = tb
				continue
			}
			if k == 0 || tb.Bound < best {
				best = tb.Bound
			}
			worst = max(worst, tb.Bound)
			depth += tb.DepthMean
			p90 += tb.BoundP90
			greedy += tb.Greedy
			k++
		}
		kf := float64(max(k, 1))
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.2f | **%.3f** | %.3f / %.3f | %.2f | %.3f | %d, %.2f, %.3f, %.3f |\n",
			st.Topology, st.N, st.Roots[0].Pairs, k, depth/kf, st.RootMean, best, worst, p90/kf, greedy/kf,
			hub.RootDeg, hub.DepthMean, hub.Bound, hub.Greedy)
	}
	var searched []*BoundStudy
	for _, st := range studies {
		if st.Searched != nil {
			searched = append(searched, st)
		}
	}
	if len(searched) > 0 {
		b.WriteString("\n## Trees searched for the lowest bound\n\n" +
			"A local search from the first random root's breadth-first tree: a random node takes a random other neighbour as " +
			"parent (never one in its own subtree), kept when the mean bound over the training pairs does not rise. " +
			"Evaluated on the evaluation pairs, which it never saw.\n\n" +
			"| topology | nodes | steps | start: depth, bound, distance rule | searched: depth, bound, distance rule |\n|---|---|---|---|---|\n")
		for _, st := range searched {
			a, z := st.SearchStart, st.Searched
			fmt.Fprintf(&b, "| %s | %d | %d | %.2f, %.3f, %.3f | %.2f, **%.3f**, %.3f |\n",
				st.Topology, st.N, st.SearchSteps, a.DepthMean, a.Bound, a.Greedy, z.DepthMean, z.Bound, z.Greedy)
		}
	}
	fmt.Fprintf(&b, "\nMade by `%s` at %s.\n", command, commit)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

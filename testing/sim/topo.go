package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Edge is one link of a generated topology.
type Edge struct {
	A, B    int
	Latency time.Duration
}

// Topology is a generated graph: N nodes, undirected edges, no self
// links, no duplicates, connected.
type Topology struct {
	Name  string
	N     int
	Edges []Edge
}

// Topology names, as make sim's TOPO takes them.
const (
	TopoRandom    = "random"    // uniform: a random spanning tree plus random links, mean degree 5
	TopoGeometric = "geometric" // random geometric: points in the unit square, linked within a radius
	TopoScaleFree = "scalefree" // preferential attachment (Barabási–Albert, 3 links per new node)
	TopoGrid      = "grid"      // a square lattice
	TopoInternet  = "internet"  // two tiers: a well-connected core, stub networks hanging off it
)

// Topologies lists every generator's name.
var Topologies = []string{TopoRandom, TopoGeometric, TopoScaleFree, TopoGrid, TopoInternet}

// Generate builds topology name with about n nodes (grid: the largest
// square not above n) from seed.
func Generate(name string, n int, seed uint64) (*Topology, error) {
	if n < 2 {
		return nil, fmt.Errorf("sim: %d nodes: need at least 2", n)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &graph{adj: map[[2]int]bool{}}
	switch name {
	case TopoRandom:
		g.random(n, 5, rng)
	case TopoGeometric:
		g.geometric(n, 6, rng)
	case TopoScaleFree:
		g.scaleFree(n, 3, rng)
	case TopoGrid:
		g.grid(n, rng)
	case TopoInternet:
		g.internet(n, rng)
	default:
		return nil, fmt.Errorf("sim: unknown topology %q (want one of %v)", name, Topologies)
	}
	t := &Topology{Name: name, N: g.n, Edges: g.edges}
	if !t.connected() {
		return nil, fmt.Errorf("sim: %s topology with %d nodes is not connected", name, n)
	}
	return t, nil
}

// graph accumulates edges without duplicates.
type graph struct {
	n     int
	adj   map[[2]int]bool
	edges []Edge
}

func (g *graph) add(a, b int, lat time.Duration) bool {
	if a == b {
		return false
	}
	k := [2]int{min(a, b), max(a, b)}
	if g.adj[k] {
		return false
	}
	g.adj[k] = true
	g.edges = append(g.edges, Edge{A: a, B: b, Latency: lat})
	return true
}

// ms2to20 is the latency range of the random mesh.
func ms2to20(rng *rand.Rand) time.Duration { return time.Duration(2+rng.IntN(19)) * time.Millisecond }

// random: a random spanning tree (each node links to an earlier one),
// then random extra links up to mean degree deg; 2–20 ms links. The
// in-process mesh tests' randomMesh, and the baseline.
func (g *graph) random(n int, deg float64, rng *rand.Rand) {
	g.n = n
	for i := 1; i < n; i++ {
		g.add(i, rng.IntN(i), ms2to20(rng))
	}
	for extra := min(int(float64(n)*deg/2), n*(n-1)/2) - (n - 1); extra > 0; {
		if g.add(rng.IntN(n), rng.IntN(n), ms2to20(rng)) {
			extra--
		}
	}
}

// geometric: n points uniform in the unit square, linked when closer than
// the radius giving mean degree deg; latency 1 ms plus 40 ms per unit of
// distance. Components are joined by their closest pair.
func (g *graph) geometric(n int, deg float64, rng *rand.Rand) {
	g.n = n
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range n {
		xs[i], ys[i] = rng.Float64(), rng.Float64()
	}
	r := math.Sqrt(deg / (math.Pi * float64(n)))
	lat := func(i, j int) time.Duration {
		return time.Millisecond + time.Duration(40*float64(time.Millisecond)*math.Hypot(xs[i]-xs[j], ys[i]-ys[j]))
	}
	cells := max(1, int(1/r))
	cell := func(i int) (int, int) {
		return min(cells-1, int(xs[i]*float64(cells))), min(cells-1, int(ys[i]*float64(cells)))
	}
	buckets := map[[2]int][]int{}
	for i := range n {
		cx, cy := cell(i)
		buckets[[2]int{cx, cy}] = append(buckets[[2]int{cx, cy}], i)
	}
	for i := range n {
		cx, cy := cell(i)
		for dx := -1; dx <= 1; dx++ {
			for dy := -1; dy <= 1; dy++ {
				for _, j := range buckets[[2]int{cx + dx, cy + dy}] {
					if j > i && math.Hypot(xs[i]-xs[j], ys[i]-ys[j]) < r {
						g.add(i, j, lat(i, j))
					}
				}
			}
		}
	}
	// Join components: each smaller one to the main one by the closest
	// pair (found among the main component's nodes in nearby cells first).
	for {
		comp := g.components()
		if len(comp) == 1 {
			return
		}
		main, other := comp[0], comp[1]
		inMain := map[int]bool{}
		for _, i := range main {
			inMain[i] = true
		}
		bi, bj, best := -1, -1, math.Inf(1)
		for _, i := range other {
			cx, cy := cell(i)
			for radius := 1; bi < 0 || radius <= 2; radius++ {
				for dx := -radius; dx <= radius; dx++ {
					for dy := -radius; dy <= radius; dy++ {
						for _, j := range buckets[[2]int{cx + dx, cy + dy}] {
							if d := math.Hypot(xs[i]-xs[j], ys[i]-ys[j]); inMain[j] && d < best {
								bi, bj, best = i, j, d
							}
						}
					}
				}
				if radius > cells {
					break
				}
			}
		}
		g.add(bi, bj, lat(bi, bj))
	}
}

// scaleFree: Barabási–Albert preferential attachment, m links per new
// node to targets drawn by degree; 2–20 ms links.
func (g *graph) scaleFree(n, m int, rng *rand.Rand) {
	g.n = n
	m = min(m, n-1)
	var ends []int // every edge's two ends: a draw is by degree
	for i := 0; i <= m && i < n; i++ {
		for j := range i {
			g.add(i, j, ms2to20(rng))
			ends = append(ends, i, j)
		}
	}
	for i := m + 1; i < n; i++ {
		for k := 0; k < m; {
			t := ends[rng.IntN(len(ends))]
			if g.add(i, t, ms2to20(rng)) {
				ends = append(ends, i, t)
				k++
			}
		}
	}
}

// grid: the largest s×s lattice with s² ≤ n; 5 ms links.
func (g *graph) grid(n int, _ *rand.Rand) {
	s := int(math.Sqrt(float64(n)))
	g.n = s * s
	for i := range s {
		for j := range s {
			if i+1 < s {
				g.add(i*s+j, (i+1)*s+j, 5*time.Millisecond)
			}
			if j+1 < s {
				g.add(i*s+j, i*s+j+1, 5*time.Millisecond)
			}
		}
	}
}

// internet: a core of 5% of the nodes (at least 12), a random mesh of
// mean degree 10 (at most complete) with 10–40 ms links; every other node is a stub homed on one
// core node (half of them on a second one too, multi-homing), and 30% of
// stubs also peer with an earlier stub (a local link, 1–5 ms).
func (g *graph) internet(n int, rng *rand.Rand) {
	g.n = n
	core := min(n, max(12, n/20))
	coreLat := func() time.Duration { return time.Duration(10+rng.IntN(31)) * time.Millisecond }
	for i := 1; i < core; i++ {
		g.add(i, rng.IntN(i), coreLat())
	}
	for extra := min(core*10/2, core*(core-1)/2) - (core - 1); extra > 0; {
		if g.add(rng.IntN(core), rng.IntN(core), coreLat()) {
			extra--
		}
	}
	access := func() time.Duration { return time.Duration(2+rng.IntN(9)) * time.Millisecond }
	for i := core; i < n; i++ {
		g.add(i, rng.IntN(core), access())
		if rng.Float64() < 0.5 {
			g.add(i, rng.IntN(core), access())
		}
		if i > core && rng.Float64() < 0.3 {
			g.add(i, core+rng.IntN(i-core), time.Duration(1+rng.IntN(5))*time.Millisecond)
		}
	}
}

// components lists connected components, largest first.
func (g *graph) components() [][]int {
	adj := make([][]int, g.n)
	for _, e := range g.edges {
		adj[e.A] = append(adj[e.A], e.B)
		adj[e.B] = append(adj[e.B], e.A)
	}
	seen := make([]bool, g.n)
	var out [][]int
	for s := range g.n {
		if seen[s] {
			continue
		}
		seen[s] = true
		c := []int{s}
		for q := 0; q < len(c); q++ {
			for _, y := range adj[c[q]] {
				if !seen[y] {
					seen[y] = true
					c = append(c, y)
				}
			}
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b []int) int { return len(b) - len(a) })
	return out
}

func (t *Topology) connected() bool {
	g := graph{n: t.N, edges: t.Edges}
	return len(g.components()) == 1
}

// MeanDegree is 2E/N.
func (t *Topology) MeanDegree() float64 { return 2 * float64(len(t.Edges)) / float64(t.N) }

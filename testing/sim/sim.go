// Package sim runs whole-mesh experiments on the in-process mesh
// (testing/mesh): thousands of complete node Cores — the real link layer,
// crypto, spanning tree, bloom filters and router — on generated
// topologies, on the simulated clock, and measures what an operator of a
// large mesh cares about: how fast the tree and the filters converge, how
// deep the tree is, how long next-hop paths are against the shortest ones,
// whether lookups succeed, what the control plane costs in bytes and
// memory per node, and how the mesh recovers from churn and from the loss
// of its root. cmd simreport (make sim) writes docs/scale.md from it.
//
// It only reads node state through the nodes' public accessors and drives
// them through the harness; it changes nothing in the nodes but their
// configuration.
package sim

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/tree"
	"github.com/fips-go/fips/testing/mesh"
)

// Routing choices a run can give its nodes.
const (
	// RoutingUpstream: upstream master as its code has it
	// (node.UpstreamModel): its next-hop order, filter schedule and
	// lookups (node.routing.next_hop upstream, filter_schedule tick,
	// full_filter_lookups upstream), filters merged only from tree peers
	// and not re-marked when a child's announce arrives, no filter after
	// an announce to the parent, and a tick that starts with the node.
	RoutingUpstream = "upstream"
	// RoutingFipsGo: fips-go's defaults (distance, change, tree).
	RoutingFipsGo = "fips-go"
	// RoutingMixed: a random half of the nodes on each.
	RoutingMixed = "mixed"
)

// Config is one run.
type Config struct {
	Topology *Topology
	Routing  string // RoutingUpstream, RoutingFipsGo or RoutingMixed
	Seed     uint64
	// Pairs is the number of sampled (source, destination) pairs walked
	// for stretch (default 300).
	Pairs int
	// Lookups is the number of sampled lookups (default 100).
	Lookups int
	// TreeWait bounds the simulated wait for tree convergence (default
	// 5 min).
	TreeWait time.Duration
	// Steady is the window, ending at Horizon, control traffic is
	// measured over (default 30 s).
	Steady time.Duration
	// Churn is the fraction of nodes crashed for the churn test (default
	// 0.05); negative skips churn and root failure.
	Churn float64
	// Tree overrides the nodes' node.tree settings (zero: defaults).
	Tree tree.Config
	// MaxInboundFPR overrides node.bloom.max_inbound_fpr (zero: 0.20). A
	// small cap makes a small mesh larger than its filters hold, as
	// 0.20 does past about 2,100 nodes.
	MaxInboundFPR float64
	// Horizon is the simulated time from start at which the settled
	// measurements are taken (default 180 s: past the tree's 30 s
	// hold-down and its 60 s periodic re-evaluation, which deepen into
	// a near-shortest-path tree).
	Horizon time.Duration
	// Progress, when set, receives one line per phase.
	Progress func(format string, args ...any)
}

// Result is what a run measured. Times are simulated.
type Result struct {
	Topology   string
	Routing    string
	N, Links   int
	MeanDegree float64

	TreeConverged bool
	TreeTime      time.Duration // from start until one root and consistent coordinates everywhere
	// BloomConverged: every node's inbound filter from every peer covers
	// the nodes reachable through it (see bloomCovered) before Horizon;
	// BloomTime is from start. BloomCoverage is the covered fraction of
	// sampled (node, peer, target) triples at Horizon.
	BloomConverged bool
	BloomTime      time.Duration
	BloomCoverage  float64
	// FiltersRejected counts inbound FilterAnnounces refused over the FPR
	// cap, summed over nodes, by the end of the bloom phase.
	FiltersRejected uint64

	// Depth at Horizon (the series has it over time).
	DepthMax  int
	DepthMean float64

	// Early is walked as soon as the tree has converged, Settled at
	// Horizon. Bound is, for the
	// Settled pairs, the shortest path that strictly decreases tree
	// distance at every hop: no rule obeying that invariant does better.
	Early, Settled, Bound Stretch
	// EarlyWait and SettledWait are how long the run waited, before
	// those walks, for every node's view of its peers' coordinates to
	// match the peers' own (the tree re-evaluates every 60 s; a walk
	// across nodes that disagree about the tree can bounce, with either
	// rule: docs/routing.md). -1: not within 60 s (walked anyway).
	EarlyWait, SettledWait time.Duration

	Lookup LookupStats

	// Control-plane bytes sent per node per second (every byte on the
	// simulated links: nothing else flows): from start until the tree
	// converged, from then until the filters settled, and in the steady
	// window after. FiltersSteady is FilterAnnounces sent per node per
	// second in the steady window, FiltersBloomPhase before it.
	BytesConverging, BytesBloomPhase, BytesSteady float64
	FiltersBloomPhase, FiltersSteady              float64

	// MemPerNode is live heap per node (bytes) once converged, the
	// harness's share included.
	MemPerNode float64

	Churn, RootFailure Recovery

	// Series are per-second samples from start to the end of the bloom
	// phase, for plots.
	Series []Sample
	// StretchSamples and BoundSamples are the Settled and Bound walks'
	// stretches, for the CDF plot.
	StretchSamples, BoundSamples []float64

	Wall time.Duration
}

// Stretch summarises walks: hops of the next-hop walk over the BFS
// shortest path, over the walks that arrived.
type Stretch struct {
	Walks, Failed, Loops int
	// OverTTL counts walks that arrived in more than 64 hops, the
	// default datagram TTL (node.session.default_ttl): those datagrams
	// would be dropped on the way.
	OverTTL                  int
	Mean, P50, P90, P99, Max float64
	MeanHops                 float64
	FirstFailure             string
}

// LookupStats summarises sampled lookups.
type LookupStats struct {
	Tried, Found  int
	P50, P90, Max time.Duration
	// Failures counts the lookups not found, by why: the StartLookup
	// outcome when none was sent, the lookup outcome, or "no answer in
	// 30 s".
	Failures map[string]int `json:",omitempty"`
}

// Recovery is one failure experiment.
type Recovery struct {
	Crashed   int
	Converged bool
	Time      time.Duration // until the survivors' tree converged and dead links were dropped
	Walks     Stretch
}

// Sample is one point of the time series.
type Sample struct {
	T time.Duration
	// OnRoot is the fraction of nodes whose root is the mesh's minimum.
	OnRoot float64
	// Coverage is the covered fraction of a fixed sample of filter
	// triples.
	Coverage float64
	// BytesPerNode is control bytes sent per node in this second.
	BytesPerNode float64
	// DepthMean is the mean tree depth.
	DepthMean float64
}

// Run builds the topology, runs the experiments in order and returns the
// measurements.
func Run(cfg Config) (*Result, error) {
	if cfg.Topology == nil {
		return nil, fmt.Errorf("sim: no topology")
	}
	switch cfg.Routing {
	case RoutingUpstream, RoutingFipsGo, RoutingMixed:
	default:
		return nil, fmt.Errorf("sim: unknown routing %q", cfg.Routing)
	}
	setDefault(&cfg.Pairs, 300)
	setDefault(&cfg.Lookups, 100)
	setDefault(&cfg.TreeWait, 5*time.Minute)
	setDefault(&cfg.Horizon, 180*time.Second)
	setDefault(&cfg.Steady, 30*time.Second)
	if cfg.Churn == 0 {
		cfg.Churn = 0.05
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	wall := time.Now()
	topo := cfg.Topology
	res := &Result{Topology: topo.Name, Routing: cfg.Routing, N: topo.N, Links: len(topo.Edges), MeanDegree: topo.MeanDegree()}

	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)

	ruleRng := rand.New(rand.NewPCG(cfg.Seed^0xabcdef, 7))
	rules := make([]bool, topo.N) // true: upstream's rules
	for i := range rules {
		switch cfg.Routing {
		case RoutingUpstream:
			rules[i] = true
		case RoutingMixed:
			rules[i] = ruleRng.IntN(2) == 0
		}
	}
	net := mesh.New(mesh.Options{Seed: cfg.Seed, Core: func(i int, o *node.CoreOptions) {
		o.Route = route.DefaultConfig()
		o.Bloom = bloom.DefaultConfig()
		o.Tree = cfg.Tree
		if cfg.MaxInboundFPR > 0 {
			o.Bloom.MaxInboundFPR = cfg.MaxInboundFPR
		}
		if rules[i] {
			node.UpstreamModel(o)
		}
	}, TickAtStart: func(i int) bool { return rules[i] }})
	nodes := net.AddNodes(topo.N)
	for _, e := range topo.Edges {
		net.Connect(nodes[e.A], nodes[e.B], e.Latency, 0)
	}
	s := &state{net: net, nodes: nodes, topo: topo, alive: make([]bool, topo.N), rng: rand.New(rand.NewPCG(cfg.Seed, 99))}
	for i := range s.alive {
		s.alive[i] = true
	}
	s.index()
	progress("%s %s n=%d links=%d: built", topo.Name, cfg.Routing, topo.N, len(topo.Edges))

	// Tree convergence, sampled each second for the series.
	triples := s.sampleTriples(2000)
	var lastBytes uint64
	sample := func() {
		res.Series = append(res.Series, Sample{T: net.Elapsed(), OnRoot: s.onRootFraction(),
			Coverage: s.tripleCoverage(triples), BytesPerNode: float64(net.SentBytes-lastBytes) / float64(topo.N)})
		_, res.Series[len(res.Series)-1].DepthMean = s.depth()
		lastBytes = net.SentBytes
	}
	res.TreeTime, res.TreeConverged = s.runUntil(func() bool { ok, _ := s.treeConverged(); return ok }, cfg.TreeWait, sample)
	if !res.TreeConverged {
		_, why := s.treeConverged()
		return res, fmt.Errorf("sim: %s tree not converged after %v: %s", topo.Name, res.TreeTime, why)
	}
	treeBytes := net.SentBytes
	res.BytesConverging = perNodeSec(treeBytes, topo.N, res.TreeTime)
	res.DepthMax, res.DepthMean = s.depth()
	progress("tree converged in %v (depth max %d mean %.2f)", res.TreeTime, res.DepthMax, res.DepthMean)

	res.EarlyWait = s.waitViews()
	res.Early = s.walks(cfg.Pairs, 1, false)
	progress("early walks: mean stretch %.3f, failed %d, loops %d", res.Early.Mean, res.Early.Failed, res.Early.Loops)

	// Filters and the tree's own improvement (hold-down, then periodic
	// re-evaluation) until Horizon; the steady window is its end.
	filters0 := s.filtersSent()
	bloomDone := false
	var bloomBytes, bloomFilters uint64
	steadyFrom := cfg.Horizon - cfg.Steady
	var b0, f0 uint64
	steadyStarted := false
	s.runUntil(func() bool {
		el := net.Elapsed()
		if !bloomDone && s.tripleCoverage(triples) == 1 && s.bloomCovered() {
			bloomDone, res.BloomConverged, res.BloomTime = true, true, el
			bloomBytes, bloomFilters = net.SentBytes, s.filtersSent()
			progress("filters converged at %v", el)
		}
		if !steadyStarted && el >= steadyFrom {
			steadyStarted = true
			b0, f0 = net.SentBytes, s.filtersSent()
		}
		return el >= cfg.Horizon
	}, cfg.Horizon, sample)
	if !bloomDone {
		res.BloomTime = steadyFrom
		bloomBytes, bloomFilters = b0, f0
	}
	res.BloomCoverage = s.tripleCoverage(triples)
	res.FiltersRejected = s.filtersRejected()
	bloomPhase := res.BloomTime - res.TreeTime
	res.BytesBloomPhase = perNodeSec(bloomBytes-treeBytes, topo.N, bloomPhase)
	res.FiltersBloomPhase = float64(bloomFilters-filters0) / float64(topo.N) / max(bloomPhase.Seconds(), 1e-9)
	res.BytesSteady = perNodeSec(net.SentBytes-b0, topo.N, cfg.Steady)
	res.FiltersSteady = float64(s.filtersSent()-f0) / float64(topo.N) / cfg.Steady.Seconds()
	res.DepthMax, res.DepthMean = s.depth()
	progress("at %v: filters converged %v (%v), coverage %.4f, rejected %d; depth max %d mean %.2f",
		net.Elapsed(), res.BloomConverged, res.BloomTime, res.BloomCoverage, res.FiltersRejected, res.DepthMax, res.DepthMean)

	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	res.MemPerNode = (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(topo.N)
	progress("steady: %.0f B/node/s, %.4f filters/node/s, %.0f KB/node", res.BytesSteady, res.FiltersSteady, res.MemPerNode/1024)

	res.Lookup = s.lookups(cfg.Lookups)
	progress("lookups: %d/%d found, p50 %v, failures %v", res.Lookup.Found, res.Lookup.Tried, res.Lookup.P50, res.Lookup.Failures)

	res.SettledWait = s.waitViews()
	res.Settled = s.walks(cfg.Pairs, 2, false)
	res.StretchSamples = s.lastStretches
	res.Bound = s.walks(cfg.Pairs, 2, true)
	res.BoundSamples = s.lastStretches
	progress("settled walks: mean stretch %.3f p90 %.3f (bound %.3f), failed %d, loops %d",
		res.Settled.Mean, res.Settled.P90, res.Bound.Mean, res.Settled.Failed, res.Settled.Loops)

	if cfg.Churn > 0 {
		res.Churn = s.recover(s.churnVictims(cfg.Churn), cfg.Pairs)
		progress("churn: %d crashed, converged %v in %v, walks failed %d", res.Churn.Crashed, res.Churn.Converged, res.Churn.Time, res.Churn.Walks.Failed)
		res.RootFailure = s.recover([]int{s.rootIndex()}, cfg.Pairs)
		progress("root failure: converged %v in %v, walks failed %d", res.RootFailure.Converged, res.RootFailure.Time, res.RootFailure.Walks.Failed)
	}
	res.Wall = time.Since(wall)
	return res, nil
}

func setDefault[T int | time.Duration](p *T, v T) {
	if *p <= 0 {
		*p = v
	}
}

func perNodeSec(bytes uint64, n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / float64(n) / d.Seconds()
}

// state is a run's view of the mesh.
type state struct {
	net    *mesh.Net
	nodes  []*mesh.Node
	topo   *Topology
	alive  []bool
	rng    *rand.Rand
	byAddr map[identity.NodeAddr]int
	adj    [][]int // topology adjacency (links never go down here; nodes do)

	lastStretches []float64
}

func (s *state) index() {
	s.byAddr = make(map[identity.NodeAddr]int, len(s.nodes))
	for i, nd := range s.nodes {
		s.byAddr[nd.ID.NodeAddr()] = i
	}
	s.adj = make([][]int, len(s.nodes))
	for _, e := range s.topo.Edges {
		s.adj[e.A] = append(s.adj[e.A], e.B)
		s.adj[e.B] = append(s.adj[e.B], e.A)
	}
}

// runUntil runs in steps of a quarter second until cond holds or max
// passes, calling each once per simulated second.
func (s *state) runUntil(cond func() bool, max time.Duration, each func()) (time.Duration, bool) {
	start := s.net.Elapsed()
	next := start
	for {
		el := s.net.Elapsed()
		if each != nil && el >= next {
			each()
			next += time.Second
		}
		if cond() {
			return el - start, true
		}
		if el-start >= max {
			return el - start, false
		}
		s.net.Run(250 * time.Millisecond)
	}
}

// components of the alive nodes, each sorted by index.
func (s *state) components() [][]int {
	seen := make([]bool, len(s.nodes))
	var out [][]int
	for i := range s.nodes {
		if seen[i] || !s.alive[i] {
			continue
		}
		seen[i] = true
		c := []int{i}
		for q := 0; q < len(c); q++ {
			for _, y := range s.adj[c[q]] {
				if !seen[y] && s.alive[y] {
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

// treeConverged: in every component of alive nodes, every node has the
// component's smallest address as root, and its coordinates are itself
// then its parent's, the parent being a linked peer.
func (s *state) treeConverged() (bool, string) {
	for _, comp := range s.components() {
		root := s.nodes[comp[0]].ID.NodeAddr()
		for _, i := range comp {
			if a := s.nodes[i].ID.NodeAddr(); a.Less(root) {
				root = a
			}
		}
		for _, i := range comp {
			nd := s.nodes[i]
			tr := nd.Core.Tree()
			if tr.Root() != root {
				return false, fmt.Sprintf("node %d has root %s, not %s", i, tr.Root().Short(), root.Short())
			}
			coords := tr.CoordsView()
			parent, ok := tr.Parent()
			if !ok {
				if nd.ID.NodeAddr() != root {
					return false, fmt.Sprintf("node %d is a root", i)
				}
				continue
			}
			pi, known := s.byAddr[parent]
			if !known || !s.alive[pi] || nd.Core.Peers().Peer(parent) == nil {
				return false, fmt.Sprintf("node %d: parent is not a live peer", i)
			}
			if !slices.Equal(coords[1:], s.nodes[pi].Core.Tree().CoordsView()) {
				return false, fmt.Sprintf("node %d: coordinates disagree with its parent's", i)
			}
		}
	}
	return true, ""
}

// viewsCurrent: every alive node's view of every alive peer's
// coordinates is that peer's own coordinates.
func (s *state) viewsCurrent() bool {
	for i, nd := range s.nodes {
		if !s.alive[i] {
			continue
		}
		tr := nd.Core.Tree()
		for _, j := range s.adj[i] {
			if !s.alive[j] {
				continue
			}
			pc, ok := tr.PeerCoordsView(s.nodes[j].ID.NodeAddr())
			if !ok || !slices.Equal(pc, s.nodes[j].Core.Tree().CoordsView()) {
				return false
			}
		}
	}
	return true
}

// waitViews runs until the tree is converged and every view is current,
// at most 60 s; -1 when it gave up.
func (s *state) waitViews() time.Duration {
	took, ok := s.runUntil(func() bool {
		if ok, _ := s.treeConverged(); !ok {
			return false
		}
		return s.viewsCurrent()
	}, 60*time.Second, nil)
	if !ok {
		return -1
	}
	return took
}

// deadLinksGone: no alive node still holds a crashed node as a peer.
func (s *state) deadLinksGone() bool {
	for i, nd := range s.nodes {
		if !s.alive[i] {
			continue
		}
		for _, j := range s.adj[i] {
			if !s.alive[j] && nd.Core.Peers().Peer(s.nodes[j].ID.NodeAddr()) != nil {
				return false
			}
		}
	}
	return true
}

func (s *state) onRootFraction() float64 {
	root := s.nodes[0].ID.NodeAddr()
	n := 0
	for i, nd := range s.nodes {
		if s.alive[i] && nd.ID.NodeAddr().Less(root) {
			root = nd.ID.NodeAddr()
		}
	}
	alive := 0
	for i, nd := range s.nodes {
		if !s.alive[i] {
			continue
		}
		alive++
		if nd.Core.Tree().Root() == root {
			n++
		}
	}
	return float64(n) / float64(alive)
}

func (s *state) rootIndex() int {
	return s.byAddr[s.nodes[s.firstAlive()].Core.Tree().Root()]
}

func (s *state) firstAlive() int {
	for i := range s.alive {
		if s.alive[i] {
			return i
		}
	}
	return 0
}

func (s *state) depth() (int, float64) {
	mx, sum, n := 0, 0, 0
	for i, nd := range s.nodes {
		if !s.alive[i] {
			continue
		}
		d := nd.Core.Tree().Depth()
		mx = max(mx, d)
		sum += d
		n++
	}
	return mx, float64(sum) / float64(n)
}

// Filter coverage. What peer q's filter held by x must contain, given the
// converged tree (upstream's split horizon, tree-only merge): q's subtree
// when q is x's child; everything outside x's subtree when q is x's
// parent; everything when q is neither (q merges its parent's filter,
// which holds all outside q's subtree, with its children's).
func (s *state) expected(x, q, t int) bool {
	if t == x {
		return false
	}
	if !s.alive[t] {
		return false
	}
	tx := s.nodes[x].Core.Tree()
	qa := s.nodes[q].ID.NodeAddr()
	tc := s.nodes[t].Core.Tree().CoordsView()
	if p, ok := tx.Parent(); ok && p == qa {
		return !slices.Contains(tc, s.nodes[x].ID.NodeAddr())
	}
	if qp, ok := s.nodes[q].Core.Tree().Parent(); ok && qp == s.nodes[x].ID.NodeAddr() {
		return slices.Contains(tc, qa)
	}
	return true
}

type triple struct{ x, q, t int }

// sampleTriples draws (node, peer, target) triples for the cheap
// coverage estimate.
func (s *state) sampleTriples(k int) []triple {
	out := make([]triple, 0, k)
	for len(out) < k {
		x := s.rng.IntN(len(s.nodes))
		if len(s.adj[x]) == 0 {
			continue
		}
		out = append(out, triple{x, s.adj[x][s.rng.IntN(len(s.adj[x]))], s.rng.IntN(len(s.nodes))})
	}
	return out
}

func (s *state) covers(x, q, t int) bool {
	return s.nodes[x].Core.Bloom().MayReach(s.nodes[q].ID.NodeAddr(), s.nodes[t].ID.NodeAddr())
}

// tripleCoverage is the fraction of the expected triples covered.
func (s *state) tripleCoverage(ts []triple) float64 {
	want, have := 0, 0
	for _, tr := range ts {
		if !s.alive[tr.x] || !s.alive[tr.q] || !s.expected(tr.x, tr.q, tr.t) {
			continue
		}
		want++
		if s.covers(tr.x, tr.q, tr.t) {
			have++
		}
	}
	if want == 0 {
		return 1
	}
	return float64(have) / float64(want)
}

// bloomCovered checks every node and peer against up to 500 targets (all
// nodes in meshes up to that size).
func (s *state) bloomCovered() bool {
	targets := make([]int, 0, 500)
	if len(s.nodes) <= 500 {
		for i := range s.nodes {
			targets = append(targets, i)
		}
	} else {
		r := rand.New(rand.NewPCG(1, 2))
		for range 500 {
			targets = append(targets, r.IntN(len(s.nodes)))
		}
	}
	for x := range s.nodes {
		if !s.alive[x] {
			continue
		}
		for _, q := range s.adj[x] {
			if !s.alive[q] {
				continue
			}
			for _, t := range targets {
				if s.expected(x, q, t) && !s.covers(x, q, t) {
					return false
				}
			}
		}
	}
	return true
}

func (s *state) filtersSent() uint64 {
	var n uint64
	for _, nd := range s.nodes {
		n += nd.Core.Bloom().Stats().Sent
	}
	return n
}

func (s *state) filtersRejected() uint64 {
	var n uint64
	for _, nd := range s.nodes {
		n += nd.Core.Bloom().Stats().FillExceeded
	}
	return n
}

// bfs returns hop distances from src over alive nodes (-1: unreachable).
func (s *state) bfs(src int) []int {
	return hopsFrom(s.adj, src, func(y int) bool { return s.alive[y] })
}

// walk follows next hops from src to dst as a packet would, every node
// on the way holding dst's coordinates (as a SessionSetup or a CP-flagged
// header leaves them). It fails on a loop, a missing hop or 255 hops
// (the largest TTL; walks over node.session.default_ttl, 64, are
// counted apart by walks).
func (s *state) walk(src, dst int) (int, string) {
	coords := s.nodes[dst].Core.Tree().Coords()
	dstAddr := s.nodes[dst].ID.NodeAddr()
	seen := map[int]bool{}
	cur := src
	for hops := 0; hops <= 255; hops++ {
		if cur == dst {
			return hops, ""
		}
		if seen[cur] {
			return hops, "loop"
		}
		seen[cur] = true
		now := s.net.Now()
		r := s.nodes[cur].Core.Router()
		r.Cache().Insert(now, dstAddr, coords, 0)
		next, _, ok := r.FindNextHop(now, dstAddr)
		if !ok {
			return hops, "no next hop"
		}
		ni, known := s.byAddr[next]
		if !known || !s.alive[ni] {
			return hops, "next hop is down"
		}
		cur = ni
	}
	return 255, "too many hops"
}

// boundHops is the shortest path from src to dst along which every hop
// strictly decreases the tree distance to dst (each node's current
// coordinates), or -1.
func (s *state) boundHops(src, dst int) int {
	dc := s.nodes[dst].Core.Tree().CoordsView()
	td := func(i int) int { return tree.Distance(s.nodes[i].Core.Tree().CoordsView(), dc) }
	dist := map[int]int{src: 0}
	q := []int{src}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if x == dst {
			return dist[x]
		}
		tx := td(x)
		for _, y := range s.adj[x] {
			if _, ok := dist[y]; ok || !s.alive[y] {
				continue
			}
			if y == dst || td(y) < tx {
				dist[y] = dist[x] + 1
				q = append(q, y)
			}
		}
	}
	return -1
}

// walks samples pairs of distinct alive nodes in one component (seeded by
// seed, so a later call with the same seed walks the same pairs) and
// summarises their stretch; bound walks the invariant's optimum instead
// of the nodes' rules.
func (s *state) walks(pairs int, seed uint64, bound bool) Stretch {
	r := rand.New(rand.NewPCG(seed, seed*31+7))
	comp := s.components()[0]
	var st Stretch
	var stretches []float64
	hops := 0
	for range pairs {
		src, dst := comp[r.IntN(len(comp))], comp[r.IntN(len(comp))]
		for src == dst {
			dst = comp[r.IntN(len(comp))]
		}
		sp := s.bfs(dst)[src]
		var h int
		var fail string
		if bound {
			if h = s.boundHops(src, dst); h < 0 {
				fail = "no decreasing path"
			}
		} else {
			h, fail = s.walk(src, dst)
		}
		st.Walks++
		if fail != "" {
			st.Failed++
			if fail == "loop" {
				st.Loops++
			}
			if st.FirstFailure == "" {
				st.FirstFailure = fmt.Sprintf("%d→%d: %s after %d hops", src, dst, fail, h)
			}
			continue
		}
		hops += h
		if h > 64 {
			st.OverTTL++
		}
		stretches = append(stretches, float64(h)/float64(sp))
	}
	s.lastStretches = slices.Clone(stretches)
	if len(stretches) == 0 {
		return st
	}
	slices.Sort(stretches)
	sum := 0.0
	for _, x := range stretches {
		sum += x
	}
	st.Mean = sum / float64(len(stretches))
	st.P50, st.P90, st.P99 = pct(stretches, 0.50), pct(stretches, 0.90), pct(stretches, 0.99)
	st.Max = stretches[len(stretches)-1]
	st.MeanHops = float64(hops) / float64(len(stretches))
	return st
}

// pct is the nearest-rank percentile of sorted xs.
func pct[T float64 | time.Duration](xs []T, p float64) T {
	i := int(float64(len(xs))*p+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// lookups starts k lookups between random non-adjacent alive nodes (one
// per source, one per target) at once and waits up to 30 s for all to
// end.
func (s *state) lookups(k int) LookupStats {
	r := rand.New(rand.NewPCG(3, 3))
	comp := s.components()[0]
	type pending struct {
		src, dst int
		start    time.Time
		why      string
	}
	var ps []pending
	// Distinct sources and distinct targets: transit nodes forward a
	// lookup for one target at most once per node.lookup
	// forward_min_interval_secs (2 s), so simultaneous lookups of one
	// target from many sources throttle each other by design.
	used, targeted := map[int]bool{}, map[int]bool{}
	for tries := 0; len(ps) < k && tries < 100*k; tries++ {
		src, dst := comp[r.IntN(len(comp))], comp[r.IntN(len(comp))]
		if src == dst || used[src] || targeted[dst] || slices.Contains(s.adj[src], dst) {
			continue
		}
		used[src], targeted[dst] = true, true
		if out := s.nodes[src].Core.StartLookup(s.net.Now(), s.nodes[dst].ID.PublicKey()); out != route.StartSent {
			ps = append(ps, pending{src: src, dst: -1, why: "start: " + out.String()}) // tried, not found
			continue
		}
		ps = append(ps, pending{src: src, dst: dst, start: s.net.Now()})
	}
	st := LookupStats{Tried: len(ps), Failures: map[string]int{}}
	var lat []time.Duration
	deadline := s.net.Now().Add(30 * time.Second)
	for len(ps) > 0 && s.net.Now().Before(deadline) {
		s.net.Run(10 * time.Millisecond)
		keep := ps[:0]
		for _, p := range ps {
			if p.dst < 0 {
				st.Failures[p.why]++
				continue
			}
			ev, done := s.nodes[p.src].Core.LookupResult(s.nodes[p.dst].ID.NodeAddr())
			if !done {
				keep = append(keep, p)
				continue
			}
			if ev.Outcome == route.LookupFound {
				st.Found++
				lat = append(lat, s.net.Now().Sub(p.start))
			} else {
				st.Failures[ev.Outcome.String()]++
			}
		}
		ps = keep
	}
	for _, p := range ps {
		if p.dst >= 0 {
			st.Failures["no answer in 30 s"]++
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		st.P50, st.P90, st.Max = pct(lat, 0.5), pct(lat, 0.9), lat[len(lat)-1]
	}
	return st
}

// churnVictims picks a fraction of the alive nodes, never the root.
func (s *state) churnVictims(frac float64) []int {
	root := s.rootIndex()
	k := max(1, int(frac*float64(len(s.nodes))))
	var out []int
	for _, i := range s.rng.Perm(len(s.nodes)) {
		if len(out) == k {
			break
		}
		if i != root && s.alive[i] {
			out = append(out, i)
		}
	}
	return out
}

// recover crashes victims, waits for the survivors to drop the dead links
// and reconverge, lets the filters settle for 30 s and walks.
func (s *state) recover(victims []int, pairs int) Recovery {
	for _, i := range victims {
		s.nodes[i].Crash()
		s.alive[i] = false
	}
	rec := Recovery{Crashed: len(victims)}
	rec.Time, rec.Converged = s.runUntil(func() bool {
		if ok, _ := s.treeConverged(); !ok {
			return false
		}
		return s.deadLinksGone()
	}, 5*time.Minute, nil)
	s.net.Run(30 * time.Second)
	s.waitViews()
	rec.Walks = s.walks(pairs, 5, false)
	return rec
}

package bloom

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// A tiny mesh on a simulated clock: FilterAnnounces travel through an
// in-memory queue, every node ticks once a second (upstream's tick), and
// the spanning tree is fixed by hand (parent[i], -1 for a root) and read
// by each node's Env.IsTreePeer.

type simMsg struct {
	from, to int
	msg      []byte
}

type simNet struct {
	t      *testing.T
	now    time.Time
	nodes  []*simNode
	byAddr map[identity.NodeAddr]int
	queue  []simMsg
	sends  int
}

type simNode struct {
	id     int
	addr   identity.NodeAddr
	net    *simNet
	st     *State
	parent int
	links  map[int]bool
}

var errNoLink = errors.New("no link")

func (n *simNode) SendFilterAnnounce(peer identity.NodeAddr, msg []byte) error {
	j, ok := n.net.byAddr[peer]
	if !ok || !n.links[j] {
		return errNoLink
	}
	n.net.queue = append(n.net.queue, simMsg{from: n.id, to: j, msg: append([]byte(nil), msg...)})
	n.net.sends++
	return nil
}

func (n *simNode) IsTreePeer(peer identity.NodeAddr) bool {
	j, ok := n.net.byAddr[peer]
	return ok && n.links[j] && (n.parent == j || n.net.nodes[j].parent == n.id)
}

func newSimNet(t *testing.T, parent []int, extra [][2]int) *simNet {
	s := &simNet{t: t, now: t0, byAddr: map[identity.NodeAddr]int{}}
	for i := range parent {
		n := &simNode{id: i, addr: addr(7000 + i), net: s, parent: parent[i], links: map[int]bool{}}
		n.st = New(n.addr, DefaultConfig(), n, nil)
		s.nodes = append(s.nodes, n)
		s.byAddr[n.addr] = i
	}
	for i, p := range parent {
		if p >= 0 {
			s.link(i, p)
		}
	}
	for _, e := range extra {
		s.link(e[0], e[1])
	}
	return s
}

// link completes a handshake between i and j.
func (s *simNet) link(i, j int) {
	s.nodes[i].links[j], s.nodes[j].links[i] = true, true
	s.nodes[i].st.PeerUp(s.now, s.nodes[j].addr)
	s.nodes[j].st.PeerUp(s.now, s.nodes[i].addr)
}

// unlink removes the peers from each other.
func (s *simNet) unlink(i, j int) {
	delete(s.nodes[i].links, j)
	delete(s.nodes[j].links, i)
	s.nodes[i].st.PeerDown(s.now, s.nodes[j].addr)
	s.nodes[j].st.PeerDown(s.now, s.nodes[i].addr)
}

func (s *simNet) pending() bool {
	for _, n := range s.nodes {
		for j := range n.links {
			if info, _ := n.st.Peer(s.nodes[j].addr); info.Pending {
				return true
			}
		}
	}
	return false
}

// run ticks until nothing is pending or queued, and returns the seconds
// taken. Messages sent on a tick are delivered before the next one.
func (s *simNet) run(maxSeconds int) int {
	s.t.Helper()
	for sec := 1; sec <= maxSeconds; sec++ {
		s.now = s.now.Add(time.Second)
		for _, n := range s.nodes {
			n.st.Tick(s.now)
		}
		for len(s.queue) > 0 {
			m := s.queue[0]
			s.queue = s.queue[1:]
			if !s.nodes[m.to].links[m.from] {
				continue // link went away in flight
			}
			if err := s.nodes[m.to].st.HandleFilterAnnounce(s.now, s.nodes[m.from].addr, m.msg); err != nil {
				s.t.Fatalf("n%d rejected announce from n%d: %v", m.to, m.from, err)
			}
		}
		if !s.pending() {
			return sec
		}
	}
	s.t.Fatalf("not stable after %d s", maxSeconds)
	return 0
}

func (s *simNet) root(i int) int {
	for s.nodes[i].parent >= 0 {
		i = s.nodes[i].parent
	}
	return i
}

// inSubtree reports whether k is i or below i.
func (s *simNet) inSubtree(k, i int) bool {
	for ; k >= 0; k = s.nodes[k].parent {
		if k == i {
			return true
		}
	}
	return false
}

func (s *simNet) filterOfSet(keep func(k int) bool) (Filter, []int) {
	f := NewFilter()
	var set []int
	for k, n := range s.nodes {
		if keep(k) {
			f.Insert(n.addr)
			set = append(set, k)
		}
	}
	return f, set
}

// expected is the exact filter node i should hold from its peer j:
// j's subtree if j is i's child, the rest of the tree if j is i's parent,
// and j's whole tree if the link is not a tree edge.
func (s *simNet) expected(i, j int) (Filter, []int) {
	comp := s.root(j)
	switch {
	case s.nodes[j].parent == i:
		return s.filterOfSet(func(k int) bool { return s.inSubtree(k, j) })
	case s.nodes[i].parent == j:
		return s.filterOfSet(func(k int) bool { return s.root(k) == comp && !s.inSubtree(k, i) })
	default:
		return s.filterOfSet(func(k int) bool { return s.root(k) == comp })
	}
}

// check verifies every stored filter bit for bit, reachability of every
// node of a component through some peer, and quiescence.
func (s *simNet) check() {
	s.t.Helper()
	for i, n := range s.nodes {
		for j := range n.links {
			got, ok := n.st.InboundFilter(s.nodes[j].addr)
			if !ok {
				s.t.Fatalf("n%d holds no filter from n%d", i, j)
			}
			want, set := s.expected(i, j)
			if !got.Equal(&want) {
				s.t.Fatalf("n%d's filter from n%d is not exactly %v", i, j, set)
			}
			if est, ok := got.EstimateCount(0.20); !ok || math.Abs(est-float64(len(set))) > max(1.5, 0.03*float64(len(set))) {
				s.t.Fatalf("n%d from n%d: estimate %.1f for %d entries", i, j, est, len(set))
			}
		}
		for k, other := range s.nodes {
			if k == i || s.root(k) != s.root(i) {
				continue
			}
			reach := false
			for j := range n.links {
				reach = reach || n.st.MayReach(s.nodes[j].addr, other.addr)
			}
			if !reach {
				s.t.Fatalf("n%d cannot reach n%d through any peer", i, k)
			}
		}
	}
	before := s.sends
	s.run(1)
	for range 10 {
		s.now = s.now.Add(time.Second)
		for _, n := range s.nodes {
			n.st.Tick(s.now)
		}
	}
	if s.sends != before || len(s.queue) != 0 {
		s.t.Fatalf("not quiescent: %d sends after stabilising", s.sends-before)
	}
}

func (s *simNet) inbound(i, j int) Filter {
	f, ok := s.nodes[i].st.InboundFilter(s.nodes[j].addr)
	if !ok {
		s.t.Fatalf("n%d has no filter from n%d", i, j)
	}
	return f
}

func (s *simNet) set(idx ...int) Filter {
	f := NewFilter()
	for _, i := range idx {
		f.Insert(s.nodes[i].addr)
	}
	return f
}

// A 5-node tree, R(0) with children A(1), B(2), and A with children C(3),
// D(4), plus a non-tree link C–B.
func TestSimFiveNodeTreeSplitHorizon(t *testing.T) {
	const R, A, B, C, D = 0, 1, 2, 3, 4
	s := newSimNet(t, []int{-1, R, R, A, A}, [][2]int{{C, B}})
	s.run(30)
	for _, tc := range []struct {
		name     string
		at, from int
		want     []int
	}{
		{"upward A→R is A's subtree", R, A, []int{A, C, D}},
		{"upward B→R is B alone (C–B not propagated)", R, B, []int{B}},
		{"upward C→A", A, C, []int{C}},
		{"downward R→A is the complement", A, R, []int{R, B}},
		{"downward R→B", B, R, []int{R, A, C, D}},
		{"downward A→C", C, A, []int{R, A, B, D}},
		{"downward A→D", D, A, []int{R, A, B, C}},
		{"non-tree C→B is C's whole tree", B, C, []int{R, A, B, C, D}},
		{"non-tree B→C is B's whole tree", C, B, []int{R, A, B, C, D}},
	} {
		got, want := s.inbound(tc.at, tc.from), s.set(tc.want...)
		if !got.Equal(&want) {
			t.Errorf("%s: n%d's filter from n%d is not exactly %v", tc.name, tc.at, tc.from, tc.want)
		}
	}
	s.check()
}

func TestSimChainOfFive(t *testing.T) {
	s := newSimNet(t, []int{-1, 0, 1, 2, 3}, nil)
	secs := s.run(30)
	// One hop per tick: the far end's address needs four ticks to cross.
	if secs < 4 || secs > 8 {
		t.Fatalf("stable after %d s", secs)
	}
	all := s.set(0, 1, 2, 3)
	if got := s.inbound(4, 3); !got.Equal(&all) {
		t.Fatal("n4 does not see the whole chain")
	}
	s.check()
}

// A 5-node star: the hub's filter to each spoke holds the hub and the
// other spokes, and not the spoke itself.
func TestSimStar(t *testing.T) {
	s := newSimNet(t, []int{-1, 0, 0, 0, 0}, nil)
	s.run(30)
	for spoke := 1; spoke < 5; spoke++ {
		got := s.inbound(spoke, 0)
		for k := 0; k < 5; k++ {
			if got.Contains(s.nodes[k].addr) != (k != spoke) {
				t.Fatalf("hub's filter to n%d: n%d membership wrong", spoke, k)
			}
		}
	}
	s.check()
}

// A 5-ring: the closing edge is not a tree edge, receives filters, and
// everyone is reachable.
func TestSimRing(t *testing.T) {
	s := newSimNet(t, []int{-1, 0, 1, 2, 3}, [][2]int{{4, 0}})
	s.run(30)
	all := s.set(0, 1, 2, 3, 4)
	if got := s.inbound(0, 4); !got.Equal(&all) {
		t.Fatal("non-tree edge 4→0 should carry the whole tree")
	}
	s.check()
}

// A binary tree of 15 with two non-tree links; then a subtree re-parents
// over a non-tree link after its parent link dies; then the mesh splits.
func TestSimTreeOfFifteen(t *testing.T) {
	parent := make([]int, 15)
	for i := range parent {
		parent[i] = (i - 1) / 2
	}
	parent[0] = -1
	s := newSimNet(t, parent, [][2]int{{3, 6}, {7, 14}})
	s.run(60)
	s.check()

	// Link 1–0 dies; 3 re-parents to 6 over the old non-tree link and 1
	// becomes 3's child. Nodes whose parent changed mark all (Switch).
	s.unlink(1, 0)
	s.nodes[3].parent, s.nodes[1].parent = 6, 3
	s.nodes[3].st.MarkAll(s.now)
	s.nodes[1].st.MarkAll(s.now)
	s.run(60)
	s.check()

	// Link 2–6 dies: 6 becomes the root of its own part (SelfRoot).
	s.unlink(2, 6)
	s.nodes[6].parent = -1
	s.nodes[6].st.MarkAll(s.now)
	s.run(60)
	s.check()
	a, b := s.root(0), s.root(6)
	if a == b {
		t.Fatal("not split")
	}
	for i, n := range s.nodes {
		for j := range n.links {
			if s.root(i) == a && n.st.MayReach(s.nodes[j].addr, s.nodes[7].addr) {
				t.Fatalf("n%d still routes to the other part through n%d", i, j)
			}
		}
	}
	if n, ok := s.nodes[0].st.MeshSizeEstimate(); !ok || n != 5 {
		t.Fatalf("n0 mesh size %d %v, want 5", n, ok)
	}
	if n, ok := s.nodes[6].st.MeshSizeEstimate(); !ok || n != 10 {
		t.Fatalf("n6 mesh size %d %v, want 10", n, ok)
	}
}

// Random trees with random cross links converge to the exact split-horizon
// filters, whatever the shape.
func TestSimRandomTrees(t *testing.T) {
	for seed := range 6 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			n := 8 + seed*5
			if seed == 5 {
				n = 100
			}
			parent := make([]int, n)
			parent[0] = -1
			x := uint64(seed)*0x9e3779b97f4a7c15 + 1
			next := func(m int) int { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int(x % uint64(m)) }
			for i := 1; i < n; i++ {
				parent[i] = next(i)
			}
			var extra [][2]int
			for range n / 3 {
				i, j := next(n), next(n)
				if i != j && parent[i] != j && parent[j] != i {
					extra = append(extra, [2]int{i, j})
				}
			}
			s := newSimNet(t, parent, extra)
			s.run(60)
			s.check()
		})
	}
}

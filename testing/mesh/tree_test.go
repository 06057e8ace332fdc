package mesh

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// converged reports whether every node agrees on one root — the smallest
// NodeAddr among them — and every node's coordinates are itself followed
// by its parent's coordinates, the parent being a linked peer.
func converged(nodes []*Node) (bool, string) {
	if len(nodes) == 0 {
		return true, ""
	}
	minAddr := nodes[0].ID.NodeAddr()
	byAddr := map[identity.NodeAddr]*Node{}
	for _, nd := range nodes {
		byAddr[nd.ID.NodeAddr()] = nd
		if nd.ID.NodeAddr().Less(minAddr) {
			minAddr = nd.ID.NodeAddr()
		}
	}
	for _, nd := range nodes {
		tr := nd.Core.Tree()
		if tr.Root() != minAddr {
			return false, "node " + nd.ID.NodeAddr().Short() + " has root " + tr.Root().Short()
		}
		coords := tr.Coords()
		if coords[0] != nd.ID.NodeAddr() || coords[len(coords)-1] != minAddr {
			return false, "bad coords at " + nd.ID.NodeAddr().Short()
		}
		parent, ok := tr.Parent()
		if !ok {
			if nd.ID.NodeAddr() != minAddr {
				return false, "non-minimum node is root"
			}
			continue
		}
		if nd.Core.Peers().Peer(parent) == nil {
			return false, "parent is not a linked peer"
		}
		if !slices.Equal(coords[1:], byAddr[parent].Core.Tree().Coords()) {
			return false, "coords disagree with the parent's at " + nd.ID.NodeAddr().Short()
		}
	}
	return true, ""
}

// randomMesh connects n nodes into a random connected graph: a random
// spanning tree plus extra random links, about deg links per node in all.
func randomMesh(net *Net, n int, deg float64, seed uint64) []*Node {
	nodes := net.AddNodes(n)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := 1; i < n; i++ {
		lat := time.Duration(2+rng.IntN(18)) * time.Millisecond
		net.Connect(nodes[i], nodes[rng.IntN(i)], lat, 0)
	}
	extra := int(float64(n)*deg/2) - (n - 1)
	for extra > 0 {
		a, b := nodes[rng.IntN(n)], nodes[rng.IntN(n)]
		if a == b || net.Link(a, b) != nil {
			continue
		}
		net.Connect(a, b, time.Duration(2+rng.IntN(18))*time.Millisecond, 0)
		extra--
	}
	return nodes
}

func TestTreeTopologies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(net *Net) []*Node
	}{
		{"chain", func(net *Net) []*Node {
			nodes := net.AddNodes(10)
			for i := 1; i < len(nodes); i++ {
				net.Connect(nodes[i-1], nodes[i], 5*time.Millisecond, 0)
			}
			return nodes
		}},
		{"ring", func(net *Net) []*Node {
			nodes := net.AddNodes(12)
			for i := range nodes {
				net.Connect(nodes[i], nodes[(i+1)%len(nodes)], 5*time.Millisecond, 0)
			}
			return nodes
		}},
		{"star", func(net *Net) []*Node {
			nodes := net.AddNodes(15)
			for _, nd := range nodes[1:] {
				net.Connect(nodes[0], nd, 5*time.Millisecond, 0)
			}
			return nodes
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := New(Options{Seed: 3})
			nodes := tc.build(net)
			took, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 2*time.Minute)
			if !ok {
				_, why := converged(nodes)
				t.Fatalf("not converged: %s", why)
			}
			t.Logf("%s converged in %v simulated", tc.name, took)
		})
	}
}

func TestTreeDisconnectedPartsElectTheirOwnRoots(t *testing.T) {
	net := New(Options{Seed: 4})
	left, right := net.AddNodes(6), net.AddNodes(6)
	for _, part := range [][]*Node{left, right} {
		for i := 1; i < len(part); i++ {
			net.Connect(part[i-1], part[i], 5*time.Millisecond, 0)
		}
	}
	if _, ok := net.RunUntil(func() bool {
		a, _ := converged(left)
		b, _ := converged(right)
		return a && b
	}, 2*time.Minute); !ok {
		t.Fatal("partitions did not converge on their own minimum roots")
	}
	// Join them: one root for all.
	net.Connect(left[5], right[0], 5*time.Millisecond, 0)
	all := append(append([]*Node{}, left...), right...)
	if _, ok := net.RunUntil(func() bool { ok, _ := converged(all); return ok }, 2*time.Minute); !ok {
		_, why := converged(all)
		t.Fatalf("merged mesh did not converge: %s", why)
	}
}

func sortLinks(links []*Link) {
	slices.SortFunc(links, func(a, b *Link) int {
		if a.A.Index != b.A.Index {
			return a.A.Index - b.A.Index
		}
		return a.B.Index - b.B.Index
	})
}

// deadLinksGone: every cut link has been declared dead at both ends.
func deadLinksGone(net *Net) bool {
	for _, l := range net.Links() {
		if !l.Up() && (l.A.Core.Peers().Peer(l.B.ID.NodeAddr()) != nil || l.B.Core.Peers().Peer(l.A.ID.NodeAddr()) != nil) {
			return false
		}
	}
	return true
}

func connected(nodes []*Node, net *Net) bool {
	seen := map[int]bool{0: true}
	queue := []int{0}
	adj := map[int][]int{}
	for _, l := range net.Links() {
		if l.Up() {
			adj[l.A.Index] = append(adj[l.A.Index], l.B.Index)
			adj[l.B.Index] = append(adj[l.B.Index], l.A.Index)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range adj[i] {
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	return len(seen) == len(nodes)
}

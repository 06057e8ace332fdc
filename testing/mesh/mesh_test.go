package mesh

import (
	"testing"
	"time"
)

// TestLinksComeUpAndHeal: a ring of 20 nodes links up, survives a link cut
// (both ends declare it dead, then redial once it heals), deterministically.
func TestLinksComeUpAndHeal(t *testing.T) {
	n := New(Options{Seed: 1})
	nodes := n.AddNodes(20)
	for i := range nodes {
		n.Connect(nodes[i], nodes[(i+1)%len(nodes)], 10*time.Millisecond, 0)
	}
	allLinked := func() bool {
		for _, l := range n.Links() {
			if l.Up() && (l.A.Core.Peers().Peer(l.B.ID.NodeAddr()) == nil || l.B.Core.Peers().Peer(l.A.ID.NodeAddr()) == nil) {
				return false
			}
		}
		return true
	}
	took, ok := n.RunUntil(allLinked, time.Minute)
	if !ok {
		t.Fatal("ring did not link up")
	}
	t.Logf("20-node ring linked in %v simulated", took)
	l := n.Link(nodes[0], nodes[1])
	l.SetUp(false)
	if _, ok := n.RunUntil(func() bool { return nodes[0].Core.Peers().Peer(nodes[1].ID.NodeAddr()) == nil }, 2*time.Minute); !ok {
		t.Fatal("cut link never declared dead")
	}
	l.SetUp(true)
	if _, ok := n.RunUntil(allLinked, 5*time.Minute); !ok {
		t.Fatal("link did not come back")
	}
}

func TestDeterministic(t *testing.T) {
	run := func() (uint64, uint64, uint64) {
		n := New(Options{Seed: 7})
		nodes := n.AddNodes(10)
		for i := 1; i < len(nodes); i++ {
			n.Connect(nodes[i-1], nodes[i], 5*time.Millisecond, 0.05)
		}
		n.Run(3 * time.Minute)
		return n.Sent, n.Delivered, n.Trace()
	}
	s1, d1, h1 := run()
	s2, d2, h2 := run()
	if s1 != s2 || d1 != d2 || h1 != h2 {
		t.Errorf("same seed, different runs: %d/%d/%x vs %d/%d/%x", s1, d1, h1, s2, d2, h2)
	}
}

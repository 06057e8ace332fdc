package mesh

import (
	"testing"
	"time"
)

// TestPathMTUDiscoveryOverHeterogeneousLinks: A(1400)—B(800)—C(800).
// Datagrams from A reach C having crossed an 800-byte hop; C tells A
// (PathMtuNotification) and A's session learns 800, while C's session
// towards A sees 800 as well.
func TestPathMTUDiscoveryOverHeterogeneousLinks(t *testing.T) {
	net := New(Options{Seed: 51})
	nodes := net.AddNodes(3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	a.MTU, b.MTU, c.MTU = 1400, 800, 800
	linkChain(net, a, b, c)
	introduce(t, net, nodes, a, c)
	learned := func() (uint16, bool) {
		m, ok := a.Core.SessionMMP(c.ID.NodeAddr())
		if !ok {
			return 0, false
		}
		return m.PathMTU().Current(), m.PathMTU().Current() == 800
	}
	_, ok := net.RunUntil(func() bool {
		a.Core.Send(net.Now(), c.ID.NodeAddr(), 1, 1, make([]byte, 300))
		c.Core.Send(net.Now(), a.ID.NodeAddr(), 1, 1, make([]byte, 300))
		_, ok := learned()
		return ok
	}, 2*time.Minute)
	mtu, _ := learned()
	if !ok {
		t.Fatalf("A's path MTU towards C is %d, want 800", mtu)
	}
	if m, ok := c.Core.SessionMMP(a.ID.NodeAddr()); !ok || m.PathMTU().LastObserved() != 800 {
		t.Errorf("C did not observe the 800-byte forward path")
	}
	t.Logf("A learned path MTU %d towards C after %v", mtu, net.Elapsed())
}

// linkChain links each node to the next, 5 ms apart.
func linkChain(net *Net, nodes ...*Node) {
	for i := 1; i < len(nodes); i++ {
		net.Connect(nodes[i-1], nodes[i], 5*time.Millisecond, 0)
	}
}

// introduce converges the mesh, lets it settle and tells x and y each
// other's key.
func introduce(t *testing.T, net *Net, nodes []*Node, x, y *Node) {
	t.Helper()
	if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
		t.Fatal("not converged")
	}
	net.Run(10 * time.Second)
	x.Core.LearnIdentity(y.ID.PublicKey())
	y.Core.LearnIdentity(x.ID.PublicKey())
}

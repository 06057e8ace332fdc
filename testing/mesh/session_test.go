package mesh

import (
	"fmt"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// sessionRun converges the mesh, then sends count datagrams from src to
// dst (which src knows only by key) and returns how many arrived intact.
func sessionRun(t *testing.T, net *Net, nodes []*Node, src, dst *Node, count int) int {
	t.Helper()
	if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
		t.Fatal("mesh not converged")
	}
	net.Run(30 * time.Second) // filters settle
	src.Core.LearnIdentity(dst.ID.PublicKey())
	for i := range count {
		if err := src.Core.Send(net.Now(), dst.ID.NodeAddr(), 40000, 7, []byte(fmt.Sprintf("datagram %d", i))); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		net.Run(20 * time.Millisecond)
	}
	net.Run(10 * time.Second)
	got := 0
	for i, d := range dst.Received {
		if d.Src != src.ID.NodeAddr() || d.DstPort != 7 {
			t.Errorf("datagram %d from %s port %d", i, d.Src.Short(), d.DstPort)
		}
		if string(d.Payload) == fmt.Sprintf("datagram %d", i) {
			got++
		}
	}
	return got
}

// TestSessionsDirectThreeHopsAndAcross100: end-to-end sessions to a
// direct peer, across a 3-node chain (the middle only forwards), and
// across a 100-node mesh, with the first packets queued behind the
// lookup and the handshake, none lost, in order.
func TestSessionsDirectThreeHopsAndAcross100(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(net *Net) ([]*Node, *Node, *Node)
	}{
		{"direct", func(net *Net) ([]*Node, *Node, *Node) {
			nodes := net.AddNodes(2)
			net.Connect(nodes[0], nodes[1], 5*time.Millisecond, 0)
			return nodes, nodes[0], nodes[1]
		}},
		{"chain3", func(net *Net) ([]*Node, *Node, *Node) {
			nodes := net.AddNodes(3)
			net.Connect(nodes[0], nodes[1], 5*time.Millisecond, 0)
			net.Connect(nodes[1], nodes[2], 5*time.Millisecond, 0)
			return nodes, nodes[0], nodes[2]
		}},
		{"mesh100", func(net *Net) ([]*Node, *Node, *Node) {
			nodes := randomMesh(net, 100, 4, 100)
			return nodes, nodes[3], nodes[97]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := New(Options{Seed: 21})
			nodes, src, dst := tc.build(net)
			const count = 12 // more than the 5 warmup packets
			got := sessionRun(t, net, nodes, src, dst, count)
			if got != count {
				t.Fatalf("%d of %d datagrams arrived in order", got, count)
			}
			// The reply direction uses the same session.
			if err := dst.Core.Send(net.Now(), src.ID.NodeAddr(), 7, 40000, []byte("reply")); err != nil {
				t.Fatal(err)
			}
			net.Run(5 * time.Second)
			if n := len(src.Received); n != 1 || string(src.Received[0].Payload) != "reply" {
				t.Fatalf("reply: %d datagrams", n)
			}
			if src.Core.Sessions().Len() != 1 || dst.Core.Sessions().Len() != 1 {
				t.Errorf("sessions: src %d dst %d", src.Core.Sessions().Len(), dst.Core.Sessions().Len())
			}
		})
	}
}

// TestPortsMultiplexDatagrams: services bound to ports receive only their
// datagrams; an unbound port falls back to the node's default consumer.
func TestPortsMultiplexDatagrams(t *testing.T) {
	net := New(Options{Seed: 22})
	nodes := net.AddNodes(2)
	net.Connect(nodes[0], nodes[1], 5*time.Millisecond, 0)
	a, b := nodes[0], nodes[1]
	var shim, api []string
	if err := b.Core.Listen(256, func(_ time.Time, _ identity.NodeAddr, _ uint16, p []byte, _ bool) { shim = append(shim, string(p)) }); err != nil {
		t.Fatal(err)
	}
	if err := b.Core.Listen(5000, func(_ time.Time, _ identity.NodeAddr, _ uint16, p []byte, _ bool) { api = append(api, string(p)) }); err != nil {
		t.Fatal(err)
	}
	if err := b.Core.Listen(256, nil); err == nil {
		t.Error("port 256 bound twice")
	}
	sessionRun(t, net, nodes, a, b, 0) // converge; no datagrams yet
	for port, msg := range map[uint16]string{256: "to-shim", 5000: "to-api", 7: "to-default"} {
		if err := a.Core.Send(net.Now(), b.ID.NodeAddr(), 1, port, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	net.Run(5 * time.Second)
	if len(shim) != 1 || shim[0] != "to-shim" || len(api) != 1 || api[0] != "to-api" {
		t.Errorf("shim %v api %v", shim, api)
	}
	if len(b.Received) != 1 || string(b.Received[0].Payload) != "to-default" {
		t.Errorf("default consumer got %d datagrams", len(b.Received))
	}
}

package mesh

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// forgedSignal is a SessionDatagram carrying an MtuExceeded, built byte
// by byte as an attacker would: msg_type 0, ttl, path_mtu, src, dest, then
// the FSP signal (prefix with U, type 0x22, flags, dest, reporter, mtu).
func forgedSignal(src, to, dest, reporter identity.NodeAddr, mtu uint16) []byte {
	b := []byte{0x00, 64, 0xff, 0xff}
	b = append(b, src[:]...)
	b = append(b, to[:]...)
	b = append(b, 0x00, 0x04, 36, 0, 0x22, 0)
	b = append(b, dest[:]...)
	b = append(b, reporter[:]...)
	return binary.LittleEndian.AppendUint16(b, mtu)
}

// TestMtuExceededFromRelayClampsForgedIgnored: E—A—B—C(800)—D(800),
// the others at 1400. A datagram from A too big for C's 800-byte link to
// D makes C, a relay on the path, report MtuExceeded: A clamps to 800.
// E, a mesh member beside A but off the path, then forges MtuExceeded
// for A's session to D: as itself, as A's next hop B, and as C with a
// value below what D reported end to end. None lowers the session's MTU
// and A's traffic to D still arrives; the refusals are counted.
func TestMtuExceededFromRelayClampsForgedIgnored(t *testing.T) {
	net := New(Options{Seed: 57})
	nodes := net.AddNodes(5)
	// E is the node with the largest address: a leaf that is not the
	// root is nobody's tree ancestor, so it is on no path but its own.
	slices.SortFunc(nodes, func(x, y *Node) int { return x.ID.NodeAddr().Compare(y.ID.NodeAddr()) })
	a, b, c, d, e := nodes[0], nodes[1], nodes[2], nodes[3], nodes[4]
	e.MTU, a.MTU, b.MTU, c.MTU, d.MTU = 1400, 1400, 1400, 800, 800
	linkChain(net, e, a, b, c, d)
	introduce(t, net, nodes, a, d)
	da := d.ID.NodeAddr()
	sess := a.Core.Sessions()
	if _, ok := net.RunUntil(func() bool {
		a.Core.Send(net.Now(), da, 1, 1, make([]byte, 300))
		return sess.Established(da)
	}, time.Minute); !ok {
		t.Fatal("session A→D not established")
	}

	// The genuine relay's report clamps.
	a.Core.Send(net.Now(), da, 1, 1, make([]byte, 1000))
	if _, ok := net.RunUntil(func() bool { _, ok := sess.PathMTU(da); return ok }, 10*time.Second); !ok {
		t.Fatal("C's MtuExceeded did not clamp A's session")
	}
	if mtu, _ := sess.PathMTU(da); mtu != 800 {
		t.Fatalf("clamp %d, want 800", mtu)
	}
	// D's end-to-end report of the same path.
	if _, ok := net.RunUntil(func() bool {
		a.Core.Send(net.Now(), da, 1, 1, make([]byte, 300))
		m, ok := a.Core.SessionMMP(da)
		n, nok := m.PathMTU().Notified()
		return ok && nok && n == 800
	}, time.Minute); !ok {
		t.Fatal("D never reported the 800-byte path")
	}

	before := sess.Stats()
	link := e.Core.Peers().Peer(a.ID.NodeAddr())
	if link == nil {
		t.Fatal("E has no link to A")
	}
	for _, f := range [][]byte{
		forgedSignal(e.ID.NodeAddr(), a.ID.NodeAddr(), da, e.ID.NodeAddr(), 256), // as itself
		forgedSignal(b.ID.NodeAddr(), a.ID.NodeAddr(), da, b.ID.NodeAddr(), 256), // as A's next hop, over E's link
		forgedSignal(c.ID.NodeAddr(), a.ID.NodeAddr(), da, c.ID.NodeAddr(), 300), // as the tree-path relay
	} {
		if err := e.Core.Peers().SendLink(net.Now(), link, 0, f); err != nil {
			t.Fatal(err)
		}
	}
	net.Run(time.Second)
	after := sess.Stats()
	if mtu, _ := sess.PathMTU(da); mtu != 800 {
		t.Fatalf("forged MtuExceeded moved the clamp to %d", mtu)
	}
	if got := after.MtuExceeded - before.MtuExceeded; got != 3 {
		t.Fatalf("%d forged signals reached A, want 3", got)
	}
	if off, con := after.MtuExceededOffPath-before.MtuExceededOffPath,
		after.MtuExceededContradicted-before.MtuExceededContradicted; off != 2 || con != 1 {
		t.Fatalf("off_path %d contradicted %d, want 2 1", off, con)
	}
	d.Received = nil
	for range 10 {
		a.Core.Send(net.Now(), da, 1, 7, make([]byte, 600))
		net.Run(20 * time.Millisecond)
	}
	net.Run(time.Second)
	if len(d.Received) != 10 {
		t.Fatalf("D received %d of 10 datagrams after the forgeries", len(d.Received))
	}
}

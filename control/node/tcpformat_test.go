package node

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/peer"
)

// TestAutoDialOverTCPReconnects: an auto node's dial over TCP survives a
// peer that closes the connection on the other format's msg1, as both
// upstream branches do. B (auto) first links to A over next's format;
// A comes back on the same address as a master-only node, whose TCP
// closes the stream at B's XX msg1 (the format B learned for A). B's
// next attempt opens a new connection with IK and the link runs v0.
func TestAutoDialOverTCPReconnects(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	a := startTCPNodeWith(t, tcpNodeSpec{bind: "127.0.0.1:0", format: peer.WireV1})
	b := startTCPNodeWith(t, tcpNodeSpec{format: peer.WireAuto}, a)
	format := func(n *tcpNode, of *tcpNode) string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := n.n.Do(ctx, func(time.Time) any {
			for _, p := range n.n.showPeers().Peers {
				if p.Npub == of.n.Identity().Npub() {
					return p.WireFormat
				}
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		return v.(string)
	}
	if !waitFor(30*time.Second, func() bool { return format(b, a) == "v1" }) {
		t.Fatalf("B's first link to A: %q, want v1", format(b, a))
	}
	addr, id := a.tr.LocalAddr(), a.n.Identity()
	a.stop()
	a2 := startTCPNodeWith(t, tcpNodeSpec{bind: addr, format: peer.WireV0, id: id})
	if !waitFor(60*time.Second, func() bool { return format(b, a2) == "v0" }) {
		t.Fatalf("B's link to the master-only A: %q, want v0", format(b, a2))
	}
	if s := a2.tr.Stats(); s.DroppedInvalid == 0 {
		t.Errorf("A (master-only) closed no connection on B's XX msg1: %+v", s)
	}
}

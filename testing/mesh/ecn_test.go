package mesh

import (
	"testing"
	"time"
)

// TestCERelayedFromACongestedHop: in a chain A—B—C—D—E whose B—C link
// loses 10% (B's MMP then judges B→C congested), datagrams from A arrive
// at E with CE set, relayed by C and D; with no loss none carry CE.
func TestCERelayedFromACongestedHop(t *testing.T) {
	for _, lossy := range []bool{true, false} {
		net := New(Options{Seed: 41})
		nodes := net.AddNodes(5)
		var links []*Link
		for i := 1; i < len(nodes); i++ {
			links = append(links, net.Connect(nodes[i-1], nodes[i], 5*time.Millisecond, 0))
		}
		if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
			t.Fatal("not converged")
		}
		net.Run(30 * time.Second)
		if lossy {
			links[1].Loss = 0.10 // B—C
		}
		a, e := nodes[0], nodes[4]
		a.Core.LearnIdentity(e.ID.PublicKey())
		for range 20_000 {
			a.Core.Send(net.Now(), e.ID.NodeAddr(), 1, 1, make([]byte, 100))
			net.Run(time.Millisecond)
		}
		net.Run(5 * time.Second)
		ce := 0
		for _, d := range e.Received {
			if d.CE {
				ce++
			}
		}
		t.Logf("lossy=%v: %d datagrams at E, %d with CE; B→C congested: %v", lossy, len(e.Received), ce,
			nodes[1].Core.Peers().Peer(nodes[2].ID.NodeAddr()).MMP().Congested(0.05, 3))
		if lossy && ce == 0 {
			t.Error("no CE arrived from the congested hop")
		}
		if !lossy && ce != 0 {
			t.Errorf("%d datagrams carry CE without congestion", ce)
		}
		if len(e.Received) == 0 {
			t.Fatal("nothing arrived")
		}
	}
}

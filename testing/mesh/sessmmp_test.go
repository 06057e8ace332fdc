package mesh

import (
	"math"
	"testing"
	"time"

	"github.com/fips-go/fips/control/session"
)

// TestSessionMMPMeasuresThePath: A streams to C across B for 30 s over
// links that lose 5% each way on A—B only. A's session MMP counts what
// it sent, takes C's ReceiverReports (none refused as claiming more than
// was sent) and reports the path's forward loss (5% ± 1.5 points).
func TestSessionMMPMeasuresThePath(t *testing.T) {
	net := New(Options{Seed: 41})
	nodes := net.AddNodes(3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	ab := net.Connect(a, b, 5*time.Millisecond, 0)
	net.Connect(b, c, 5*time.Millisecond, 0)
	if _, ok := net.RunUntil(func() bool { ok, _ := converged(nodes); return ok }, 5*time.Minute); !ok {
		t.Fatal("not converged")
	}
	a.Core.LearnIdentity(c.ID.PublicKey())
	established := func() bool {
		in, ok := a.Core.Sessions().Session(c.ID.NodeAddr())
		return ok && in.State == session.StateEstablished
	}
	for i := 0; !established(); i++ { // session setup on a clean path
		if i == 1000 {
			t.Fatal("no session A→C")
		}
		a.Core.Send(net.Now(), c.ID.NodeAddr(), 1, 1, make([]byte, 200))
		net.Run(10 * time.Millisecond)
	}
	net.Run(time.Second)
	ab.Loss = 0.05
	const n = 30_000
	var losses []float64
	for ms := range n {
		if err := a.Core.Send(net.Now(), c.ID.NodeAddr(), 1, 1, make([]byte, 200)); err != nil {
			t.Fatal(err)
		}
		net.Run(time.Millisecond)
		if ms >= 10_000 && ms%1000 == 0 {
			m, ok := a.Core.SessionMMP(c.ID.NodeAddr())
			if !ok {
				t.Fatal("A has no session metrics for C")
			}
			losses = append(losses, m.Loss())
		}
	}
	m, _ := a.Core.SessionMMP(c.ID.NodeAddr())
	s := m.Stats()
	mean := 0.0
	for _, v := range losses {
		mean += v
	}
	mean /= float64(len(losses))
	t.Logf("A's session to C: %d sent, %d reports seen, %d refused; mean loss %.4f", s.CumulativePacketsTx, s.ReportsSeen, s.RefusedReports, mean)
	if s.CumulativePacketsTx < n {
		t.Errorf("session MMP counted %d packets sent, want ≥ %d", s.CumulativePacketsTx, n)
	}
	if s.RefusedReports != 0 || s.ReportsSeen < 10 {
		t.Errorf("A refused %d of %d ReceiverReports from C", s.RefusedReports, s.ReportsSeen)
	}
	if math.Abs(mean-0.05) > 0.015 {
		t.Errorf("A's session loss %.4f, want 0.05 ± 0.015", mean)
	}
}

package mesh

import (
	"math"
	"testing"
	"time"
)

// TestLinkMMPMeasuresTheSimulatedLink: after 30 s of traffic over a link
// with 25 ms one-way latency and 5% loss each way, each end's link MMP
// reports an RTT and a loss within 10% of the configured values.
func TestLinkMMPMeasuresTheSimulatedLink(t *testing.T) {
	for _, tc := range []struct {
		latency time.Duration
		loss    float64
	}{
		{25 * time.Millisecond, 0.05},
		{10 * time.Millisecond, 0},
		{60 * time.Millisecond, 0.2},
	} {
		net := New(Options{Seed: 31})
		a, b := net.AddNode(), net.AddNode()
		l := net.Connect(a, b, tc.latency, 0)
		if _, ok := net.RunUntil(func() bool { return a.Core.Peers().Peer(b.ID.NodeAddr()) != nil }, time.Minute); !ok {
			t.Fatal("no link")
		}
		l.Loss = tc.loss
		a.Core.LearnIdentity(b.ID.PublicKey())
		b.Core.LearnIdentity(a.ID.PublicKey())
		var lossA, lossB []float64
		for ms := range 30_000 {
			a.Core.Send(net.Now(), b.ID.NodeAddr(), 1, 1, make([]byte, 200))
			b.Core.Send(net.Now(), a.ID.NodeAddr(), 1, 1, make([]byte, 200))
			net.Run(time.Millisecond)
			if ms >= 10_000 && ms%1000 == 0 {
				lossA = append(lossA, a.Core.Peers().Peer(b.ID.NodeAddr()).MMP().Loss())
				lossB = append(lossB, b.Core.Peers().Peer(a.ID.NodeAddr()).MMP().Loss())
			}
		}
		wantRTT := 2 * tc.latency
		for name, n := range map[string]*Node{"a": a, "b": b} {
			other := b
			if n == b {
				other = a
			}
			m := n.Core.Peers().Peer(other.ID.NodeAddr()).MMP()
			srtt, ok := m.SRTT()
			if !ok || math.Abs(float64(srtt-wantRTT)) > 0.1*float64(wantRTT) {
				t.Errorf("%v/%.2f: %s SRTT %v, want %v ±10%%", tc.latency, tc.loss, name, srtt, wantRTT)
			}
		}
		for name, samples := range map[string][]float64{"a": lossA, "b": lossB} {
			mean := 0.0
			for _, v := range samples {
				mean += v
			}
			mean /= float64(len(samples))
			if math.Abs(mean-tc.loss) > math.Max(0.1*tc.loss, 0.002) {
				t.Errorf("%v/%.2f: %s mean loss %.4f, want %.2f ±10%%", tc.latency, tc.loss, name, mean, tc.loss)
			}
			sr, _ := a.Core.Peers().Peer(b.ID.NodeAddr()).MMP().SRTT()
			t.Logf("latency %v loss %.2f: %s measured loss %.4f (SRTT a→b %v)", tc.latency, tc.loss, name, mean, sr)
		}
	}
}

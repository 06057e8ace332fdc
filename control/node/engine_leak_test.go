package node

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestEngineStartStopLeaksNoGoroutine: three nodes A—B—C on loopback UDP
// carry a stream A→C, so B's UDP reader runs an engine worker that opens
// A's frames and forwards them to C on a worker sender of its own; when
// the nodes stop, no goroutine of theirs — loop, readers, workers,
// senders, timers — is left. The same holds with the engine off.
func TestEngineStartStopLeaksNoGoroutine(t *testing.T) {
	for _, c := range []struct {
		name     string
		noEngine bool
	}{{"engine", false}, {"no-engine", true}} {
		t.Run(c.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			o := Options{Dataplane: DataplaneOptions{NoEngine: c.noEngine}}
			a, b, cn := loopChain(t, o)
			var pkts [][]byte
			for i := range 200 {
				pkts = append(pkts, udp6(a, cn, streamPort, uint32(i), 500))
			}
			for i := 0; i < len(pkts); i += 20 {
				a.send(pkts[i : i+20]...)
			}
			// Every packet is delivered or counted as dropped by a
			// node's receive queue (its CoDel drops by design when a
			// loaded machine keeps the node from running).
			dropped := func() uint64 {
				var d uint64
				for _, n := range []*loopNode{a, b, cn} {
					s := n.n.Snapshot()
					d += s.AQMDrops + s.RxDrops
				}
				return d
			}
			if !waitFor(10*time.Second, func() bool { return uint64(cn.streamCount())+dropped() == 200 }) {
				t.Fatalf("C delivered %d of 200 packets, %d counted as dropped", cn.streamCount(), dropped())
			}
			if d := dropped(); d > 0 {
				t.Logf("the receive queues dropped %d of 200 packets", d)
			}
			ev := b.engine()
			t.Logf("b's engine: %+v", ev)
			if c.noEngine {
				if ev.Enabled || ev.Workers != 0 || b.n.eng != nil {
					t.Fatalf("dataplane engine off, yet b runs one: %+v", ev)
				}
			} else {
				if ev.Workers != 1 || ev.Forwarded == 0 || ev.FramesOpened == 0 {
					t.Fatalf("b's engine did not forward on a worker: %+v", ev)
				}
			}
			for _, n := range []*loopNode{a, b, cn} {
				n.stop()
			}
			if b.n.eng != nil && b.n.eng.Workers() != 0 {
				t.Errorf("b stopped with %d engine workers running", b.n.eng.Workers())
			}
			goleak.VerifyNone(t, ignore)
		})
	}
}

package netns

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
)

// engineOf is n's show_status dataplane.engine.
func engineOf(t *testing.T, n *Node) ctl.EngineView {
	t.Helper()
	return dataplaneOf(t, n).Engine
}

// forwardedOf is n's show_routing forwarding.forwarded_packets.
func forwardedOf(t *testing.T, n *Node) uint64 {
	t.Helper()
	var r struct {
		Forwarding struct {
			Forwarded uint64 `json:"forwarded_packets"`
		} `json:"forwarding"`
	}
	if err := n.Call("show_routing", nil, &r); err != nil {
		t.Fatal(err)
	}
	return r.Forwarding.Forwarded
}

// reorderCounters sums the kernel's TCP reordering detections in a
// namespace (nstat, absolute): the sender's view of segments that arrived
// out of order without being lost.
func reorderCounters(t *testing.T, m *Mesh, ns string) uint64 {
	t.Helper()
	out, err := m.Exec(ns, "nstat", "-a", "-z", "TcpExtTCPSACKReorder", "TcpExtTCPTSReorder", "TcpExtTCPRenoReorder", "TcpExtTCPFACKReorder")
	if err != nil {
		t.Fatalf("nstat in %s: %v\n%s", ns, err, out)
	}
	var sum uint64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && strings.HasPrefix(f[0], "TcpExt") {
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatalf("nstat line %q: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}

// TestEngineCarriesTransitWithoutReordering: through a relay B, 4
// parallel iperf3 TCP streams A→C for 5 s. B's dataplane workers — not
// its event loop — forward nearly all of it (show_status
// dataplane.engine), show_routing counts every forward once whichever
// path carried it, and A's kernel detects no reordering on any stream.
func TestEngineCarriesTransitWithoutReordering(t *testing.T) {
	m, a, b, c, _ := ipv6Chain(t, Options{})
	addr := resolve(t, m, a, c)
	waitReply(t, m, a, addr, 20*time.Second)
	if out, err := m.Exec("a", "ping", "-6", "-c", "5", "-i", "0.2", "-W", "2", addr); err != nil {
		t.Fatalf("ping6 A→C: %v\n%s", err, out)
	}
	// The route counters before the engine's at the start, after them at
	// the end: what the workers forward meanwhile (a session report) then
	// cannot make their share exceed the whole.
	f0 := forwardedOf(t, b)
	e0 := engineOf(t, b)
	a0, c0 := engineOf(t, a), engineOf(t, c)
	if !e0.Enabled || e0.Workers < 1 || e0.LinksPublished < 2 {
		t.Fatalf("b's engine: %+v, want enabled with a worker and both links published", e0)
	}
	r0 := reorderCounters(t, m, "a")

	defer m.Background("c", "iperf3", "-s", "-1", "-B", addr)()
	if !m.WaitListening("c", 5201, 10*time.Second) {
		t.Fatal("iperf3 server not listening")
	}
	res, err := m.Exec("a", "iperf3", "-c", addr, "-t", "5", "-P", "4", "-J")
	if err != nil {
		t.Fatalf("iperf3: %v\n%s", err, firstLines(string(res), 20))
	}
	bps := regexp.MustCompile(`"sum_received":\s*\{[^}]*"bits_per_second":\s*([0-9.e+]+)`).FindSubmatch(res)
	if bps == nil {
		t.Fatalf("iperf3 output has no receive rate:\n%s", firstLines(string(res), 20))
	}
	e1, f1 := engineOf(t, b), forwardedOf(t, b)
	a1, c1 := engineOf(t, a), engineOf(t, c)
	byWorkers, total := e1.Forwarded-e0.Forwarded, f1-f0
	orig := a1.Originated - a0.Originated + c1.Originated - c0.Originated
	deliv := a1.Delivered - a0.Delivered + c1.Delivered - c0.Delivered
	t.Logf("TUN packets left to the loop: a %v, c %v", a1.EgressToLoop, c1.EgressToLoop)
	t.Logf("the ends' workers sealed %d datagrams read from their TUN (a %d, c %d) and delivered %d to it (a %d, c %d); sessions published: a %d, c %d",
		orig, a1.Originated-a0.Originated, c1.Originated-c0.Originated, deliv, a1.Delivered-a0.Delivered, c1.Delivered-c0.Delivered,
		a1.SessionsPublished, c1.SessionsPublished)
	// Nearly all of what B forwarded (data one way, ACKs the other) left
	// an end from its TUN reader and reached the other's TUN from its
	// workers; the rest is session reports and the first packets before
	// the tables were published.
	if orig < total*95/100 || deliv < total*95/100 {
		t.Errorf("of %d datagrams through B, the ends' workers originated %d and delivered %d: want ≥ 95%% each", total, orig, deliv)
	}
	r1 := reorderCounters(t, m, "a")
	t.Logf("4 streams A→C: %s bit/s; b forwarded %d datagrams, %d by its workers (%d upcalls, %d route misses, %d routes published); reordering detected by A: %d",
		bps[1], total, byWorkers, e1.Upcalls-e0.Upcalls, e1.ForwardMisses-e0.ForwardMisses, e1.RoutesPublished, r1-r0)
	if total < 10_000 {
		t.Fatalf("b forwarded %d datagrams during 5 s of iperf3", total)
	}
	if byWorkers < total*99/100 {
		t.Errorf("b's workers forwarded %d of %d datagrams, want ≥ 99%%", byWorkers, total)
	}
	if byWorkers > total {
		t.Errorf("b's workers forwarded %d, more than show_routing's %d: forwards counted twice or lost", byWorkers, total)
	}
	if r1 != r0 {
		t.Errorf("A's TCP detected %d reordering events over a relay", r1-r0)
	}
	if e1.ForwardErrors != e0.ForwardErrors {
		t.Errorf("b's workers failed %d forwards", e1.ForwardErrors-e0.ForwardErrors)
	}
}

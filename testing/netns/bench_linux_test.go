package netns

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// iperf3TCP runs iperf3 from node from to addr for secs seconds against a
// one-shot server started in node to, and returns the received rate in
// Mbit/s.
func iperf3TCP(tb testing.TB, m *Mesh, from, to, addr string, secs int) float64 {
	tb.Helper()
	stop := m.Background(to, "iperf3", "-s", "-1", "-B", addr)
	defer stop()
	if !m.WaitListening(to, 5201, 10*time.Second) {
		tb.Fatalf("iperf3 server in %s not listening", to)
	}
	out, err := m.Exec(from, "iperf3", "-c", addr, "-t", fmt.Sprint(secs), "-J")
	if err != nil {
		tb.Fatalf("iperf3 %s→%s: %v\n%s", from, to, err, firstLines(string(out), 20))
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.End.SumReceived.BitsPerSecond == 0 {
		tb.Fatalf("iperf3 output: %v\n%s", err, firstLines(string(out), 20))
	}
	return r.End.SumReceived.BitsPerSecond / 1e6
}

// BenchmarkChainTCP measures one TCP stream A→C across a 3-node chain
// A—B—C, through fips (TUN fips0 at both ends, B forwarding over its
// sessions' link layer) and, in the same run, through two anchors: the
// same kind of veth chain with B forwarding in the kernel (ANCHORS.md
// item 1b) and a wireguard-go chain, B relaying between two devices
// (item 2b). Each iteration runs iperf3 for 3 s on each; it reports the
// three rates and fips' ratio to each anchor. -benchtime 3x for 3 runs.
func BenchmarkChainTCP(b *testing.B) {
	raw := New(b, Options{})
	ra, rb, rc := raw.AddNode("ra"), raw.AddNode("rb"), raw.AddNode("rc")
	l1, l2 := raw.Link(ra, rb), raw.Link(rb, rc)
	for _, c := range [][]string{
		{"rb", "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{"ra", "ip", "route", "add", l2.AddrB, "via", l1.AddrB},
		{"rc", "ip", "route", "add", l1.AddrA, "via", l2.AddrA},
	} {
		if out, err := raw.Exec(c[0], c[1:]...); err != nil {
			b.Fatalf("anchor chain: %v: %v\n%s", c, err, out)
		}
	}

	m, a, _, c, _ := ipv6Chain(b, Options{TunMTU: 1500})
	resolve(b, m, a, c)
	if out, err := m.Exec("a", "ping", "-6", "-c", "3", "-W", "2", c.IPv6()); err != nil {
		b.Fatalf("ping before measuring: %v\n%s", err, out)
	}

	wg, wgAddr := wgChain(b)

	var fipsSum, anchorSum, wgSum float64
	b.ResetTimer()
	for range b.N {
		anchorSum += iperf3TCP(b, raw, "ra", "rc", l2.AddrB, 3)
		wgSum += iperf3TCP(b, wg, "wa", "wc", wgAddr, 3)
		fipsSum += iperf3TCP(b, m, "a", "c", c.IPv6(), 3)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(fipsSum/n, "fips-Mbit/s")
	b.ReportMetric(anchorSum/n, "kernel-Mbit/s")
	b.ReportMetric(wgSum/n, "wggo-Mbit/s")
	b.ReportMetric(fipsSum/anchorSum, "x-kernel")
	b.ReportMetric(fipsSum/wgSum, "x-wggo")
	b.ReportMetric(0, "ns/op")
}

//go:build linux

package netns

import (
	"strings"
	"testing"
	"time"
)

// showPeerFormats is n's show_peers: wire_format (and profile) by npub.
func showPeerFormats(t *testing.T, n *Node) map[string]string {
	t.Helper()
	var s struct {
		Peers []struct {
			Npub       string `json:"npub"`
			WireFormat string `json:"wire_format"`
			Profile    string `json:"profile"`
		} `json:"peers"`
	}
	if err := n.Call("show_peers", nil, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range s.Peers {
		out[p.Npub] = p.WireFormat + "/" + p.Profile
	}
	return out
}

// TestWireFormatsMixedLine is issue 30's line on real daemons: A speaks
// only upstream master's link format (node.wire_format v0, the default),
// C only upstream next's (v1), B both (auto). B links to A over IK and
// to C over XX, and ping6 by name runs A→C and C→A through B; B's
// show_peers says which format each link runs.
//
// It runs over each transport that carries both formats: UDP, TCP (each
// packet of a stream framed by its own version) and Ethernet (next's
// 4-byte data header told from master's by the FMP byte). The A–C
// session is XK: A speaks master's sessions only, C both (a node that
// speaks next runs both session patterns).
func TestWireFormatsMixedLine(t *testing.T) {
	for _, tr := range []string{"udp", "tcp", "ethernet"} {
		t.Run(tr, func(t *testing.T) { wireFormatsMixedLine(t, tr) })
	}
}

func wireFormatsMixedLine(t *testing.T, transport string) {
	m := New(t, Options{IPv6: true, Transport: transport})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	a.NodeConfig = "  wire_format: v0\n"
	b.NodeConfig = "  wire_format: auto\n"
	c.NodeConfig = "  wire_format: v1\n"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("B:\n%s\nC:\n%s", b.Logs(), c.Logs())
		}
	})
	m.Start()
	took := m.WaitConverged(60 * time.Second)
	t.Logf("converged in %v", took.Round(time.Millisecond))

	f := showPeerFormats(t, b)
	if f[a.Npub()] != "v0/" || f[c.Npub()] != "v1/full" {
		t.Fatalf("b's links: to a %q, to c %q; want v0/ and v1/full", f[a.Npub()], f[c.Npub()])
	}
	if got := showPeerFormats(t, c)[b.Npub()]; got != "v1/full" {
		t.Errorf("c's link to b: %q", got)
	}
	addrC := resolve(t, m, a, c)
	resolve(t, m, c, a)
	waitReply(t, m, a, addrC, 20*time.Second)
	for _, d := range []struct {
		from string
		to   *Node
	}{{"a", c}, {"c", a}} {
		out, err := m.Exec(d.from, "ping", "-6", "-c", "10", "-i", "0.2", "-W", "2", d.to.Npub()+".fips")
		t.Logf("ping %s → %s:\n%s", d.from, d.to.Name, firstLines(string(out), 2))
		if err != nil || !strings.Contains(string(out), "10 received") {
			t.Fatalf("ping6 %s → %s by name: %v\n%s\nB:\n%s", d.from, d.to.Name, err, out, b.Logs())
		}
	}
	for _, n := range []*Node{a, c} {
		var ss struct {
			Sessions []struct {
				Npub         string `json:"npub"`
				State        string `json:"state"`
				NoisePattern string `json:"noise_pattern"`
			} `json:"sessions"`
		}
		if err := n.Call("show_sessions", nil, &ss); err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, s := range ss.Sessions {
			if (s.Npub == a.Npub() || s.Npub == c.Npub()) && s.State == "established" && s.NoisePattern == "XK" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s's sessions: %+v; want an established XK session with the other end", n.Name, ss.Sessions)
		}
	}
	defer IperfServer(t, m, c)()
	bps := iperf(t, m, "a", addrC, 3)
	t.Logf("iperf3 A→C over %s, A v0 – B auto – C v1: %.0f Mbit/s", transport, bps/1e6)
}

//go:build linux

package netns

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// startConfigured writes n's fips.yaml with the given transports and
// peers sections (YAML bodies, indented two spaces) and the IPv6 adapter
// on, and starts its daemon. The mesh's Close stops it.
func startConfigured(t *testing.T, n *Node, transports, peers string) {
	t.Helper()
	if peers == "" {
		peers = " []\n"
	}
	cfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
transports:
%stun: { enabled: true, name: fips0, mtu: 1500 }
dns: { enabled: true, bind_addr: "::1", port: 5354 }
peers:%s`, n.ID.Secret().Hex(), n.Socket, transports, peers)
	if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
}

// peerEntry is one static peer in a peers section.
func peerEntry(n *Node, transport, addr string) string {
	return fmt.Sprintf("\n  - npub: %q\n    addresses:\n      - { transport: %s, addr: %q }", n.Npub(), transport, addr)
}

// peerTransports maps each of n's peers' npub to the transport type its
// link runs over.
func peerTransports(t *testing.T, n *Node) map[string]string {
	t.Helper()
	var ps struct {
		Peers []struct {
			Npub          string `json:"npub"`
			TransportType string `json:"transport_type"`
		} `json:"peers"`
	}
	if err := n.Call("show_peers", nil, &ps); err != nil {
		t.Fatalf("%s show_peers: %v", n.Name, err)
	}
	out := map[string]string{}
	for _, p := range ps.Peers {
		out[p.Npub] = p.TransportType
	}
	return out
}

// sentByType sums n's show_transports packets_sent (UDP) and
// frames_sent (Ethernet) by transport type.
func sentByType(t *testing.T, n *Node) map[string]uint64 {
	t.Helper()
	var ts struct {
		Transports []struct {
			Type  string `json:"type"`
			Stats struct {
				PacketsSent uint64 `json:"packets_sent"`
				FramesSent  uint64 `json:"frames_sent"`
			} `json:"stats"`
		} `json:"transports"`
	}
	if err := n.Call("show_transports", nil, &ts); err != nil {
		t.Fatalf("%s show_transports: %v", n.Name, err)
	}
	out := map[string]uint64{}
	for _, tr := range ts.Transports {
		out[tr.Type] += tr.Stats.PacketsSent + tr.Stats.FramesSent
	}
	return out
}

var received = regexp.MustCompile(` (\d+) received`)

// pingCount pings addr count times from node (0.2 s apart, with ping's
// extra options) and returns how many replies came.
func pingCount(t *testing.T, m *Mesh, from *Node, addr string, count int, extra ...string) int {
	t.Helper()
	args := append([]string{"ping", "-6", "-c", strconv.Itoa(count), "-i", "0.2", "-W", "2"}, extra...)
	out, _ := m.Exec(from.Name, append(args, addr)...)
	r := received.FindSubmatch(out)
	if r == nil {
		t.Fatalf("ping from %s to %s: no summary\n%s", from.Name, addr, out)
	}
	got, _ := strconv.Atoi(string(r[1]))
	return got
}

// TestEthernetMixedLine: a line a–b–c where a–b is UDP only and b–c is
// Ethernet only (b's end of it has no IP address and c has no IP
// transport at all): b bridges the two transports. a and c ping each
// other by .fips name, and b's show_routing forwarding counter and both
// of its transports' send counters move with the traffic it relays.
func TestEthernetMixedLine(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab, bc := m.Link(a, b), m.Link(b, c)
	// b–c is a link-layer segment only.
	for _, e := range [][2]string{{b.NS, bc.IfA}, {c.NS, bc.IfB}} {
		if out, err := ipCmd("-n", e[0], "addr", "flush", "dev", e[1]); err != nil {
			t.Fatalf("flush %s: %v\n%s", e[1], err, out)
		}
	}
	const port = 2121
	udp := fmt.Sprintf("  udp: { bind_addr: \"0.0.0.0:%d\" }\n", port)
	startConfigured(t, a, udp, peerEntry(b, "udp", fmt.Sprintf("%s:%d", ab.AddrB, port))+"\n")
	startConfigured(t, b, udp+fmt.Sprintf("  ethernet:\n    bc: { interface: %s, accept_connections: true }\n", bc.IfA),
		peerEntry(a, "udp", fmt.Sprintf("%s:%d", ab.AddrA, port))+peerEntry(c, "ethernet", bc.IfA+"/"+LinkMAC(bc.Index, true))+"\n")
	startConfigured(t, c, fmt.Sprintf("  ethernet:\n    bc: { interface: %s, accept_connections: true }\n", bc.IfB),
		peerEntry(b, "ethernet", bc.IfB+"/"+LinkMAC(bc.Index, false))+"\n")
	m.WaitConverged(30 * time.Second)

	// Each hop runs over the transport it was given.
	if got := peerTransports(t, b); got[a.Npub()] != "udp" || got[c.Npub()] != "ethernet" || len(got) != 2 {
		t.Fatalf("b's peers: %v, want a over udp and c over ethernet", got)
	}
	if got := peerTransports(t, a); len(got) != 1 || got[b.Npub()] != "udp" {
		t.Fatalf("a's peers: %v", got)
	}
	if got := peerTransports(t, c); len(got) != 1 || got[b.Npub()] != "ethernet" {
		t.Fatalf("c's peers: %v", got)
	}

	cAddr, aAddr := resolve(t, m, a, c), resolve(t, m, c, a)
	waitReply(t, m, a, c.Npub()+".fips", 20*time.Second)
	waitReply(t, m, c, a.Npub()+".fips", 20*time.Second)

	fwd0, sent0 := forwardedOf(t, b), sentByType(t, b)
	const count = 10
	if got := pingCount(t, m, a, cAddr, count); got < count-1 {
		t.Errorf("a → c: %d of %d replies", got, count)
	}
	if got := pingCount(t, m, c, aAddr, count); got < count-1 {
		t.Errorf("c → a: %d of %d replies", got, count)
	}
	fwd, sent := forwardedOf(t, b)-fwd0, sentByType(t, b)
	// Every request and every reply of both runs crosses b: 4 × count
	// forwards at least (MMP reports and the like add to it).
	if fwd < 4*(count-1) {
		t.Errorf("b forwarded %d packets during %d pings each way, want ≥ %d", fwd, count, 4*(count-1))
	}
	for _, typ := range []string{"udp", "ethernet"} {
		if d := sent[typ] - sent0[typ]; d < 2*(count-1) {
			t.Errorf("b sent %d over %s during the pings, want ≥ %d", d, typ, 2*(count-1))
		}
	}
	t.Logf("b relayed %d packets; sent udp %d, ethernet %d", fwd, sent["udp"]-sent0["udp"], sent["ethernet"]-sent0["ethernet"])
}

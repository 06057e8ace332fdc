//go:build linux

package netns

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

var macForm = regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){5}$`)

// TestEthernetBeaconDiscovery: two nodes on one link with only Ethernet
// transports (AF_PACKET on the veth ends, EtherType 0x2121) and no peers
// configured find each other by beacons, link, and ping6 and iperf3 each
// other by .fips name.
func TestEthernetBeaconDiscovery(t *testing.T) {
	m, a, b := ethernetPair(t, "", "")
	out, err := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", b.Npub()+".fips")
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Fatalf("ping -6 b.fips from a: %v\n%s", err, out)
	}
	stop := IperfServer(t, m, b)
	if bps := iperf(t, m, "a", b.Npub()+".fips", 2); bps <= 0 {
		t.Error("iperf3 a→b.fips carried nothing")
	} else {
		t.Logf("iperf3 a→b by name over Ethernet, userspace: %.1f Mbit/s", bps/1e6)
	}
	stop()
	heard := uint64(0)
	for _, n := range []*Node{a, b} {
		if !strings.Contains(n.Logs(), "Ethernet transport started") {
			t.Errorf("%s: no Ethernet transport started line:\n%s", n.Name, tail(n.Logs(), 30))
		}
		// The link is over Ethernet, to the other end's MAC (upstream's
		// rendering), and the beacons were counted.
		var ps struct {
			Peers []struct {
				TransportAddr string `json:"transport_addr"`
				TransportType string `json:"transport_type"`
			} `json:"peers"`
		}
		var ts struct {
			Transports []struct {
				Type  string `json:"type"`
				Stats struct {
					FramesSent  uint64 `json:"frames_sent"`
					BeaconsSent uint64 `json:"beacons_sent"`
					BeaconsRecv uint64 `json:"beacons_recv"`
				} `json:"stats"`
			} `json:"transports"`
		}
		if err := n.Call("show_peers", nil, &ps); err != nil || len(ps.Peers) != 1 {
			t.Fatalf("%s show_peers: %v %+v", n.Name, err, ps)
		}
		if p := ps.Peers[0]; p.TransportType != "ethernet" || !macForm.MatchString(p.TransportAddr) {
			t.Errorf("%s: peer over %q at %q, want ethernet at a MAC", n.Name, p.TransportType, p.TransportAddr)
		}
		if err := n.Call("show_transports", nil, &ts); err != nil || len(ts.Transports) != 1 {
			t.Fatalf("%s show_transports: %v %+v", n.Name, err, ts)
		}
		tr := ts.Transports[0]
		if tr.Type != "ethernet" || tr.Stats.BeaconsSent == 0 || tr.Stats.FramesSent == 0 {
			t.Errorf("%s: transport %+v", n.Name, tr)
		}
		heard += tr.Stats.BeaconsRecv // the first to start misses the other's first beacon
	}
	if heard == 0 {
		t.Error("no beacon received: the link was not made by discovery")
	}
}

// TestEthernetStaticAndConnect: with beacons off, a configured peer
// address in upstream's syntax (transport ethernet, addr iface/mac)
// links a to b, and the connect command with the same syntax links c to
// b; b accepts both.
func TestEthernetStaticAndConnect(t *testing.T) {
	m := New(t, Options{IPv6: true, LogLevel: "debug"})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab, cb := m.Link(a, b), m.Link(c, b)
	const macAB, macCB = "02:00:5e:00:00:0b", "02:00:5e:00:00:0c" // b's ends
	for _, e := range [][3]string{{"b", ab.IfB, macAB}, {"b", cb.IfB, macCB}} {
		if out, err := m.Exec(e[0], "ip", "link", "set", "dev", e[1], "address", e[2]); err != nil {
			t.Fatalf("set MAC: %v\n%s", err, out)
		}
	}
	conf := func(n *Node, transports, peers string) {
		cfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
transports:
%stun: { enabled: false }
dns: { enabled: false }
peers:%s
`, n.ID.Secret().Hex(), n.Socket, transports, peers)
		if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}
	conf(b, fmt.Sprintf("  ethernet:\n    ab: { interface: %s, accept_connections: true }\n    cb: { interface: %s, accept_connections: true }\n", ab.IfB, cb.IfB), " []")
	conf(a, fmt.Sprintf("  ethernet: { interface: %s }\n", ab.IfA), fmt.Sprintf(`
  - npub: %s
    addresses:
      - { transport: ethernet, addr: "%s/%s" }`, b.Npub(), ab.IfA, macAB))
	conf(c, fmt.Sprintf("  ethernet:\n    lan: { interface: %s }\n", cb.IfA), " []")
	connect := map[string]string{"npub": b.Npub(), "address": cb.IfA + "/" + macCB, "transport": "ethernet"}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := c.Call("connect", connect, nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) { // the control socket comes up with the daemon
			t.Fatalf("connect over ethernet: %v\n%s", err, tail(c.Logs(), 30))
		}
	}
	// An interface no instance runs on is refused, with upstream's words.
	bad := map[string]string{"npub": b.Npub(), "address": "nosuch0/" + macCB, "transport": "ethernet"}
	if err := c.Call("connect", bad, nil); err == nil || !strings.Contains(err.Error(), "no operational Ethernet transport for interface 'nosuch0'") {
		t.Errorf("connect on a missing interface: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pb struct {
			Peers []struct {
				Npub string `json:"npub"`
			} `json:"peers"`
		}
		if b.Call("show_peers", nil, &pb) == nil && len(pb.Peers) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b has not both peers after 30 s: %+v\nA:\n%s\nC:\n%s", pb, tail(a.Logs(), 30), tail(c.Logs(), 30))
		}
	}
}

// TestEthernetLine: the harness's Ethernet mesh (an instance per link
// end, static peers iface/mac) runs a line a–b–c, b with two instances;
// a reaches c by name through b.
func TestEthernetLine(t *testing.T) {
	m := New(t, Options{IPv6: true, Transport: "ethernet"})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	m.Start()
	m.WaitConverged(30 * time.Second)
	WaitReply(t, m, a, c.Npub()+".fips", 15*time.Second)
	var ts struct {
		Transports []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"transports"`
	}
	if err := b.Call("show_transports", nil, &ts); err != nil || len(ts.Transports) != 2 || ts.Transports[0].Type != "ethernet" {
		t.Fatalf("b's transports: %v %+v", err, ts)
	}
}

// ethernetPair starts two nodes a and b on one veth with only Ethernet
// transports (announce, auto_connect, accept_connections; no peers), TUN
// and DNS on, node added to both node: sections (lines indented two
// spaces), extra appended to both configs, and waits until they have
// linked by beacons.
func ethernetPair(t *testing.T, node, extra string) (*Mesh, *Node, *Node) {
	t.Helper()
	m := New(t, Options{IPv6: true, LogLevel: "debug"})
	a, b := m.AddNode("a"), m.AddNode("b")
	l := m.Link(a, b)
	startEthernetDiscovery(t, a, node, extra, l.IfA)
	startEthernetDiscovery(t, b, node, extra, l.IfB)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pa, pb struct {
			Peers []struct {
				Npub string `json:"npub"`
			} `json:"peers"`
		}
		if a.Call("show_peers", nil, &pa) == nil && b.Call("show_peers", nil, &pb) == nil &&
			len(pa.Peers) == 1 && pa.Peers[0].Npub == b.Npub() && len(pb.Peers) == 1 && pb.Peers[0].Npub == a.Npub() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no link by Ethernet beacons after 60 s\nA:\n%s\nB:\n%s", tail(a.Logs(), 40), tail(b.Logs(), 40))
		}
	}
	return m, a, b
}

// startEthernetDiscovery starts n with only Ethernet transports, one on
// each of ifaces (announce, auto_connect, accept_connections; no peers),
// TUN and DNS on, node added to its node: section (lines indented two
// spaces) and extra appended to its config.
func startEthernetDiscovery(t *testing.T, n *Node, node, extra string, ifaces ...string) {
	t.Helper()
	var eth strings.Builder
	for i, iface := range ifaces {
		fmt.Fprintf(&eth, "    l%d: { interface: %s, announce: true, auto_connect: true, accept_connections: true }\n", i, iface)
	}
	cfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
%stransports:
  ethernet:
%stun: { enabled: true, name: fips0, mtu: 1280 }
dns: { enabled: true, bind_addr: "::1", port: 5354 }
peers: []
%s`, n.ID.Secret().Hex(), n.Socket, node, eth.String(), extra)
	if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
}

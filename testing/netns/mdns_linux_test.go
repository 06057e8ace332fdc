//go:build linux

package netns

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// TestMDNSLANDiscovery: two nodes on one LAN segment, with no peers
// configured and Nostr off, find each other by mDNS alone (TXT npub, v=1,
// scope), link, and ping6 each other by .fips name.
func TestMDNSLANDiscovery(t *testing.T) {
	m, a, b, _ := lanSegment(t)
	start := time.Now()
	for _, n := range []*Node{a, b} {
		cfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
  rendezvous:
    lan: { enabled: true, scope: "netns-lab" }
transports:
  udp: { bind_addr: "0.0.0.0:2121" }
tun: { enabled: true, name: fips0, mtu: 1280 }
dns: { enabled: true, bind_addr: "::1", port: 5354 }
peers: []
`, n.ID.Secret().Hex(), n.Socket)
		if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pa, pb struct {
			Peers []struct{ Npub string } `json:"peers"`
		}
		if a.Call("show_peers", nil, &pa) == nil && b.Call("show_peers", nil, &pb) == nil &&
			len(pa.Peers) == 1 && pa.Peers[0].Npub == b.Npub() && len(pb.Peers) == 1 && pb.Peers[0].Npub == a.Npub() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no link by mDNS after 60 s\nA:\n%s\nB:\n%s", tail(a.Logs(), 40), tail(b.Logs(), 40))
		}
	}
	t.Logf("linked by mDNS %v after the daemons started", time.Since(start).Round(time.Millisecond))
	out, err := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", b.Npub()+".fips")
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Fatalf("ping -6 b.fips from a: %v\n%s", err, out)
	}
	// Each browses and sees the other (the second within a browse
	// interval of the link); the first to see dials.
	dialled := false
	for _, p := range [][2]*Node{{a, b}, {b, a}} {
		seen := `: LAN peer seen via mDNS peer=` + p[1].Npub()
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(p[0].Logs(), seen); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never saw %s on mDNS:\n%s", p[0].Name, p[1].Name, tail(p[0].Logs(), 30))
			}
		}
		dialled = dialled || strings.Contains(p[0].Logs(), `: Auto-connecting to discovered peer peer=`+identity.ShortNpub(p[1].Npub())+` `)
	}
	if !dialled {
		t.Error("neither node dialled the other after an mDNS discovery")
	}
	for _, n := range []*Node{a, b} {
		if !strings.Contains(n.Logs(), " INFO fips::node::lifecycle: LAN mDNS discovery enabled\n") {
			t.Errorf("%s: no LAN mDNS discovery enabled line:\n%s", n.Name, tail(n.Logs(), 30))
		}
	}
}

// lanSegment is two nodes, a and b, on one link with a multicast route
// out of it: a LAN segment for mDNS.
func lanSegment(t *testing.T) (m *Mesh, a, b *Node, l *Link) {
	t.Helper()
	m = New(t, Options{IPv6: true, LogLevel: "debug"})
	a, b = m.AddNode("a"), m.AddNode("b")
	l = m.Link(a, b)
	// A LAN host has a default route; these namespaces have only the
	// link's /30, so give multicast a route out of it.
	for _, e := range [][2]string{{"a", l.IfA}, {"b", l.IfB}} {
		if out, err := m.Exec(e[0], "ip", "route", "add", "224.0.0.0/4", "dev", e[1]); err != nil {
			t.Fatalf("%s: multicast route: %v\n%s", e[0], err, out)
		}
	}
	return m, a, b, l
}

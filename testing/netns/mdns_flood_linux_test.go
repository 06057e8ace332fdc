//go:build linux

package netns

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/mdns"
	"github.com/miekg/dns"

	"github.com/fips-go/fips/control/identity"
)

// floodZone answers every query for the FIPS service with 64 fresh
// instances (npubs nobody holds), each at its own made-up address: a LAN
// host mounting issue 27 item 5's attack. It is crafted here from the
// wire format (_fips._udp.local., TXT npub=… v=1), not with the node's
// LAN code.
type floodZone struct{ answers chan int }

func (z floodZone) Records(q dns.Question) []dns.RR {
	if q.Name != "_fips._udp.local." {
		return nil
	}
	var rr []dns.RR
	for i := range 64 {
		id, err := identity.Generate(rand.Reader)
		if err != nil {
			return nil
		}
		inst := "fips-" + id.Npub()[:16] + "._fips._udp.local."
		host := fmt.Sprintf("h%d-%s.local.", i, id.Npub()[5:13])
		hdr := func(name string, t uint16) dns.RR_Header {
			return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: 120}
		}
		rr = append(rr,
			&dns.PTR{Hdr: hdr(q.Name, dns.TypePTR), Ptr: inst},
			&dns.SRV{Hdr: hdr(inst, dns.TypeSRV), Port: 2121, Target: host},
			&dns.TXT{Hdr: hdr(inst, dns.TypeTXT), Txt: []string{"npub=" + id.Npub(), "v=1", "scope=netns-flood"}},
			&dns.A{Hdr: hdr(host, dns.TypeA), A: net.IPv4(10, 99, byte(len(rr)>>8), byte(len(rr)))})
	}
	select {
	case z.answers <- len(rr) / 4:
	default:
	}
	return rr
}

// TestMDNSFloodLeavesConfiguredPeerASlot: node a browses mDNS with
// node.limits.max_connections 8 while a host on its LAN (in b's
// namespace) answers every query with 64 fresh npubs at addresses that
// never answer. Before the discovered-peer budget their handshakes took
// every slot; now they are refused past the budget (counted in
// show_status as discovered_limit), max_connections is never reached, and
// connecting a to b (a peer the operator names) links during the flood.
// (hashicorp/mdns's browser resolves the answer's instances to one
// address here, so the per-host share is what holds; the eviction of
// discovered handshakes at max_connections is control/peer's
// TestConfiguredDialEvictsDiscovered.)
func TestMDNSFloodLeavesConfiguredPeerASlot(t *testing.T) {
	_, a, b, l := lanSegment(t)
	z := floodZone{answers: make(chan int, 1)}
	var srv *mdns.Server
	if err := inNamespace(b.NS, func() (err error) { srv, err = mdns.NewServer(&mdns.Config{Zone: z}); return err }); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	for _, n := range []*Node{a, b} {
		lan := "false"
		if n == a {
			lan = "true"
		}
		cfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
  limits: { max_connections: 8 }
  rendezvous:
    lan: { enabled: %s, scope: "netns-flood" }
transports:
  udp: { bind_addr: "0.0.0.0:2121" }
tun: { enabled: true, name: fips0, mtu: 1280 }
peers: []
`, n.ID.Secret().Hex(), n.Socket, lan)
		if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case n := <-z.answers:
		t.Logf("flood answered a query with %d instances", n)
	case <-time.After(30 * time.Second):
		t.Fatalf("a never queried the flooding responder\n%s", tail(a.Logs(), 30))
	}
	type status struct {
		LinkLayer struct {
			ConnectionLimit   uint64 `json:"connection_limit"`
			DiscoveredLimit   uint64 `json:"discovered_limit"`
			DiscoveredEvicted uint64 `json:"discovered_evicted"`
		} `json:"link_layer"`
		Connections int `json:"connection_count"`
		LAN         *struct {
			Answers    uint64 `json:"answers"`
			HostCapped uint64 `json:"host_capped"`
		} `json:"lan_rendezvous"`
	}
	var st status
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := a.Call("show_status", nil, &st); err == nil && st.LinkLayer.DiscoveredLimit >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flood was never refused: %+v\n%s", st, tail(a.Logs(), 30))
		}
	}
	if err := a.Call("connect", map[string]string{"npub": b.Npub(), "address": l.AddrB + ":2121", "transport": "udp"}, nil); err != nil {
		t.Fatalf("connect: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pa struct {
			Peers []struct{ Npub string } `json:"peers"`
		}
		if a.Call("show_peers", nil, &pa) == nil && len(pa.Peers) == 1 && pa.Peers[0].Npub == b.Npub() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a never linked to b during the flood\n%s", tail(a.Logs(), 40))
		}
	}
	if err := a.Call("show_status", nil, &st); err != nil || st.LinkLayer.ConnectionLimit != 0 || st.LinkLayer.DiscoveredLimit == 0 {
		t.Fatalf("show_status link_layer %+v %v: want the flood refused by the discovered budget, never at max_connections", st.LinkLayer, err)
	}
	if st.LAN == nil || st.LAN.Answers == 0 {
		t.Errorf("show_status lan_rendezvous %+v: want the flood's answers counted", st.LAN)
	}
	if st.Connections > 3 { // a share of 2 for the flooding address, and b's
		t.Errorf("%d handshakes in flight during the flood, want at most 3", st.Connections)
	}
	t.Logf("during the flood: %+v, lan_rendezvous %+v", st, *st.LAN)
}

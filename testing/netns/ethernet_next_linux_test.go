//go:build linux

package netns

import (
	"strings"
	"testing"
	"time"
)

// nextNode is the node: line of a node that speaks only upstream next's
// wire format.
const nextNode = "  wire_format: v1\n"

// TestEthernetNextBeaconDiscovery: two nodes with node.wire_format v1,
// only Ethernet transports (announce, auto_connect) and no peers find
// each other by next's keyless beacons alone: each hears only those
// (beacons_keyless = beacons_recv), so a MAC is all it learns, and the
// link comes from an anonymous XX dial that learns the key at msg2. The
// link is v1, and ping6 by name runs both ways.
func TestEthernetNextBeaconDiscovery(t *testing.T) {
	m, a, b := ethernetPair(t, nextNode, "")
	checkNextPair(t, a, b)
	for _, d := range [][2]*Node{{a, b}, {b, a}} {
		out, err := m.Exec(d[0].Name, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", d[1].Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "3 received") {
			t.Fatalf("ping -6 %s.fips from %s: %v\n%s", d[1].Name, d[0].Name, err, out)
		}
	}
}

// TestEthernetNextAFXDPPair: TestEthernetAFXDPPair (AF_XDP receive and
// transmit, ping6 and iperf3 by name, frames redirected to the XSKs, no
// frame dropped as unknown_index) between two v1 nodes found by next's
// keyless beacons: the AF_XDP Ethernet path carries v1 links behind
// next's 4-byte header. iperf3 runs the link through several rekeys
// (after_messages): each end has the new index in its XDP map before
// the other sends under it (the responder from msg2, the initiator
// before msg3 leaves).
func TestEthernetNextAFXDPPair(t *testing.T) {
	_, a, b := ethernetAFXDPPair(t, nextNode)
	checkNextPair(t, a, b)
}

// checkNextPair: a and b are linked over v1, heard only keyless beacons
// and sent some, at least one of them dialled the other anonymously, and
// neither refused a msg2 for its key (an anonymous leg takes any).
func checkNextPair(t *testing.T, a, b *Node) {
	t.Helper()
	anon := uint64(0)
	for _, d := range [][2]*Node{{a, b}, {b, a}} {
		n, other := d[0], d[1]
		if f := showPeerFormats(t, n)[other.Npub()]; f != "v1/full" {
			t.Errorf("%s's link to %s: %q, want v1/full", n.Name, other.Name, f)
		}
		st := ethernetStatsOf(t, n)
		if st.BeaconsSent == 0 || st.BeaconsKeyless != st.BeaconsRecv {
			t.Errorf("%s: beacons sent %d, received %d of which keyless %d; want only keyless ones", n.Name,
				st.BeaconsSent, st.BeaconsRecv, st.BeaconsKeyless)
		}
		var s struct {
			LinkLayer struct {
				AnonymousDials    uint64 `json:"anonymous_dials"`
				Msg2WrongIdentity uint64 `json:"msg2_wrong_identity"`
			} `json:"link_layer"`
		}
		if err := n.Call("show_status", nil, &s); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d anonymous dials, beacons %+v", n.Name, s.LinkLayer.AnonymousDials, st)
		if s.LinkLayer.Msg2WrongIdentity != 0 {
			t.Errorf("%s: %d msg2s refused as another key than dialled", n.Name, s.LinkLayer.Msg2WrongIdentity)
		}
		anon += s.LinkLayer.AnonymousDials
	}
	if anon == 0 {
		t.Errorf("no anonymous dial: the link was not made from a keyless beacon\nA:\n%s\nB:\n%s", tail(a.Logs(), 30), tail(b.Logs(), 30))
	}
}

// TestEthernetAutoBeaconsBothLines: the line a (v0) – b (auto) – c (v1)
// over Ethernet with discovery only, no peers configured. b announces
// both lines' beacons: a reads master's, links to b over IK and drops
// next's as invalid, as before; b and c link over XX (c dials the key
// master's beacon names, b dials c's MAC anonymously, whichever is
// first); and ping6 by name runs a → c through b.
func TestEthernetAutoBeaconsBothLines(t *testing.T) {
	m := New(t, Options{IPv6: true, LogLevel: "debug"})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab, bc := m.Link(a, b), m.Link(b, c)
	startEthernetDiscovery(t, a, "  wire_format: v0\n", "", ab.IfA)
	startEthernetDiscovery(t, b, "  wire_format: auto\n", "", ab.IfB, bc.IfA)
	startEthernetDiscovery(t, c, nextNode, "", bc.IfB)
	var ps struct {
		Peers []struct {
			Npub       string `json:"npub"`
			WireFormat string `json:"wire_format"`
		} `json:"peers"`
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		f := map[string]string{}
		if b.Call("show_peers", nil, &ps) == nil {
			for _, p := range ps.Peers {
				f[p.Npub] = p.WireFormat
			}
		}
		if f[a.Npub()] == "v0" && f[c.Npub()] == "v1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's links after 60 s: %v; want a v0, c v1\nB:\n%s", f, tail(b.Logs(), 40))
		}
	}
	m.WaitConverged(60 * time.Second) // one tree root, every peer's filter
	addrC := resolve(t, m, a, c)
	resolve(t, m, c, a)
	waitReply(t, m, a, addrC, 20*time.Second)
	out, err := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", c.Npub()+".fips")
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Fatalf("ping -6 c.fips from a: %v\n%s", err, out)
	}
	// The link may have come from b's dial before a heard b announce
	// (beacons go every 30 s): wait for b's batch, master's beacon then
	// next's, and check a took the first and dropped the second.
	for deadline := time.Now().Add(75 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st := ethernetStatsOf(t, a)
		if st.BeaconsKeyless != 0 {
			t.Fatalf("a (v0) took next's beacons: %+v", st)
		}
		if st.BeaconsRecv > 0 && st.DroppedInvalid > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a (v0) never heard b's two beacons: %+v", st)
		}
	}
}

//go:build linux

package netns

import (
	"strings"
	"testing"
	"time"
)

// TestEthernetAFXDPPair: two nodes on one veth with only Ethernet
// transports, both in dataplane.mode xdp with AF_XDP receive and
// transmit, find each other by beacons and ping6 and iperf3 each other
// by .fips name. The XDP program on each veth recognises the EtherType:
// beacons pass to the packet socket through their per-MAC bucket,
// established frames of known links are redirected to the AF_XDP
// sockets and the packet sockets see almost none of them. (What a node
// originates leaves through the packet socket; the TX rings carry what
// the AF_XDP workers forward: TestEthernetAFXDPTransit.)
func TestEthernetAFXDPPair(t *testing.T) { ethernetAFXDPPair(t, "") }

// ethernetAFXDPPair is TestEthernetAFXDPPair with node added to both
// nodes' node: sections; it returns the pair, linked and checked.
func ethernetAFXDPPair(t *testing.T, node string) (*Mesh, *Node, *Node) {
	m, a, b := ethernetPair(t, node, "dataplane: { mode: xdp, afxdp: true, afxdp_transmit: xsk }\n")
	for _, n := range []*Node{a, b} {
		dp := dataplaneOf(t, n)
		if dp.Mode != "xdp" || !dp.AFXDP.Enabled || dp.AFXDP.Sockets != 1 || len(dp.Interfaces) != 1 {
			t.Fatalf("%s's dataplane: %+v\n%s", n.Name, dp, tail(n.Logs(), 30))
		}
		t.Logf("%s: %s; %s", n.Name, dp.Reason, dp.AFXDP.Reason)
	}
	name := b.Npub() + ".fips"
	out, err := m.Exec("a", "ping", "-6", "-c", "5", "-i", "0.2", "-W", "3", name)
	if err != nil || !strings.Contains(string(out), "5 received") {
		t.Fatalf("ping -6 %s from a: %v\n%s", name, err, out)
	}
	s0 := bpfStats(t, m, b)
	e0 := ethernetStatsOf(t, b)
	defer IperfServer(t, m, b)()
	bps := iperf(t, m, "a", name, 4)
	s1 := bpfStats(t, m, b)
	e1 := ethernetStatsOf(t, b)

	redirects := s1.packets("redirect", "link_xsk") - s0.packets("redirect", "link_xsk")
	var rx0, rx1 uint64
	for _, x := range s0.XSKs {
		rx0 += x.Frames
	}
	for _, x := range s1.XSKs {
		rx1 += x.Frames
		if x.Invalid != 0 || x.OtherPort != 0 || x.RxInvalidDescs != 0 {
			t.Errorf("b's xsk %s/%d: invalid frames: %+v", x.Interface, x.Queue, x)
		}
	}
	sockData := (e1.FramesRecv - e1.BeaconsRecv) - (e0.FramesRecv - e0.BeaconsRecv)
	t.Logf("iperf3 a→b by name over Ethernet in AF_XDP mode: %.1f Mbit/s; b: %d frames redirected, %d taken from its XSKs, its packet socket +%d data frames",
		bps/1e6, redirects, rx1-rx0, sockData)
	if bps <= 0 {
		t.Fatal("iperf3 carried nothing")
	}
	if redirects < 1000 || rx1-rx0 < redirects*9/10 {
		t.Errorf("b's XDP redirected %d frames, its XSK readers took %d", redirects, rx1-rx0)
	}
	if sockData > (rx1-rx0)/10 {
		t.Errorf("b's packet socket received %d data frames while its XSKs took %d", sockData, rx1-rx0)
	}
	// Nothing of the EtherType was junk. (Beacons were sent before
	// XDP attached and next in beacon_interval_secs: the bpf package's
	// tests judge them.)
	for _, r := range []string{"eth_short", "eth_bad_type", "bad_beacon", "beacon_limited", "unknown_index"} {
		if n := s1.packets("drop", r); n != 0 {
			t.Errorf("b's XDP dropped %d frames as %s", n, r)
		}
	}
	out, err = m.Exec("b", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", a.Npub()+".fips")
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Errorf("ping -6 a.fips from b after iperf3: %v\n%s", err, out)
	}
	return m, a, b
}

// TestEthernetAFXDPTransit: the line a–b–c over Ethernet only, the relay
// b in dataplane.mode xdp with AF_XDP receive and transmit: iperf3 a→c
// by name passes through b, whose established frames arrive on its
// AF_XDP sockets (one per veth), are forwarded by its engine and leave
// through the TX ring of the other veth's socket, the kernel completing
// them; b's packet sockets carry almost none of it.
func TestEthernetAFXDPTransit(t *testing.T) {
	m := New(t, Options{IPv6: true, Transport: "ethernet"})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	b.ExtraConfig = "dataplane: { mode: xdp, afxdp: true, afxdp_transmit: xsk }\n"
	m.Start()
	m.WaitConverged(30 * time.Second)
	dp := dataplaneOf(t, b)
	if dp.Mode != "xdp" || !dp.AFXDP.Enabled || dp.AFXDP.Sockets != 2 || len(dp.Interfaces) != 2 {
		t.Fatalf("b's dataplane: %+v\n%s", dp, tail(b.Logs(), 30))
	}
	name := c.Npub() + ".fips"
	WaitReply(t, m, a, name, 15*time.Second)
	s0 := bpfStats(t, m, b)
	fwd0 := dataplaneOf(t, b).Engine.Forwarded
	defer IperfServer(t, m, c)()
	bps := iperf(t, m, "a", name, 4)
	s1 := bpfStats(t, m, b)
	fwd := dataplaneOf(t, b).Engine.Forwarded - fwd0
	redirects := s1.packets("redirect", "link_xsk") - s0.packets("redirect", "link_xsk")
	tx := s1.XSKTx.Frames - s0.XSKTx.Frames
	var done0, done1 uint64
	for _, x := range s0.XSKs {
		done0 += x.Transmitted
	}
	for _, x := range s1.XSKs {
		done1 += x.Transmitted
		if x.Invalid != 0 || x.RxInvalidDescs != 0 || x.TxInvalidDescs != 0 || x.TxKickErrors != 0 {
			t.Errorf("b's xsk %s/%d: %+v", x.Interface, x.Queue, x)
		}
	}
	t.Logf("iperf3 a→c through b over Ethernet, b in AF_XDP mode: %.1f Mbit/s; b: %d redirected, %d forwarded, %d sealed into TX frames, %d completed; xsk_tx %+v",
		bps/1e6, redirects, fwd, tx, done1-done0, s1.XSKTx)
	if bps <= 0 {
		t.Fatal("iperf3 carried nothing")
	}
	if redirects < 1000 || fwd < redirects*9/10 {
		t.Errorf("b redirected %d frames and forwarded %d", redirects, fwd)
	}
	if tx < fwd*9/10 || done1-done0 < tx*9/10 {
		t.Errorf("b forwarded %d frames, sealed %d into TX frames, the kernel completed %d", fwd, tx, done1-done0)
	}
	WaitReply(t, m, c, a.Npub()+".fips", 15*time.Second)
}

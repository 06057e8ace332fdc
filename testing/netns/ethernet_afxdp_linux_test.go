//go:build linux

package netns

import (
	"strings"
	"testing"
)

// TestEthernetAFXDPPair: two nodes on one veth with only Ethernet
// transports, both in dataplane.mode xdp with AF_XDP receive and
// transmit, find each other by beacons and ping6 and iperf3 each other
// by .fips name. The XDP program on each veth recognises the EtherType:
// beacons pass to the packet socket through their per-MAC bucket,
// established frames of known links are redirected to the AF_XDP
// sockets (the packet sockets see almost none of them), and the workers
// send through the TX rings.
func TestEthernetAFXDPPair(t *testing.T) {
	m, a, b := ethernetPair(t, "dataplane: { mode: xdp, afxdp: true, afxdp_transmit: xsk }\n")
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
	s1, sa := bpfStats(t, m, b), bpfStats(t, m, a)
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
	t.Logf("iperf3 a→b by name over Ethernet in AF_XDP mode: %.1f Mbit/s; b: %d frames redirected, %d taken from its XSKs, its packet socket +%d data frames; a's xsk_tx %+v",
		bps/1e6, redirects, rx1-rx0, sockData, sa.XSKTx)
	if bps <= 0 {
		t.Fatal("iperf3 carried nothing")
	}
	if redirects < 1000 || rx1-rx0 < redirects*9/10 {
		t.Errorf("b's XDP redirected %d frames, its XSK readers took %d", redirects, rx1-rx0)
	}
	if sockData > (rx1-rx0)/10 {
		t.Errorf("b's packet socket received %d data frames while its XSKs took %d", sockData, rx1-rx0)
	}
	// a sends the stream: through its TX ring, the kernel completing it.
	if !sa.XSKTx.Enabled || sa.XSKTx.Frames < 1000 {
		t.Errorf("a's xsk_tx: %+v", sa.XSKTx)
	}
	var sent uint64
	for _, x := range sa.XSKs {
		sent += x.Transmitted
		if x.TxInvalidDescs != 0 {
			t.Errorf("a's xsk %s/%d: %+v", x.Interface, x.Queue, x.XSKStatistics)
		}
	}
	if sent < sa.XSKTx.Frames*9/10 {
		t.Errorf("a's kernel completed %d TX frames of %d sealed", sent, sa.XSKTx.Frames)
	}
	// Beacons crossed XDP as such, and nothing of the EtherType was junk.
	if s1.packets("pass", "beacon") == 0 {
		t.Errorf("b's XDP counted no beacon: %+v", s1.Counters)
	}
	for _, r := range []string{"eth_short", "eth_bad_type", "bad_beacon", "beacon_limited", "unknown_index"} {
		if n := s1.packets("drop", r); n != 0 {
			t.Errorf("b's XDP dropped %d frames as %s", n, r)
		}
	}
	out, err = m.Exec("b", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", a.Npub()+".fips")
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Errorf("ping -6 a.fips from b after iperf3: %v\n%s", err, out)
	}
}

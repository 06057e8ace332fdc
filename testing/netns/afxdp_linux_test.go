//go:build linux

package netns

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAFXDPTransitChain: the chain A—B—C with the relay B in
// dataplane.mode xdp with dataplane.afxdp: ping6 and iperf3 A→C pass
// through B, whose established frames arrive on its AF_XDP sockets (the
// XDP program's link_xsk redirects and the sockets' received counts
// move, the relay's engine forwards them) and its UDP sockets see almost
// none of them. B's two sockets share one UMEM.
func TestAFXDPTransitChain(t *testing.T) { afxdpTransit(t, "socket") }

// TestAFXDPTransmitTransitChain is TestAFXDPTransitChain with
// dataplane.afxdp_transmit: xsk — what B forwards leaves through its
// AF_XDP sockets' TX rings (the receivers' kernels check every checksum):
// nearly every forwarded frame is counted as sealed into a TX frame, and
// B's UDP sockets send almost nothing.
func TestAFXDPTransmitTransitChain(t *testing.T) { afxdpTransit(t, "xsk") }

func afxdpTransit(t *testing.T, transmit string) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab := m.Link(a, b)
	m.Link(b, c)
	b.ExtraConfig = "dataplane: { mode: xdp, afxdp: true, afxdp_transmit: " + transmit + " }\n"
	m.Start()
	m.WaitConverged(30 * time.Second)

	dp := dataplaneOf(t, b)
	if dp.Mode != "xdp" || !dp.AFXDP.Enabled || dp.AFXDP.Sockets != 2 || dp.AFXDP.SharedUMEM != 2 {
		t.Fatalf("b's dataplane: %+v\n%s", dp, tail(b.Logs(), 30))
	}
	t.Logf("b: %s; %s", dp.Reason, dp.AFXDP.Reason)
	if !strings.Contains(b.Logs(), "dataplane: AF_XDP") {
		t.Errorf("b logged no AF_XDP line:\n%s", tail(b.Logs(), 20))
	}

	addr := resolve(t, m, a, c)
	out, err := m.Exec("a", "ping", "-6", "-c", "10", "-i", "0.2", "-W", "2", addr)
	if err != nil || !strings.Contains(string(out), "10 received") {
		t.Fatalf("ping6 A→C through B: %v\n%s", err, out)
	}
	s0 := bpfStats(t, m, b)
	recv0, sent0 := udpPackets(t, b)
	fwd0 := dataplaneOf(t, b).Engine.Forwarded
	defer m.Background("c", "iperf3", "-s", "-B", addr)()
	if !m.WaitListening("c", 5201, 10*time.Second) {
		t.Fatal("iperf3 server not listening")
	}
	bps := iperf(t, m, "a", addr, 4)
	s1 := bpfStats(t, m, b)
	recv1, sent1 := udpPackets(t, b)
	recvDelta, sentDelta := recv1-recv0, sent1-sent0
	fwdDelta := dataplaneOf(t, b).Engine.Forwarded - fwd0
	var rx0, rx1, loop1 uint64
	for _, x := range s0.XSKs {
		rx0 += x.Received
	}
	for _, x := range s1.XSKs {
		rx1 += x.Received
		loop1 += x.ToLoop
		if x.ZeroCopy || !x.NeedWakeup {
			t.Errorf("xsk %+v: want copy mode with need_wakeup on veth", x)
		}
		if x.RxInvalidDescs != 0 || x.Invalid != 0 {
			t.Errorf("xsk %s/%d: invalid descriptors or frames: %+v", x.Interface, x.Queue, x)
		}
	}
	redirects := s1.packets("redirect", "link_xsk") - s0.packets("redirect", "link_xsk")
	t.Logf("iperf3 A→C through B: %.1f Mbit/s; B: %d frames redirected in XDP, %d received on its XSKs (%d left to the loop), its UDP sockets +%d packets",
		bps/1e6, redirects, rx1-rx0, loop1, recvDelta)
	for _, x := range s1.XSKs {
		t.Logf("xsk %s queue %d: %+v", x.Interface, x.Queue, x.XSKStatistics)
	}
	if bps <= 0 {
		t.Fatal("iperf3 carried nothing")
	}
	if redirects < 1000 || rx1-rx0 < redirects*9/10 {
		t.Errorf("XDP redirected %d frames, XSKs received %d", redirects, rx1-rx0)
	}
	if recvDelta > (rx1-rx0)/10 {
		t.Errorf("b's UDP sockets received %d packets while the XSKs received %d", recvDelta, rx1-rx0)
	}
	if fwdDelta == 0 {
		t.Error("b's engine forwarded nothing")
	}
	tx := s1.XSKTx
	t.Logf("b forwarded %d frames: xsk_tx %+v; its UDP sockets sent +%d", fwdDelta, tx, sentDelta)
	if transmit == "xsk" {
		if !tx.Enabled {
			t.Errorf("xsk_tx not enabled: %+v", tx)
		}
		if got := tx.Frames - s0.XSKTx.Frames; got < fwdDelta*9/10 {
			t.Errorf("%d frames through TX rings of %d forwarded", got, fwdDelta)
		}
		if sentDelta > fwdDelta/10 {
			t.Errorf("b's UDP sockets sent %d packets while it forwarded %d", sentDelta, fwdDelta)
		}
		var sent uint64
		for _, x := range s1.XSKs {
			sent += x.Transmitted
			if x.TxInvalidDescs != 0 || x.TxKickErrors != 0 {
				t.Errorf("xsk %s/%d: %+v", x.Interface, x.Queue, x.XSKStatistics)
			}
		}
		if sent < fwdDelta*9/10 {
			t.Errorf("the kernel completed %d TX frames of %d forwarded", sent, fwdDelta)
		}
	} else if tx.Enabled || tx.Frames != 0 {
		t.Errorf("xsk_tx with afxdp_transmit socket: %+v", tx)
	}
	out, err = m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", addr)
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Errorf("ping6 after iperf3: %v\n%s", err, out)
	}
	// A garbage flood from A at B's port: dropped in XDP. The human
	// table then shows redirects and drops, both non-zero.
	script := filepath.Join(m.Dir, "flood.py")
	if err := os.WriteFile(script, []byte(floodScript), 0o644); err != nil {
		t.Fatal(err)
	}
	port := m.opts.Port
	if port == 0 {
		port = 2121
	}
	sent := flood(t, m, "a", script, ab.AddrB, port, 20_000, "garbage")
	table, err := m.Fipsctl("b", "bpf", "stats")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fipsctl bpf stats on b after %d garbage datagrams:\n%s", sent, table)
	rows := map[string]uint64{}
	for _, line := range strings.Split(string(table), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && (f[0] == "pass" || f[0] == "drop" || f[0] == "redirect") {
			n, _ := strconv.ParseUint(f[2], 10, 64)
			rows[f[0]] += n
		}
	}
	if rows["redirect"] == 0 || rows["drop"] < uint64(sent)*9/10 {
		t.Errorf("fipsctl bpf stats: redirect %d, drop %d after %d garbage datagrams", rows["redirect"], rows["drop"], sent)
	}
	if got := strings.Contains(string(table), "xsk transmit:"); got != (transmit == "xsk") {
		t.Errorf("fipsctl bpf stats shows the xsk transmit line: %v, want %v", got, transmit == "xsk")
	}
}

// TestAFXDPOuterCE: frames that reach the relay's workers through its
// AF_XDP sockets carry their outer ECN too: with A's output marking its
// FIPS datagrams to B CE, B (dataplane.afxdp) handles them as FMP CE —
// its outer-CE count rises, its receiver reports tell A, and it relays
// CE on to C.
func TestAFXDPOuterCE(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab := m.Link(a, b)
	m.Link(b, c)
	b.ExtraConfig = "dataplane: { mode: xdp, afxdp: true }\n"
	port := m.opts.Port
	if port == 0 {
		port = 2121
	}
	m.Start()
	m.WaitConverged(30 * time.Second)
	if dp := dataplaneOf(t, b); !dp.AFXDP.Enabled {
		t.Fatalf("b: AF_XDP not enabled: %+v", dp.AFXDP)
	}
	addr := resolve(t, m, a, c)
	waitReply(t, m, a, addr, 20*time.Second)
	ping := func(count int) {
		t.Helper()
		out, err := m.Exec("a", "ping", "-6", "-c", strconv.Itoa(count), "-i", "0.1", "-W", "2", addr)
		if err != nil || !strings.Contains(string(out), strconv.Itoa(count)+" received") {
			t.Fatalf("ping6 A→C: %v\n%s", err, out)
		}
	}
	ping(3)
	ceAB0, _ := linkCE(t, a, b)
	ceBC0, _ := linkCE(t, b, c)
	rx0 := bpfStats(t, m, b).packets("redirect", "link_xsk")
	for _, rule := range []string{
		"add table ip fipsce",
		"add chain ip fipsce out { type filter hook output priority 0; }",
		"add rule ip fipsce out ip daddr " + ab.AddrB + " udp sport " + strconv.Itoa(port) + " ip ecn set ce counter",
	} {
		if out, err := m.Exec("a", append([]string{"nft"}, strings.Fields(rule)...)...); err != nil {
			t.Fatalf("nft %s: %v\n%s", rule, err, out)
		}
	}
	ping(20)
	outer := dataplaneOf(t, b).OuterCE
	redirected := bpfStats(t, m, b).packets("redirect", "link_xsk") - rx0
	t.Logf("b: %d frames redirected to its XSKs, %d handled as outer CE", redirected, outer)
	if redirected < 20 || outer < 20 {
		t.Errorf("b: %d redirected, %d outer CE; want ≥ 20 of each", redirected, outer)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ceAB, _ := linkCE(t, a, b)
		ceBC, _ := linkCE(t, b, c)
		if ceAB > ceAB0 && ceBC > ceBC0 {
			t.Logf("ecn_ce_count: a's for b %d → %d, b's for c %d → %d", ceAB0, ceAB, ceBC0, ceBC)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ecn_ce_count did not rise: a's for b %d → %d, b's for c %d → %d", ceAB0, ceAB, ceBC0, ceBC)
		}
		ping(2)
	}
}

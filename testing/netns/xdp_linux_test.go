//go:build linux

package netns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
)

// bpfView is show_bpf (and show_status's dataplane) as the tests read it.
type bpfView struct{ ctl.BPFView }

func (v bpfView) packets(verdict, reason string) uint64 {
	var n uint64
	for _, c := range v.Counters {
		if c.Verdict == verdict && (reason == "" || c.Reason == reason) {
			n += c.Packets
		}
	}
	return n
}

// bpfStats runs `fipsctl bpf stats --json` in n's namespace.
func bpfStats(t *testing.T, m *Mesh, n *Node) bpfView {
	t.Helper()
	out, err := m.Fipsctl(n.Name, "bpf", "stats", "--json")
	if err != nil {
		t.Fatalf("fipsctl bpf stats --json on %s: %v", n.Name, err)
	}
	var v bpfView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("fipsctl bpf stats --json: %v\n%s", err, out)
	}
	return v
}

// udpRecv is n's UDP transport packets_recv (show_transports).
func udpRecv(t *testing.T, n *Node) uint64 {
	t.Helper()
	r, _ := udpPackets(t, n)
	return r
}

// udpPackets is n's UDP transport packets_recv and packets_sent
// (show_transports).
func udpPackets(t *testing.T, n *Node) (recv, sent uint64) {
	t.Helper()
	var st struct {
		Transports []struct {
			Type  string `json:"type"`
			Stats struct {
				PacketsRecv uint64 `json:"packets_recv"`
				PacketsSent uint64 `json:"packets_sent"`
			} `json:"stats"`
		} `json:"transports"`
	}
	if err := n.Call("show_transports", nil, &st); err != nil {
		t.Fatal(err)
	}
	for _, tr := range st.Transports {
		if tr.Type == "udp" {
			return tr.Stats.PacketsRecv, tr.Stats.PacketsSent
		}
	}
	t.Fatalf("%s has no UDP transport", n.Name)
	return 0, 0
}

// dataplaneOf is n's show_status dataplane field.
func dataplaneOf(t *testing.T, n *Node) bpfView {
	t.Helper()
	var st struct {
		Dataplane bpfView `json:"dataplane"`
	}
	if err := n.Call("show_status", nil, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dataplane
}

// floodScript sends datagrams to argv[1]:argv[2]: argv[3] of them, of
// kind "garbage" (random length 4..1400 but never a handshake's 69 or
// 114; half random bytes, half well-formed established frames with a
// random receiver index, so each one is malformed or names no index) or
// "msg1" (well-formed msg1-sized: version 0, phase 1, no flags,
// payload_len 110, random rest), at argv[5] datagrams a second if given
// (else as fast as it can). It prints how many it sent.
const floodScript = `
import os, random, socket, sys, time
host, port, count, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rate = int(sys.argv[5]) if len(sys.argv) > 5 else 0
start = time.monotonic()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
pool = os.urandom(1 << 16)
sent = 0
for i in range(count):
    if rate and i % 200 == 0:
        ahead = start + i / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    if kind == "msg1":
        off = random.randrange(0, len(pool) - 110)
        d = b"\x01\x00\x6e\x00" + pool[off:off + 110]
    else:
        n = random.randrange(4, 1401)
        while n in (69, 114):
            n = random.randrange(4, 1401)
        off = random.randrange(0, len(pool) - n)
        d = pool[off:off + n]
        if i % 2 and n >= 32:
            d = b"\x00\x00" + (n - 32).to_bytes(2, "little") + d[4:]
    try:
        s.sendto(d, (host, port))
        sent += 1
    except (BlockingIOError, OSError):
        pass
print(sent)
`

// flood runs floodScript in node's namespace and returns how many
// datagrams left.
func flood(t *testing.T, m *Mesh, node, script, host string, port, count int, kind string) int {
	t.Helper()
	out, err := m.Exec(node, "python3", script, host, strconv.Itoa(port), strconv.Itoa(count), kind)
	if err != nil {
		t.Fatalf("flood from %s: %v\n%s", node, err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("flood output %q", out)
	}
	return n
}

// TestXDPTransitChain is issue 12's netns acceptance without AF_XDP: the
// chain A—B—C with B in dataplane.mode xdp (and D, a fourth node peered
// with B, as the attacker's namespace). ping6 and iperf3 A→C pass through
// B; 100,000+ random datagrams from D to B's FIPS port are dropped in XDP
// (B's drop counters move by at least that, its UDP socket does not see
// them) while an iperf3 flow through B keeps flowing; a msg1 flood from D
// is rate-limited in XDP while the A–B and B–C links keep their
// heartbeats.
func TestXDPTransitChain(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c, d := m.AddNode("a"), m.AddNode("b"), m.AddNode("c"), m.AddNode("d")
	m.Link(a, b)
	m.Link(b, c)
	bd := m.Link(b, d)
	b.ExtraConfig = "dataplane: { mode: xdp }\n"
	m.Start()
	m.WaitConverged(30 * time.Second)

	dp := dataplaneOf(t, b)
	if dp.Mode != "xdp" || len(dp.Interfaces) != 3 {
		t.Fatalf("b's show_status dataplane: %+v\n%s", dp, b.Logs())
	}
	for _, i := range dp.Interfaces {
		if i.AttachMode != "native" || i.ProgramID == 0 {
			t.Errorf("b interface %+v: want native XDP with a program id", i)
		}
	}
	if !strings.Contains(b.Logs(), "dataplane: xdp") {
		t.Errorf("b logged no dataplane line:\n%s", tail(b.Logs(), 20))
	}
	t.Logf("b dataplane: %s", dp.Reason)
	// The kernel shows the program on B's veths.
	out, err := m.Exec("b", "ip", "-d", "link", "show", bd.IfA)
	if err != nil || !strings.Contains(string(out), "xdp") || !strings.Contains(string(out), fmt.Sprintf("id %d", dp.Interfaces[0].ProgramID)) {
		t.Errorf("ip link show %s: %v\n%s", bd.IfA, err, out)
	}

	addr := resolve(t, m, a, c)
	out, err = m.Exec("a", "ping", "-6", "-c", "10", "-i", "0.2", "-W", "2", addr)
	if err != nil || !strings.Contains(string(out), "10 received") {
		t.Fatalf("ping6 A→C through B: %v\n%s", err, out)
	}
	before := bpfStats(t, m, b)
	if before.Maps == nil || before.Maps.Links < 3 {
		t.Fatalf("b's links map: %+v, want the indices of its 3 links", before.Maps)
	}
	if before.packets("pass", "link_kernel") == 0 {
		t.Errorf("no established frame passed XDP as link_kernel after a ping through B: %+v", before.Counters)
	}

	script := filepath.Join(m.Dir, "flood.py")
	if err := os.WriteFile(script, []byte(floodScript), 0o644); err != nil {
		t.Fatal(err)
	}
	port := m.opts.Port
	if port == 0 {
		port = 2121
	}

	// Garbage flood with nothing else running: every datagram is dropped in
	// XDP, and B's socket sees only the mesh's own traffic.
	recv0, drop0 := udpRecv(t, b), before.packets("drop", "")
	sent := 0
	var after bpfView
	for round := 0; ; round++ {
		sent += flood(t, m, "d", script, bd.AddrA, port, 50_000, "garbage")
		after = bpfStats(t, m, b)
		if after.packets("drop", "")-drop0 >= 100_000 {
			break
		}
		if round == 5 {
			t.Fatalf("sent %d garbage datagrams, XDP dropped %d", sent, after.packets("drop", "")-drop0)
		}
	}
	dropped := after.packets("drop", "") - drop0
	recvDelta := udpRecv(t, b) - recv0
	t.Logf("garbage flood: %d sent from d, %d dropped in XDP (unknown_index %d, bad_version %d, bad_phase %d, bad_length %d); b's UDP packets_recv +%d",
		sent, dropped, after.packets("drop", "unknown_index")-before.packets("drop", "unknown_index"),
		after.packets("drop", "bad_version")-before.packets("drop", "bad_version"),
		after.packets("drop", "bad_phase")-before.packets("drop", "bad_phase"),
		after.packets("drop", "bad_length")-before.packets("drop", "bad_length"), recvDelta)
	if after.packets("drop", "unknown_index") == before.packets("drop", "unknown_index") {
		t.Error("no established frame with a random index was dropped as unknown_index")
	}
	if recvDelta >= 1000 {
		t.Errorf("b's UDP transport received %d packets during a flood XDP should have dropped", recvDelta)
	}

	// iperf3 through B, without and with the flood.
	defer m.Background("c", "iperf3", "-s", "-B", addr)()
	if !m.WaitListening("c", 5201, 10*time.Second) {
		t.Fatal("iperf3 server not listening")
	}
	// The flood is paced (floodRate a second, floodSecs × floodRate
	// datagrams, ≥ 100,000) so that what it costs is B's, not the
	// flooder's: on this 2-core machine an unpaced python3 flooder takes a
	// whole core from iperf3 and the daemons. Quiet runs before and
	// after the flooded one; the flooded rate is held against their mean.
	const floodRate, floodSecs = 40_000, 5
	floodedRun := func() (bps float64, sent int, dropped uint64) {
		t.Helper()
		drop1 := bpfStats(t, m, b).packets("drop", "")
		floodDone := make(chan int, 1)
		go func() {
			out, err := m.Exec("d", "python3", script, bd.AddrA, strconv.Itoa(port), strconv.Itoa(floodRate*floodSecs), "garbage", strconv.Itoa(floodRate))
			k, _ := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				k = -1
			}
			floodDone <- k
		}()
		bps = iperf(t, m, "a", addr, floodSecs)
		sent = <-floodDone
		if sent < 0 {
			t.Fatal("the concurrent flood failed")
		}
		return bps, sent, bpfStats(t, m, b).packets("drop", "") - drop1
	}
	// Quiet and flooded runs alternate (q f q f q) so that other load on
	// the machine falls on both alike; the medians are compared.
	var quiets, floods []float64
	for k := 0; k < 5; k++ {
		if k%2 == 0 {
			quiets = append(quiets, iperf(t, m, "a", addr, floodSecs))
			continue
		}
		bps, sent, dropped := floodedRun()
		floods = append(floods, bps)
		t.Logf("flooded run: %.1f Mbit/s while %d datagrams were sent at %d/s, %d dropped in XDP meanwhile", bps/1e6, sent, floodRate, dropped)
		if dropped < 100_000 {
			t.Errorf("%d datagrams dropped in XDP during a flooded iperf3, want ≥ 100,000", dropped)
		}
	}
	slices.Sort(quiets)
	quiet, flooded := quiets[1], (floods[0]+floods[1])/2
	t.Logf("iperf3 A→C through B: %.1f Mbit/s without flood (median of %.0f, %.0f, %.0f), %.1f Mbit/s during the floods: %.0f%%",
		quiet/1e6, quiets[0]/1e6, quiets[1]/1e6, quiets[2]/1e6, flooded/1e6, 100*flooded/quiet)
	// What the flood costs B is asserted by its sockets (above: a handful
	// of packets of 100,000) and by XDP's drop counters. The rate ratio is
	// logged, not held to a figure: on 2 cores the paced flooder and the
	// kernel's receive work for 40,000 datagrams a second share the CPU
	// with iperf3 and three daemons, and with whatever other test package
	// runs beside this one, so the ratio measures the machine (87% here
	// alone, 77% beside another package's tests in CI). The flow must
	// keep flowing.
	if flooded < 0.5*quiet {
		t.Errorf("iperf3 kept %.0f%% of its unflooded rate during the flood, want it to keep flowing (≥ 50%%)", 100*flooded/quiet)
	}

	// Handshake flood from one source: limited in XDP.
	var peers0 struct {
		Peers []struct {
			Npub            string `json:"npub"`
			AuthenticatedAt uint64 `json:"authenticated_at_ms"`
		} `json:"peers"`
	}
	if err := b.Call("show_peers", nil, &peers0); err != nil {
		t.Fatal(err)
	}
	var hb0 struct {
		LinkLayer struct {
			HeartbeatsRecv uint64 `json:"heartbeats_received"`
			Msg1Received   uint64 `json:"msg1_received"`
		} `json:"link_layer"`
	}
	if err := b.Call("show_status", nil, &hb0); err != nil {
		t.Fatal(err)
	}
	h0 := bpfStats(t, m, b)
	start := time.Now()
	hsSent := flood(t, m, "d", script, bd.AddrA, port, 20_000, "msg1")
	elapsed := time.Since(start)
	h1 := bpfStats(t, m, b)
	limited := h1.packets("drop", "rate_limited") - h0.packets("drop", "rate_limited")
	passed := h1.packets("pass", "handshake") - h0.packets("pass", "handshake")
	// node.rate_limit defaults: burst 100, 10 per second.
	allowed := uint64(100 + 10*elapsed.Seconds() + 20)
	t.Logf("handshake flood: %d msg1 sent in %v, %d rate_limited in XDP, %d passed (allowed ≤ %d); ratelimit entries %d",
		hsSent, elapsed.Round(time.Millisecond), limited, passed, allowed, h1.Maps.Ratelimit)
	if passed > allowed {
		t.Errorf("%d handshakes passed XDP, the bucket allows %d", passed, allowed)
	}
	if limited+passed < uint64(hsSent)*9/10 || limited == 0 {
		t.Errorf("msg1 flood: %d sent, %d limited, %d passed", hsSent, limited, passed)
	}
	// The links keep their heartbeats: B hears from all three peers again
	// and none of them relinked.
	deadline := time.Now().Add(25 * time.Second)
	for {
		var hb struct {
			LinkLayer struct {
				HeartbeatsRecv uint64 `json:"heartbeats_received"`
			} `json:"link_layer"`
		}
		if err := b.Call("show_status", nil, &hb); err != nil {
			t.Fatal(err)
		}
		if hb.LinkLayer.HeartbeatsRecv >= hb0.LinkLayer.HeartbeatsRecv+3 {
			t.Logf("b heartbeats received: %d → %d", hb0.LinkLayer.HeartbeatsRecv, hb.LinkLayer.HeartbeatsRecv)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b received %d heartbeats since the flood", hb.LinkLayer.HeartbeatsRecv-hb0.LinkLayer.HeartbeatsRecv)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var peers1 struct {
		Peers []struct {
			Npub            string `json:"npub"`
			AuthenticatedAt uint64 `json:"authenticated_at_ms"`
		} `json:"peers"`
	}
	if err := b.Call("show_peers", nil, &peers1); err != nil {
		t.Fatal(err)
	}
	was := map[string]uint64{}
	for _, p := range peers0.Peers {
		was[p.Npub] = p.AuthenticatedAt
	}
	for _, n := range []*Node{a, c} {
		found := false
		for _, p := range peers1.Peers {
			if p.Npub == n.Npub() {
				found = true
				if p.AuthenticatedAt != was[p.Npub] {
					t.Errorf("b's link to %s relinked during the floods", n.Name)
				}
			}
		}
		if !found {
			t.Errorf("b lost its link to %s", n.Name)
		}
	}
	out, err = m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", addr)
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Errorf("ping6 A→C after the floods: %v\n%s", err, out)
	}
	table, err := m.Fipsctl("b", "bpf", "stats")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fipsctl bpf stats on b:\n%s", table)
}

// TestXDPModesWithoutXDP: dataplane.mode userspace loads no program and
// says so; auto with an interface XDP cannot attach to falls back to
// userspace and says why, the link between them working as before; and
// xdp mode in the same situation fails the start with one line naming the
// interface.
func TestXDPModesWithoutXDP(t *testing.T) {
	m := New(t, Options{})
	a, b := m.AddNode("a"), m.AddNode("b")
	l := m.Link(a, b)
	a.ExtraConfig = "dataplane: { mode: userspace }\n"
	b.ExtraConfig = "dataplane: { mode: auto, xdp_interfaces: [fgonosuch0] }\n"
	m.Start()
	m.WaitConverged(30 * time.Second)

	da, db := dataplaneOf(t, a), dataplaneOf(t, b)
	if da.Mode != "userspace" || da.Configured != "userspace" || !strings.Contains(da.Reason, "no BPF") || len(da.Interfaces) != 0 {
		t.Errorf("a (userspace): %+v", da)
	}
	if db.Mode != "userspace" || db.Configured != "auto" || !strings.Contains(db.Reason, "fgonosuch0") {
		t.Errorf("b (auto, bad interface): %+v", db)
	}
	t.Logf("a: %s", da.Reason)
	t.Logf("b: %s", db.Reason)
	for _, n := range []*Node{a, b} {
		if !strings.Contains(n.Logs(), "dataplane: userspace") {
			t.Errorf("%s logged no dataplane line:\n%s", n.Name, tail(n.Logs(), 20))
		}
		v := bpfStats(t, m, n)
		if v.Mode != "userspace" || v.Maps != nil || len(v.Counters) != 0 {
			t.Errorf("%s show_bpf: %+v", n.Name, v)
		}
		table, err := m.Fipsctl(n.Name, "bpf", "stats")
		if err != nil || !strings.HasPrefix(string(table), "dataplane: userspace") {
			t.Errorf("%s fipsctl bpf stats: %v\n%s", n.Name, err, table)
		}
	}
	for _, e := range [][2]string{{"a", l.IfA}, {"b", l.IfB}} {
		out, err := m.Exec(e[0], "ip", "-d", "link", "show", e[1])
		if err != nil || strings.Contains(string(out), "prog/xdp") {
			t.Errorf("%s %s has an XDP program: %v\n%s", e[0], e[1], err, out)
		}
	}

	// xdp mode, same interface: the start fails, one line says why.
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fips.yaml")
	yaml := fmt.Sprintf("node:\n  identity: { nsec: %q }\n  control: { socket_path: %q }\n"+
		"transports:\n  udp: { bind_addr: \"0.0.0.0:2999\" }\ntun: { enabled: false }\ndns: { enabled: false }\npeers: []\n"+
		"dataplane: { mode: xdp, xdp_interfaces: [fgonosuch0] }\n", id.Secret().Hex(), filepath.Join(dir, "control.sock"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", b.NS, m.Binaries().Fips, "-c", cfg)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("fips with dataplane.mode xdp on a missing interface started:\n%s", out)
	}
	if !regexp.MustCompile(`dataplane\.mode is xdp, but .*fgonosuch0`).Match(out) {
		t.Errorf("xdp-mode failure does not name the mode and interface:\n%s", out)
	}
	t.Logf("xdp mode on a missing interface: %v\n%s", err, tail(string(out), 3))
}

// TestXDPGenericKeepsGSO: with dataplane.xdp_attach: generic the relay's
// veths keep their peers' UDP GSO (native XDP on veth turns it off), so
// A's GSO runs reach B whole: they pass XDP as multi_buffer, the program
// still judging every single datagram; iperf3 A→C through B carries, and
// the attach mode shows as generic. (Kept whole, a run is copied before
// the program sees it: on this machine generic carried about 0.9 Gbit/s
// where native carried 1.4 — reported, not asserted.)
func TestXDPGenericKeepsGSO(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	b.ExtraConfig = "dataplane: { mode: xdp, xdp_attach: generic }\n"
	m.Start()
	m.WaitConverged(30 * time.Second)
	dp := dataplaneOf(t, b)
	if dp.Mode != "xdp" || len(dp.Interfaces) != 2 {
		t.Fatalf("b's dataplane: %+v", dp)
	}
	for _, i := range dp.Interfaces {
		if i.AttachMode != "generic" {
			t.Errorf("b interface %+v: want generic", i)
		}
	}
	addr := resolve(t, m, a, c)
	defer m.Background("c", "iperf3", "-s", "-B", addr)()
	if !m.WaitListening("c", 5201, 10*time.Second) {
		t.Fatal("iperf3 server not listening")
	}
	s0 := bpfStats(t, m, b)
	bps := iperf(t, m, "a", addr, 4)
	s1 := bpfStats(t, m, b)
	multi := s1.packets("pass", "multi_buffer") - s0.packets("pass", "multi_buffer")
	single := s1.packets("pass", "link_kernel") - s0.packets("pass", "link_kernel")
	var multiBytes uint64
	for _, c := range s1.Counters {
		if c.Reason == "multi_buffer" {
			multiBytes += c.Bytes
		}
	}
	t.Logf("iperf3 A→C through B (generic XDP): %.1f Mbit/s; B's XDP passed %d multi-buffer frames (%d bytes) and %d single established frames",
		bps/1e6, multi, multiBytes, single)
	if bps <= 0 {
		t.Fatal("iperf3 carried nothing")
	}
	if multi == 0 {
		t.Errorf("no GSO run reached B's XDP whole")
	}
}

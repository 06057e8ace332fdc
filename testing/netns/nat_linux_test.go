//go:build linux

package netns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The "internet" of the NAT scenarios: the relay and the STUN server
// listen on one address both NATs route to.
const (
	inetAddr  = "198.18.0.1"
	relayPort = 7777
	stunPort  = 3478
)

// relayDir is where the third-party relay (@nostr-relay, installed by
// testing/deps.sh with npm ci) lives.
func relayDir(t *testing.T) string {
	if d := os.Getenv("FIPS_NOSTR_RELAY_DIR"); d != "" {
		return d
	}
	d, err := filepath.Abs("nostrrelay")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// natLab builds a—natA—inet—natB—b: a and b on their own LANs behind
// nftables masquerade (symmetric: fully-random ports, else the kernel's
// port-preserving, endpoint-independent mapping), with the relay and
// coturn's STUN server in inet. Nothing routes to the LANs from inet.
func natLab(t *testing.T, symmetric bool) (m *Mesh, a, b *Node) {
	t.Helper()
	natPrereqs(t)
	m = New(t, Options{IPv6: true, LogLevel: "debug"})
	a, b = m.AddNode("a"), m.AddNode("b")
	natA, natB, inet := m.AddNode("nata"), m.AddNode("natb"), m.AddNode("inet")
	wanA, wanB := m.Link(natA, inet), m.Link(natB, inet)
	lanA, lanB := m.Link(a, natA), m.Link(b, natB)
	mustRun(t, m, "inet", "ip", "addr", "add", inetAddr+"/32", "dev", "lo")
	mustRun(t, m, "inet", "sysctl", "-qw", "net.ipv4.ip_forward=1")
	for _, r := range []struct {
		nat      string
		wan, lan *Link
		host     string
	}{{"nata", wanA, lanA, "a"}, {"natb", wanB, lanB, "b"}} {
		mustRun(t, m, r.host, "ip", "route", "add", "default", "via", r.lan.AddrB)
		natRouter(t, m, r.nat, r.wan, symmetric)
	}
	startInternet(t, m)
	return m, a, b
}

// natPrereqs fails t unless nft, coturn, node and the relay are installed.
func natPrereqs(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"nft", "turnserver", "node"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found (sudo make deps installs it): %v", bin, err)
		}
	}
	rd := relayDir(t)
	if _, err := os.Stat(filepath.Join(rd, "node_modules", "@nostr-relay", "core")); err != nil {
		t.Fatalf("the Nostr relay is not installed in %s (sudo make deps installs it): %v", rd, err)
	}
}

func mustRun(t *testing.T, m *Mesh, node string, args ...string) {
	t.Helper()
	if out, err := m.Exec(node, args...); err != nil {
		t.Fatalf("%s: %s: %v\n%s", node, strings.Join(args, " "), err, out)
	}
}

// natRouter makes nat a home router: forwarding, a default route out of
// wan (nat is its A side), and nftables masquerade on it (symmetric:
// fully-random ports). New inbound flows on the WAN are dropped before
// conntrack confirms them, as a home router does, so an early probe from
// a peer cannot take the mapping's tuple.
func natRouter(t *testing.T, m *Mesh, nat string, wan *Link, symmetric bool) {
	t.Helper()
	mustRun(t, m, nat, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	mustRun(t, m, nat, "ip", "route", "add", "default", "via", wan.AddrB)
	masq := "masquerade"
	if symmetric {
		masq = "masquerade fully-random"
	}
	ruleset := fmt.Sprintf(`table ip lab {
  chain postrouting { type nat hook postrouting priority srcnat; oifname "%s" %s; }
  chain inbound { type filter hook input priority filter; iifname "%s" ct state new drop; }
  chain forwarded { type filter hook forward priority filter; iifname "%s" ct state new drop; }
}
`, wan.IfA, masq, wan.IfA, wan.IfA)
	f := filepath.Join(m.Dir, nat+".nft")
	if err := os.WriteFile(f, []byte(ruleset), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, m, nat, "nft", "-f", f)
}

// startInternet runs, in the node "inet" (inetAddr on its loopback), the
// relay (not ours: @nostr-relay) and coturn, STUN only, and waits until
// both listen.
func startInternet(t *testing.T, m *Mesh) {
	t.Helper()
	inet := m.Node("inet")
	relayLog := filepath.Join(m.Dir, "relay.log")
	lf, err := os.Create(relayLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lf.Close() })
	relay := exec.Command("ip", "netns", "exec", inet.NS, "node", filepath.Join(relayDir(t), "relay.js"), inetAddr, fmt.Sprint(relayPort), ":memory:")
	relay.Stdout, relay.Stderr = lf, lf
	startProc(t, relay)
	m.Spawn("inet", "turnserver", "-n", "--stun-only", "--no-cli", "--no-tls", "--no-dtls", "--no-auth",
		"--listening-ip", inetAddr, "--listening-port", fmt.Sprint(stunPort), "--log-file", filepath.Join(m.Dir, "turn.log"),
		"--simple-log", "--pidfile", filepath.Join(m.Dir, "turn.pid"))
	if !m.WaitListening("inet", relayPort, 15*time.Second) {
		b, _ := os.ReadFile(relayLog)
		t.Fatalf("the relay did not start listening on %s:%d:\n%s", inetAddr, relayPort, b)
	}
	waitUDP(t, m, "inet", stunPort, 10*time.Second)
}

func waitUDP(t *testing.T, m *Mesh, node string, port int, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, err := m.Exec(node, "ss", "-Hlun", fmt.Sprintf("sport = :%d", port))
		if err == nil && strings.TrimSpace(string(out)) != "" {
			return
		}
	}
	t.Fatalf("nothing listens on UDP %d in %s", port, node)
}

// startProc starts cmd in its own process group, killed at cleanup.
func startProc(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	setpgid(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		killGroup(cmd, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			killGroup(cmd, syscall.SIGKILL)
			<-done
		}
	})
}

// natNodeConfig is a node that knows its peer by npub only, in the
// canonical keys: node.rendezvous.nostr and a via_nostr peer.
func natNodeConfig(n, other *Node, extra string) string {
	relay := fmt.Sprintf("ws://%s:%d", inetAddr, relayPort)
	return fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
  rendezvous:
    nostr:
      enabled: true
      advert_relays: [%q]
      dm_relays: [%q]
      stun_servers: ["stun:%s:%d"]
%s
transports:
  udp: { bind_addr: "0.0.0.0:2121", advertise_on_nostr: true, public: false }
tun: { enabled: true, name: fips0, mtu: 1280 }
dns: { enabled: true, bind_addr: "::1", port: 5354 }
peers:
  - npub: %q
    alias: %s
    via_nostr: true
`, n.ID.Secret().Hex(), n.Socket, relay, relay, inetAddr, stunPort, extra, other.Npub(), other.Name)
}

// natLabConfig is upstream's NAT-lab node config
// (testing/nat/scripts/generate-configs.sh) with this lab's addresses:
// the legacy node.discovery.nostr block, its own app name and fast
// timings, and the peer as a udp "nat" address.
func natLabConfig(n, other *Node, extra string) string {
	relay := fmt.Sprintf("ws://%s:%d", inetAddr, relayPort)
	return fmt.Sprintf(`node:
  identity:
    nsec: %q
  control: { socket_path: %q }
  log_level: debug
  retry:
    max_retries: 3
    base_interval_secs: 2
    max_backoff_secs: 8
  discovery:
    nostr:
      enabled: true
      advertise: true
      app: "fips.nat.lab.v1"
      advert_relays:
        - %q
      dm_relays:
        - %q
      stun_servers:
        - "stun:%s:%d"
      signal_ttl_secs: 30
      attempt_timeout_secs: 6
      replay_window_secs: 180
      punch_start_delay_ms: 500
      punch_interval_ms: 100
      punch_duration_ms: 2500
      advert_ttl_secs: 60
      advert_refresh_secs: 20
%s
tun:
  enabled: true
  name: fips0
  mtu: 1280

dns:
  enabled: true
  bind_addr: "::1"
  port: 5354

transports:
  udp:
    bind_addr: "0.0.0.0:2121"
    mtu: 1472
    advertise_on_nostr: true
    public: false

peers:
  - npub: %q
    alias: "node-%s"
    addresses:
      - transport: udp
        addr: "nat"
        priority: 1
    connect_policy: auto_connect
    auto_reconnect: true
`, n.ID.Secret().Hex(), n.Socket, relay, relay, inetAddr, stunPort, extra, other.Npub(), other.Name)
}

func startNATNodes(t *testing.T, a, b *Node, config func(n, other *Node, extra string) string, extra string) time.Time {
	t.Helper()
	for _, p := range [][2]*Node{{a, b}, {b, a}} {
		if err := os.WriteFile(p[0].Config, []byte(config(p[0], p[1], extra)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, n := range []*Node{a, b} {
		if err := n.start(); err != nil {
			t.Fatalf("start %s: %v", n.Name, err)
		}
	}
	return start
}

type rendezvousPeers struct {
	Peers []struct {
		Npub                string `json:"npub"`
		State               string `json:"state"`
		Attempts            uint64 `json:"attempts"`
		LastOutcome         string `json:"last_outcome"`
		LastReason          string `json:"last_reason"`
		ConsecutiveFailures uint32
		CooldownUntilMs     uint64
	} `json:"peers"`
	Stats map[string]any `json:"stats"`
}

// TestNATTraversalPing: two nodes, each behind its own NAT, configured
// only with each other's npub and via_nostr, find each other through a
// real relay, punch through both NATs with a real STUN server's help,
// link, and ping6 each other by .fips name.
func TestNATTraversalPing(t *testing.T) {
	m, a, b := natLab(t, false)
	start := startNATNodes(t, a, b, natNodeConfig, "")
	var linkedAt time.Duration
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pa, pb struct {
			Peers []struct{ Npub string } `json:"peers"`
		}
		if a.Call("show_peers", nil, &pa) == nil && b.Call("show_peers", nil, &pb) == nil &&
			len(pa.Peers) == 1 && pa.Peers[0].Npub == b.Npub() && len(pb.Peers) == 1 && pb.Peers[0].Npub == a.Npub() {
			linkedAt = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no link through the NATs after 90 s\nA:\n%s\nB:\n%s", tail(a.Logs(), 60), tail(b.Logs(), 60))
		}
	}
	t.Logf("linked %v after the daemons started", linkedAt.Round(time.Millisecond))
	// The link runs over a punched path: the peer's address is its
	// NAT's WAN address, never its LAN address.
	var links struct {
		Links []struct {
			RemoteAddr string `json:"remote_addr"`
		} `json:"links"`
	}
	if err := a.Call("show_links", nil, &links); err != nil || len(links.Links) == 0 ||
		!strings.HasPrefix(links.Links[0].RemoteAddr, "10.77.1.1:") {
		t.Errorf("a's link to b: %v %+v (want b's NAT, 10.77.1.1)", err, links)
	}
	var first time.Duration
	for _, p := range [][2]*Node{{a, b}, {b, a}} {
		out, err := m.Exec(p[0].Name, "ping", "-6", "-c", "5", "-i", "0.2", "-W", "3", p[1].Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "5 received") || !strings.Contains(string(out), p[1].IPv6()) {
			t.Fatalf("ping -6 %s.fips from %s: %v\n%s\n%s", p[1].Name, p[0].Name, err, out, tail(p[0].Logs(), 40))
		}
		if first == 0 {
			first = time.Since(start)
		}
		t.Logf("%s → %s.fips:\n%s", p[0].Name, p[1].Name, firstLines(string(out), 3))
	}
	t.Logf("daemon start to the first ping reply across the two NATs: under %v (link up at %v)", first.Round(time.Millisecond), linkedAt.Round(time.Millisecond))
	var ra rendezvousPeers
	if err := a.Call("show_rendezvous", nil, &ra); err != nil || len(ra.Peers) != 1 || ra.Peers[0].State != "linked" {
		t.Errorf("show_rendezvous on a: %v %+v", err, ra)
	}
	var metrics struct {
		Rendezvous map[string]float64 `json:"rendezvous"`
	}
	if err := a.Call("show_metrics", nil, &metrics); err != nil || metrics.Rendezvous["adverts_published"] < 1 {
		t.Errorf("show_metrics rendezvous on a: %v %v", err, metrics.Rendezvous)
	}
	var mb struct {
		Rendezvous map[string]float64 `json:"rendezvous"`
	}
	_ = b.Call("show_metrics", nil, &mb)
	punched := metrics.Rendezvous["traversals_succeeded"] + metrics.Rendezvous["responder_punches_succeeded"] +
		mb.Rendezvous["traversals_succeeded"] + mb.Rendezvous["responder_punches_succeeded"]
	if punched < 2 {
		t.Errorf("punch counters: a %v b %v", metrics.Rendezvous, mb.Rendezvous)
	}
	for _, n := range []*Node{a, b} {
		if !regexp.MustCompile(`Nostr rendezvous configured: the node will advertise udp:nat, reach 1 peer`).MatchString(n.Logs()) ||
			!strings.Contains(n.Logs(), "Adopted NAT traversal socket") {
			t.Errorf("%s's log lacks the rendezvous lines:\n%s", n.Name, tail(n.Logs(), 40))
		}
	}
}

// TestSymmetricNATFails: behind symmetric NATs (a new port per
// destination) the punch cannot meet: each attempt fails within its
// deadline with a clear reason, and the peer goes into cooldown. The
// nodes run upstream's own NAT-lab config (legacy keys, udp "nat"
// addresses), with one failure enough for the cooldown.
func TestSymmetricNATFails(t *testing.T) {
	_, a, b := natLab(t, true)
	extra := "      failure_streak_threshold: 1\n      extended_cooldown_secs: 600\n"
	start := startNATNodes(t, a, b, natLabConfig, extra)
	var ra rendezvousPeers
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := a.Call("show_rendezvous", nil, &ra); err == nil && len(ra.Peers) == 1 && ra.Peers[0].State == "cooldown" {
			break
		}
		if time.Now().After(deadline) {
			raw, _ := json.Marshal(ra)
			t.Fatalf("a never reached cooldown: %s\nA:\n%s\nB:\n%s", raw, tail(a.Logs(), 60), tail(b.Logs(), 60))
		}
	}
	p := ra.Peers[0]
	// The punch times out (6 s); on a loaded machine the answer may not
	// even come back through the relay in time (30 s): a failure with its
	// reason and a cooldown either way.
	if p.LastOutcome != "failure" || p.ConsecutiveFailures < 1 || p.CooldownUntilMs == 0 ||
		!(strings.Contains(p.LastReason, "traversal attempt timed out after 6s") || strings.Contains(p.LastReason, "signal timeout")) {
		t.Errorf("a's traversal state: %+v", p)
	}
	t.Logf("a: state %s %v after the daemons started, after %d attempt(s): %s; cooldown until %s", p.State,
		time.Since(start).Round(100*time.Millisecond), p.Attempts, p.LastReason,
		time.UnixMilli(int64(p.CooldownUntilMs)).UTC().Format(time.RFC3339))
	var peers struct {
		Peers []any `json:"peers"`
	}
	if err := a.Call("show_peers", nil, &peers); err != nil || len(peers.Peers) != 0 {
		t.Errorf("a linked through a symmetric NAT: %v %+v", err, peers)
	}
	if !regexp.MustCompile(`WARN [^ ]+: Nostr traversal failed .*reason=.*cooldown_until=`).MatchString(a.Logs()) {
		t.Errorf("a's log has no failure line with its reason and cooldown:\n%s", tail(a.Logs(), 40))
	}
	for _, want := range []string{"deprecated: mesh-lookup keys moved", "Nostr rendezvous configured: the node will advertise udp:nat, reach 1 peer"} {
		if !strings.Contains(a.Logs(), want) {
			t.Errorf("a's log lacks %q", want)
		}
	}
}

func setpgid(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}

// TestNATOpenDiscovery: with policy open and no peers configured at all,
// two NATed nodes dial each other from the adverts they see on the relay.
func TestNATOpenDiscovery(t *testing.T) {
	m, a, b := natLab(t, false)
	open := func(n, _ *Node, _ string) string {
		cfg := natNodeConfig(n, n, "      policy: open\n")
		return cfg[:strings.Index(cfg, "peers:\n")] + "peers: []\n"
	}
	start := startNATNodes(t, a, b, open, "")
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pa struct {
			Peers []struct{ Npub string } `json:"peers"`
		}
		if a.Call("show_peers", nil, &pa) == nil && len(pa.Peers) == 1 && pa.Peers[0].Npub == b.Npub() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("open discovery found no peer after 90 s\nA:\n%s\nB:\n%s", tail(a.Logs(), 60), tail(b.Logs(), 60))
		}
	}
	t.Logf("linked by open discovery %v after the daemons started", time.Since(start).Round(time.Millisecond))
	out, err := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", b.Npub()+".fips")
	if err != nil || !strings.Contains(string(out), "3 received") {
		t.Fatalf("ping -6 b.fips from a: %v\n%s", err, out)
	}
	if !strings.Contains(a.Logs(), "reach 0 peer(s) through their adverts, and dial every valid advert it sees (policy open)") {
		t.Errorf("a's log does not say it dials every advert:\n%s", tail(a.Logs(), 30))
	}
	// A per-tick sweep on one side queued the other (whichever swept
	// first: the other may be answering its offer by its own first
	// sweep); the startup sweep, startup_sweep_delay_secs (5 s) after
	// start, found b's advert — caught up after the subscription if the
	// relay stored it while registering a's — and b linked, and says so.
	perTick := regexp.MustCompile(`INFO [^ ]+: open-discovery sweep complete caller=per-tick cached=1 queued=1 `)
	if !perTick.MatchString(a.Logs()) && !perTick.MatchString(b.Logs()) {
		t.Errorf("no per-tick sweep queued the other node:\nA:\n%s\nB:\n%s", a.Logs(), b.Logs())
	}
	startup := regexp.MustCompile(`INFO [^ ]+: open-discovery sweep complete caller=startup cached=1 queued=0 .*skipped_total=1`)
	for deadline := start.Add(15 * time.Second); !startup.MatchString(a.Logs()); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no startup sweep line 15 s after start:\nA:\n%s\nB:\n%s", a.Logs(), tail(b.Logs(), 30))
		}
	}
}

// TestNATPublicNodeDirect: a node with a public address on a wildcard
// bind (public: true, no external_addr) advertises the address STUN
// reports; a NATed node that knows it only by npub and via_nostr dials
// that advertised endpoint directly, without traversal.
func TestNATPublicNodeDirect(t *testing.T) {
	m, _, b := natLab(t, false)
	pub := m.AddNode("pub")
	inet := m.Node("inet")
	l := m.Link(pub, inet)
	const pubAddr = "198.18.1.1"
	for _, c := range [][]string{
		{"pub", "ip", "addr", "add", pubAddr + "/32", "dev", "lo"},
		{"pub", "ip", "route", "add", "default", "via", l.AddrB, "src", pubAddr},
		{"inet", "ip", "route", "add", pubAddr + "/32", "via", l.AddrA},
	} {
		if out, err := m.Exec(c[0], c[1:]...); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	relay := fmt.Sprintf("ws://%s:%d", inetAddr, relayPort)
	pubCfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
  rendezvous:
    nostr:
      enabled: true
      advert_relays: [%q]
      dm_relays: [%q]
      stun_servers: ["stun:%s:%d"]
transports:
  udp: { bind_addr: "0.0.0.0:2121", advertise_on_nostr: true, public: true }
tun: { enabled: true, name: fips0, mtu: 1280 }
dns: { enabled: true, bind_addr: "::1", port: 5354 }
peers: []
`, pub.ID.Secret().Hex(), pub.Socket, relay, relay, inetAddr, stunPort)
	if err := os.WriteFile(pub.Config, []byte(pubCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.Config, []byte(natNodeConfig(b, pub, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, n := range []*Node{pub, b} {
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}
	var links struct {
		Links []struct {
			RemoteAddr string `json:"remote_addr"`
			State      string `json:"state"`
		} `json:"links"`
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if b.Call("show_links", nil, &links) == nil && len(links.Links) == 1 && links.Links[0].State == "connected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not link to the public node\nB:\n%s\nPUB:\n%s", tail(b.Logs(), 50), tail(pub.Logs(), 50))
		}
	}
	t.Logf("linked %v after the daemons started, to %s", time.Since(start).Round(time.Millisecond), links.Links[0].RemoteAddr)
	if links.Links[0].RemoteAddr != pubAddr+":2121" {
		t.Errorf("b's link goes to %s, want the advertised %s:2121", links.Links[0].RemoteAddr, pubAddr)
	}
	for _, want := range []string{`: public address from STUN ip=` + pubAddr, `endpoints=udp:` + pubAddr + `:2121`} {
		if !strings.Contains(pub.Logs(), want) {
			t.Errorf("pub's log lacks %q:\n%s", want, tail(pub.Logs(), 30))
		}
	}
	if !strings.Contains(b.Logs(), "dialling peer at its advertised endpoint") {
		t.Errorf("b's log lacks the direct dial:\n%s", tail(b.Logs(), 30))
	}
	if out, err := m.Exec("b", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", pub.Npub()+".fips"); err != nil || !strings.Contains(string(out), "3 received") {
		t.Fatalf("ping -6 pub.fips from b: %v\n%s", err, out)
	}
}

// TestNATSharedLANLocalCandidates: two nodes on one LAN segment behind
// one NAT (no hairpinning, mDNS off), configured only with each other's
// npub and via_nostr, and share_local_candidates on. Their reflexive
// addresses are the NAT's WAN address, which does not loop back; the
// host candidates in the offer and answer (their 10.99.0.0/24 addresses)
// are what the punch reaches, and the link runs over them.
func TestNATSharedLANLocalCandidates(t *testing.T) {
	natPrereqs(t)
	m := New(t, Options{IPv6: true, LogLevel: "debug"})
	a, b := m.AddNode("a"), m.AddNode("b")
	nat, inet := m.AddNode("nat"), m.AddNode("inet")
	wan := m.Link(nat, inet)
	la, lb := m.Link(a, nat), m.Link(b, nat)
	mustRun(t, m, "inet", "ip", "addr", "add", inetAddr+"/32", "dev", "lo")
	mustRun(t, m, "inet", "sysctl", "-qw", "net.ipv4.ip_forward=1")
	// One segment: the router bridges both hosts' links.
	mustRun(t, m, "nat", "ip", "link", "add", "br0", "type", "bridge")
	mustRun(t, m, "nat", "ip", "link", "set", "br0", "up")
	for _, l := range []*Link{la, lb} {
		mustRun(t, m, "nat", "ip", "addr", "flush", "dev", l.IfB)
		mustRun(t, m, "nat", "ip", "link", "set", l.IfB, "master", "br0")
	}
	mustRun(t, m, "nat", "ip", "addr", "add", "10.99.0.1/24", "dev", "br0")
	hosts := map[*Node]string{a: "10.99.0.10", b: "10.99.0.11"}
	for _, h := range []struct {
		n *Node
		l *Link
	}{{a, la}, {b, lb}} {
		mustRun(t, m, h.n.Name, "ip", "addr", "flush", "dev", h.l.IfA)
		mustRun(t, m, h.n.Name, "ip", "addr", "add", hosts[h.n]+"/24", "dev", h.l.IfA)
		mustRun(t, m, h.n.Name, "ip", "route", "add", "default", "via", "10.99.0.1")
	}
	natRouter(t, m, "nat", wan, false)
	startInternet(t, m)
	// The segment works: a reaches b's LAN address.
	if out, err := m.Exec("a", "ping", "-c", "1", "-W", "2", hosts[b]); err != nil {
		t.Fatalf("a cannot reach b on the LAN: %v\n%s", err, out)
	}

	start := startNATNodes(t, a, b, natNodeConfig, "      share_local_candidates: true\n")
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pa, pb struct {
			Peers []struct{ Npub string } `json:"peers"`
		}
		if a.Call("show_peers", nil, &pa) == nil && b.Call("show_peers", nil, &pb) == nil &&
			len(pa.Peers) == 1 && pa.Peers[0].Npub == b.Npub() && len(pb.Peers) == 1 && pb.Peers[0].Npub == a.Npub() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no link over the LAN after 90 s\nA:\n%s\nB:\n%s", tail(a.Logs(), 60), tail(b.Logs(), 60))
		}
	}
	t.Logf("linked over shared local candidates %v after the daemons started", time.Since(start).Round(time.Millisecond))
	for _, p := range [][2]*Node{{a, b}, {b, a}} {
		var links struct {
			Links []struct {
				RemoteAddr string `json:"remote_addr"`
			} `json:"links"`
		}
		if err := p[0].Call("show_links", nil, &links); err != nil || len(links.Links) != 1 ||
			!strings.HasPrefix(links.Links[0].RemoteAddr, hosts[p[1]]+":") {
			t.Errorf("%s's link: %v %+v (want %s's LAN address %s)", p[0].Name, err, links, p[1].Name, hosts[p[1]])
		}
		if !strings.Contains(p[0].Logs(), "Adopted NAT traversal socket") {
			t.Errorf("%s's log has no adopted traversal path:\n%s", p[0].Name, tail(p[0].Logs(), 40))
		}
		out, err := m.Exec(p[0].Name, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "3", p[1].Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "3 received") {
			t.Fatalf("ping -6 %s.fips from %s: %v\n%s", p[1].Name, p[0].Name, err, out)
		}
	}
}

//go:build linux

package tornet

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fips-go/fips/fallback/tor"
	"github.com/fips-go/fips/testing/netns"
)

// A private Tor network (TestingTorNetwork 1) in the namespace "tor":
// torAuths directory authorities and torRelays more relays on its
// 127.0.0.1, and two clients, one running the onion service of node A
// (HiddenServiceDir), one serving SOCKS5 and a control port (password
// pw) on the veth addresses the fips namespaces reach. Only the private
// authorities are named (DirAuthority), IPv6 and bridges are off: no
// traffic leaves the namespace. Voting intervals are 10 s, so the first
// consensus comes within about 20 s.
const (
	torAuths  = 3
	torRelays = 2
	// torOnionPort is the onion's virtual port (advertised_port).
	torOnionPort = 443
)

// torNet is a running private Tor network.
type torNet struct {
	dir      string
	hostname string // node A's onion service hostname file
}

func torCommon(dir, nick, dirAuths string) string {
	return fmt.Sprintf(`TestingTorNetwork 1
DataDirectory %s
RunAsDaemon 0
Nickname %s
Log notice file %s/notice.log
SafeLogging 0
ShutdownWaitLength 0
ClientUseIPv6 0
UseBridges 0
AddressDisableIPv6 1
TestingDirAuthVoteGuard *
TestingDirAuthVoteExit *
TestingDirAuthVoteHSDir *
TestingMinExitFlagThreshold 0
V3AuthNIntervalsValid 2
TestingV3AuthInitialVotingInterval 10
TestingV3AuthInitialVoteDelay 2
TestingV3AuthInitialDistDelay 2
V3AuthVotingInterval 10
V3AuthVoteDelay 2
V3AuthDistDelay 2
%s
`, dir, nick, dir, dirAuths)
}

// startTorNetwork generates the authorities' keys (tor-gencert), writes
// every torrc and starts every tor in ns. hsTarget is where the onion
// service of A forwards; clientAddrs are the addresses the SOCKS and
// control ports listen on (9050, 9051).
func startTorNetwork(t *testing.T, m *netns.Mesh, ns, hsTarget string, clientAddrs []string) *torNet {
	t.Helper()
	for _, bin := range []string{"tor", "tor-gencert"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found (sudo make deps installs the tor package): %v", bin, err)
		}
	}
	tn := &torNet{dir: filepath.Join(m.Dir, "tor")}
	mkdir := func(name string) string {
		d := filepath.Join(tn.dir, name)
		if err := os.MkdirAll(filepath.Join(d, "keys"), 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	var dirAuths strings.Builder
	zero := strings.Repeat("0", 40)
	for i := range torAuths {
		d := mkdir(fmt.Sprintf("auth%d", i))
		gen := exec.Command("tor-gencert", "--create-identity-key", "--passphrase-fd", "0", "-m", "12",
			"-a", fmt.Sprintf("127.0.0.1:%d", 7000+i), "-i", "authority_identity_key", "-s", "authority_signing_key",
			"-c", "authority_certificate")
		gen.Dir, gen.Stdin = filepath.Join(d, "keys"), strings.NewReader("\n")
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("tor-gencert: %v\n%s", err, out)
		}
		cert, err := os.ReadFile(filepath.Join(d, "keys", "authority_certificate"))
		if err != nil {
			t.Fatal(err)
		}
		v3 := regexp.MustCompile(`(?m)^fingerprint ([0-9A-F]{40})$`).FindSubmatch(cert)
		out, err := exec.Command("tor", "--list-fingerprint", "--DataDirectory", d, "--ORPort", "1",
			"--Nickname", fmt.Sprintf("auth%d", i), "--DirAuthority", "x orport=1 no-v2 v3ident="+zero+" 127.0.0.1:1 "+zero).CombinedOutput()
		fp := regexp.MustCompile(`(?m)^auth\d+ ((?:[0-9A-F]{4} ?){10})$`).FindSubmatch(out)
		if err != nil || v3 == nil || fp == nil {
			t.Fatalf("authority %d fingerprints: %v\n%s", i, err, out)
		}
		fmt.Fprintf(&dirAuths, "DirAuthority auth%d orport=%d no-v2 v3ident=%s 127.0.0.1:%d %s\n", i, 5000+i, v3[1], 7000+i,
			strings.ReplaceAll(string(fp[1]), " ", ""))
	}
	torrcs := map[string]string{}
	for i := range torAuths {
		name := fmt.Sprintf("auth%d", i)
		torrcs[name] = fmt.Sprintf(`SocksPort 0
ORPort 127.0.0.1:%d
DirPort 127.0.0.1:%d
Address 127.0.0.1
AuthoritativeDirectory 1
V3AuthoritativeDirectory 1
ContactInfo %s@test.invalid
ExitPolicy accept *:*
`, 5000+i, 7000+i, name)
	}
	for i := range torRelays {
		torrcs[fmt.Sprintf("relay%d", i)] = fmt.Sprintf("SocksPort 0\nORPort 127.0.0.1:%d\nAddress 127.0.0.1\nExitPolicy accept *:*\n", 5100+i)
	}
	hs := mkdir("hs")
	tn.hostname = filepath.Join(hs, "svc", "hostname")
	torrcs["hs"] = fmt.Sprintf("SocksPort 0\nHiddenServiceDir %s/svc\nHiddenServicePort %d %s\n", hs, torOnionPort, hsTarget)
	out, err := exec.Command("tor", "--quiet", "--hash-password", "pw").Output()
	if err != nil {
		t.Fatalf("tor --hash-password: %v", err)
	}
	client := fmt.Sprintf("HashedControlPassword %s\n", strings.TrimSpace(string(out)))
	for _, a := range clientAddrs {
		client += fmt.Sprintf("SocksPort %s:9050 ExtendedErrors\nControlPort %s:9051\n", a, a)
	}
	torrcs["client"] = client
	var stopping atomic.Bool
	for name, rc := range torrcs {
		d := mkdir(name)
		f := filepath.Join(d, "torrc")
		if err := os.WriteFile(f, []byte(torCommon(d, name, dirAuths.String())+rc), 0o600); err != nil {
			t.Fatal(err)
		}
		p := m.Spawn(ns, "tor", "-f", f, "--quiet")
		go func() {
			<-p.Exited()
			if !stopping.Load() {
				t.Logf("tor %s exited; its log:\n%s", name, tn.log(name))
			}
		}()
	}
	// Cleanups run last first: this one before the tors are stopped.
	t.Cleanup(func() { stopping.Store(true) })
	return tn
}

// log is the notice log of one tor.
func (tn *torNet) log(name string) string {
	b, _ := os.ReadFile(filepath.Join(tn.dir, name, "notice.log"))
	return string(b)
}

// waitBootstrapped waits until the named tors report Bootstrapped 100%.
func (tn *torNet) waitBootstrapped(t *testing.T, timeout time.Duration, names ...string) time.Duration {
	t.Helper()
	start := time.Now()
	for _, n := range names {
		for !strings.Contains(tn.log(n), "Bootstrapped 100%") {
			if time.Since(start) > timeout {
				t.Fatalf("tor %s not bootstrapped after %v; its log:\n%s", n, timeout, netns.Tail(tn.log(n), 30))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// TestTorOnionLink runs fips over a private Tor network: A publishes an
// onion service (directory mode), B reaches it through SOCKS5 (its
// static peer A is a tor address); the link comes up, a session runs
// and B pings A by .fips name over it. Then C, with no peers, is told
// by `connect` to dial B's onion service, which B runs over Tor's
// control port (control_port mode, ADD_ONION), and pings B by name.
func TestTorOnionLink(t *testing.T) {
	m := netns.New(t, netns.Options{IPv6: true, LogLevel: "debug"})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	torNS := m.AddNode("tor")
	la, lb, lc := m.Link(a, torNS), m.Link(b, torNS), m.Link(c, torNS)
	start := time.Now()
	tn := startTorNetwork(t, m, "tor", la.AddrA+":8444", []string{la.AddrB, lb.AddrB, lc.AddrB})

	// A's hostname file is written as its tor starts; A could start
	// before it (the transport retries), but the address goes in B's config.
	var onionA string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(tn.hostname); err == nil {
			onionA = strings.TrimSpace(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no onion hostname after 30 s:\n%s", netns.Tail(tn.log("hs"), 30))
		}
	}
	cfg := func(n *netns.Node, tor, peers string) {
		t.Helper()
		body := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
  retry: { base_interval_secs: 2, max_backoff_secs: 10 }
transports:
  tor:
%s
tun: { enabled: true, name: fips0, mtu: 1280 }
dns: { enabled: true, bind_addr: "::1", port: 5354 }
%s`, n.ID.Secret().Hex(), n.Socket, tor, peers)
		if err := os.WriteFile(n.Config, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := n.StartWithConfig(); err != nil {
			t.Fatalf("start %s: %v", n.Name, err)
		}
	}
	cfg(a, fmt.Sprintf(`    mode: directory
    socks5_addr: "%s:9050"
    advertised_port: %d
    directory_service: { hostname_file: %q, bind_addr: "%s:8444" }`, la.AddrB, torOnionPort, tn.hostname, la.AddrA), "peers: []\n")
	cfg(b, fmt.Sprintf(`    mode: control_port
    socks5_addr: "%s:9050"
    control_addr: "%s:9051"
    control_auth: "password:pw"
    advertised_port: %d
    directory_service: { bind_addr: "%s:8445" }`, lb.AddrB, lb.AddrB, torOnionPort, lb.AddrA),
		fmt.Sprintf("peers:\n  - npub: %q\n    alias: a\n    addresses:\n      - { transport: tor, addr: \"%s:%d\" }\n", a.Npub(), onionA, torOnionPort))
	cfg(c, fmt.Sprintf(`    socks5_addr: "%s:9050"`, lc.AddrB), "peers: []\n")

	boot := tn.waitBootstrapped(t, 3*time.Minute, "client", "hs")
	t.Logf("private Tor network: clients bootstrapped %v after start", boot.Round(time.Second))

	linkUp := waitTorPeer(t, a, b, 4*time.Minute)
	t.Logf("A-B link over Tor up %v after the network started", time.Since(start).Round(time.Second))
	if !linkUp {
		t.Fatalf("no A-B link\n--- a ---\n%s\n--- b ---\n%s", netns.Tail(a.Logs(), 40), netns.Tail(b.Logs(), 40))
	}
	var pb struct {
		Peers []struct {
			Npub          string `json:"npub"`
			TransportType string `json:"transport_type"`
			TransportAddr string `json:"transport_addr"`
		} `json:"peers"`
	}
	if err := b.Call("show_peers", nil, &pb); err != nil || len(pb.Peers) != 1 ||
		pb.Peers[0].TransportAddr != fmt.Sprintf("%s:%d", onionA, torOnionPort) || pb.Peers[0].TransportType != "tor" {
		t.Errorf("B's show_peers: %+v (%v), want A at %s:%d over tor", pb, err, onionA, torOnionPort)
	}
	torPing(t, m, "b", a)
	if netns.SessionStart(t, b, a) == 0 {
		t.Errorf("B holds no session with A after the ping")
	}

	// B's onion service, made over the control port.
	var onionB string
	for deadline := time.Now().Add(2 * time.Minute); onionB == ""; time.Sleep(200 * time.Millisecond) {
		var st struct {
			Transports []struct {
				OnionAddress string `json:"onion_address"`
				TorMode      string `json:"tor_mode"`
			} `json:"transports"`
		}
		if b.Call("show_transports", nil, &st) == nil && len(st.Transports) == 1 && st.Transports[0].TorMode == "control_port" {
			onionB = st.Transports[0].OnionAddress
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's control-port onion service never came up:\n%s", netns.Tail(b.Logs(), 40))
		}
	}
	t.Logf("B's onion service (ADD_ONION): %s", onionB)
	var res map[string]any
	if err := c.Call("connect", map[string]any{"npub": b.Npub(), "address": fmt.Sprintf("%s:%d", onionB, torOnionPort), "transport": "tor"}, &res); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if !waitTorPeer(t, c, b, 4*time.Minute) {
		t.Fatalf("no C-B link\n--- c ---\n%s\n--- b ---\n%s", netns.Tail(c.Logs(), 40), netns.Tail(b.Logs(), 40))
	}
	t.Logf("C-B link (connect, control_port onion) up %v after the network started", time.Since(start).Round(time.Second))
	torPing(t, m, "c", b)

	// An onion no service runs (a valid key: Tor refuses one that is no
	// curve point as an invalid address): Tor's refusal is logged by name.
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	k := [32]byte(pub)
	nowhere := fmt.Sprintf("%s:%d", tor.OnionAddress(k), torOnionPort)
	if err := c.Call("connect", map[string]any{"npub": a.Npub(), "address": nowhere, "transport": "tor"}, &res); err != nil {
		t.Fatalf("connect to %s: %v", nowhere, err)
	}
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(c.Logs(), "Tor SOCKS5 connection failed"); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no SOCKS5 failure logged for %s:\n%s", nowhere, netns.Tail(c.Logs(), 30))
		}
	}
	for _, l := range strings.Split(c.Logs(), "\n") {
		if strings.Contains(l, "Tor SOCKS5 connection failed") {
			t.Logf("C logs: %s", l)
			if !strings.Contains(l, "SOCKS5 proxy refused CONNECT: onion service") {
				t.Errorf("the refusal is not named: %s", l)
			}
			break
		}
	}

	// Malformed onion addresses are refused at connect, with the reason.
	err = c.Call("connect", map[string]any{"npub": a.Npub(), "address": "abc.onion:443", "transport": "tor"}, &res)
	if err == nil || !strings.Contains(err.Error(), "malformed onion address") {
		t.Errorf("connect to a malformed onion: %v", err)
	}
}

// waitTorPeer waits until each of x and y lists the other as a peer.
func waitTorPeer(t *testing.T, x, y *netns.Node, timeout time.Duration) bool {
	t.Helper()
	has := func(n, other *netns.Node) bool {
		var p struct {
			Peers []struct {
				Npub string `json:"npub"`
			} `json:"peers"`
		}
		if n.Call("show_peers", nil, &p) != nil {
			return false
		}
		for _, e := range p.Peers {
			if e.Npub == other.Npub() {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if has(x, y) && has(y, x) {
			return true
		}
	}
	return false
}

// torPing pings to by .fips name from the namespace from: at least 8 of
// 10 replies (a Tor circuit's first packets may wait for it).
func torPing(t *testing.T, m *netns.Mesh, from string, to *netns.Node) {
	t.Helper()
	out, err := m.Exec(from, "ping", "-6", "-c", "10", "-i", "0.5", "-W", "5", to.Npub()+".fips")
	t.Logf("ping6 %s -> %s.fips over Tor:\n%s", from, to.Name, netns.Tail(string(out), 3))
	// Tor circuits may lose a reply or two: 8 of 10 is a working link.
	if got := regexp.MustCompile(`(\d+) received`).FindStringSubmatch(string(out)); got != nil {
		if n, _ := strconv.Atoi(got[1]); n >= 8 {
			return
		}
	}
	t.Fatalf("ping6 by name over Tor: %v\n%s", err, out)
}

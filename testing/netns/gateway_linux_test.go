//go:build linux

package netns

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/testing/daemons"
)

// gatewayProc is fips-gateway running in a node's namespace, its log in a
// file.
type gatewayProc struct {
	cmd    *exec.Cmd
	log    string
	socket string
	exited chan struct{}
}

func (g *gatewayProc) logs() string { b, _ := os.ReadFile(g.log); return string(b) }

// stop sends sig and waits for a clean exit.
func (g *gatewayProc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = g.cmd.Process.Signal(sig)
	select {
	case <-g.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.exited
		t.Fatalf("fips-gateway did not exit within 15 s of %v:\n%s", sig, g.logs())
	}
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("fips-gateway exited %d after %v:\n%s", code, sig, g.logs())
	}
}

func buildGateway(t *testing.T, dir string) string {
	t.Helper()
	root, err := daemons.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "fips-gateway")
	b := exec.Command("go", "build", "-o", bin, "./cmd/fips-gateway")
	b.Dir = root
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fips-gateway: %v\n%s", err, out)
	}
	return bin
}

func startGateway(t *testing.T, bin string, n *Node) *gatewayProc {
	t.Helper()
	g := &gatewayProc{log: filepath.Join(n.Dir, "fips-gateway.log"), socket: filepath.Join(n.Dir, "gateway.sock"),
		exited: make(chan struct{})}
	f, err := os.Create(g.log)
	if err != nil {
		t.Fatal(err)
	}
	g.cmd = exec.Command("ip", "netns", "exec", n.NS, bin, "-c", n.Config, "-l", "debug", "--control-socket", g.socket)
	g.cmd.Stdout, g.cmd.Stderr = f, f
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := g.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start fips-gateway: %v", err)
	}
	go func() { _ = g.cmd.Wait(); f.Close(); close(g.exited) }()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
			<-g.exited
		}
	})
	// Ready once its control socket answers (it binds it after the NAT
	// table, the pool route and the DNS listener are set up).
	ready := func() bool {
		select {
		case <-g.exited:
			return true
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := ctl.Call(ctx, g.socket, "show_gateway", nil)
		return err == nil
	}
	if _, ok := daemons.WaitFor(30*time.Second, ready); !ok {
		t.Fatalf("fips-gateway not answering on %s after 30 s:\n%s", g.socket, g.logs())
	}
	select {
	case <-g.exited:
		t.Fatalf("fips-gateway exited %d at startup:\n%s", g.cmd.ProcessState.ExitCode(), g.logs())
	default:
	}
	return g
}

func mustExec(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %v\n%s", ns, args, err, out)
	}
	return string(out)
}

// serveTCP accepts in a namespace and answers each connection with
// greeting, then whatever line it read.
func serveTCP(t *testing.T, ns, addr, greeting string) {
	t.Helper()
	var ln net.Listener
	if err := inNamespace(ns, func() (err error) { ln, err = net.Listen("tcp6", addr); return err }); err != nil {
		t.Fatalf("listen %s in %s: %v", addr, ns, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprintf(c, "%s %s from %s\n", greeting, strings.TrimSpace(line), c.RemoteAddr())
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
}

// dialIn connects from inside a namespace, sends a line and returns the
// answer.
func dialIn(ns, network, addr, line string) (string, error) {
	var c net.Conn
	if err := inNamespace(ns, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err = d.Dial(network, addr)
		return err
	}); err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	b := make([]byte, 512)
	n, err := c.Read(b)
	return strings.TrimSpace(string(b[:n])), err
}

// gatewaySetup builds the scenario's three namespaces — gw (fips and
// fips-gateway, lan_interface the veth to the client), c (fips, linked to
// gw) and the LAN client (no FIPS, fd02::2, routing the pool via
// gw's fd02::1) — and starts fips-gateway with the given TTL, grace
// period and extra gateway: lines.
func gatewaySetup(t *testing.T, ttl, grace int, extra string) (m *Mesh, gw, c *Node, lanNS, lanGW string, g *gatewayProc) {
	t.Helper()
	m = New(t, Options{IPv6: true})
	gw, c = m.AddNode("gw"), m.AddNode("c")
	m.Link(gw, c)

	// The LAN: a namespace with no daemon, one veth to the gateway.
	lanNS = m.Prefix + "lan"
	lanGW, lanCL := m.Prefix+"lana", m.Prefix+"lanb"
	if out, err := ipCmd("netns", "add", lanNS); err != nil {
		t.Fatalf("netns add %s: %v\n%s", lanNS, err, out)
	}
	for _, s := range [][]string{
		{"-n", lanNS, "link", "set", "lo", "up"},
		{"link", "add", lanGW, "netns", gw.NS, "type", "veth", "peer", "name", lanCL, "netns", lanNS},
		{"-n", gw.NS, "addr", "add", "fd02::1/64", "dev", lanGW, "nodad"},
		{"-n", lanNS, "addr", "add", "fd02::2/64", "dev", lanCL, "nodad"},
		{"-n", gw.NS, "link", "set", lanGW, "up"},
		{"-n", lanNS, "link", "set", lanCL, "up"},
		// The client reaches the pool through the gateway, as upstream's
		// client containers do.
		{"-n", lanNS, "-6", "route", "add", "fd01::/112", "via", "fd02::1"},
	} {
		if out, err := ipCmd(s...); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	mustExec(t, gw.NS, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding")

	gw.ExtraConfig = fmt.Sprintf(`gateway:
  enabled: true
  pool: fd01::/112
  lan_interface: %s
  dns:
    listen: "[fd02::1]:53"
    upstream: "[::1]:5354"
    ttl: %d
  pool_grace_period: %d
%s`, lanGW, ttl, grace, extra)
	m.Start()
	took := m.WaitConverged(30 * time.Second)
	t.Logf("mesh converged in %v", took.Round(time.Millisecond))

	bin := buildGateway(t, m.Dir)
	g = startGateway(t, bin, gw)
	t.Logf("fips-gateway up")
	return m, gw, c, lanNS, lanGW, g
}

// TestGatewayLANClientReachesMesh is upstream's gateway scenario
// (testing/static/scripts/gateway-test.sh) on namespaces: a LAN client
// with no FIPS, a gateway running fips and fips-gateway with
// lan_interface the veth to the client, and a mesh node C linked to the
// gateway. From the client, dig @gateway <npub of C>.fips AAAA answers a
// pool address; ping6 to it gets replies, and TCP to it reaches a server
// in C's namespace; a TCP and a UDP port forward carry C's connections to
// the gateway's fips address:listen_port to servers in the client's
// namespace. fipstop's Gateway tab shows the mapping. After SIGTERM
// the nftables table, the proxy-NDP entry, the pool route and the control
// socket are gone.
func TestGatewayLANClientReachesMesh(t *testing.T) {
	m, gw, c, lanNS, lanGW, g := gatewaySetup(t, 60, 60, `  port_forwards:
    - { listen_port: 18080, proto: tcp, target: "[fd02::2]:8080" }
    - { listen_port: 18081, proto: udp, target: "[fd02::2]:8081" }
`)

	// nftables: the table with both chains and upstream's rules.
	ruleset := mustExec(t, gw.NS, "nft", "list", "table", "inet", "fips_gateway")
	for _, want := range []string{"chain prerouting", "chain postrouting", `oifname "fips0" masquerade`,
		"dport 18080 dnat ip6 to [fd02::2]:8080", "dport 18081 dnat ip6 to [fd02::2]:8081",
		fmt.Sprintf(`iifname "fips0" oifname "%s"`, lanGW)} {
		if !strings.Contains(ruleset, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, ruleset)
		}
	}
	if r := mustExec(t, gw.NS, "ip", "-6", "route", "show", "table", "local", "fd01::/112"); !strings.Contains(r, "local fd01::/112 dev lo") {
		t.Fatalf("pool route: %q", r)
	}

	// DNS from the LAN client.
	dig := func(qtype string) string {
		return strings.TrimSpace(mustExec(t, lanNS, "dig", "@fd02::1", c.Npub()+".fips", qtype, "+short", "+time=3", "+tries=2"))
	}
	vip := dig("AAAA")
	if vip != "fd01::1" {
		t.Fatalf("dig @fd02::1 %s.fips AAAA = %q, want fd01::1\n%s", c.Npub(), vip, g.logs())
	}
	if again := dig("AAAA"); again != vip {
		t.Fatalf("second query answered %q, want %s reused", again, vip)
	}
	if refused := mustExec(t, lanNS, "dig", "@fd02::1", "example.com", "AAAA", "+time=3", "+tries=1"); !strings.Contains(refused, "status: REFUSED") {
		t.Fatalf("example.com via the gateway:\n%s", refused)
	}
	ruleset = mustExec(t, gw.NS, "nft", "list", "table", "inet", "fips_gateway")
	// The mapping is one element in each map the two NAT rules look up.
	for _, want := range []string{"dnat ip6 to ip6 daddr map @dnat_map", "snat ip6 to ip6 saddr map @snat_map",
		"fd01::1 : " + c.IPv6(), c.IPv6() + " : fd01::1"} {
		if !strings.Contains(ruleset, want) {
			t.Errorf("after allocation the ruleset lacks %q:\n%s", want, ruleset)
		}
	}
	if px := mustExec(t, gw.NS, "ip", "-6", "neigh", "show", "proxy", "dev", lanGW); !strings.Contains(px, "fd01::1") {
		t.Errorf("no proxy NDP entry for fd01::1 on %s: %q", lanGW, px)
	}

	// ping6 from the client to the pool address gets C's replies.
	if out, err := m.execNS(lanNS, "ping", "-6", "-c", "5", "-i", "0.2", "-W", "3", vip); err != nil ||
		!strings.Contains(out, "5 received") {
		t.Fatalf("ping -6 %s from the LAN: %v\n%s\ngateway:\n%s", vip, err, out, g.logs())
	}
	// And TCP to it reaches a server in C's namespace, which sees the
	// gateway's mesh address (the fips0 masquerade).
	serveTCP(t, c.NS, "[::]:7777", "C")
	got, err := dialIn(lanNS, "tcp6", "["+vip+"]:7777", "hello")
	if want := fmt.Sprintf("C hello from [%s]:", gw.IPv6()); err != nil || !strings.HasPrefix(got, want) {
		t.Fatalf("TCP to [%s]:7777 from the LAN: %q %v, want %q…", vip, got, err, want)
	}

	// A connection held open through the mapping makes it Active at the
	// next pool tick (every 10 s): conntrack counts it.
	var held net.Conn
	if err := inNamespace(lanNS, func() (err error) { held, err = net.Dial("tcp6", "["+vip+"]:7777"); return err }); err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	mappings := func() []showMapping {
		raw, err := ctl.Call(t.Context(), g.socket, "show_mappings", nil)
		if err != nil {
			t.Fatal(err)
		}
		var mp struct{ Mappings []showMapping }
		if err := json.Unmarshal(raw, &mp); err != nil {
			t.Fatalf("show_mappings %s: %v", raw, err)
		}
		return mp.Mappings
	}
	active := func() bool { ms := mappings(); return len(ms) == 1 && ms[0].State == "Active" && ms[0].Sessions > 0 }
	if waited, ok := daemons.WaitFor(25*time.Second, active); !ok {
		t.Fatalf("mapping not Active with sessions after 25 s: %+v", mappings())
	} else {
		t.Logf("mapping Active after %v: %+v", waited.Round(time.Millisecond), mappings())
	}

	// Inbound port forwards: C → [gateway fips address]:18080/tcp and
	// :18081/udp → servers on the client at [fd02::2]:8080 and :8081. C
	// has a mapping, so its SNAT rule (before the LAN masquerade, in
	// upstream's order) shows it to the LAN as its pool address.
	serveTCP(t, lanNS, "[fd02::2]:8080", "LAN")
	got, err = dialIn(c.NS, "tcp6", "["+gw.IPv6()+"]:18080", "tcp-in")
	if want := "LAN tcp-in from [" + vip + "]:"; err != nil || !strings.HasPrefix(got, want) {
		t.Fatalf("TCP port forward: %q %v, want %q…", got, err, want)
	}
	var uc net.PacketConn
	if err := inNamespace(lanNS, func() (err error) { uc, err = net.ListenPacket("udp6", "[fd02::2]:8081"); return err }); err != nil {
		t.Fatal(err)
	}
	udpDone := make(chan struct{})
	go func() {
		defer close(udpDone)
		b := make([]byte, 512)
		for {
			n, from, err := uc.ReadFrom(b)
			if err != nil {
				return
			}
			_, _ = uc.WriteTo([]byte(fmt.Sprintf("LAN %s from %s", b[:n], from)), from)
		}
	}()
	defer func() { uc.Close(); <-udpDone }()
	got, err = dialIn(c.NS, "udp6", "["+gw.IPv6()+"]:18081", "udp-in")
	if want := "LAN udp-in\n from [" + vip + "]:"; err != nil || !strings.HasPrefix(got, want) {
		t.Fatalf("UDP port forward: %q %v, want %q…", got, err, want)
	}

	// The control socket reports the mapping; fipstop's Gateway tab shows it.
	if ms := mappings(); len(ms) != 1 || ms[0].VirtualIP != vip || ms[0].MeshAddr != c.IPv6() ||
		ms[0].DNSName != strings.ToLower(c.Npub())+".fips" {
		t.Fatalf("show_mappings: %+v", ms)
	}
	top := filepath.Join(m.Dir, "fipstop")
	root, _ := daemons.ModuleRoot()
	b := exec.Command("go", "build", "-o", top, "./cmd/fipstop")
	b.Dir = root
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fipstop: %v\n%s", err, out)
	}
	scr := startTmux(t, 220, 50, top, "-s", gw.Socket, "--gateway-socket", g.socket, "-r", "1")
	scr.tab("Gateway", "fd01::/112", "NAT Mappings (1)", vip, c.IPv6()[:20], "Active", lanGW, "[fd02::1]:53")
	scr.keys("q")

	// SIGTERM: everything it installed goes.
	g.stop(t, syscall.SIGTERM)
	if out, err := m.execNS(gw.NS, "nft", "list", "table", "inet", "fips_gateway"); err == nil {
		t.Errorf("nftables table still there after the gateway stopped:\n%s", out)
	}
	if px := mustExec(t, gw.NS, "ip", "-6", "neigh", "show", "proxy", "dev", lanGW); strings.Contains(px, "fd01::1") {
		t.Errorf("proxy NDP entry left behind: %q", px)
	}
	if r := mustExec(t, gw.NS, "ip", "-6", "route", "show", "table", "local", "fd01::/112"); strings.TrimSpace(r) != "" {
		t.Errorf("pool route left behind: %q", r)
	}
	if _, err := os.Stat(g.socket); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
	logs := g.logs()
	for _, want := range []string{"fips-gateway running", "Received SIGTERM, shutting down", "Final pool status",
		"Deleted nftables table 'fips_gateway'", "fips-gateway shutdown complete"} {
		if !strings.Contains(logs, want) {
			t.Errorf("gateway log lacks %q:\n%s", want, logs)
		}
	}
}

type showMapping struct {
	VirtualIP string `json:"virtual_ip"`
	MeshAddr  string `json:"mesh_addr"`
	DNSName   string `json:"dns_name"`
	State     string `json:"state"`
	Sessions  uint32 `json:"sessions"`
}

// execNS runs args in a namespace by name (the LAN one is not a node).
func (m *Mesh) execNS(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	return string(out), err
}

// TestGatewayReclaimsIdleMapping: with gateway.dns.ttl 1 and
// pool_grace_period 1, a mapping nobody uses drains at a pool tick and is
// freed at the next (ticks are 10 s apart, as upstream's), and its DNAT/SNAT
// rules and proxy-NDP entry go with it while the table stays. Asked again,
// the destination gets the next pool address (freed ones go to the back).
func TestGatewayReclaimsIdleMapping(t *testing.T) {
	m, gw, c, lanNS, lanGW, g := gatewaySetup(t, 1, 1, "")
	dig := func() string {
		return strings.TrimSpace(mustExec(t, lanNS, "dig", "@fd02::1", c.Npub()+".fips", "AAAA", "+short", "+time=3", "+tries=2"))
	}
	if vip := dig(); vip != "fd01::1" {
		t.Fatalf("dig answered %q, want fd01::1\n%s", vip, g.logs())
	}
	gone := func() bool {
		raw, err := ctl.Call(t.Context(), g.socket, "show_mappings", nil)
		if err != nil {
			t.Fatal(err)
		}
		var mp struct{ Mappings []showMapping }
		if err := json.Unmarshal(raw, &mp); err != nil {
			t.Fatal(err)
		}
		return len(mp.Mappings) == 0
	}
	took, ok := daemons.WaitFor(35*time.Second, gone)
	if !ok {
		t.Fatalf("idle mapping not reclaimed after 35 s:\n%s", g.logs())
	}
	t.Logf("reclaimed after %v", took.Round(time.Millisecond))
	if !strings.Contains(g.logs(), "Reclaimed virtual IP") {
		t.Errorf("no 'Reclaimed virtual IP' line:\n%s", g.logs())
	}
	// The gateway applies the removal right after the tick; wait for the
	// rules, not a fixed time.
	rulesGone := func() bool {
		rs := mustExec(t, gw.NS, "nft", "list", "table", "inet", "fips_gateway")
		return !strings.Contains(rs, "fd01::1") && strings.Contains(rs, `oifname "fips0" masquerade`)
	}
	if _, ok := daemons.WaitFor(5*time.Second, rulesGone); !ok {
		t.Fatalf("fd01::1's rules still there:\n%s", mustExec(t, gw.NS, "nft", "list", "table", "inet", "fips_gateway"))
	}
	if px := mustExec(t, gw.NS, "ip", "-6", "neigh", "show", "proxy", "dev", lanGW); strings.Contains(px, "fd01::1") {
		t.Errorf("proxy NDP entry for fd01::1 left after reclaim: %q", px)
	}
	if vip := dig(); vip != "fd01::2" {
		t.Fatalf("after reclaim dig answered %q, want fd01::2", vip)
	}
	var sg struct {
		PoolAllocated int `json:"pool_allocated"`
		PoolFree      int `json:"pool_free"`
		NATMappings   int `json:"nat_mappings"`
	}
	raw, err := ctl.Call(t.Context(), g.socket, "show_gateway", nil)
	if err != nil || json.Unmarshal(raw, &sg) != nil || sg.PoolAllocated != 1 || sg.PoolFree != 65534 || sg.NATMappings != 1 {
		t.Fatalf("show_gateway after reallocation: %s %v", raw, err)
	}
	// SIGINT shuts down as cleanly as SIGTERM.
	g.stop(t, syscall.SIGINT)
	if out, err := m.execNS(gw.NS, "nft", "list", "table", "inet", "fips_gateway"); err == nil {
		t.Errorf("nftables table still there after SIGINT:\n%s", out)
	}
	if px := mustExec(t, gw.NS, "ip", "-6", "neigh", "show", "proxy", "dev", lanGW); strings.Contains(px, "fd01::2") {
		t.Errorf("proxy NDP entry for fd01::2 left after SIGINT: %q", px)
	}
	if logs := g.logs(); !strings.Contains(logs, "Received SIGINT, shutting down") || !strings.Contains(logs, "fips-gateway shutdown complete") {
		t.Errorf("SIGINT shutdown lines missing:\n%s", logs)
	}
}

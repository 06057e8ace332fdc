//go:build linux

// Command demo shows fips-go working across real network namespaces: it
// builds fips and fipsctl, starts four daemons in four namespaces joined
// by veth pairs in a diamond (a—b, a—c, b—d, c—d), waits for the spanning
// tree and bloom filters to converge, and walks through what fipsctl shows:
// peers, the tree, an end-to-end probe from a to d with its session and
// MMP metrics. Everything it creates is removed on exit, on failure and
// on Ctrl-C. Run it as root: `go run ./testing/demo` or `make demo`.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fips-go/fips/testing/netns"
)

func main() {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "demo: network namespaces need root; run it with sudo (sudo make demo)")
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &netns.Runner{}
	err := r.Run(ctx, func() {
		heading("Cleaning up: stopping the daemons, deleting namespaces and veths")
	}, func() error { return demo(ctx, r) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("\nDone: the mesh is gone.")
}

func heading(s string) { fmt.Printf("\n== %s\n", s) }

func demo(ctx context.Context, r *netns.Runner) error {
	heading("Building fips and fipsctl")
	m := netns.New(r, netns.Options{IPv6: true})
	fmt.Printf("    binaries in %s; everything this run creates is named %s*\n", m.Dir, m.Prefix)
	r.Check(ctx)

	heading("Creating 4 network namespaces joined by veth pairs: a diamond")
	fmt.Println("        b")
	fmt.Println("       / \\")
	fmt.Println("      a   d      (no direct a—d link: a reaches d through b or c)")
	fmt.Println("       \\ /")
	fmt.Println("        c")
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		m.AddNode(n)
	}
	for _, l := range [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}} {
		k := m.Link(m.Node(l[0]), m.Node(l[1]))
		fmt.Printf("    link %s—%s: %s %s/30 <-> %s %s/30\n", l[0], l[1], k.IfA, k.AddrA, k.IfB, k.AddrB)
	}
	r.Check(ctx)

	heading("Each node's identity: npub (public key), NodeAddr (its hash, used for routing), fd00::/8 address")
	for _, n := range m.Nodes() {
		fmt.Printf("    %s  %s\n       node_addr %s  ipv6 %s\n", n.Name, n.Npub(), n.NodeAddr(), n.IPv6())
	}

	heading("Starting one fips daemon per namespace (UDP, each link's far end as a static peer)")
	m.Start()
	fmt.Println("    waiting for links, the spanning tree and the bloom filters to converge...")
	took := waitConverged(ctx, r, m, 30*time.Second)
	fmt.Printf("    converged in %v\n", took.Round(time.Millisecond))

	heading("fipsctl show peers: authenticated neighbours, over which link, with link RTT")
	for _, n := range m.Nodes() {
		var v struct {
			Peers []struct {
				DisplayName   string `json:"display_name"`
				TransportAddr string `json:"transport_addr"`
				Direction     string `json:"direction"`
				IsParent      bool   `json:"is_parent"`
				IsChild       bool   `json:"is_child"`
				MMP           struct {
					SRTTMs *float64 `json:"srtt_ms"`
				} `json:"mmp"`
				NodeAddr string `json:"node_addr"`
			} `json:"peers"`
		}
		fipsctlJSON(r, m, n.Name, &v, "show", "peers")
		for _, p := range v.Peers {
			role := "peer"
			if p.IsParent {
				role = "parent"
			} else if p.IsChild {
				role = "child"
			}
			srtt := "-"
			if p.MMP.SRTTMs != nil {
				srtt = fmt.Sprintf("%.2f ms", *p.MMP.SRTTMs)
			}
			fmt.Printf("    %s -> %s  via %-15s %-8s tree %-6s srtt %s\n", n.Name, nameOf(m, p.NodeAddr), p.TransportAddr, p.Direction, role, srtt)
		}
	}

	heading("fipsctl show tree: every node agrees on the root (the smallest NodeAddr); depth = hops to it")
	for _, n := range m.Nodes() {
		var v struct {
			Root     string   `json:"root"`
			Depth    int      `json:"depth"`
			MyCoords []string `json:"my_coords"`
		}
		fipsctlJSON(r, m, n.Name, &v, "show", "tree")
		var path []string
		for _, c := range v.MyCoords {
			path = append(path, nameOf(m, c))
		}
		fmt.Printf("    %s  root %s (%s)  depth %d  coords %s\n", n.Name, nameOf(m, v.Root), v.Root[:8], v.Depth, strings.Join(path, " > "))
	}

	heading("fipsctl show bloom: how many nodes each peer's filter says are reachable through it")
	fmt.Println("    (estimates; on a cycle the filters overlap and can count the asking node too)")
	for _, n := range m.Nodes() {
		var v struct {
			PeerFilters []struct {
				Peer           string   `json:"peer"`
				HasFilter      bool     `json:"has_filter"`
				EstimatedCount *float64 `json:"estimated_count"`
			} `json:"peer_filters"`
		}
		fipsctlJSON(r, m, n.Name, &v, "show", "bloom")
		var parts []string
		for _, f := range v.PeerFilters {
			est := "?"
			if f.EstimatedCount != nil {
				est = fmt.Sprintf("~%.0f", *f.EstimatedCount)
			}
			parts = append(parts, fmt.Sprintf("via %s %s nodes", nameOf(m, f.Peer), est))
		}
		fmt.Printf("    %s  %s\n", n.Name, strings.Join(parts, ", "))
	}
	r.Check(ctx)

	a, d := m.Node("a"), m.Node("d")
	heading("fipsctl probe d (from a): lookup, route, end-to-end session, round trip")
	fmt.Println("    the probe opens an encrypted session from a to d two hops away; while it lives:")
	probe := exec.CommandContext(ctx, "ip", "netns", "exec", a.NS, m.Binaries().Fipsctl, "-s", a.Socket, "probe", d.Npub())
	var probeOut strings.Builder
	probe.Stdout, probe.Stderr = &probeOut, &probeOut
	if err := probe.Start(); err != nil {
		return err
	}
	probeDone := make(chan error, 1)
	go func() { probeDone <- probe.Wait() }()
	var sessions, mmp []byte
	var probeErr error
poll:
	for {
		select {
		case probeErr = <-probeDone:
			break poll
		case <-time.After(20 * time.Millisecond):
		}
		var s struct {
			Sessions []struct {
				State string `json:"state"`
			} `json:"sessions"`
		}
		out, err := m.Fipsctl("a", "show", "sessions")
		if err == nil && json.Unmarshal(out, &s) == nil && len(s.Sessions) > 0 && s.Sessions[0].State == "established" {
			sessions = out
			if mo, err := m.Fipsctl("a", "show", "mmp"); err == nil {
				mmp = mo
			}
		}
	}
	printSessions(m, sessions, mmp)
	fmt.Println("\n    fipsctl probe output:")
	for _, line := range strings.Split(strings.TrimRight(probeOut.String(), "\n"), "\n") {
		fmt.Printf("    | %s\n", line)
	}
	r.Check(ctx)
	if probeErr != nil {
		return fmt.Errorf("fipsctl probe: %v", probeErr)
	}
	dn := m.Node("d")
	heading("Unmodified IPv6 tools: a resolves d's .fips name, then pings it and runs iperf3 over the mesh")
	name := dn.Npub() + ".fips"
	out, err := m.Exec("a", "dig", "@::1", "-p", "5354", name, "AAAA", "+short", "+time=2", "+tries=3")
	addr := strings.TrimSpace(string(out))
	fmt.Printf("    dig @::1 -p 5354 %s… AAAA  ->  %s\n", name[:20], addr)
	if err != nil || addr != dn.IPv6() {
		return fmt.Errorf("dig: %v %q", err, addr)
	}
	r.Check(ctx)
	out, err = m.Exec("a", "ping", "-6", "-c", "5", "-i", "0.2", "-W", "2", addr)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Printf("    | %s\n", line)
	}
	if err != nil {
		return fmt.Errorf("ping: %v", err)
	}
	r.Check(ctx)
	if _, err := exec.LookPath("iperf3"); err != nil {
		fmt.Println("    (iperf3 is not installed: skipping the throughput run; apt-get install iperf3)")
	} else {
		stop := m.Background("d", "iperf3", "-s", "-1", "-B", addr)
		defer stop()
		if !m.WaitListening("d", 5201, 10*time.Second) {
			return fmt.Errorf("iperf3 server did not start")
		}
		out, err = m.Exec("a", "iperf3", "-c", addr, "-t", "3")
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.Contains(line, "sender") || strings.Contains(line, "receiver") {
				fmt.Printf("    | %s\n", line)
			}
		}
		if err != nil {
			return fmt.Errorf("iperf3: %v", err)
		}
	}
	r.Check(ctx)

	heading("Summary")
	fmt.Println("    4 daemons in 4 namespaces formed links, one spanning tree and bloom filters;")
	fmt.Println("    a resolved d by its npub.fips name and reached it with ping and iperf3 through")
	fmt.Println("    fips0 (TUN), over an end-to-end encrypted session across the mesh.")
	return nil
}

func waitConverged(ctx context.Context, r *netns.Runner, m *netns.Mesh, timeout time.Duration) time.Duration {
	start := time.Now()
	why := ""
	for time.Since(start) < timeout {
		r.Check(ctx)
		var ok bool
		if ok, why = m.Converged(); ok {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// One last check; on failure it reports with the daemons' logs.
	took := m.WaitConvergedSince(start, timeout)
	if ok, _ := m.Converged(); ok {
		return took
	}
	r.Fatalf("not converged: %s", why)
	return 0
}

func fipsctlJSON(r *netns.Runner, m *netns.Mesh, node string, out any, args ...string) {
	raw, err := m.Fipsctl(node, args...)
	if err != nil {
		r.Fatalf("fipsctl %s on %s: %v", strings.Join(args, " "), node, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		r.Fatalf("fipsctl %s on %s: %v", strings.Join(args, " "), node, err)
	}
}

// nameOf maps a NodeAddr to the demo's node name.
func nameOf(m *netns.Mesh, addr string) string {
	for _, n := range m.Nodes() {
		if n.NodeAddr() == addr {
			return n.Name
		}
	}
	if len(addr) > 8 {
		return addr[:8]
	}
	return addr
}

func printSessions(m *netns.Mesh, sessions, mmp []byte) {
	if sessions == nil {
		fmt.Println("    (the session came and went between two polls)")
		return
	}
	var s struct {
		Sessions []struct {
			RemoteAddr  string `json:"remote_addr"`
			State       string `json:"state"`
			IsInitiator bool   `json:"is_initiator"`
		} `json:"sessions"`
	}
	_ = json.Unmarshal(sessions, &s)
	fmt.Println("    fipsctl show sessions (on a):")
	for _, e := range s.Sessions {
		role := "responder"
		if e.IsInitiator {
			role = "initiator"
		}
		fmt.Printf("      -> %s  %s, a is the %s\n", nameOf(m, e.RemoteAddr), e.State, role)
	}
	var v struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if json.Unmarshal(mmp, &v) != nil {
		return
	}
	fmt.Println("    fipsctl show mmp, end-to-end session metrics (on a):")
	for _, e := range v.Sessions {
		who, _ := e["remote"].(string)
		layer, _ := e["session_layer"].(map[string]any)
		var parts []string
		for _, k := range []string{"srtt_ms", "loss_rate", "etx", "path_mtu"} {
			if x, ok := layer[k]; ok && x != nil {
				parts = append(parts, fmt.Sprintf("%s %v", k, x))
			}
		}
		if mode, ok := e["mode"].(string); ok {
			parts = append(parts, "mode "+mode)
		}
		fmt.Printf("      -> %s  %s\n", nameOf(m, who), strings.Join(parts, ", "))
	}
}

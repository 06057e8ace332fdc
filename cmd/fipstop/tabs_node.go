package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

func (m *model) viewNode(w int) []string {
	s, ok := m.data["show_status"]
	if !ok {
		return m.waiting("show_status")
	}
	root := short(str(s, "root"), 17)
	if isTrue(s, "is_root") {
		root = "I am the one who roots"
	}
	mesh := "-"
	if _, ok := num(s, "estimated_mesh_size"); ok {
		mesh = "~" + ustr(s, "estimated_mesh_size")
	}
	identity := "ephemeral"
	if isTrue(s, "persistent") {
		identity = "persistent"
	}
	lines := []string{
		header("Runtime"),
		fmt.Sprintf("  ver: %s  pid: %s  uptime: %s", str(s, "version"), ustr(s, "pid"), fmtUptime(u64(s, "uptime_secs"))),
		"  exe: " + str(s, "exe_path"),
		"  ctl: " + str(s, "control_socket"),
		"  tun: " + str(s, "tun_name"),
		header("Identity"),
		"  npub:      " + str(s, "npub"),
		"  node_addr: " + str(s, "node_addr"),
		"  ipv6:      " + str(s, "ipv6_addr"),
		"  identity:  " + identity,
		header("State"),
		fmt.Sprintf("  state: %s  tun: %s  mtu: %s  leaf: %v  dataplane: %s", str(s, "state"), str(s, "tun_state"),
			ustr(s, "effective_ipv6_mtu"), isTrue(s, "is_leaf_only"), str(s, "dataplane", "mode")),
		fmt.Sprintf("  peers: %s  sessions: %s  links: %s  transports: %s  connections: %s", ustr(s, "peer_count"),
			ustr(s, "session_count"), ustr(s, "link_count"), ustr(s, "transport_count"), ustr(s, "connection_count")),
		"  approx. mesh estimate: " + mesh,
		"  root: " + root,
		"  transports: " + transportCounts(s),
		fmt.Sprintf("  peers:  %s   mesh: %s   depth: %s", sparkline(floats(s, "sparklines", "peer_count")),
			sparkline(floats(s, "sparklines", "mesh_size")), sparkline(floats(s, "sparklines", "tree_depth"))),
	}
	fwd := func(label, pk, bk string) string {
		return fmt.Sprintf("    %-8s %s pkts (%s)", label, ustr(s, "forwarding", pk), fmtBytes(u64(s, "forwarding", bk)))
	}
	traffic := []string{
		header("Traffic"),
		"  TUN (IPv6)",
		fwd("Tx", "delivered_packets", "delivered_bytes"),
		fwd("Rx", "originated_packets", "originated_bytes"),
		"  Forwarded (transit)",
		fwd("Packets", "forwarded_packets", "forwarded_bytes"),
		fmt.Sprintf("    rate in:  %s", sparkline(floats(s, "sparklines", "bytes_in"))),
		fmt.Sprintf("    rate out: %s", sparkline(floats(s, "sparklines", "bytes_out"))),
		fmt.Sprintf("    loss:     %s", sparkline(floats(s, "sparklines", "loss_rate"))),
	}
	listen := m.viewListening()
	if w >= 110 {
		return append(lines, sideBySide(traffic, listen, w/2)...)
	}
	return append(append(lines, traffic...), listen...)
}

func transportCounts(s any) string {
	o, _ := get(s, "transport_peer_counts").(map[string]any)
	if len(o) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%s)", k, ustr(o, k))
	}
	return strings.Join(parts, ", ")
}

// viewListening is the "Listening on fips0" panel (show_listening_sockets):
// proto, port, comm(pid) with * for a wildcard bind, and the baseline
// firewall's verdict for the port.
func (m *model) viewListening() []string {
	l, ok := m.data["show_listening_sockets"]
	if !ok {
		if _, failed := m.errs["show_listening_sockets"]; failed {
			return nil // an old daemon: the panel hides
		}
		return []string{header("Listening on fips0"), stDim.Render("  loading...")}
	}
	title := header("Listening on fips0")
	fw, known := get(l, "firewall_active").(bool)
	if known && !fw {
		title = stWarn.Render("── Listening on fips0  fips-firewall.service inactive — all listeners exposed ──")
	}
	socks := arr(l, "sockets")
	if len(socks) == 0 {
		return []string{title, stDim.Render("  (no listeners reachable from fips0)")}
	}
	var rows [][]string
	for _, x := range socks {
		proc := "?"
		pid := ustr(x, "pid")
		if pid != "-" {
			proc = fmt.Sprintf("%s(%s)", str(x, "process"), pid)
			if str(x, "process") == "-" {
				proc = fmt.Sprintf("?(%s)", pid)
			}
			if isTrue(x, "wildcard_bind") {
				proc += " *"
			}
		}
		state := map[string]string{"accept": "OPEN", "drop": "filt", "unknown": "filt?", "no_firewall": "OPEN"}[str(x, "filter")]
		if state == "" {
			state = "?"
		}
		rows = append(rows, []string{str(x, "proto"), ustr(x, "port"), proc, state})
	}
	return append([]string{title}, table([]string{"Proto", "Port", "Process", "State"}, rows, -1)...)
}

// sideBySide joins two columns, the left padded to half.
func sideBySide(left, right []string, half int) []string {
	n := max(len(left), len(right))
	out := make([]string, n)
	for i := range n {
		var l, r string
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		l = ansi.Truncate(l, half-1, "")
		out[i] = l + strings.Repeat(" ", max(1, half-lipgloss.Width(l))) + r
	}
	return out
}

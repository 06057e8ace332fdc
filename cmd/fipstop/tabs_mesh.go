package main

import (
	"fmt"
	"sort"
	"strings"
)

// counters flattens an object's scalar fields (nested objects as a.b) into
// aligned lines, sorted by name.
func counters(v any, prefix string) []string {
	o, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for _, k := range sortedKeys(o) {
		switch x := o[k].(type) {
		case map[string]any:
			out = append(out, counters(x, prefix+k+".")...)
		case []any:
			out = append(out, kv(prefix+k, fmt.Sprintf("[%d]", len(x))))
		case nil:
			out = append(out, kv(prefix+k, "-"))
		default:
			out = append(out, kv(prefix+k, fmt.Sprint(x)))
		}
	}
	return out
}

func sortStrings(s []string) { sort.Strings(s) }

// peerRoles maps node_addr → the Peers tab's group, for grouping the Tree
// and Filters peer lists the same way.
func (m *model) peerRoles() map[string]int {
	r := map[string]int{}
	for _, p := range arr(m.data["show_peers"], "peers") {
		r[str(p, "node_addr")] = groupRank(p)
	}
	return r
}

func (m *model) viewTree(h int) []string {
	t, ok := m.data["show_tree"]
	if !ok {
		return m.waiting("show_tree")
	}
	root := str(t, "root")
	if isTrue(t, "is_root") {
		root += " (this node)"
	}
	signed := "unsigned"
	if isTrue(t, "declaration_signed") {
		signed = "signed"
	}
	parent := str(t, "parent_display_name")
	if isTrue(t, "is_root") {
		parent = "- (root)"
	}
	pos := []string{
		kv("Root", root), kv("Root Npub", str(t, "root_npub")), kv("Depth", ustr(t, "depth")), kv("Parent", parent),
		kv("Declaration", fmt.Sprintf("seq %s, %s", ustr(t, "declaration_sequence"), signed)),
		kv("Peers with tree", ustr(t, "peer_tree_count")),
	}
	var coords []string
	for _, c := range arr(t, "my_coords") {
		s, _ := c.(string)
		coords = append(coords, short(s, 12))
	}
	pos = append(pos, kv("Coords", strings.Join(coords, " → ")))
	roles := m.peerRoles()
	peers := append([]any(nil), arr(t, "peers")...)
	sort.SliceStable(peers, func(i, j int) bool {
		ri, oki := roles[str(peers[i], "node_addr")]
		rj, okj := roles[str(peers[j], "node_addr")]
		if !oki {
			ri = 2
		}
		if !okj {
			rj = 2
		}
		return ri < rj
	})
	var rows [][]string
	for _, p := range peers {
		role := "other"
		switch roles[str(p, "node_addr")] {
		case 0:
			role = "parent"
		case 1:
			role = "child"
		}
		if _, ok := roles[str(p, "node_addr")]; !ok {
			role = "other"
		}
		rows = append(rows, []string{short(str(p, "display_name"), 24), role, ustr(p, "depth"), ustr(p, "distance_to_us"),
			short(str(p, "root"), 17), short(str(p, "node_addr"), 17)})
	}
	return m.panes([]pane{
		{"Tree Position", pos},
		{"Announce Stats", counters(get(t, "stats"), "")},
		{fmt.Sprintf("Peer Declarations (%d)", len(peers)), table([]string{"Name", "Role", "Depth", "Dist", "Root", "Node Addr"}, rows, -1)},
	}, h)
}

func (m *model) viewFilters(h int) []string {
	b, ok := m.data["show_bloom"]
	if !ok {
		return m.waiting("show_bloom")
	}
	own := []string{
		kv("Own Node Addr", str(b, "own_node_addr")), kv("Sequence", ustr(b, "sequence")),
		kv("Leaf Only", yesNo(isTrue(b, "is_leaf_only"))), kv("Leaf Dependents", ustr(b, "leaf_dependent_count")),
		kv("Uptree Fill Ratio", fixed(b, 4, "uptree_fill_ratio")),
		kv("Uptree Est. Count", fixed(b, 1, "uptree_estimated_count")),
	}
	var rows [][]string
	for _, f := range arr(b, "peer_filters") {
		rows = append(rows, []string{short(str(f, "display_name"), 24), yesNo(isTrue(f, "has_filter")), ustr(f, "filter_sequence"),
			fixed(f, 4, "fill_ratio"), fixed(f, 1, "estimated_count"), ustr(f, "set_bits")})
	}
	return m.panes([]pane{
		{"Own Filter", own},
		{"Filter Stats", counters(get(b, "stats"), "")},
		{fmt.Sprintf("Peer Filters (%d)", len(rows)), table([]string{"Name", "Filter", "Seq", "Fill", "Est. Count", "Set Bits"}, rows, -1)},
	}, h)
}

var (
	linkSortLabels    = []string{"name", "srtt", "loss", "etx", "lqi", "gp"}
	sessionSortLabels = []string{"name", "srtt", "loss", "etx", "sqi", "mtu"}
)

func (m *model) viewPerformance(h int) []string {
	d, ok := m.data["show_mmp"]
	if !ok {
		return m.waiting("show_mmp")
	}
	lossOf := func(l any) string {
		if s := fixed(l, 4, "smoothed_loss"); s != "-" {
			return s
		}
		return fixed(l, 4, "loss_rate")
	}
	etxOf := func(l any) string {
		if s := fixed(l, 3, "smoothed_etx"); s != "-" {
			return s
		}
		return fixed(l, 3, "etx")
	}
	build := func(list []any, layer string, cols []string, last func(l any) string) [][]string {
		var rows [][]string
		for _, x := range list {
			l := get(x, layer)
			rows = append(rows, []string{short(str(x, "display_name"), 24), fixed(l, 1, "srtt_ms"), lossOf(l), etxOf(l),
				fixed(l, 2, cols[4]), last(l), str(x, "mode")})
		}
		return rows
	}
	gp := func(l any) string {
		if g, ok := num(l, "goodput_bps"); ok {
			return fmtRate(g)
		}
		return "-"
	}
	links := build(arr(d, "peers"), "link_layer", linkSortLabels, gp)
	sess := build(arr(d, "sessions"), "session_layer", sessionSortLabels, func(l any) string { return ustr(l, "path_mtu") })
	sortRows(links, m.mmpSorts[0])
	sortRows(sess, m.mmpSorts[1])
	sortTitle := func(s sortState, labels []string) string {
		dir := "↑"
		if s.desc {
			dir = "↓"
		}
		return fmt.Sprintf(" sort: %s %s", labels[s.col], dir)
	}
	return m.panes([]pane{
		{fmt.Sprintf("Link MMP (%d)", len(links)) + sortTitle(m.mmpSorts[0], linkSortLabels),
			table([]string{"Name", "SRTT ms", "Loss", "ETX", "LQI", "Goodput", "Mode"}, links, -1)},
		{fmt.Sprintf("Session MMP (%d)", len(sess)) + sortTitle(m.mmpSorts[1], sessionSortLabels),
			table([]string{"Name", "SRTT ms", "Loss", "ETX", "SQI", "Path MTU", "Mode"}, sess, -1)},
	}, h)
}

// sortRows orders rows by column s.col: numerically when both cells are
// numbers (unmeasured "-" last), else as text.
func sortRows(rows [][]string, s sortState) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i][s.col], rows[j][s.col]
		var x, y float64
		_, ea := fmt.Sscanf(a, "%g", &x)
		_, eb := fmt.Sscanf(b, "%g", &y)
		switch {
		case ea == nil && eb == nil:
			if s.desc {
				return x > y
			}
			return x < y
		case ea == nil || eb == nil:
			return ea == nil
		}
		if s.desc {
			return a > b
		}
		return a < b
	})
}

func (m *model) viewRouting(h int) []string {
	r, ok := m.data["show_routing"]
	if !ok {
		return m.waiting("show_routing")
	}
	summary := []string{
		kv("Coord Cache Entries", ustr(r, "coord_cache_entries")),
		kv("Identity Cache Entries", ustr(r, "identity_cache_entries")),
		kv("Pending Lookups", fmt.Sprint(len(arr(r, "pending_lookups")))),
		kv("Recent Requests", ustr(r, "recent_requests")),
		kv("Pending TUN Dests", ustr(r, "pending_tun_destinations")),
	}
	for _, p := range arr(r, "pending_lookups") {
		summary = append(summary, "    lookup "+short(str(p, "target"), 17)+" "+counterLine(p))
	}
	retries := arr(r, "retries")
	summary = append(summary, kv("Retries", fmt.Sprint(len(retries))))
	for _, x := range retries {
		summary = append(summary, fmt.Sprintf("    %s retry %s in %s ms (%s)", short(str(x, "display_name"), 24),
			ustr(x, "retry_count"), ustr(x, "retry_after_ms"), str(x, "last_error")))
	}
	var cnt []string
	for _, k := range []string{"forwarding", "discovery", "error_signals", "congestion", "limits"} {
		if get(r, k) != nil {
			cnt = append(cnt, "  "+k)
			cnt = append(cnt, counters(get(r, k), "")...)
		}
	}
	c := m.data["show_cache"]
	cache := []string{
		kv("Entries", ustr(c, "count")+" / "+ustr(c, "max_entries")), kv("Fill Ratio", fixed(c, 3, "fill_ratio")),
		kv("Default TTL (ms)", ustr(c, "default_ttl_ms")), kv("Expired", ustr(c, "expired")),
		kv("Avg Age (ms)", ustr(c, "avg_age_ms")),
	}
	var rows [][]string
	for _, e := range arr(c, "entries") {
		rows = append(rows, []string{short(str(e, "display_name"), 24), short(str(e, "node_addr"), 17), ustr(e, "depth"), ustr(e, "age_ms")})
	}
	if len(rows) > 0 {
		cache = append(cache, table([]string{"Name", "Node Addr", "Depth", "Age ms"}, rows, -1)...)
	}
	return m.panes([]pane{{"Routing", summary}, {"Counters", cnt}, {"Coordinate Cache", cache}}, h)
}

// counterLine renders an object's scalar fields on one line.
func counterLine(v any) string {
	o, _ := v.(map[string]any)
	var parts []string
	for _, k := range sortedKeys(o) {
		if _, nested := o[k].(map[string]any); !nested {
			parts = append(parts, fmt.Sprintf("%s=%v", k, o[k]))
		}
	}
	return strings.Join(parts, " ")
}

func (m *model) viewGateway(h int) []string {
	g, ok := m.data["gw:show_gateway"]
	if !ok {
		if _, failed := m.errs["gw:show_gateway"]; failed {
			return []string{header("Gateway"), "",
				stDim.Render("  fips-gateway is not running (no answer on " + m.c.gateway + ")")}
		}
		return []string{header("Gateway"), stDim.Render("  Waiting for data...")}
	}
	maps := arr(m.data["gw:show_mappings"], "mappings")
	sel, hasSel := m.sel[TabGateway]
	if !hasSel {
		sel = -1
	}
	if m.detail && sel >= 0 && sel < len(maps) {
		return m.scrolled(append([]string{header("Mapping Detail")}, counters(maps[sel], "")...), h)
	}
	out := []string{header("Gateway"),
		kv("Pool", fmt.Sprintf("%s  total %s  allocated %s  active %s  draining %s  free %s", str(g, "pool_cidr"),
			ustr(g, "pool_total"), ustr(g, "pool_allocated"), ustr(g, "pool_active"), ustr(g, "pool_draining"), ustr(g, "pool_free"))),
		kv("NAT Mappings", ustr(g, "nat_mappings")), kv("LAN Interface", str(g, "lan_interface")),
		kv("DNS", str(g, "dns_listen")+" → "+str(g, "dns_upstream")+" ttl "+ustr(g, "dns_ttl")),
		kv("Grace Period", ustr(g, "pool_grace_period")), kv("Uptime", fmtUptime(u64(g, "uptime_secs"))),
		header(fmt.Sprintf("NAT Mappings (%d)", len(maps)))}
	var rows [][]string
	for _, x := range maps {
		rows = append(rows, []string{str(x, "virtual_ip"), str(x, "dns_name"), short(str(x, "mesh_addr"), 24), str(x, "state"),
			ustr(x, "sessions"), ustr(x, "age_secs"), ustr(x, "last_ref_secs")})
	}
	return append(out, table([]string{"Virtual IP", "DNS Name", "Mesh Addr", "State", "Sessions", "Age", "Last Ref"}, rows, sel)...)
}

// viewDataplane is ours: which dataplane runs and why (show_status's
// dataplane), and the XDP program's attachments, verdict counters and map
// occupancy (show_bpf).
func (m *model) viewDataplane() []string {
	b, ok := m.data["show_bpf"]
	if !ok {
		return m.waiting("show_bpf")
	}
	d := get(m.data["show_status"], "dataplane")
	if d == nil {
		d = b
	}
	out := []string{header("Dataplane"),
		kv("Mode", str(d, "mode")), kv("Configured", str(d, "configured")), kv("Reason", str(d, "reason")),
		kv("Program ID", ustr(b, "program_id"))}
	var ifs [][]string
	for _, i := range arr(b, "interfaces") {
		ifs = append(ifs, []string{str(i, "name"), ustr(i, "ifindex"), str(i, "attach_mode"), ustr(i, "program_id")})
	}
	out = append(out, header(fmt.Sprintf("XDP Attachments (%d)", len(ifs))))
	if len(ifs) == 0 {
		out = append(out, stDim.Render("  (none: the userspace dataplane reads every packet)"))
	} else {
		out = append(out, table([]string{"Interface", "Ifindex", "Attach", "Program"}, ifs, -1)...)
	}
	var cs [][]string
	for _, c := range arr(b, "counters") {
		cs = append(cs, []string{str(c, "verdict"), str(c, "reason"), ustr(c, "packets"), fmtBytes(u64(c, "bytes"))})
	}
	out = append(out, header("XDP Counters"))
	if len(cs) == 0 {
		out = append(out, stDim.Render("  (no XDP program loaded)"))
	} else {
		out = append(out, table([]string{"Verdict", "Reason", "Packets", "Bytes"}, cs, -1)...)
	}
	if mp := get(b, "maps"); mp != nil {
		out = append(out, header("XDP Maps"),
			kv("links", fmt.Sprintf("%s / %s (refused %s)", ustr(mp, "links"), ustr(mp, "links_max"), ustr(mp, "links_refused"))),
			kv("ratelimit", ustr(mp, "ratelimit_entries")+" / "+ustr(mp, "ratelimit_max")),
			kv("map write errors", ustr(mp, "map_errors")))
		if e := str(mp, "last_error"); e != "-" {
			out = append(out, kv("last map error", e))
		}
	}
	var xs [][]string
	for _, x := range arr(b, "xsks") {
		mode := "copy"
		if bl, _ := get(x, "zero_copy").(bool); bl {
			mode = "zero-copy"
		}
		xs = append(xs, []string{str(x, "interface"), ustr(x, "queue"), mode, ustr(x, "received"), ustr(x, "to_loop"),
			ustr(x, "rx_dropped"), ustr(x, "rx_ring_full"), ustr(x, "fill_ring_empty_descs")})
	}
	out = append(out, header(fmt.Sprintf("AF_XDP Sockets (%d)", len(xs))))
	if a := get(d, "afxdp"); a != nil {
		out = append(out, kv("AF_XDP", str(a, "reason")))
	}
	if len(xs) > 0 {
		out = append(out, table([]string{"Interface", "Queue", "Mode", "Received", "To Loop", "Rx Dropped", "Ring Full", "Fill Empty"}, xs, -1)...)
	}
	var ts [][]string
	for _, c := range arr(b, "tc_counters") {
		ts = append(ts, []string{str(c, "direction"), str(c, "reason"), ustr(c, "packets"), fmtBytes(u64(c, "bytes"))})
	}
	out = append(out, header("TC ECN Counters"))
	if t := get(d, "tc"); t != nil {
		out = append(out, kv("TC", str(t, "reason")))
	}
	out = append(out, kv("Outer CE frames", ustr(d, "outer_ce_frames")))
	if len(ts) > 0 {
		out = append(out, table([]string{"Direction", "Reason", "Packets", "Bytes"}, ts, -1)...)
	}
	return out
}

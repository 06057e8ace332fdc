package main

import (
	"fmt"
)

func dirShort(d string) string {
	switch d {
	case "inbound":
		return "in"
	case "outbound":
		return "out"
	}
	return d
}

func groupRank(p any) int {
	switch {
	case isTrue(p, "is_parent"):
		return 0
	case isTrue(p, "is_child"):
		return 1
	}
	return 2
}

var groupLabels = [...]string{"── Parent ──", "── STP Children ──", "── Other ──"}

func (m *model) viewPeers(h int) []string {
	if _, ok := m.data["show_peers"]; !ok {
		return m.waiting("show_peers")
	}
	peers := m.sortedPeers()
	if m.detail {
		if p := m.selectedPeer(); p != nil {
			return m.scrolled(m.peerDetail(p), h)
		}
	}
	sel, hasSel := m.sel[TabPeers]
	var rows [][]string
	selRow, last := -1, -1
	for i, p := range peers {
		if g := groupRank(p); g != last {
			if last >= 0 {
				rows = append(rows, []string{})
			}
			rows = append(rows, []string{groupLabels[g]})
			last = g
		}
		tr := str(p, "transport_type")
		if a := str(p, "transport_addr"); a != "-" {
			tr += "/" + a
		}
		loss := fixed(p, 3, "mmp", "smoothed_loss")
		if loss == "-" {
			loss = fixed(p, 3, "mmp", "loss_rate")
		}
		gp := "-"
		if g, ok := num(p, "mmp", "goodput_bps"); ok {
			gp = fmtRate(g)
		}
		if hasSel && i == sel {
			selRow = len(rows)
		}
		rows = append(rows, []string{short(str(p, "display_name"), 24), short(str(p, "npub"), 20), tr,
			dirShort(str(p, "direction")), fixed(p, 1, "mmp", "srtt_ms"), loss, fixed(p, 2, "mmp", "lqi"),
			fixed(p, 2, "effective_depth"), gp, ustr(p, "stats", "packets_sent"), ustr(p, "stats", "packets_recv")})
	}
	out := []string{header(fmt.Sprintf("Peers (%d)", len(peers)))}
	if len(peers) == 0 {
		return append(out, stDim.Render("  (no authenticated peers)"))
	}
	return append(out, table([]string{"Name", "Npub", "Transport", "Dir", "SRTT", "Loss", "LQI", "EffD", "Goodput",
		"Pkts Tx", "Pkts Rx"}, rows, selRow)...)
}

func (m *model) findLink(id uint64) any {
	for _, l := range arr(m.data["show_links"], "links") {
		if u64(l, "link_id") == id {
			return l
		}
	}
	return nil
}

func (m *model) findTransport(id uint64) any {
	for _, t := range arr(m.data["show_transports"], "transports") {
		if u64(t, "transport_id") == id {
			return t
		}
	}
	return nil
}

func (m *model) peerDetail(p any) []string {
	role := "peer"
	switch {
	case isTrue(p, "is_parent"):
		role = "parent"
	case isTrue(p, "is_child"):
		role = "child"
	}
	now := m.now()
	out := []string{header("Peer Detail — " + str(p, "display_name")),
		"  Identity",
		kv("Name", str(p, "display_name")), kv("Node Addr", str(p, "node_addr")), kv("Npub", str(p, "npub")),
		kv("IPv6 Addr", str(p, "ipv6_addr")), kv("Tree Role", role),
		"  Connection",
		kv("Connectivity", str(p, "connectivity")), kv("Link ID", ustr(p, "link_id")),
		kv("Direction", str(p, "direction")), kv("Transport Addr", str(p, "transport_addr")),
		kv("Transport Type", str(p, "transport_type")),
		kv("Authenticated", ago(now, u64(p, "authenticated_at_ms"))), kv("Last Seen", ago(now, u64(p, "last_seen_ms"))),
	}
	if l := m.findLink(u64(p, "link_id")); l != nil {
		out = append(out, kv("Link State", str(l, "state")))
		if t := m.findTransport(u64(l, "transport_id")); t != nil {
			out = append(out, "  Transport", kv("Type", str(t, "type")), kv("MTU", ustr(t, "mtu")),
				kv("Local Addr", str(t, "local_addr")), kv("State", str(t, "state")))
		}
	}
	out = append(out, "  Tree / Bloom",
		kv("Tree Position", yesNo(isTrue(p, "has_tree_position"))), kv("Tree Depth", ustr(p, "tree_depth")),
		kv("Effective Depth", fixed(p, 2, "effective_depth")),
		kv("Bloom Filter", yesNo(isTrue(p, "has_bloom_filter"))), kv("Filter Seq", ustr(p, "filter_sequence")),
		"  Link Stats",
		kv("Packets Tx/Rx", ustr(p, "stats", "packets_sent")+" / "+ustr(p, "stats", "packets_recv")),
		kv("Bytes Tx/Rx", fmtBytes(u64(p, "stats", "bytes_sent"))+" / "+fmtBytes(u64(p, "stats", "bytes_recv"))),
		kv("Replay Suppressed", ustr(p, "replay_suppressed")),
		kv("Decrypt Failures", ustr(p, "consecutive_decrypt_failures")))
	if get(p, "mmp") != nil {
		gp := "-"
		if g, ok := num(p, "mmp", "goodput_bps"); ok {
			gp = fmtRate(g)
		}
		out = append(out, "  MMP Metrics",
			kv("Mode", str(p, "mmp", "mode")), kv("SRTT (ms)", fixed(p, 1, "mmp", "srtt_ms")),
			kv("Loss", fixed(p, 4, "mmp", "loss_rate")), kv("Smoothed Loss", fixed(p, 4, "mmp", "smoothed_loss")),
			kv("ETX", fixed(p, 3, "mmp", "etx")), kv("Smoothed ETX", fixed(p, 3, "mmp", "smoothed_etx")),
			kv("LQI", fixed(p, 3, "mmp", "lqi")), kv("Goodput", gp),
			kv("Delivery fwd/rev", fixed(p, 3, "mmp", "delivery_ratio_forward")+" / "+fixed(p, 3, "mmp", "delivery_ratio_reverse")))
	}
	return out
}

func (m *model) viewTransports(h int) []string {
	if _, ok := m.data["show_transports"]; !ok {
		return m.waiting("show_transports")
	}
	rows := m.transportRows()
	sel, hasSel := m.sel[TabTransports]
	if !hasSel {
		sel = -1
	}
	if m.detail && sel >= 0 && sel < len(rows) {
		return m.scrolled(m.transportDetail(rows[sel]), h)
	}
	var cells [][]string
	for _, r := range rows {
		t := r.transport
		if r.link == nil {
			mark := "▸"
			if m.expanded[u64(t, "transport_id")] {
				mark = "▾"
			}
			label := fmt.Sprintf("%s %s #%s", mark, str(t, "type"), ustr(t, "transport_id"))
			if n := str(t, "name"); n != "-" {
				label += " " + n
			}
			if a := str(t, "local_addr"); a != "-" {
				label += " " + a
			}
			tx, rx := ustr(t, "stats", "packets_sent"), ustr(t, "stats", "packets_recv")
			if tx == "-" {
				tx, rx = ustr(t, "stats", "frames_sent"), ustr(t, "stats", "frames_recv")
			}
			cells = append(cells, []string{label, str(t, "state"), "", tx, rx})
			continue
		}
		l := r.link
		cells = append(cells, []string{fmt.Sprintf("    └ %s %s", dirShort(str(l, "direction")), short(str(l, "remote_addr"), 24)),
			str(l, "state"), m.peerNameByLink(u64(l, "link_id")), ustr(l, "stats", "packets_sent"), ustr(l, "stats", "packets_recv")})
	}
	out := []string{header(fmt.Sprintf("Transports (%d)", len(arr(m.data["show_transports"], "transports"))))}
	return append(out, table([]string{"Transport / Link", "State", "Peer", "Tx", "Rx"}, cells, sel)...)
}

func (m *model) peerByLink(id uint64) any {
	for _, p := range arr(m.data["show_peers"], "peers") {
		if u64(p, "link_id") == id {
			return p
		}
	}
	return nil
}

func (m *model) peerNameByLink(id uint64) string {
	if p := m.peerByLink(id); p != nil {
		return str(p, "display_name")
	}
	return "-"
}

func (m *model) transportDetail(r transportRow) []string {
	if l := r.link; l != nil {
		out := []string{header("Link Detail"),
			kv("Link ID", ustr(l, "link_id")), kv("Direction", str(l, "direction")), kv("State", str(l, "state")),
			kv("Remote Addr", str(l, "remote_addr")), kv("Created", ago(m.now(), u64(l, "created_at_ms"))),
			kv("Transport ID", ustr(l, "transport_id")), kv("Transport", str(r.transport, "type")),
			kv("Packets Tx/Rx", ustr(l, "stats", "packets_sent")+" / "+ustr(l, "stats", "packets_recv")),
			kv("Bytes Tx/Rx", fmtBytes(u64(l, "stats", "bytes_sent"))+" / "+fmtBytes(u64(l, "stats", "bytes_recv")))}
		if p := m.peerByLink(u64(l, "link_id")); p != nil {
			out = append(out, "  Peer", kv("Name", str(p, "display_name")), kv("Npub", str(p, "npub")),
				kv("Connectivity", str(p, "connectivity")), kv("Last Seen", ago(m.now(), u64(p, "last_seen_ms"))))
		}
		return out
	}
	t := r.transport
	out := []string{header("Transport Detail"),
		kv("Transport ID", ustr(t, "transport_id")), kv("Type", str(t, "type")), kv("State", str(t, "state")),
		kv("MTU", ustr(t, "mtu")), kv("Name", str(t, "name")), kv("Local Addr", str(t, "local_addr"))}
	if st, ok := get(t, "stats").(map[string]any); ok {
		out = append(out, "  Stats")
		keys := sortedKeys(st)
		for _, k := range keys {
			out = append(out, kv(k, ustr(st, k)))
		}
	}
	return out
}

func sortedKeys(o map[string]any) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

func (m *model) viewSessions(h int) []string {
	if _, ok := m.data["show_sessions"]; !ok {
		return m.waiting("show_sessions")
	}
	ss := arr(m.data["show_sessions"], "sessions")
	sel, hasSel := m.sel[TabSessions]
	if !hasSel {
		sel = -1
	}
	if m.detail && sel >= 0 && sel < len(ss) {
		return m.scrolled(m.sessionDetail(ss[sel]), h)
	}
	var rows [][]string
	for _, s := range ss {
		role := "responder"
		if isTrue(s, "is_initiator") {
			role = "initiator"
		}
		rows = append(rows, []string{short(str(s, "display_name"), 24), short(str(s, "remote_addr"), 13), str(s, "state"), role,
			fixed(s, 1, "mmp", "srtt_ms"), fixed(s, 3, "mmp", "loss_rate"), fixed(s, 2, "mmp", "sqi"),
			ustr(s, "mmp", "path_mtu"), ago(m.now(), u64(s, "last_activity_ms"))})
	}
	out := []string{header(fmt.Sprintf("Sessions (%d)", len(ss)))}
	if len(ss) == 0 {
		return append(out, stDim.Render("  (no sessions)"))
	}
	return append(out, table([]string{"Name", "Remote Addr", "State", "Role", "SRTT", "Loss", "SQI", "Path MTU",
		"Last Activity"}, rows, sel)...)
}

func (m *model) sessionDetail(s any) []string {
	role := "responder"
	if isTrue(s, "is_initiator") {
		role = "initiator"
	}
	out := []string{header("Session Detail — " + str(s, "display_name")),
		kv("Name", str(s, "display_name")), kv("Npub", str(s, "npub")), kv("Remote Addr", str(s, "remote_addr")),
		kv("State", str(s, "state")), kv("Role", role), kv("Last Activity", ago(m.now(), u64(s, "last_activity_ms"))),
		"  Traffic",
		kv("Packets Tx/Rx", ustr(s, "stats", "packets_sent")+" / "+ustr(s, "stats", "packets_recv")),
		kv("Bytes Tx/Rx", fmtBytes(u64(s, "stats", "bytes_sent"))+" / "+fmtBytes(u64(s, "stats", "bytes_recv")))}
	if mm, ok := get(s, "mmp").(map[string]any); ok {
		out = append(out, "  MMP Metrics")
		for _, k := range sortedKeys(mm) {
			if _, isObj := mm[k].(map[string]any); isObj {
				continue
			}
			v := ustr(mm, k)
			if v == "-" {
				v = fmt.Sprint(mm[k])
			}
			out = append(out, kv(k, v))
		}
	}
	return out
}

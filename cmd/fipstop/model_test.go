package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/fips-go/fips/control/ctl"
)

// fakeDaemon answers control requests from canned JSON and records them.
type fakeDaemon struct {
	mu    sync.Mutex
	resp  map[string]string // command → data JSON
	down  bool              // every request fails to connect
	calls []call
}

type call struct {
	socket, command string
	params          string
}

func (f *fakeDaemon) call(_ context.Context, socket, command string, params any) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := ""
	if params != nil {
		b, _ := json.Marshal(params)
		p = string(b)
	}
	f.calls = append(f.calls, call{socket, command, p})
	if f.down || socket == "gw.sock" {
		return nil, &ctl.ConnectError{Addr: socket, Err: syscall.ECONNREFUSED}
	}
	r, ok := f.resp[command]
	if !ok {
		return nil, &ctl.ServerError{Message: "unknown command: " + command}
	}
	return json.RawMessage(r), nil
}

func (f *fakeDaemon) take() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

const (
	npubB = "npub1bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	npubC = "npub1ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

func baseResponses() map[string]string {
	return map[string]string{
		"show_status": `{"npub":"npub1aaaa","node_addr":"aa","peer_count":2,"state":"running","uptime_secs":61,
			"sparklines":{"mesh_size":[1,2,3]},"dataplane":{"mode":"userspace","configured":"auto","reason":"no XDP"}}`,
		"show_peers": `{"peers":[
			{"npub":"` + npubC + `","display_name":"carol","node_addr":"cc","is_child":true,"link_id":2,"mmp":{"lqi":1.5}},
			{"npub":"` + npubB + `","display_name":"bob","node_addr":"bb","is_parent":true,"link_id":1}]}`,
		"show_links":             `{"links":[{"link_id":1,"transport_id":1,"remote_addr":"10.0.0.2:2121","direction":"outbound","state":"connected"}]}`,
		"show_transports":        `{"transports":[{"transport_id":1,"type":"udp","state":"up","local_addr":"0.0.0.0:2121","stats":{"packets_sent":5}}]}`,
		"show_listening_sockets": `{"firewall_active":false,"sockets":[{"proto":"tcp","port":22,"pid":7,"process":"sshd","wildcard_bind":true,"filter":"no_firewall"}]}`,
		"show_sessions":          `{"sessions":[{"display_name":"bob","remote_addr":"bb","state":"established","is_initiator":true}]}`,
		"show_tree":              `{"root":"rootaddr","depth":1,"peers":[{"display_name":"bob","node_addr":"bb","depth":0}],"stats":{"sent":3}}`,
		"show_bloom":             `{"own_node_addr":"aa","peer_filters":[{"display_name":"bob","has_filter":true}],"stats":{"sent":1}}`,
		"show_mmp":               `{"peers":[{"display_name":"bob","link_layer":{"srtt_ms":2.5}}],"sessions":[]}`,
		"show_routing":           `{"coord_cache_entries":4,"forwarding":{"forwarded_packets":9}}`,
		"show_cache":             `{"count":1,"max_entries":10,"entries":[]}`,
		"show_bpf":               `{"mode":"userspace","configured":"auto","reason":"no XDP","counters":[],"interfaces":[],"maps":null}`,
	}
}

func newTestModel(f *fakeDaemon) *model {
	c := &client{socket: "ctl.sock", gateway: "gw.sock", timeout: time.Second, call: f.call}
	m := newModel(c, time.Second, "test")
	m.width, m.height = 200, 60
	return m
}

// drive runs cmd and feeds its message back, until no command is left
// (fipstop's commands here are fetches and disconnects, never ticks).
func drive(t *testing.T, m *model, cmd tea.Cmd) {
	t.Helper()
	for range 10 {
		if cmd == nil {
			return
		}
		msg := cmd()
		if _, quit := msg.(tea.QuitMsg); quit {
			return
		}
		_, cmd = m.Update(msg)
	}
	t.Fatal("commands did not settle")
}

func key(k string) tea.KeyMsg {
	special := map[string]tea.KeyType{"tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab, "down": tea.KeyDown,
		"up": tea.KeyUp, "enter": tea.KeyEnter, "esc": tea.KeyEsc, "delete": tea.KeyDelete, "right": tea.KeyRight,
		"left": tea.KeyLeft}
	if t, ok := special[k]; ok {
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func press(t *testing.T, m *model, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if got := key(k).String(); got != k {
			t.Fatalf("key %q reads as %q", k, got)
		}
		_, cmd := m.Update(key(k))
		drive(t, m, cmd)
	}
}

func mustShow(t *testing.T, m *model, want ...string) {
	t.Helper()
	v := m.View()
	for _, w := range want {
		if !strings.Contains(v, w) {
			t.Fatalf("screen lacks %q:\n%s", w, v)
		}
	}
}

// TestTabsQueryWhatUpstreamQueries: each tab sends show_status and then
// its own queries (upstream's fetch_data, plus show_bpf for Dataplane), and
// Tab cycles through all eleven back to Node.
func TestTabsQueryWhatUpstreamQueries(t *testing.T) {
	f := &fakeDaemon{resp: baseResponses()}
	m := newTestModel(f)
	drive(t, m, m.refetch())
	want := map[Tab][]string{
		TabNode:        {"show_status", "show_listening_sockets"},
		TabPeers:       {"show_status", "show_peers", "show_links", "show_transports"},
		TabTransports:  {"show_status", "show_transports", "show_links", "show_peers"},
		TabSessions:    {"show_status", "show_sessions"},
		TabTree:        {"show_status", "show_tree", "show_peers"},
		TabFilters:     {"show_status", "show_bloom", "show_peers"},
		TabPerformance: {"show_status", "show_mmp"},
		TabRouting:     {"show_status", "show_routing", "show_cache"},
		TabGraphs:      {"show_status", "show_stats_peers", "show_stats_all_history"},
		TabGateway:     {"show_status", "gw:show_gateway"},
		TabDataplane:   {"show_status", "show_bpf"},
	}
	for tab := TabNode; tab < numTabs; tab++ {
		if tab > 0 {
			press(t, m, "tab")
		}
		if m.tab != tab {
			t.Fatalf("after Tab: %v, want %v", m.tab, tab)
		}
		var got []string
		for _, c := range f.take() {
			name := c.command
			if c.socket == "gw.sock" {
				name = "gw:" + name
			}
			got = append(got, name)
		}
		if tab == TabNode {
			got = got[len(got)-len(want[tab]):] // Node was fetched twice (start, and here)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[tab]) {
			t.Errorf("%v queries %v, want %v", tab, got, want[tab])
		}
		mustShow(t, m, "["+tab.String()+"]", "Connected")
	}
	press(t, m, "tab")
	if m.tab != TabNode {
		t.Errorf("Tab from the last tab went to %v", m.tab)
	}
	press(t, m, "shift+tab")
	if m.tab != TabDataplane {
		t.Errorf("Shift-Tab from Node went to %v", m.tab)
	}
	press(t, m, "g")
	if m.tab != TabGraphs {
		t.Errorf("g went to %v", m.tab)
	}
}

// TestDeleteYDisconnectsTheSelectedPeer: the first row is the parent (bob),
// Del asks, N cancels without a request, Y sends disconnect with its npub.
func TestDeleteYDisconnectsTheSelectedPeer(t *testing.T) {
	f := &fakeDaemon{resp: baseResponses()}
	f.resp["disconnect"] = `{"npub":"` + npubB + `","disconnected":true}`
	m := newTestModel(f)
	press(t, m, "tab")
	mustShow(t, m, "Peers (2)", "── Parent ──", "bob", "carol")
	press(t, m, "delete")
	if m.confirm != nil {
		t.Fatal("Del with no row selected opened the confirmation")
	}
	press(t, m, "down", "delete")
	mustShow(t, m, "Disconnect peer?", "Peer: bob", "[Y]")
	press(t, m, "n")
	if m.confirm != nil {
		t.Fatal("N left the confirmation open")
	}
	press(t, m, "delete")
	f.take()
	press(t, m, "y")
	calls := f.take()
	if len(calls) == 0 || calls[0].command != "disconnect" || calls[0].params != `{"npub":"`+npubB+`"}` {
		t.Fatalf("Y sent %+v, want disconnect {npub: bob}", calls)
	}
	mustShow(t, m, "disconnected bob")
	// Enter opens the detail, Esc closes it, Esc again deselects.
	press(t, m, "enter")
	mustShow(t, m, "Peer Detail — bob", npubB)
	press(t, m, "esc", "esc")
	if _, sel := m.sel[TabPeers]; sel || m.detail {
		t.Errorf("Esc Esc left selection %v detail %v", sel, m.detail)
	}
}

// TestDisconnectedUntilTheDaemonAnswers: a refused connection shows
// Disconnected with the reason, and the next good answer clears it.
func TestDisconnectedUntilTheDaemonAnswers(t *testing.T) {
	f := &fakeDaemon{resp: baseResponses(), down: true}
	m := newTestModel(f)
	drive(t, m, m.refetch())
	mustShow(t, m, "Disconnected: cannot connect to ctl.sock", "retrying")
	f.mu.Lock()
	f.down = false
	f.mu.Unlock()
	_, cmd := m.Update(tickMsg(time.Now()))
	// A tick batches a fetch with the next tick; run only the fetch.
	for _, c := range cmd().(tea.BatchMsg) {
		if msg, ok := c().(fetchMsg); ok {
			m.Update(msg)
			break
		}
	}
	mustShow(t, m, "Connected", "npub1aaaa", "Listening on fips0", "sshd(7) *", "fips-firewall.service inactive")
}

// TestGraphsRequestsAndNoHistory: the Graphs tab asks for upstream's
// history commands with upstream's parameters per mode, says "No stats
// history" when the daemon has no such command, and plots what returns.
func TestGraphsRequestsAndNoHistory(t *testing.T) {
	f := &fakeDaemon{resp: baseResponses()}
	m := newTestModel(f)
	press(t, m, "g")
	mustShow(t, m, "No stats history", "unknown command: show_stats_all_history")

	f.resp["show_stats_peers"] = `{"peers":[{"npub":"` + npubB + `","display_name":"bob"}],"count":1}`
	f.resp["show_stats_all_history"] = `{"granularity_seconds":1,"window_seconds":600,"peer":null,
		"series":[{"metric":"mesh_size","unit":"nodes","granularity_seconds":1,"values":[1,2,3,5,8]}]}`
	f.resp["show_stats_history_all_peers"] = `{"metric":"srtt_ms","unit":"ms","granularity_seconds":1,"window_seconds":600,
		"peers":[{"node_addr":"bb","display_name":"bob","is_active":true,"values":[2.5,3.5]}]}`
	f.take()
	press(t, m, "right")
	calls := f.take()
	if last := calls[len(calls)-1]; last.command != "show_stats_all_history" || last.params != `{"granularity":"1s","window":"1h"}` {
		t.Errorf("node mode, next window: %+v", last)
	}
	mustShow(t, m, "mode: node", "window: 1h", "mesh_size (nodes)  min 1  max 8  last 8  n 5", "█")
	press(t, m, "m")
	calls = f.take()
	if last := calls[len(calls)-1]; last.command != "show_stats_history_all_peers" ||
		last.params != `{"granularity":"1s","metric":"srtt_ms","window":"1h"}` {
		t.Errorf("metric-by-peer: %+v", last)
	}
	mustShow(t, m, "mode: metric-by-peer [srtt_ms]", "srtt_ms (ms) by peer", "bob", "3.50")
	press(t, m, "enter")
	mustShow(t, m, "srtt_ms — bob (ms)")
	press(t, m, "esc", "n")
	calls = f.take()
	if last := calls[len(calls)-1]; !strings.Contains(last.params, `"metric":"loss_rate"`) {
		t.Errorf("n in metric-by-peer: %+v", last)
	}
	press(t, m, "m")
	calls = f.take()
	if last := calls[len(calls)-1]; last.command != "show_stats_all_history" ||
		last.params != `{"granularity":"1s","peer":"`+npubB+`","window":"1h"}` {
		t.Errorf("peer-by-metric: %+v", last)
	}
	mustShow(t, m, "mode: peer-by-metric [bob]")
}

// TestRegistryDrivesDispatchHintsAndHelp: every binding is reachable in
// some context, every key the help lists is one dispatch handles there,
// and q and ? work everywhere outside the modals.
func TestRegistryDrivesDispatchHintsAndHelp(t *testing.T) {
	reached := make([]bool, len(registry))
	for tab := TabNode; tab < numTabs; tab++ {
		for _, sel := range []bool{false, true} {
			for _, detail := range []bool{false, true} {
				for _, help := range []bool{false, true} {
					for _, confirm := range []bool{false, true} {
						for g := graphsNode; g <= graphsPeerByMetric; g++ {
							c := keyCtx{tab: tab, selected: sel, detail: detail, help: help, confirm: confirm, graphs: g}
							act := active(c)
							for _, b := range act {
								for i := range registry {
									if &registry[i] == b {
										reached[i] = true
									}
								}
							}
							has := func(glyph string) bool {
								for _, b := range act {
									if b.glyph == glyph {
										return true
									}
								}
								return false
							}
							if !has("q") {
								t.Errorf("%+v: q does not quit", c)
							}
							if !help && !confirm && !has("?") {
								t.Errorf("%+v: ? is not offered", c)
							}
						}
					}
				}
			}
		}
	}
	for i, r := range reached {
		b := registry[i]
		if !r {
			t.Errorf("binding %q (%s) is never active", b.glyph, b.label)
		}
		if len(b.keys) == 0 || b.glyph == "" || b.label == "" || b.when == nil || b.run == nil {
			t.Errorf("binding %d incomplete: %+v", i, b)
		}
	}

	m := newTestModel(&fakeDaemon{resp: baseResponses()})
	press(t, m, "tab", "tab")
	press(t, m, "?")
	mustShow(t, m, "Help — Transports", "[e]", "expand all", "[Tab]", "next tab", "Press ? or Esc to close")
	press(t, m, "tab") // ignored under the overlay
	if m.tab != TabTransports || !m.help {
		t.Fatalf("Tab under the help overlay moved to %v (help %v)", m.tab, m.help)
	}
	press(t, m, "esc")
	mustShow(t, m, "[e] expand all", "[?] Help")
	press(t, m, "down", "e")
	mustShow(t, m, "▾ udp #1", "└ out 10.0.0.2:2121", "bob")
	press(t, m, "c")
	mustShow(t, m, "▸ udp #1")
}

func TestFlags(t *testing.T) {
	var out, errw strings.Builder
	if code := run([]string{"-V"}, &out, &errw); code != 0 || out.String() != "fipstop "+Version+"\n" {
		t.Errorf("-V: %d %q %q", code, out.String(), errw.String())
	}
	for _, bad := range [][]string{{"-r", "0"}, {"-r", "x"}, {"extra"}, {"--nope"}} {
		errw.Reset()
		if code := run(bad, &out, &errw); code != 2 || errw.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", bad, code, errw.String())
		}
	}
	out.Reset()
	if code := run([]string{"-h"}, &out, &errw); code != 0 || !strings.Contains(out.String(), "--gateway-socket") {
		t.Errorf("-h: %d %q", code, out.String())
	}
}

// FuzzRender feeds arbitrary JSON as every answer and draws every tab in
// every mode: a daemon's response must never crash the dashboard.
func FuzzRender(f *testing.F) {
	for _, r := range baseResponses() {
		f.Add(r)
	}
	f.Add(`{"series":[{"metric":"mesh_size","values":[null,1e308,-1]}],"peers":[{"values":[]}]}`)
	f.Add(`{"peers":[{"is_parent":"x","mmp":[]}],"sockets":[{"pid":-1}],"transports":[{"transport_id":1e30}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		resp := map[string]string{}
		for k := range baseResponses() {
			resp[k] = doc
		}
		for _, k := range []string{"show_stats_peers", "show_stats_all_history", "show_stats_history_all_peers", "disconnect"} {
			resp[k] = doc
		}
		fd := &fakeDaemon{resp: resp}
		m := newTestModel(fd)
		m.width, m.height = 80, 24
		drive(t, m, m.refetch())
		for range numTabs {
			for _, k := range []string{"down", "enter", "right", "e", "f", "end", "s", "m", "n", "?", "esc", "esc", "delete", "esc"} {
				_, cmd := m.Update(key(k))
				drive(t, m, cmd)
				_ = m.View()
			}
			_, cmd := m.Update(key("tab"))
			drive(t, m, cmd)
		}
	})
}

// TestDataplaneShowsAFXDPAndTC: the Dataplane tab lists the AF_XDP
// sockets with their ring statistics and the tc ECN counters.
func TestDataplaneShowsAFXDPAndTC(t *testing.T) {
	f := &fakeDaemon{resp: baseResponses()}
	f.resp["show_status"] = `{"npub":"npub1aaaa","state":"running","dataplane":{"mode":"xdp","configured":"xdp","reason":"attached",
		"afxdp":{"enabled":true,"sockets":1,"reason":"1 AF_XDP sockets (one per RX queue)"},
		"tc":{"attached":true,"reason":"tc_fips_egress and tc_fips_ingress attached to veth0:tcx","interfaces":[]},"outer_ce_frames":7}}`
	f.resp["show_bpf"] = `{"mode":"xdp","configured":"xdp","reason":"attached","counters":[],"interfaces":[],"maps":null,
		"xsks":[{"interface":"veth0","queue":0,"zero_copy":false,"received":4242,"to_loop":3,"rx_dropped":1,"rx_ring_full":2,"fill_ring_empty_descs":5}],
		"tc_counters":[{"direction":"ingress","reason":"ce","packets":7,"bytes":700}]}`
	m := newTestModel(f)
	drive(t, m, m.refetch())
	press(t, m, "shift+tab") // Node → Dataplane, the last tab
	if m.tab != TabDataplane {
		t.Fatalf("on %v", m.tab)
	}
	mustShow(t, m, "AF_XDP Sockets (1)", "1 AF_XDP sockets (one per RX queue)", "veth0", "copy", "4242",
		"TC ECN Counters", "attached to veth0:tcx", "Outer CE frames", "ingress", "ce")
}

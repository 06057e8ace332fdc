package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fips-go/fips/control/ctl"
)

// Tab is one screen of fipstop.
type Tab int

// The tabs in cycle order: upstream's ten, then our Dataplane tab.
const (
	TabNode Tab = iota
	TabPeers
	TabTransports
	TabSessions
	TabTree
	TabFilters
	TabPerformance
	TabRouting
	TabGraphs
	TabGateway
	TabDataplane
	numTabs
)

func (t Tab) String() string {
	return [...]string{"Node", "Peers", "Transports", "Sessions", "Tree", "Filters", "Performance",
		"Routing", "Graphs", "Gateway", "Dataplane"}[t]
}

// group separates the tab bar as upstream does: Node | Peers, Transports |
// the internals | Gateway; Dataplane joins the internals group's end.
func (t Tab) group() int {
	switch t {
	case TabNode:
		return 0
	case TabPeers, TabTransports:
		return 1
	case TabGateway:
		return 3
	case TabDataplane:
		return 4
	}
	return 2
}

// hasTable: tabs whose rows are selected with Up/Down and opened with Enter.
func (t Tab) hasTable() bool {
	return t == TabPeers || t == TabSessions || t == TabTransports || t == TabGateway
}

// panes is how many independently scrolled panes the tab stacks.
func (t Tab) panes() int {
	switch t {
	case TabTree, TabFilters, TabRouting:
		return 3
	case TabPerformance:
		return 2
	}
	return 0
}

// Graphs windows, as upstream's: (window, granularity).
var graphWindows = [][2]string{{"1m", "1s"}, {"10m", "1s"}, {"1h", "1s"}, {"24h", "1m"}}

// Node-level and per-peer history metrics in display order (upstream's
// show_stats_all_history series names).
var (
	nodeMetrics = []string{"mesh_size", "tree_depth", "peer_count", "parent_switches", "bytes_in", "bytes_out",
		"packets_in", "packets_out", "loss_rate", "active_sessions"}
	peerMetrics = []string{"srtt_ms", "loss_rate", "bytes_in", "bytes_out", "packets_in", "packets_out", "ecn_ce"}
)

// graphsMode is the Graphs tab's view.
type graphsMode int

const (
	graphsNode         graphsMode = iota // stacked node metrics
	graphsMetricByPeer                   // one per-peer metric across peers
	graphsPeerByMetric                   // every per-peer metric of one peer
)

func (g graphsMode) String() string {
	return [...]string{"node", "metric-by-peer", "peer-by-metric"}[g]
}

// graphsQuery is the Graphs state a fetch needs, copied when it starts.
type graphsQuery struct {
	mode    graphsMode
	window  [2]string
	metric  string
	peerIdx int
}

// fetchMsg carries one refresh's answers back to the model.
type fetchMsg struct {
	seq     int
	tab     Tab
	at      time.Time
	data    map[string]any   // command (gateway ones prefixed "gw:") → data
	errs    map[string]error // command → its error
	connErr error            // show_status failed: the daemon is unreachable
}

// client issues control requests; call is ctl.Call in fipstop and a fake
// in tests.
type client struct {
	socket, gateway string
	timeout         time.Duration
	call            func(ctx context.Context, socket, command string, params any) (json.RawMessage, error)
}

func (c *client) do(socket, command string, params any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	raw, err := c.call(ctx, socket, command, params)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid response JSON: %w", err)
	}
	return v, nil
}

// tabCommands are the queries each tab issues besides show_status (which
// every refresh sends first: it tells connected from disconnected and
// feeds the status line), after upstream's fetch_data.
var tabCommands = map[Tab][]string{
	TabNode:        {"show_listening_sockets"},
	TabPeers:       {"show_peers", "show_links", "show_transports"},
	TabTransports:  {"show_transports", "show_links", "show_peers"},
	TabSessions:    {"show_sessions"},
	TabTree:        {"show_tree", "show_peers"},
	TabFilters:     {"show_bloom", "show_peers"},
	TabPerformance: {"show_mmp"},
	TabRouting:     {"show_routing", "show_cache"},
	TabDataplane:   {"show_bpf"},
}

// fetch runs one refresh of tab.
func (c *client) fetch(seq int, tab Tab, g graphsQuery) fetchMsg {
	m := fetchMsg{seq: seq, tab: tab, data: map[string]any{}, errs: map[string]error{}}
	put := func(key string, v any, err error) {
		if err != nil {
			m.errs[key] = err
			return
		}
		m.data[key] = v
	}
	v, err := c.do(c.socket, "show_status", nil)
	if err != nil {
		m.connErr = err
		m.at = time.Now()
		return m
	}
	m.data["show_status"] = v
	for _, cmd := range tabCommands[tab] {
		v, err := c.do(c.socket, cmd, nil)
		put(cmd, v, err)
	}
	switch tab {
	case TabGateway:
		v, err := c.do(c.gateway, "show_gateway", nil)
		put("gw:show_gateway", v, err)
		if err == nil {
			v, err := c.do(c.gateway, "show_mappings", nil)
			put("gw:show_mappings", v, err)
		}
	case TabGraphs:
		c.fetchGraphs(g, put)
	}
	m.at = time.Now()
	return m
}

// fetchGraphs issues upstream's Graphs queries: show_stats_peers for the
// selectors, then show_stats_all_history (node, or one peer's metrics) or
// show_stats_history_all_peers (one metric across peers).
func (c *client) fetchGraphs(g graphsQuery, put func(string, any, error)) {
	peers, err := c.do(c.socket, "show_stats_peers", nil)
	put("show_stats_peers", peers, err)
	params := map[string]any{"window": g.window[0], "granularity": g.window[1]}
	cmd := "show_stats_all_history"
	switch g.mode {
	case graphsMetricByPeer:
		cmd = "show_stats_history_all_peers"
		params["metric"] = g.metric
	case graphsPeerByMetric:
		list := arr(peers, "peers")
		if len(list) == 0 {
			put("graphs", map[string]any{}, nil)
			return
		}
		params["peer"] = str(list[g.peerIdx%len(list)], "npub")
	}
	v, err := c.do(c.socket, cmd, params)
	put("graphs", v, err)
}

// unknownCommand reports whether err is the daemon's answer to a command
// it does not have.
func unknownCommand(err error) bool {
	var se *ctl.ServerError
	return errors.As(err, &se) && strings.HasPrefix(se.Message, "unknown command")
}

package main

import (
	"errors"
	"fmt"
	"sort"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/fips-go/fips/control/ctl"
)

// model is fipstop's whole state; bubbletea calls Update and View from one
// goroutine, and fetches run as commands that send a fetchMsg back.
type model struct {
	c       *client
	refresh time.Duration
	version string
	now     func() time.Time

	tab           Tab
	width, height int

	data      map[string]any   // last good answer per command
	errs      map[string]error // last error per command, cleared by a good answer
	connErr   error            // non-nil while show_status fails
	connected bool
	lastFetch time.Time
	notice    string // the last action's outcome (a disconnect, an error)

	seq      int  // fetches started
	inflight bool // a fetch is running; ticks meanwhile are skipped
	again    bool // refetch when the running one lands (the tab changed)

	sel          map[Tab]int // selected row per table tab (absent: none)
	detail       bool
	detailScroll int
	help         bool
	confirm      *confirmState
	lastKey      string

	focus    map[Tab]int
	scroll   map[[2]int]int // (tab, pane) → first row shown
	expanded map[uint64]bool

	gMode    graphsMode
	gWindow  int
	gMetric  int
	gPeer    int
	gScroll  int
	gSort    sortState
	mmpSorts [2]sortState
}

// confirmState is the pending Del → Y/N disconnect.
type confirmState struct {
	npub, name string
}

type sortState struct {
	col, cols int
	desc      bool
}

func (s *sortState) next() {
	if s.cols > 0 {
		s.col, s.desc = (s.col+1)%s.cols, false
	}
}

type tickMsg time.Time

// disconnectMsg is the answer to a Y in the confirmation.
type disconnectMsg struct {
	name string
	err  error
}

func newModel(c *client, refresh time.Duration, version string) *model {
	return &model{c: c, refresh: refresh, version: version, now: time.Now, width: 120, height: 40,
		data: map[string]any{}, errs: map[string]error{}, connErr: errors.New("not yet connected"),
		sel: map[Tab]int{}, focus: map[Tab]int{}, scroll: map[[2]int]int{}, expanded: map[uint64]bool{},
		gWindow: 1, gSort: sortState{cols: 5}, mmpSorts: [2]sortState{{cols: 6}, {cols: 6}}}
}

func (m *model) Init() tea.Cmd { return tea.Batch(m.refetch(), m.tick()) }

func (m *model) tick() tea.Cmd {
	return tea.Tick(m.refresh, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// refetch starts a fetch of the active tab now (or right after the one
// running).
func (m *model) refetch() tea.Cmd {
	if m.inflight {
		m.again = true
		return nil
	}
	m.inflight = true
	m.seq++
	seq, tab, g := m.seq, m.tab, m.graphsQuery()
	return func() tea.Msg { return m.c.fetch(seq, tab, g) }
}

func (m *model) graphsQuery() graphsQuery {
	return graphsQuery{mode: m.gMode, window: graphWindows[m.gWindow], metric: peerMetrics[m.gMetric], peerIdx: m.gPeer}
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		return m, tea.Batch(m.refetch(), m.tick())
	case fetchMsg:
		m.inflight = false
		m.apply(msg)
		if m.again {
			m.again = false
			return m, m.refetch()
		}
	case disconnectMsg:
		if msg.err != nil {
			m.notice = fmt.Sprintf("disconnect %s: %v", msg.name, msg.err)
		} else {
			m.notice = "disconnected " + msg.name
		}
		return m, m.refetch()
	case tea.KeyMsg:
		cmd, _ := m.dispatch(msg.String())
		return m, cmd
	}
	return m, nil
}

// apply merges one fetch's answers.
func (m *model) apply(f fetchMsg) {
	m.lastFetch = f.at
	if f.connErr != nil {
		m.connErr, m.connected = f.connErr, false
		return
	}
	m.connErr, m.connected = nil, true
	for k, v := range f.data {
		m.data[k] = v
		delete(m.errs, k)
	}
	if ts, ok := f.data["show_transports"]; ok {
		live := map[uint64]bool{}
		for _, t := range arr(ts, "transports") {
			live[u64(t, "transport_id")] = true
		}
		for id := range m.expanded {
			if !live[id] {
				delete(m.expanded, id) // bounded by the daemon's transports
			}
		}
	}
	for k, err := range f.errs {
		m.errs[k] = err
		if k == "gw:show_gateway" || k == "gw:show_mappings" || k == "graphs" || k == "show_stats_peers" {
			delete(m.data, k) // stale history or a gone gateway must not linger
		}
	}
	m.clampSelection()
}

func (m *model) keyCtx() keyCtx {
	_, sel := m.sel[m.tab]
	return keyCtx{tab: m.tab, selected: sel, detail: m.detail, help: m.help, confirm: m.confirm != nil, graphs: m.gMode}
}

// keyDelta is the row movement of the key being dispatched.
func (m *model) keyDelta() int {
	switch m.lastKey {
	case "up":
		return -1
	case "down":
		return 1
	case "pgup":
		return -10
	case "pgdown":
		return 10
	}
	return 0
}

func (m *model) switchTab(t Tab) tea.Cmd {
	m.tab, m.detail, m.gScroll = t, false, 0
	return m.refetch()
}

// rows is how many selectable rows the active table tab has.
func (m *model) rows() int {
	switch m.tab {
	case TabPeers:
		return len(m.sortedPeers())
	case TabSessions:
		return len(arr(m.data["show_sessions"], "sessions"))
	case TabTransports:
		return len(m.transportRows())
	case TabGateway:
		return len(arr(m.data["gw:show_mappings"], "mappings"))
	}
	return 0
}

func (m *model) moveSelection(d int) {
	n := m.rows()
	if n == 0 {
		return
	}
	i, ok := m.sel[m.tab]
	switch {
	case !ok:
		i = 0
	default:
		i = min(max(i+d, 0), n-1)
	}
	m.sel[m.tab] = i
}

func (m *model) clampSelection() {
	if i, ok := m.sel[m.tab]; ok {
		n := m.rows()
		if n == 0 {
			delete(m.sel, m.tab)
			m.detail = m.detail && !m.tab.hasTable()
		} else if i >= n {
			m.sel[m.tab] = n - 1
		}
	}
}

// sortedPeers is show_peers in the Peers tab's order: parent, children,
// others, each by LQI (best first, unmeasured last), as upstream's.
func (m *model) sortedPeers() []any {
	peers := append([]any(nil), arr(m.data["show_peers"], "peers")...)
	rank := func(p any) int {
		switch {
		case isTrue(p, "is_parent"):
			return 0
		case isTrue(p, "is_child"):
			return 1
		}
		return 2
	}
	sort.SliceStable(peers, func(i, j int) bool {
		ri, rj := rank(peers[i]), rank(peers[j])
		if ri != rj {
			return ri < rj
		}
		li, oki := num(peers[i], "mmp", "lqi")
		lj, okj := num(peers[j], "mmp", "lqi")
		switch {
		case oki && okj:
			return li < lj
		case oki != okj:
			return oki
		}
		return false
	})
	return peers
}

func (m *model) selectedPeer() any {
	i, ok := m.sel[TabPeers]
	peers := m.sortedPeers()
	if !ok || i >= len(peers) {
		return nil
	}
	return peers[i]
}

func (m *model) requestDisconnect() tea.Cmd {
	p := m.selectedPeer()
	npub := str(p, "npub")
	if npub == "-" {
		return nil
	}
	name := str(p, "display_name")
	if name == "-" {
		name = npub
	}
	m.confirm = &confirmState{npub: npub, name: name}
	return nil
}

func (m *model) confirmDisconnect() tea.Cmd {
	cs := m.confirm
	m.confirm = nil
	if cs == nil {
		return nil
	}
	c := m.c
	return func() tea.Msg {
		_, err := c.do(c.socket, "disconnect", map[string]any{"npub": cs.npub})
		return disconnectMsg{name: cs.name, err: err}
	}
}

// transportRow is one row of the Transports tree: a transport, or (when
// its transport is expanded) one of its links.
type transportRow struct {
	transport any
	link      any // nil on a transport row
}

func (m *model) transportRows() []transportRow {
	var out []transportRow
	links := arr(m.data["show_links"], "links")
	for _, t := range arr(m.data["show_transports"], "transports") {
		out = append(out, transportRow{transport: t})
		id := u64(t, "transport_id")
		if !m.expanded[id] {
			continue
		}
		for _, l := range links {
			if u64(l, "transport_id") == id {
				out = append(out, transportRow{transport: t, link: l})
			}
		}
	}
	return out
}

func (m *model) expandSelected(open bool) {
	rows := m.transportRows()
	i, ok := m.sel[TabTransports]
	if !ok || i >= len(rows) {
		return
	}
	r := rows[i]
	id := u64(r.transport, "transport_id")
	if r.link != nil {
		if !open { // ← on a link collapses its transport and selects it
			delete(m.expanded, id)
			for j, x := range m.transportRows() {
				if x.link == nil && u64(x.transport, "transport_id") == id {
					m.sel[TabTransports] = j
				}
			}
		}
		return
	}
	if open {
		if m.lastKey == " " && m.expanded[id] {
			delete(m.expanded, id) // Space toggles, as upstream's
			return
		}
		m.expanded[id] = true
	} else {
		delete(m.expanded, id)
	}
}

func (m *model) expandAll() {
	for _, t := range arr(m.data["show_transports"], "transports") {
		m.expanded[u64(t, "transport_id")] = true
	}
}

// scrollPane moves the focused pane of a multi-pane tab.
func (m *model) scrollPane() {
	k := [2]int{int(m.tab), m.focus[m.tab]}
	switch m.lastKey {
	case "home":
		m.scroll[k] = 0
	case "end":
		m.scroll[k] = 1 << 30 // the renderer clamps it to the content
	default:
		m.scroll[k] = max(0, m.scroll[k]+m.keyDelta())
	}
}

func (m *model) sortState() *sortState {
	if m.tab == TabGraphs {
		return &m.gSort
	}
	return &m.mmpSorts[m.focus[TabPerformance]%2]
}

func (m *model) graphsUpDown() tea.Cmd {
	d := m.keyDelta()
	switch {
	case m.gMode == graphsMetricByPeer:
		if n := len(arr(m.data["graphs"], "peers")); n > 0 {
			m.gPeer = (m.gPeer + d + n) % n
		}
	default:
		m.gScroll = max(0, m.gScroll+d)
	}
	return nil
}

func (m *model) graphsSelector(d int) {
	switch m.gMode {
	case graphsMetricByPeer:
		m.gMetric = (m.gMetric + d + len(peerMetrics)) % len(peerMetrics)
	case graphsPeerByMetric:
		if n := len(arr(m.data["show_stats_peers"], "peers")); n > 0 {
			m.gPeer = (m.gPeer + d + n) % n
		}
	}
}

// connText is the status line's connection state.
func (m *model) connText() string {
	if m.connected {
		return "Connected"
	}
	msg := "not yet connected"
	if m.connErr != nil {
		msg = m.connErr.Error()
		var ce *ctl.ConnectError
		if errors.As(m.connErr, &ce) {
			msg = ce.Error() + " — retrying"
		}
	}
	return "Disconnected: " + msg
}

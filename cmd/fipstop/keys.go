package main

import (
	tea "github.com/charmbracelet/bubbletea"
)

// keyCtx is what decides which bindings apply: the tab and its mode.
type keyCtx struct {
	tab      Tab
	selected bool // a table row is selected
	detail   bool // a detail view is open
	help     bool // the ? overlay is open
	confirm  bool // the Del confirmation is open
	graphs   graphsMode
}

// binding is one entry of the key registry. Dispatch, the status-line hints
// and the ? overlay all read this one table, so they cannot disagree.
type binding struct {
	keys   []string // bubbletea key names that trigger it
	glyph  string   // how help shows the key
	label  string
	global bool // listed under Global in help, last in the status line
	when   func(c keyCtx) bool
	run    func(m *model) tea.Cmd
}

func normal(c keyCtx) bool   { return !c.help && !c.confirm }
func overview(c keyCtx) bool { return normal(c) && !c.detail }
func onTab(tabs ...Tab) func(keyCtx) bool {
	return func(c keyCtx) bool {
		if !overview(c) {
			return false
		}
		for _, t := range tabs {
			if c.tab == t {
				return true
			}
		}
		return false
	}
}

// registry is every key fipstop answers, in priority order: the first
// binding whose keys match and whose when holds runs.
var registry = []binding{
	// The Del confirmation is modal: only Y, N/Esc and quit.
	{keys: []string{"y", "Y"}, glyph: "Y", label: "disconnect", when: func(c keyCtx) bool { return c.confirm },
		run: (*model).confirmDisconnect},
	{keys: []string{"n", "N", "esc"}, glyph: "N/Esc", label: "cancel", when: func(c keyCtx) bool { return c.confirm },
		run: func(m *model) tea.Cmd { m.confirm = nil; return nil }},
	// So is the help overlay.
	{keys: []string{"?", "esc"}, glyph: "?/Esc", label: "close help", when: func(c keyCtx) bool { return c.help && !c.confirm },
		run: func(m *model) tea.Cmd { m.help = false; return nil }},
	{keys: []string{"q", "ctrl+c"}, glyph: "q", label: "quit", global: true, when: func(keyCtx) bool { return true },
		run: func(*model) tea.Cmd { return tea.Quit }},

	// Detail views.
	{keys: []string{"esc"}, glyph: "Esc", label: "close", when: func(c keyCtx) bool { return normal(c) && c.detail },
		run: func(m *model) tea.Cmd { m.detail = false; return nil }},
	{keys: []string{"up", "down"}, glyph: "↑↓", label: "scroll",
		when: func(c keyCtx) bool { return normal(c) && c.detail && c.tab != TabGraphs },
		run:  func(m *model) tea.Cmd { m.detailScroll = max(0, m.detailScroll+m.keyDelta()); return nil }},

	// Peers.
	{keys: []string{"delete"}, glyph: "Del", label: "disconnect",
		when: func(c keyCtx) bool { return overview(c) && c.tab == TabPeers && c.selected },
		run:  (*model).requestDisconnect},

	// Table tabs.
	{keys: []string{"up", "down"}, glyph: "↑↓", label: "select",
		when: onTab(TabPeers, TabSessions, TabTransports, TabGateway),
		run:  func(m *model) tea.Cmd { m.moveSelection(m.keyDelta()); return nil }},
	{keys: []string{"enter"}, glyph: "Enter", label: "detail",
		when: func(c keyCtx) bool { return overview(c) && c.tab.hasTable() && c.selected },
		run:  func(m *model) tea.Cmd { m.detail, m.detailScroll = true, 0; return nil }},
	{keys: []string{"esc"}, glyph: "Esc", label: "deselect",
		when: func(c keyCtx) bool { return overview(c) && c.tab.hasTable() && c.selected },
		run:  func(m *model) tea.Cmd { delete(m.sel, m.tab); return nil }},

	// Transports.
	{keys: []string{"right", " "}, glyph: "→/Space", label: "expand", when: onTab(TabTransports),
		run: func(m *model) tea.Cmd { m.expandSelected(true); return nil }},
	{keys: []string{"left"}, glyph: "←", label: "collapse", when: onTab(TabTransports),
		run: func(m *model) tea.Cmd { m.expandSelected(false); return nil }},
	{keys: []string{"e"}, glyph: "e", label: "expand all", when: onTab(TabTransports),
		run: func(m *model) tea.Cmd { m.expandAll(); return nil }},
	{keys: []string{"c"}, glyph: "c", label: "collapse all", when: onTab(TabTransports),
		run: func(m *model) tea.Cmd { m.expanded = map[uint64]bool{}; return nil }},

	// Multi-pane tabs (Tree, Filters, Routing, Performance).
	{keys: []string{"f"}, glyph: "f", label: "focus pane", when: onTab(TabTree, TabFilters, TabRouting, TabPerformance),
		run: func(m *model) tea.Cmd { m.focus[m.tab] = (m.focus[m.tab] + 1) % m.tab.panes(); return nil }},
	{keys: []string{"up", "down", "pgup", "pgdown", "home", "end"}, glyph: "↑↓ PgUp/PgDn Home/End", label: "scroll",
		when: onTab(TabTree, TabFilters, TabRouting, TabPerformance),
		run:  func(m *model) tea.Cmd { m.scrollPane(); return nil }},
	// Node and Dataplane scroll when the terminal is shorter than they are.
	{keys: []string{"up", "down", "pgup", "pgdown", "home", "end"}, glyph: "↑↓", label: "scroll",
		when: onTab(TabNode, TabDataplane), run: func(m *model) tea.Cmd { m.scrollPane(); return nil }},
	{keys: []string{"s"}, glyph: "s", label: "sort column", when: onTab(TabPerformance, TabGraphs),
		run: func(m *model) tea.Cmd { m.sortState().next(); return nil }},
	{keys: []string{"S"}, glyph: "S", label: "sort direction", when: onTab(TabPerformance, TabGraphs),
		run: func(m *model) tea.Cmd { m.sortState().desc = !m.sortState().desc; return nil }},

	// Graphs.
	{keys: []string{"up", "down"}, glyph: "↑↓", label: "scroll / select peer",
		when: func(c keyCtx) bool { return normal(c) && c.tab == TabGraphs },
		run:  (*model).graphsUpDown},
	{keys: []string{"right", " "}, glyph: "→/Space", label: "next window", when: onTab(TabGraphs),
		run: func(m *model) tea.Cmd { m.gWindow = (m.gWindow + 1) % len(graphWindows); return m.refetch() }},
	{keys: []string{"left"}, glyph: "←", label: "previous window", when: onTab(TabGraphs),
		run: func(m *model) tea.Cmd {
			m.gWindow = (m.gWindow + len(graphWindows) - 1) % len(graphWindows)
			return m.refetch()
		}},
	{keys: []string{"enter"}, glyph: "Enter", label: "expand peer",
		when: func(c keyCtx) bool { return onTab(TabGraphs)(c) && c.graphs == graphsMetricByPeer },
		run:  func(m *model) tea.Cmd { m.detail, m.detailScroll = true, 0; return nil }},
	{keys: []string{"m"}, glyph: "m", label: "mode", when: func(c keyCtx) bool { return normal(c) && c.tab == TabGraphs },
		run: func(m *model) tea.Cmd {
			m.gMode, m.gScroll, m.detail = (m.gMode+1)%3, 0, false
			return m.refetch()
		}},
	{keys: []string{"n"}, glyph: "n", label: "next metric/peer", when: func(c keyCtx) bool { return normal(c) && c.tab == TabGraphs },
		run: func(m *model) tea.Cmd { m.graphsSelector(1); return m.refetch() }},
	{keys: []string{"N"}, glyph: "N", label: "previous metric/peer", when: func(c keyCtx) bool { return normal(c) && c.tab == TabGraphs },
		run: func(m *model) tea.Cmd { m.graphsSelector(-1); return m.refetch() }},

	// Global.
	{keys: []string{"tab"}, glyph: "Tab", label: "next tab", global: true, when: normal,
		run: func(m *model) tea.Cmd { return m.switchTab((m.tab + 1) % numTabs) }},
	{keys: []string{"shift+tab"}, glyph: "Shift-Tab", label: "previous tab", global: true, when: normal,
		run: func(m *model) tea.Cmd { return m.switchTab((m.tab + numTabs - 1) % numTabs) }},
	{keys: []string{"g"}, glyph: "g", label: "graphs", global: true, when: normal,
		run: func(m *model) tea.Cmd { return m.switchTab(TabGraphs) }},
	{keys: []string{"?"}, glyph: "?", label: "help", global: true, when: normal,
		run: func(m *model) tea.Cmd { m.help = true; return nil }},
}

// dispatch runs the first binding for key in the model's context.
func (m *model) dispatch(key string) (tea.Cmd, bool) {
	c := m.keyCtx()
	for i := range registry {
		b := &registry[i]
		if !b.when(c) {
			continue
		}
		for _, k := range b.keys {
			if k == key {
				m.lastKey = key
				return b.run(m), true
			}
		}
	}
	return nil, false
}

// active lists the bindings that apply now, contextual ones first, each key
// once (the first binding for a key is the one dispatch runs).
func active(c keyCtx) []*binding {
	seen := map[string]bool{}
	var ctxs, globals []*binding
	for i := range registry {
		b := &registry[i]
		if !b.when(c) {
			continue
		}
		fresh := false
		for _, k := range b.keys {
			if !seen[k] {
				fresh = true
				seen[k] = true
			}
		}
		if !fresh {
			continue
		}
		if b.global {
			globals = append(globals, b)
		} else {
			ctxs = append(ctxs, b)
		}
	}
	return append(ctxs, globals...)
}

package main

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

var (
	stActive = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
	stDim    = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	stHead   = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
	stOK     = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	stBad    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("9"))
	stWarn   = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	stSel    = lipgloss.NewStyle().Reverse(true)
	stKey    = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
)

// View draws the whole screen: tab bar, the tab, status line.
func (m *model) View() string {
	w, h := max(m.width, 20), max(m.height, 5)
	body := h - 3
	var content []string
	switch {
	case m.help:
		content = m.viewHelp()
	default:
		content = m.viewTab(w, body)
	}
	if m.confirm != nil {
		content = overlay(content, m.viewConfirm(), w)
	}
	lines := []string{m.viewTabBar(w), stDim.Render(strings.Repeat("─", w))}
	lines = append(lines, fit(content, body)...)
	lines = append(lines, m.viewStatus(w))
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "")
	}
	return strings.Join(lines, "\n")
}

// viewTabBar is the tab names with the active one bracketed; on a narrow
// terminal it shows the stretch of tabs around the active one.
func (m *model) viewTabBar(w int) string {
	seg := make([]string, numTabs)
	for t := Tab(0); t < numTabs; t++ {
		sep := ""
		if t > 0 {
			sep = stDim.Render(" | ")
			if t.group() != (t - 1).group() {
				sep = stDim.Render(" │ ")
			}
		}
		name := t.String()
		if t == m.tab {
			name = stActive.Render("[" + name + "]")
		}
		seg[t] = sep + name
	}
	title := " fipstop " + m.version + "  "
	width := func(lo, hi Tab) int {
		n := 0
		for t := lo; t <= hi; t++ {
			n += lipgloss.Width(seg[t])
		}
		return n
	}
	if width(0, numTabs-1)+len(title) <= w {
		return title + strings.Join(seg, "")
	}
	lo, hi := m.tab, m.tab
	for {
		grown := false
		if hi+1 < numTabs && width(lo, hi+1)+4 <= w {
			hi++
			grown = true
		}
		if lo > 0 && width(lo-1, hi)+4 <= w {
			lo--
			grown = true
		}
		if !grown {
			break
		}
	}
	bar := strings.TrimPrefix(strings.Join(seg[lo:hi+1], ""), stDim.Render(" | "))
	bar = strings.TrimPrefix(bar, stDim.Render(" │ "))
	left, right := "  ", ""
	if lo > 0 {
		left = "‹ "
	}
	if hi < numTabs-1 {
		right = " ›"
	}
	return left + bar + right
}

func (m *model) viewStatus(w int) string {
	var conn string
	if m.connected {
		conn = stOK.Render(" " + m.connText() + " ")
	} else {
		conn = stBad.Render(" " + m.connText() + " ")
	}
	upd := "never"
	if !m.lastFetch.IsZero() {
		upd = fmt.Sprintf("%.1fs ago", m.now().Sub(m.lastFetch).Seconds())
	}
	s := conn + fmt.Sprintf("| Refresh: %gs | Updated: %s ", m.refresh.Seconds(), upd)
	if m.notice != "" {
		s += "| " + m.notice + " "
	}
	s += "| "
	budget := w - lipgloss.Width(s) - len("[?] Help")
	for _, b := range active(m.keyCtx()) {
		if b.glyph == "?" {
			continue
		}
		h := stKey.Render("["+b.glyph+"]") + " " + b.label + " "
		if lipgloss.Width(h) > budget {
			break
		}
		s += h
		budget -= lipgloss.Width(h)
	}
	return s + stDim.Render("[?] Help")
}

// viewHelp is the ? overlay: every key that works here, from the registry.
func (m *model) viewHelp() []string {
	c := m.keyCtx()
	c.help = false
	lines := []string{stHead.Render(fmt.Sprintf(" Help — %s", m.tab)), "", stHead.Render("  Context")}
	var globals []string
	n := 0
	for _, b := range active(c) {
		row := fmt.Sprintf("    %-24s %s", "["+b.glyph+"]", b.label)
		if b.global {
			globals = append(globals, row)
			continue
		}
		lines = append(lines, row)
		n++
	}
	if n == 0 {
		lines = append(lines, stDim.Render("    (no context-specific keys)"))
	}
	lines = append(lines, "", stHead.Render("  Global"))
	lines = append(lines, globals...)
	return append(lines, "", stDim.Render("  Press ? or Esc to close"))
}

func (m *model) viewConfirm() []string {
	return []string{
		"┌─ Confirm ──────────────────────────────────────────────┐",
		"│ " + stBad.Render("Disconnect peer?"),
		"│ Peer: " + m.confirm.name,
		"│ It stays disconnected until you manually reconnect it.",
		"│ " + stKey.Render("[Y]") + " disconnect    " + stKey.Render("[N/Esc]") + " cancel",
		"└────────────────────────────────────────────────────────┘",
	}
}

// overlay puts box over the middle rows of content.
func overlay(content, box []string, w int) []string {
	out := append([]string(nil), content...)
	for len(out) < len(box)+4 {
		out = append(out, "")
	}
	top := max(0, (len(out)-len(box))/2)
	pad := strings.Repeat(" ", max(0, (w-58)/2))
	for i, l := range box {
		out[top+i] = pad + l
	}
	return out
}

// fit clips or pads lines to exactly h rows.
func fit(lines []string, h int) []string {
	if len(lines) > h {
		return lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}

// header is a section title line.
func header(title string) string { return stHead.Render("── " + title + " ──") }

// kv is an aligned "label: value" line.
func kv(label, value string) string { return fmt.Sprintf("  %-22s %s", label+":", value) }

// table renders rows under cols, padding every column to its widest cell;
// row sel (−1 for none) is marked.
func table(cols []string, rows [][]string, sel int) []string {
	w := make([]int, len(cols))
	for i, c := range cols {
		w[i] = lipgloss.Width(c)
	}
	for _, r := range rows {
		if len(r) == 1 {
			continue // a label row spans the table
		}
		for i := range r {
			if i < len(w) {
				w[i] = max(w[i], lipgloss.Width(r[i]))
			}
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells {
			if i >= len(w) {
				break
			}
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", w[i]-lipgloss.Width(c)+2))
			}
		}
		return b.String()
	}
	out := []string{"  " + stHead.Render(line(cols))}
	for i, r := range rows {
		switch len(r) {
		case 0:
			out = append(out, "")
			continue
		case 1:
			out = append(out, "  "+stHead.Render(r[0]))
			continue
		}
		if i == sel {
			out = append(out, stSel.Render("> "+line(r)))
		} else {
			out = append(out, "  "+line(r))
		}
	}
	return out
}

// pane is one independently scrolled part of a multi-pane tab.
type pane struct {
	title string
	lines []string
}

// panes stacks ps in h rows, each with its scroll offset; the focused one's
// title is marked.
func (m *model) panes(ps []pane, h int) []string {
	var out []string
	each := max(2, h/len(ps))
	for i, p := range ps {
		rows := each - 1
		if i == len(ps)-1 {
			rows = max(1, h-len(out)-1)
		}
		k := [2]int{int(m.tab), i}
		off := min(m.scroll[k], max(0, len(p.lines)-rows))
		m.scroll[k] = off
		title := p.title
		if len(p.lines) > rows {
			title += fmt.Sprintf(" (%d–%d of %d)", off+1, min(off+rows, len(p.lines)), len(p.lines))
		}
		if m.focus[m.tab] == i {
			out = append(out, stActive.Render("▶ "+title))
		} else {
			out = append(out, stHead.Render("  "+title))
		}
		out = append(out, fit(append([]string(nil), p.lines[off:]...), rows)...)
	}
	return out
}

// waiting is the content before a tab's first answer.
func (m *model) waiting(cmd string) []string {
	if err, ok := m.errs[cmd]; ok {
		return []string{"", "  " + cmd + ": " + err.Error()}
	}
	if !m.connected {
		return []string{"", stDim.Render("  Waiting for the daemon…")}
	}
	return []string{"", stDim.Render("  Waiting for data...")}
}

func (m *model) viewTab(w, h int) []string {
	switch m.tab {
	case TabNode:
		return m.scrollTab(m.viewNode(w), h)
	case TabPeers:
		return m.viewPeers(h)
	case TabTransports:
		return m.viewTransports(h)
	case TabSessions:
		return m.viewSessions(h)
	case TabTree:
		return m.viewTree(h)
	case TabFilters:
		return m.viewFilters(h)
	case TabPerformance:
		return m.viewPerformance(h)
	case TabRouting:
		return m.viewRouting(h)
	case TabGraphs:
		return m.viewGraphs(w, h)
	case TabGateway:
		return m.viewGateway(h)
	case TabDataplane:
		return m.scrollTab(m.viewDataplane(), h)
	}
	return nil
}

// scrolled shows lines from the detail scroll offset.
func (m *model) scrolled(lines []string, h int) []string {
	m.detailScroll = min(m.detailScroll, max(0, len(lines)-h))
	return lines[m.detailScroll:]
}

// scrollTab shows a single-pane tab from its scroll offset.
func (m *model) scrollTab(lines []string, h int) []string {
	k := [2]int{int(m.tab), 0}
	m.scroll[k] = min(m.scroll[k], max(0, len(lines)-h))
	return lines[m.scroll[k]:]
}

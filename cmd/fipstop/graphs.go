package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// plot renders vals as rows lines of block characters, newest at the right,
// resampled to width columns (each column the mean of its samples).
func plot(vals []float64, width, rows int) []string {
	cols := make([]float64, width)
	for i := range cols {
		cols[i] = math.NaN()
	}
	if n := len(vals); n > 0 && width > 0 {
		per := float64(n) / float64(width)
		start := 0
		if per < 1 { // fewer samples than columns: right-align, one per column
			start, per = width-n, 1
		}
		for c := start; c < width; c++ {
			lo, hi := int(float64(c-start)*per), int(float64(c-start+1)*per)
			sum, k := 0.0, 0
			for i := lo; i < hi && i < n; i++ {
				if !math.IsNaN(vals[i]) {
					sum += vals[i]
					k++
				}
			}
			if k > 0 {
				cols[c] = sum / float64(k)
			}
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range cols {
		if !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > 0 {
		lo = 0 // bars stand on zero for non-negative series
	}
	eighths := []rune(" ▁▂▃▄▅▆▇█")
	out := make([]string, rows)
	for r := range rows {
		var b strings.Builder
		for _, v := range cols {
			if math.IsNaN(v) {
				b.WriteRune(' ')
				continue
			}
			level := 1.0 // a flat series is a baseline
			if hi > lo {
				level = math.Max(1, (v-lo)/(hi-lo)*float64(rows*8)) // 1..rows*8
			}
			fill := level - float64((rows-1-r)*8)
			b.WriteRune(eighths[int(math.Max(0, math.Min(8, math.Round(fill))))])
		}
		out[r] = b.String()
	}
	return out
}

// stats are a series' min, max, last and sample count (NaNs skipped).
func stats(vals []float64) (lo, hi, last float64, n int) {
	lo, hi, last = math.NaN(), math.NaN(), math.NaN()
	for _, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		if n == 0 || v < lo {
			lo = v
		}
		if n == 0 || v > hi {
			hi = v
		}
		last = v
		n++
	}
	return
}

func fmtVal(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) < 1:
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func metricBlock(name, unit string, vals []float64, width int) []string {
	lo, hi, last, n := stats(vals)
	title := fmt.Sprintf("  %s (%s)  min %s  max %s  last %s  n %d", name, unit, fmtVal(lo), fmtVal(hi), fmtVal(last), n)
	out := []string{stHead.Render(title)}
	for _, l := range plot(vals, max(10, width-4), 3) {
		out = append(out, "  "+stOK.Render(l))
	}
	return append(out, "")
}

// series returns the history response's series by metric name.
func seriesByName(d any) map[string][2]any {
	out := map[string][2]any{}
	for _, s := range arr(d, "series") {
		out[str(s, "metric")] = [2]any{str(s, "unit"), s}
	}
	return out
}

func (m *model) viewGraphs(w, h int) []string {
	win := graphWindows[m.gWindow]
	sel := ""
	peers := arr(m.data["show_stats_peers"], "peers")
	switch m.gMode {
	case graphsMetricByPeer:
		sel = " [" + peerMetrics[m.gMetric] + "]"
	case graphsPeerByMetric:
		sel = " [(no peers)]"
		if len(peers) > 0 {
			sel = " [" + str(peers[m.gPeer%len(peers)], "display_name") + "]"
		}
	}
	top := []string{
		fmt.Sprintf("  mode: %s%s   window: %s   granularity: %s   scroll: %d", m.gMode, sel, win[0], win[1], m.gScroll),
		header("Graphs — " + m.gMode.String()),
	}
	if err, failed := m.errs["graphs"]; failed {
		msg := "  " + err.Error()
		if unknownCommand(err) {
			msg = "  No stats history: this daemon does not keep one (" + err.Error() + ")."
		}
		return append(top, "", stWarn.Render(msg))
	}
	d, ok := m.data["graphs"]
	if !ok {
		return append(top, stDim.Render("  Waiting for data..."))
	}
	var body []string
	switch m.gMode {
	case graphsNode, graphsPeerByMetric:
		names := nodeMetrics
		if m.gMode == graphsPeerByMetric {
			names = peerMetrics
			if len(peers) == 0 {
				return append(top, "", stDim.Render("  No peers in the stats history yet."))
			}
		}
		byName := seriesByName(d)
		if len(byName) == 0 {
			return append(top, "", stDim.Render("  No history samples yet."))
		}
		for _, n := range names {
			s, ok := byName[n]
			if !ok {
				continue
			}
			body = append(body, metricBlock(n, s[0].(string), floats(s[1], "values"), w)...)
		}
	case graphsMetricByPeer:
		body = m.metricByPeer(d, w, h-len(top))
		if m.detail {
			return append(top, body...)
		}
	}
	m.gScroll = min(m.gScroll, max(0, len(body)-(h-len(top))))
	return append(top, body[m.gScroll:]...)
}

// metricByPeer lists one metric across every peer (min/max/last/n and a
// sparkline), sortable; Enter expands the selected peer into a full plot.
func (m *model) metricByPeer(d any, w, h int) []string {
	type row struct {
		name        string
		vals        []float64
		lo, hi, lst float64
		n           int
	}
	var rows []row
	for _, p := range arr(d, "peers") {
		v := floats(p, "values")
		lo, hi, last, n := stats(v)
		rows = append(rows, row{str(p, "display_name"), v, lo, hi, last, n})
	}
	if len(rows) == 0 {
		return []string{"", stDim.Render("  No peers in the stats history yet.")}
	}
	s := m.gSort
	key := func(r row) float64 { return [...]float64{0, r.lo, r.hi, r.lst, float64(r.n)}[s.col] }
	sort.SliceStable(rows, func(i, j int) bool {
		if s.col == 0 {
			if s.desc {
				return rows[i].name > rows[j].name
			}
			return rows[i].name < rows[j].name
		}
		if s.desc {
			return key(rows[i]) > key(rows[j])
		}
		return key(rows[i]) < key(rows[j])
	})
	m.gPeer %= len(rows)
	unit := str(d, "unit")
	if m.detail {
		r := rows[m.gPeer]
		out := metricBlock(fmt.Sprintf("%s — %s", peerMetrics[m.gMetric], r.name), unit, nil, w)[:1]
		out[0] = stHead.Render(fmt.Sprintf("  %s — %s (%s)  min %s  max %s  last %s  n %d", peerMetrics[m.gMetric], r.name,
			unit, fmtVal(r.lo), fmtVal(r.hi), fmtVal(r.lst), r.n))
		for _, l := range plot(r.vals, max(10, w-4), max(3, h-2)) {
			out = append(out, "  "+stOK.Render(l))
		}
		return out
	}
	dir := "↑"
	if s.desc {
		dir = "↓"
	}
	out := []string{fmt.Sprintf("  %s (%s) by peer — sort: %s %s", str(d, "metric"), unit, []string{"name", "min", "max", "last", "n"}[s.col], dir)}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{short(r.name, 24), fmtVal(r.lo), fmtVal(r.hi), fmtVal(r.lst), fmt.Sprint(r.n),
			sparkline(tail(r.vals, max(10, w-80)))})
	}
	return append(out, table([]string{"Peer", "Min", "Max", "Last", "N", "History"}, cells, m.gPeer)...)
}

func tail(v []float64, n int) []float64 {
	if len(v) > n {
		return v[len(v)-n:]
	}
	return v
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/fips-go/fips/control/ctl"
)

// statsTargets are the `fipsctl stats` subcommands: upstream's list,
// metrics, peers and history, and fips-go's all-history and
// history-all-peers (upstream leaves those two to fipstop).
var statsTargets = []string{"list", "metrics", "peers", "history", "all-history", "history-all-peers"}

const statsUsage = "stats list|metrics|peers\n" +
	"       fipsctl stats history METRIC [--peer PEER] [--window 10m] [--granularity 1s] [--plot]\n" +
	"       fipsctl stats all-history [--peer PEER] [--window 10m] [--granularity 1s] [--plot]\n" +
	"       fipsctl stats history-all-peers METRIC [--window 10m] [--granularity 1s] [--plot]"

// runStats is `fipsctl stats`: the history recorder's metric list, the
// counter families (show_metrics), the tracked peers, and time series.
func runStats(e *env, args []string) error {
	if len(args) == 0 {
		return usageError{msg: "a subcommand is required", usage: statsUsage}
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "-h", "--help", "-help", "help":
		fmt.Fprintf(e.stdout, "usage: fipsctl %s\n\nMETRIC: see `fipsctl stats list` (per-peer metrics need --peer)\n"+
			"PEER: an npub or a name from %s\n--window: <N>s, <N>m or <N>h; --granularity: 1s (fast ring) or 1m (slow ring)\n",
			statsUsage, e.hostsFile)
		return nil
	case "list", "metrics", "peers":
		if len(rest) != 0 {
			return usageError{msg: fmt.Sprintf("unexpected argument '%s' found", rest[0]), usage: statsUsage}
		}
		return query(e, map[string]string{"list": "show_stats_list", "metrics": "show_metrics", "peers": "show_stats_peers"}[sub], nil)
	case "history", "all-history", "history-all-peers":
	default:
		return usageError{msg: fmt.Sprintf("unrecognized subcommand '%s'", sub), usage: statsUsage}
	}
	syn := map[string]string{"history": "<METRIC> [--peer PEER] [--window 10m] [--granularity 1s] [--plot]",
		"all-history":       "[--peer PEER] [--window 10m] [--granularity 1s] [--plot]",
		"history-all-peers": "<METRIC> [--window 10m] [--granularity 1s] [--plot]"}[sub]
	fs := newFlags(e, "stats "+sub, syn)
	var peer *string
	if sub != "history-all-peers" {
		peer = fs.String("peer", "", "peer npub or hosts-file name (per-peer metrics)")
	}
	window := fs.String("window", "10m", "window: <N>s, <N>m or <N>h")
	gran := fs.String("granularity", "1s", "sample resolution: 1s or 1m")
	plot := fs.Bool("plot", false, "render a Unicode block sparkline instead of JSON")
	pos, err := fs.parseInterleaved(rest)
	if err != nil {
		return err
	}
	wantPos := 1
	if sub == "all-history" {
		wantPos = 0
	}
	if len(pos) > wantPos {
		return usageError{msg: fmt.Sprintf("unexpected argument '%s' found", pos[wantPos]), usage: fs.Name() + " " + syn}
	}
	if len(pos) < wantPos {
		return usageError{msg: "the following required arguments were not provided:\n  <METRIC>", usage: fs.Name() + " " + syn}
	}
	params := map[string]string{"window": *window, "granularity": *gran}
	if wantPos == 1 {
		params["metric"] = pos[0]
	}
	if peer != nil && fs.set("peer") {
		npub, err := resolvePeer(e.hostsFile, *peer)
		if err != nil {
			return err
		}
		params["peer"] = npub
	}
	command := map[string]string{"history": "show_stats_history", "all-history": "show_stats_all_history",
		"history-all-peers": "show_stats_history_all_peers"}[sub]
	if !*plot {
		return query(e, command, params)
	}
	data, err := ctl.Call(context.Background(), e.socket, command, params)
	if err != nil {
		return err
	}
	switch sub {
	case "history":
		var s plotSeries
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("invalid response JSON: %v", err)
		}
		printPlot(e.stdout, pos[0], s)
	case "all-history":
		var d struct {
			Series []plotSeries `json:"series"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("invalid response JSON: %v", err)
		}
		for _, s := range d.Series {
			printPlot(e.stdout, s.Metric, s)
		}
	case "history-all-peers":
		var d struct {
			plotSeries
			Peers []struct {
				DisplayName string     `json:"display_name"`
				IsActive    bool       `json:"is_active"`
				Values      []*float64 `json:"values"`
			} `json:"peers"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("invalid response JSON: %v", err)
		}
		if len(d.Peers) == 0 {
			fmt.Fprintf(e.stdout, "%s: no peers tracked\n", pos[0])
		}
		for _, p := range d.Peers {
			s := d.plotSeries
			s.Values = p.Values
			label := pos[0] + " " + p.DisplayName
			if !p.IsActive {
				label += " (inactive)"
			}
			printPlot(e.stdout, label, s)
		}
	}
	return nil
}

// plotSeries is a series as the daemon sends it: gaps are null.
type plotSeries struct {
	Metric             string     `json:"metric"`
	Unit               string     `json:"unit"`
	GranularitySeconds uint64     `json:"granularity_seconds"`
	Values             []*float64 `json:"values"`
}

// printPlot renders a series as upstream fipsctl's --plot does: a header
// with the window and the gap count, min/max/last to three decimals, and
// a line of Unicode blocks, a space for each gap.
func printPlot(w io.Writer, label string, s plotSeries) {
	vals := make([]float64, len(s.Values))
	for i, v := range s.Values {
		vals[i] = math.NaN()
		if v != nil {
			vals[i] = *v
		}
	}
	if len(vals) == 0 {
		fmt.Fprintf(w, "%s: no data yet\n", label)
		return
	}
	lo, hi, gaps, last := math.Inf(1), math.Inf(-1), 0, math.NaN()
	for _, v := range vals {
		if math.IsNaN(v) {
			gaps++
			continue
		}
		lo, hi, last = math.Min(lo, v), math.Max(hi, v), v
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 0
	}
	g := max(s.GranularitySeconds, 1)
	gapText := ""
	if gaps > 0 {
		gapText = fmt.Sprintf(" (%d gaps)", gaps)
	}
	fmt.Fprintf(w, "%s (%s) — %d samples @ %ds = %ds window%s\n", label, s.Unit, len(vals), g, uint64(len(vals))*g, gapText)
	lastText := "-"
	if !math.IsNaN(last) {
		lastText = fmt.Sprintf("%.3f", last)
	}
	fmt.Fprintf(w, "  min=%.3f max=%.3f last=%s\n", lo, hi, lastText)
	fmt.Fprintf(w, "  %s\n", sparkline(vals, lo, hi))
}

// sparkline maps values onto eight block heights between lo and hi; a
// gap is a space, a flat series the middle block.
func sparkline(vals []float64, lo, hi float64) string {
	blocks := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	span := hi - lo
	for _, v := range vals {
		switch {
		case math.IsNaN(v):
			b.WriteByte(' ')
		case math.IsInf(span, 0) || math.IsNaN(span) || span <= 0:
			b.WriteRune(blocks[3])
		default:
			norm := math.Min(math.Max((v-lo)/span, 0), 1)
			b.WriteRune(blocks[min(int(math.Round(norm*7)), 7)])
		}
	}
	return b.String()
}

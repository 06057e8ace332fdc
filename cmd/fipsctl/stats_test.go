//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/ctl"
)

func TestStatsCommands(t *testing.T) {
	d := startDaemon(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("test-us01 "+npubA+"\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string // what the daemon saw
	}{
		{[]string{"stats", "list"}, "show_stats_list"},
		{[]string{"stats", "metrics"}, "show_metrics"},
		{[]string{"stats", "peers"}, "show_stats_peers"},
		// Upstream sends the defaults explicitly.
		{[]string{"stats", "history", "mesh_size"}, `show_stats_history {"granularity":"1s","metric":"mesh_size","window":"10m"}`},
		// Flags before or after the metric; --peer resolves hosts names.
		{[]string{"stats", "history", "--window", "1h", "srtt_ms", "--peer", "test-us01", "--granularity=1m"},
			`show_stats_history {"granularity":"1m","metric":"srtt_ms","peer":"` + npubA + `","window":"1h"}`},
		{[]string{"stats", "all-history", "--peer", npubB},
			`show_stats_all_history {"granularity":"1s","peer":"` + npubB + `","window":"10m"}`},
		{[]string{"stats", "history-all-peers", "ecn_ce", "--window", "30s"},
			`show_stats_history_all_peers {"granularity":"1s","metric":"ecn_ce","window":"30s"}`},
	} {
		code, out, errs := fipsctlWith(t, hosts, append([]string{"-s", d.path}, tc.args...)...)
		if code != 0 || errs != "" || d.last() != tc.want || !strings.HasPrefix(out, "{\n") {
			t.Errorf("%v: exit %d %q; daemon saw %q; out %q", tc.args, code, errs, d.last(), out)
		}
	}
	// An unknown --peer name never reaches the daemon.
	before := d.last()
	code, _, errs := fipsctlWith(t, hosts, "-s", d.path, "stats", "history", "srtt_ms", "--peer", "nobody")
	if code != 1 || !strings.HasPrefix(errs, "error: unknown host 'nobody'\n") || d.last() != before {
		t.Errorf("unknown peer: %d %q", code, errs)
	}
	// The daemon's refusal is the error line.
	code, out, errs := fipsctl(t, "", "-s", d.path, "stats", "history", "bogus")
	if code != 1 || out != "" || errs != "error: unknown metric: bogus\n" {
		t.Errorf("daemon error: %d %q %q", code, out, errs)
	}
	code, _, errs = fipsctl(t, "", "-s", d.path, "stats", "history", "bogus", "--plot")
	if code != 1 || errs != "error: unknown metric: bogus\n" {
		t.Errorf("daemon error with --plot: %d %q", code, errs)
	}
}

func TestStatsPlot(t *testing.T) {
	d := startDaemon(t)
	code, out, errs := fipsctl(t, "", "-s", d.path, "stats", "history", "bytes_in", "--window", "8s", "--plot")
	want := "bytes_in (bytes/s) — 8 samples @ 1s = 8s window (2 gaps)\n" +
		"  min=0.000 max=700.000 last=700.000\n" +
		"  ▁▂▃  ▆▇█\n"
	if code != 0 || errs != "" || out != want {
		t.Errorf("exit %d %q\ngot\n%s\nwant\n%s", code, errs, out, want)
	}
	code, out, _ = fipsctl(t, "", "-s", d.path, "stats", "history", "mesh_size", "--plot")
	if code != 0 || out != "mesh_size (nodes) — 3 samples @ 60s = 180s window\n  min=5.000 max=5.000 last=5.000\n  ▄▄▄\n" {
		t.Errorf("flat series: %q", out)
	}
	code, out, _ = fipsctl(t, "", "-s", d.path, "stats", "history", "tree_depth", "--plot")
	if code != 0 || out != "tree_depth: no data yet\n" {
		t.Errorf("empty series: %q", out)
	}
	code, out, _ = fipsctl(t, "", "-s", d.path, "stats", "history", "loss_rate", "--plot")
	if code != 0 || out != "loss_rate (fraction) — 2 samples @ 1s = 2s window (2 gaps)\n  min=0.000 max=0.000 last=-\n    \n" {
		t.Errorf("all gaps: %q", out)
	}
	code, out, _ = fipsctl(t, "", "-s", d.path, "stats", "history-all-peers", "srtt_ms", "--plot")
	if code != 0 || !strings.Contains(out, "srtt_ms test-us01 (ms) — 2 samples") || !strings.Contains(out, "srtt_ms gone (inactive) (ms)") {
		t.Errorf("all peers: %q", out)
	}
	code, out, _ = fipsctl(t, "", "-s", d.path, "stats", "all-history", "--plot")
	if code != 0 || strings.Count(out, " samples @ ") != 2 || !strings.HasPrefix(out, "mesh_size (nodes) — 1 samples") {
		t.Errorf("all history: %q", out)
	}
}

// registerStats adds canned show_stats_* answers to a test daemon.
func registerStats(d *daemon, reg *ctl.Registry) {
	series := func(metric, unit string, g uint64, vals ...any) map[string]any {
		return map[string]any{"metric": metric, "unit": unit, "granularity_seconds": g, "values": vals}
	}
	canned := map[string]map[string]any{
		"bytes_in":   series("bytes_in", "bytes/s", 1, 0.0, 100.0, 200.0, nil, nil, 500.0, 600.0, 700.0),
		"mesh_size":  series("mesh_size", "nodes", 60, 5.0, 5.0, 5.0),
		"tree_depth": series("tree_depth", "hops", 1),
		"loss_rate":  series("loss_rate", "fraction", 1, nil, nil),
	}
	for _, name := range []string{"show_stats_list", "show_stats_peers", "show_metrics"} {
		reg.Register(name, func(_ context.Context, p json.RawMessage) (any, error) {
			d.record(name, p)
			return map[string]any{"command": name}, nil
		})
	}
	reg.Register("show_stats_history", func(_ context.Context, raw json.RawMessage) (any, error) {
		d.record("show_stats_history", raw)
		p := ctl.ParseParams(raw)
		m, _ := p.String("metric")
		if s, ok := canned[m]; ok {
			return s, nil
		}
		if m == "srtt_ms" {
			return series("srtt_ms", "ms", 1, 1.5), nil
		}
		return nil, ctl.Errorf("unknown metric: %s", m)
	})
	reg.Register("show_stats_all_history", func(_ context.Context, raw json.RawMessage) (any, error) {
		d.record("show_stats_all_history", raw)
		return map[string]any{"granularity_seconds": 1, "window_seconds": 1, "peer": nil,
			"series": []any{series("mesh_size", "nodes", 1, 4.0), series("peer_count", "peers", 1, 1.0)}}, nil
	})
	reg.Register("show_stats_history_all_peers", func(_ context.Context, raw json.RawMessage) (any, error) {
		d.record("show_stats_history_all_peers", raw)
		return map[string]any{"metric": "srtt_ms", "unit": "ms", "granularity_seconds": 1, "window_seconds": 2,
			"peers": []any{
				map[string]any{"node_addr": "00", "display_name": "test-us01", "is_active": true, "values": []any{1.0, 2.0}},
				map[string]any{"node_addr": "01", "display_name": "gone", "is_active": false, "values": []any{nil, nil}},
			}}, nil
	})
}

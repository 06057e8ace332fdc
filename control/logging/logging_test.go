package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"trace": LevelTrace, "DEBUG": slog.LevelDebug, "Info": slog.LevelInfo,
		"warn": slog.LevelWarn, "warning": slog.LevelWarn, "error": slog.LevelError, "off": LevelOff, "5": LevelTrace, "0": LevelOff} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLevel("verbose"); !errors.Is(err, ErrLevel) {
		t.Errorf("ParseLevel(verbose): %v", err)
	}
}

func TestFilterDirectives(t *testing.T) {
	info := slog.LevelInfo
	cases := []struct {
		env    string
		target string
		want   slog.Level
	}{
		{"", "fips::node", info},
		{"debug", "fips::node::tree", slog.LevelDebug},
		{"TRACE", "fips", LevelTrace},
		{"warn,fips::node::tree=debug", "fips::node::tree", slog.LevelDebug},
		{"warn,fips::node::tree=debug", "fips::node::handlers::session", slog.LevelWarn},
		{"fips=debug", "fips::transport::udp", slog.LevelDebug},
		{"fips=debug,fips::transport=error", "fips::transport::udp", slog.LevelError},
		{"fips=debug,fips::transport=error", "fips::node", slog.LevelDebug},
		{"fips::node", "fips::node::tree", LevelTrace},    // a bare target is trace
		{"nostr_sdk=info,hyper=warn", "fips::node", info}, // unknown targets never match
		{"info,fips[session{peer=x}]=trace", "fips::node", LevelTrace},
		{"fips=off", "fips::node", LevelOff},
		{"fips=loud,debug", "fips::node", slog.LevelDebug}, // bad directive dropped
		{"fips=info,fips=trace", "fips", LevelTrace},       // the last of equals wins
	}
	for _, c := range cases {
		if got := ParseFilter(c.env).Level(c.target, info); got != c.want {
			t.Errorf("RUST_LOG=%q target %s: %v, want %v", c.env, c.target, got, c.want)
		}
	}
	f := ParseFilter("fips=loud, ,info,bad target=debug")
	if len(f.Dropped) != 2 {
		t.Errorf("dropped %q, want the two unreadable directives", f.Dropped)
	}
	many := strings.Repeat("a=debug,", maxDirectives+3)
	if f := ParseFilter(many); f.Refused != 3 || len(f.directives) != maxDirectives {
		t.Errorf("%d directives, %d refused", len(f.directives), f.Refused)
	}
	if got := ParseFilter("warn,fips::node=debug").String(); got != "warn,fips::node=debug" {
		t.Errorf("String: %q", got)
	}
}

func fixed() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 123456789, time.UTC) }

func TestTextFormat(t *testing.T) {
	var buf bytes.Buffer
	h := New(&buf, Options{Filter: ParseFilter("info,fips::node::tree=debug"), Now: fixed})
	log := slog.New(h)
	tree := WithTarget(log, "fips::node::tree")
	tree.Debug("Parent switched via periodic cost re-evaluation", "new_parent", "npub1abcd...wxyz", "new_seq", 4,
		"depth", uint64(2), "trigger", "periodic")
	log.Debug("hidden: fips is at info")
	WithTarget(log, "fips::node::handlers::session").With("k", "v").WithGroup("g").Warn("grouped", "a", 1,
		slog.Group("h", "b", true))
	log.Error("failed", "error", errors.New("no route"), "took", 1500*time.Millisecond)
	// slog's own Record time is set by the Logger; replace it with the
	// handler's clock by logging through Handle with a zero time.
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	want := []string{
		"DEBUG fips::node::tree: Parent switched via periodic cost re-evaluation new_parent=npub1abcd...wxyz new_seq=4 depth=2 trigger=periodic",
		" WARN fips::node::handlers::session: grouped k=v g.a=1 g.h.b=true",
		"ERROR fips: failed error=no route took=1.5s",
	}
	for i, l := range lines {
		// 2026-01-02T15:04:05.123456Z, a space, then the level column.
		if len(l) < 28 || l[10] != 'T' || l[26] != 'Z' || l[27] != ' ' {
			t.Errorf("line %d has no tracing timestamp: %q", i, l)
			continue
		}
		if l[28:] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, l[28:], want[i])
		}
	}
	buf.Reset()
	_ = h.Handle(t.Context(), slog.NewRecord(time.Time{}, slog.LevelInfo, "Node started", 0))
	if got := buf.String(); got != "2026-01-02T15:04:05.123456Z  INFO fips: Node started\n" {
		t.Errorf("zero-time record: %q", got)
	}
}

func TestJSONFormat(t *testing.T) {
	var buf bytes.Buffer
	h := New(&buf, Options{Level: slog.LevelDebug, Now: fixed})
	h.SetFormat(FormatJSON)
	WithTarget(slog.New(h), "fips::node::handlers::mmp").Debug("MMP link metrics", "peer", "node-b", "tx_pkts", 12,
		"ratio", 0.5, "ok", true)
	var got struct {
		Timestamp string         `json:"timestamp"`
		Level     string         `json:"level"`
		Fields    map[string]any `json:"fields"`
		Target    string         `json:"target"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if got.Level != "DEBUG" || got.Target != "fips::node::handlers::mmp" || got.Fields["message"] != "MMP link metrics" ||
		got.Fields["peer"] != "node-b" || got.Fields["tx_pkts"] != 12.0 || got.Fields["ratio"] != 0.5 || got.Fields["ok"] != true {
		t.Errorf("%+v", got)
	}
	if _, err := time.Parse(time.RFC3339Nano, got.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", got.Timestamp, err)
	}
	if _, err := ParseFormat("xml"); !errors.Is(err, ErrFormat) {
		t.Errorf("ParseFormat(xml): %v", err)
	}
}

func TestLevelVarFollows(t *testing.T) {
	var buf bytes.Buffer
	lv := new(slog.LevelVar)
	log := slog.New(New(&buf, Options{Level: lv}))
	log.Debug("before")
	lv.Set(slog.LevelDebug)
	log.Debug("after")
	if s := buf.String(); strings.Contains(s, "before") || !strings.Contains(s, "after") {
		t.Errorf("%q", s)
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"info", "fips=debug,warn", "a[b{c=d}]=trace", "=,=,", "fips::node", strings.Repeat("x=1,", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl := ParseFilter(s)
		if len(fl.directives) > maxDirectives {
			t.Fatalf("%d directives", len(fl.directives))
		}
		_ = fl.Level("fips::node", slog.LevelInfo)
		_ = fl.String()
	})
}

//go:build unix

package daemons

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestLogsRustLogAndFormat: the daemon's lines are tracing-subscriber's
// (timestamp, level, target, message, key=value), RUST_LOG picks levels
// by target as upstream's EnvFilter does (here info, with debug for the
// node's handlers only), and upstream's startup, peering and shutdown
// lines appear.
func TestLogsRustLogAndFormat(t *testing.T) {
	ds, _ := LineEnv(t, bins, "rl", 2, []string{"RUST_LOG=info,fips::node::handlers=debug,nostr_sdk=warn"})
	a, b := ds[0], ds[1]
	if _, ok := WaitFor(20*time.Second, func() bool { return len(a.Peers()) == 1 && len(b.Peers()) == 1 }); !ok {
		t.Fatalf("no link\n%s", a.Logs())
	}
	if code := a.Stop(); code != 0 {
		t.Fatalf("exit %d\n%s", code, a.Logs())
	}
	logs := a.Logs()
	for _, want := range []string{
		" INFO fips: FIPS 0.1.0-dev starting",
		" INFO fips: Loaded config file path=" + a.Config,
		" INFO fips: Node created:",
		" INFO fips::control: Control socket listening path=" + a.Socket,
		" INFO fips::node::lifecycle: Node started: npub=",
		" INFO fips: FIPS running",
		" INFO fips::node::handlers::handshake: Peer promoted to active peer=npub1",
		"DEBUG fips::node::handlers::handshake: Connection initiated peer=npub1", // handlers at debug
		" INFO fips: FIPS shutting down",
		" INFO fips::node::lifecycle: Sent disconnect notifications sent=1 total=1 reason=Shutdown",
		" INFO fips::node::lifecycle: Node stopped state=stopped",
		" INFO fips: FIPS shutdown complete",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %q in\n%s", want, logs)
		}
	}
	for _, not := range []string{"DEBUG fips::node::tree:", "DEBUG fips::transport::udp:", "DEBUG fips::node::bloom:", "DEBUG fips: "} {
		if strings.Contains(logs, not) {
			t.Errorf("RUST_LOG leaves %q at info, but it logged at debug:\n%s", strings.TrimSpace(not), logs)
		}
	}
	// Every line is a tracing line: 2026-01-02T15:04:05.123456Z, the level
	// in five columns, the target.
	for _, ln := range strings.Split(strings.TrimSpace(logs), "\n") {
		if strings.HasPrefix(ln, "--- run") {
			continue
		}
		if len(ln) < 40 || ln[10] != 'T' || ln[26] != 'Z' || !strings.Contains(ln[28:], " fips") {
			t.Errorf("not a tracing line: %q", ln)
		}
	}
}

// TestLogsJSON: FIPS_LOG_FORMAT=json, and node.log_format: json in the
// configuration, write tracing-subscriber's json objects, one a line.
func TestLogsJSON(t *testing.T) {
	ds, _ := LineEnv(t, bins, "js", 1, []string{"FIPS_LOG_FORMAT=json"})
	viaEnv := ds[0]
	cfg := "node:\n  log_format: json\n  log_level: debug\n  control: { socket_path: \"{{DIR}}/control.sock\" }\n" +
		"transports:\n  udp: { bind_addr: \"127.0.0.1:0\" }\n"
	viaCfg := New(t, bins, "jscfg", cfg)
	viaCfg.Start()
	for _, d := range []*Daemon{viaEnv, viaCfg} {
		if _, ok := WaitFor(20*time.Second, func() bool { return d.Call("show_status", nil, nil) == nil }); !ok {
			t.Fatalf("%s: no control socket\n%s", d.Name, d.Logs())
		}
		if code := d.Stop(); code != 0 {
			t.Fatalf("%s: exit %d\n%s", d.Name, code, d.Logs())
		}
		seen := map[string]bool{}
		for _, ln := range strings.Split(strings.TrimSpace(d.Logs()), "\n") {
			if strings.HasPrefix(ln, "--- run") {
				continue
			}
			var rec struct {
				Timestamp string         `json:"timestamp"`
				Level     string         `json:"level"`
				Fields    map[string]any `json:"fields"`
				Target    string         `json:"target"`
			}
			if err := json.Unmarshal([]byte(ln), &rec); err != nil {
				t.Errorf("%s: not a json line: %q: %v", d.Name, ln, err)
				continue
			}
			if _, err := time.Parse(time.RFC3339Nano, rec.Timestamp); err != nil || rec.Level == "" || rec.Target == "" {
				t.Errorf("%s: %q", d.Name, ln)
			}
			msg, _ := rec.Fields["message"].(string)
			seen[rec.Level+" "+rec.Target+" "+msg] = true
			if msg == "Loaded config file" && rec.Fields["path"] != d.Config {
				t.Errorf("%s: path field %v", d.Name, rec.Fields["path"])
			}
		}
		for _, want := range []string{"INFO fips Loaded config file", "INFO fips::node::lifecycle Node started:", "INFO fips FIPS shutdown complete"} {
			if !seen[want] {
				t.Errorf("%s: no %q in\n%s", d.Name, want, d.Logs())
			}
		}
		if d == viaCfg && !seen["DEBUG fips::control Control socket listening"] && !hasLevel(seen, "DEBUG") {
			t.Errorf("node.log_level: debug logged nothing at debug")
		}
	}
}

func hasLevel(seen map[string]bool, level string) bool {
	for k := range seen {
		if strings.HasPrefix(k, level+" ") {
			return true
		}
	}
	return false
}

//go:build linux

package netns

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/testing/daemons"
)

// upstreamDocJQ are the jq one-liners of upstream's operator docs, with
// the fipsctl command each is piped from (docs/tutorials/open-discovery.md,
// ipv6-adapter-walkthrough.md, docs/how-to/persistent-identity.md,
// diagnose-mtu-issues.md), exactly as written there.
//
// optional names a field upstream emits only when known (show_cache's
// path_mtu: the node's own entry, warmed from a datagram addressed to it,
// has none, under upstream as here); it may be null in some results but
// not in all. none marks the one query upstream's code cannot satisfy:
// open-discovery.md selects connectivity == "active", but upstream's
// ConnectivityState displays connected, stale, reconnecting or
// disconnected, so the query prints nothing there as here; the same query
// with "connected" follows it.
var upstreamDocJQ = []struct {
	args, filter string
	optional     string
	none         bool
}{
	{"show peers", `.peers[] | select(.connectivity == "active") | .npub`, "", true},
	{"show peers", `.peers[] | select(.connectivity == "connected") | .npub`, "", false},
	{"show sessions", `.sessions[] | {display_name, state, mmp}`, "", false},
	{"show status", `{npub, node_addr, ipv6_addr}`, "", false},
	{"show sessions", `.sessions[] | {display_name, state, mmp: .mmp.path_mtu}`, "", false},
	{"show transports", `.transports[] | {type, mtu}`, "", false},
	{"show cache", `.entries[] | {display_name, depth, path_mtu}`, "path_mtu", false},
	{"show peers", `.peers[] | {display_name, mmp: .mmp}`, "", false},
}

// TestUpstreamDocJQ runs upstream's documented jq one-liners, in jq,
// against a live node's fipsctl output: a chain A—B—C with A pinging C
// (so A has a peer, a session with MMP figures and C's coordinates in its
// cache). Every query must print at least one result, and no result may
// be null or hold a null field.
func TestUpstreamDocJQ(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Fatalf("jq not installed (sudo make deps installs it): %v", err)
	}
	m, a, _, c, _ := ipv6Chain(t, Options{})
	resolve(t, m, a, c)
	if out, err := m.Exec("a", "ping", "-6", "-c", "5", "-i", "0.2", "-W", "2", c.Npub()+".fips"); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	// The session's MMP needs one report round trip for its path MTU and
	// RTT figures.
	if _, ok := daemons.WaitFor(30*time.Second, func() bool {
		out, err := m.Fipsctl("a", "show", "sessions")
		return err == nil && jqNonNull(jq, out, `.sessions[0].mmp.path_mtu`)
	}); !ok {
		t.Fatalf("no session MMP path MTU within 30 s\n%s", a.Logs())
	}
	for _, q := range upstreamDocJQ {
		doc, err := m.Fipsctl("a", strings.Fields(q.args)...)
		if err != nil {
			t.Fatalf("fipsctl %s: %v", q.args, err)
		}
		cmd := exec.Command(jq, "-c", q.filter)
		cmd.Stdin = bytes.NewReader(doc)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("fipsctl %s | jq '%s': %v", q.args, q.filter, err)
			continue
		}
		if q.none {
			if len(bytes.TrimSpace(out)) != 0 {
				t.Errorf("fipsctl %s | jq '%s': %s (upstream prints nothing)", q.args, q.filter, out)
			}
			continue
		}
		results := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(results) == 0 || results[0] == "" {
			t.Errorf("fipsctl %s | jq '%s': no result\n%s", q.args, q.filter, doc)
			continue
		}
		complete := 0
		for _, r := range results {
			nulls := nullFields(r)
			if r == "null" || len(nulls) > 1 || len(nulls) == 1 && nulls[0] != q.optional {
				t.Errorf("fipsctl %s | jq '%s': %s", q.args, q.filter, r)
			}
			if len(nulls) == 0 && r != "null" {
				complete++
			}
		}
		if complete == 0 {
			t.Errorf("fipsctl %s | jq '%s': no result without a null: %s", q.args, q.filter, out)
		}
		t.Logf("fipsctl %s | jq '%s' → %s", q.args, q.filter, strings.Join(results, " "))
	}
}

func jqNonNull(jq string, doc []byte, filter string) bool {
	cmd := exec.Command(jq, "-e", filter)
	cmd.Stdin = bytes.NewReader(doc)
	return cmd.Run() == nil
}

// nullFields are the keys of r (a JSON object) whose values are null.
func nullFields(r string) []string {
	var obj map[string]any
	if json.Unmarshal([]byte(r), &obj) != nil {
		return nil
	}
	var out []string
	for k, v := range obj {
		if v == nil {
			out = append(out, k)
		}
	}
	return out
}

//go:build unix

package daemons

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// upstreamQueries are the jq one-liners upstream's documentation gives
// operators (docs/how-to/diagnose-mtu-issues.md, persistent-identity.md)
// and the show_mmp / show_bloom paths their scripts read, each with the
// fipsctl arguments it is piped from and what every result must hold.
var upstreamQueries = []struct {
	args   []string
	filter string
	check  func(v any) bool
}{
	{[]string{"show", "mmp"}, ".peers[].link_layer.srtt_ms", isNumber},
	{[]string{"show", "mmp"}, ".peers[].link_layer.etx", isNumber},
	{[]string{"show", "mmp"}, ".peers[].link_layer.loss_rate", isNumber},
	{[]string{"show", "mmp"}, ".peers[].link_layer.lqi", isNumber},
	{[]string{"show", "mmp"}, ".peers[].link_layer.spin_bit_role", isString},
	{[]string{"show", "bloom"}, ".peer_filters[].fill_ratio", isNumber},
	{[]string{"show", "bloom"}, ".peer_filters[].estimated_count", isNumber},
	{[]string{"show", "peers"}, ".peers[] | {display_name, mmp: .mmp} | .mmp.etx", isNumber},
	{[]string{"show", "transports"}, ".transports[] | {type, mtu} | .mtu", isNumber},
	{[]string{"show", "status"}, "{npub, node_addr, ipv6_addr} | .npub", isString},
}

func isNumber(v any) bool { _, ok := v.(json.Number); return ok }
func isString(v any) bool { s, ok := v.(string); return ok && s != "" }

// TestUpstreamJQQueries runs upstream's documented jq queries against a
// live node's fipsctl output: each yields values of the right type, not
// null (as they did before the responses took upstream's shapes). The
// queries run in jq itself (required); the same paths are walked in Go
// too, for the value types.
func TestUpstreamJQQueries(t *testing.T) {
	ds, _ := Line(t, bins, "jq", 2)
	a := ds[0]
	run := func(args ...string) []byte {
		out, err := exec.Command(bins.Fipsctl, append([]string{"-s", a.Socket}, args...)...).Output()
		if err != nil {
			t.Fatalf("fipsctl %v: %v", args, err)
		}
		return out
	}
	// Wait for the link's first RTT and the peer's filter.
	if _, ok := WaitFor(30*time.Second, func() bool {
		var m struct {
			Peers []struct {
				LinkLayer map[string]any `json:"link_layer"`
			} `json:"peers"`
		}
		var b struct {
			PeerFilters []map[string]any `json:"peer_filters"`
		}
		return a.Call("show_mmp", nil, &m) == nil && len(m.Peers) == 1 && m.Peers[0].LinkLayer["lqi"] != nil &&
			a.Call("show_bloom", nil, &b) == nil && len(b.PeerFilters) == 1 && b.PeerFilters[0]["estimated_count"] != nil
	}); !ok {
		t.Fatalf("no RTT or filter from the peer in 30 s\n%s", a.Logs())
	}
	jq, jqErr := exec.LookPath("jq")
	if jqErr != nil {
		t.Fatalf("jq not installed (sudo make deps installs it): %v", jqErr)
	}
	for _, q := range upstreamQueries {
		doc := run(q.args...)
		for _, v := range walk(t, doc, q.filter) {
			if !q.check(v) {
				t.Errorf("%v | %s: %v (%T)", q.args, q.filter, v, v)
			}
		}
		cmd := exec.Command(jq, "-c", q.filter)
		cmd.Stdin = bytes.NewReader(doc)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("jq %s: %v", q.filter, err)
			continue
		}
		lines := strings.Fields(strings.TrimSpace(string(out)))
		if len(lines) == 0 {
			t.Errorf("jq %s: no output", q.filter)
		}
		for _, l := range lines {
			if l == "null" {
				t.Errorf("jq %v | %s gives null", q.args, q.filter)
			}
		}
	}
}

// walk evaluates the subset of jq the queries use: .a.b, [] over arrays,
// and "| {keys…} |" projections (which keep the keys named after them).
func walk(t *testing.T, doc []byte, filter string) []any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		t.Fatal(err)
	}
	cur := []any{root}
	for _, stage := range strings.Split(filter, "|") {
		stage = strings.TrimSpace(stage)
		if strings.HasPrefix(stage, "{") {
			continue // a projection of keys the next stage reads anyway
		}
		for _, part := range strings.Split(strings.TrimPrefix(stage, "."), ".") {
			key, each := strings.CutSuffix(part, "[]")
			var next []any
			for _, v := range cur {
				if key != "" {
					m, ok := v.(map[string]any)
					if !ok {
						t.Fatalf("%s: %v is not an object", filter, v)
					}
					v = m[key]
				}
				if each {
					arr, ok := v.([]any)
					if !ok || len(arr) == 0 {
						t.Fatalf("%s: %s is %v, not a non-empty array", filter, key, v)
					}
					next = append(next, arr...)
				} else {
					next = append(next, v)
				}
			}
			cur = next
		}
	}
	return cur
}

package node

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
)

func probeTestNode(t *testing.T) *Node {
	t.Helper()
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Options{Identity: id, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func otherNpub(t *testing.T) (string, identity.PublicKey) {
	t.Helper()
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return id.Npub(), id.PublicKey()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The errors that need no event loop come back in upstream's words.
func TestProbeStartRefusals(t *testing.T) {
	n := probeTestNode(t)
	ctx := context.Background()
	for _, c := range []struct {
		params string
		want   string
	}{
		{``, "missing params for probe_start"},
		{`{}`, "missing 'npub' parameter"},
		{`{"npub":"npub1nonsense"}`, "invalid npub 'npub1nonsense': "},
		{`{"npub":"` + n.id.Npub() + `"}`, "cannot probe this node"},
	} {
		_, err := n.apiProbeStart(ctx, json.RawMessage(c.params))
		if got := errText(err); !strings.HasPrefix(got, c.want) || (c.want != got && !strings.HasSuffix(c.want, ": ")) {
			t.Errorf("probe_start %s: %q, want %q", c.params, got, c.want)
		}
	}
	for _, cmd := range []func(context.Context, json.RawMessage) (any, error){n.apiProbePoll, n.apiProbeCancel} {
		// A wrong-type probe_id is reported as such, not as missing.
		if _, err := cmd(ctx, json.RawMessage(`{"probe_id":"7"}`)); errText(err) != "invalid 'probe_id' parameter: expected a non-negative integer, got a string" {
			t.Errorf("string probe_id: %v", err)
		}
		if _, err := cmd(ctx, json.RawMessage(`{}`)); errText(err) != "missing 'probe_id' parameter" {
			t.Errorf("absent probe_id: %v", err)
		}
	}
}

// At most maxProbes unfinished probes; a finished one awaiting its poll
// does not count.
func TestProbeTableBound(t *testing.T) {
	n := probeTestNode(t)
	now := time.Now()
	tab := n.probes()
	for i := range maxProbes {
		tab.jobs[uint64(100+i)] = &probeJob{stage: stageSession}
	}
	npub, pk := otherNpub(t)
	if _, _, err := n.probeStart(now, npub, pk); errText(err) != "too many probes in flight" {
		t.Fatalf("ninth probe: %v", err)
	}
	tab.jobs[100].stage = stageDone
	tab.jobs[100].ended = now
	data, _, err := n.probeStart(now, npub, pk)
	if err != nil {
		t.Fatalf("with one finished: %v", err)
	}
	if data["npub"] != npub || data["node_addr"] != pk.NodeAddr().String() || data["budget_ms"].(uint64) < 15_000 {
		t.Errorf("probe_start data %v", data)
	}
	// A finished job left unpolled is reaped by the driver after probeReap.
	n.stepProbes(now.Add(probeReap + time.Second))
	if _, ok := tab.jobs[100]; ok {
		t.Error("an unpolled finished probe was not reaped")
	}
}

// Finished reports awaiting their poll are bounded too: probes that fail
// at once (no peers, so every bloom gate misses) started faster than
// probeReap forgets them used to pile up without limit — one control
// client could hold hundreds of thousands of reports. Past
// maxFinishedProbes the oldest unpolled report is dropped and counted;
// the newest stay pollable.
func TestProbeFinishedBound(t *testing.T) {
	n := probeTestNode(t)
	now := time.Now()
	tab := n.probes()
	const started = 10 * maxFinishedProbes
	var ids []uint64
	for i := range started {
		npub, pk := otherNpub(t)
		data, _, err := n.probeStart(now.Add(time.Duration(i)*time.Millisecond), npub, pk)
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		ids = append(ids, data["probe_id"].(uint64))
	}
	if len(tab.jobs) != maxFinishedProbes {
		t.Errorf("%d jobs retained after %d finished probes, want %d", len(tab.jobs), started, maxFinishedProbes)
	}
	if tab.evicted.Load() != started-maxFinishedProbes {
		t.Errorf("evicted %d, want %d", tab.evicted.Load(), started-maxFinishedProbes)
	}
	if v := n.probePoll(now, ids[0]); errText(asErr(v)) != "unknown probe id: "+itoa(ids[0]) {
		t.Errorf("oldest report still held: %v", v)
	}
	if m, ok := n.probePoll(now, ids[len(ids)-1]).(map[string]any); !ok || m["state"] != "done" {
		t.Errorf("newest report not pollable")
	}
	// Unfinished probes are never dropped for finished ones.
	for i := range maxProbes - 1 {
		tab.jobs[uint64(1_000_000+i)] = &probeJob{stage: stageSession}
	}
	npub, pk := otherNpub(t)
	if _, _, err := n.probeStart(now, npub, pk); err != nil {
		t.Fatal(err)
	}
	for i := range maxProbes - 1 {
		if _, ok := tab.jobs[uint64(1_000_000+i)]; !ok {
			t.Fatalf("running probe %d dropped", i)
		}
	}
}

// A node with no peers: the bloom gate finds no filter claiming the
// target, the probe fails at once, and the report is delivered once.
func TestProbeBloomMissReportOnce(t *testing.T) {
	n := probeTestNode(t)
	now := time.Now()
	npub, pk := otherNpub(t)
	data, _, err := n.probeStart(now, npub, pk)
	if err != nil {
		t.Fatal(err)
	}
	id := data["probe_id"].(uint64)
	v := n.probePoll(now.Add(time.Millisecond), id)
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("poll: %v", v)
	}
	if m["state"] != "done" {
		t.Fatalf("state %v", m["state"])
	}
	raw, _ := json.Marshal(m["report"])
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"":      {"bloom", "cleanup", "discovery", "elapsed_ms", "overall", "path", "probe_id", "rtt", "session", "target", "tick_ms"},
		"bloom": {"detail", "elapsed_ms", "fanout", "reason", "verdict"},
		"cleanup": {"coords_were_cached", "identity_was_cached", "left_intact_reason", "lookup_issued",
			"session_created_and_torn_down", "session_left_intact", "warmups_sent"},
		"discovery": {"attempt_timeouts_secs", "attempts", "detail", "elapsed_ms", "reason", "source", "verdict"},
		"path": {"computed_locally", "coords_known", "detail", "elapsed_ms", "lca", "lca_depth", "next_hop", "no_hop_reason",
			"observed", "our_coords", "our_depth", "reason", "same_root", "their_coords", "their_depth", "tree_distance",
			"tree_hops_down", "tree_hops_up", "verdict"},
		// path_mtu, rtt_ms and srtt_ms are left out when unmeasured.
		"session": {"detail", "elapsed_ms", "established", "preexisting", "reason", "verdict"},
		"rtt":     {"arith_failures", "detail", "elapsed_ms", "reason", "reports_seen", "samples", "verdict", "zero_samples"},
		"target":  {"display_name", "ipv6_addr", "node_addr", "npub"},
	}
	for obj, keys := range want {
		o := rep
		if obj != "" {
			o = rep[obj].(map[string]any)
		}
		var got []string
		for k := range o {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Errorf("%s keys %v, want %v", obj, got, keys)
		}
	}
	if rep["overall"] != "failed" {
		t.Errorf("overall %v", rep["overall"])
	}
	b := rep["bloom"].(map[string]any)
	if b["verdict"] != "failed" || b["reason"] != "bloom_miss" {
		t.Errorf("bloom %v", b)
	}
	for _, s := range []string{"discovery", "path", "session", "rtt"} {
		st := rep[s].(map[string]any)
		if st["verdict"] != "skipped" || st["reason"] != "not_reached" {
			t.Errorf("%s %v", s, st)
		}
	}
	if !rep["cleanup"].(map[string]any)["lookup_issued"].(bool) {
		t.Error("lookup_issued false")
	}
	if v := n.probePoll(now, id); errText(asErr(v)) != "unknown probe id: "+itoa(id) {
		t.Errorf("second poll: %v", v)
	}
}

func itoa(u uint64) string {
	b, _ := json.Marshal(u)
	return string(b)
}

// Cancel settles a running probe with overall "cancelled".
func TestProbeCancel(t *testing.T) {
	n := probeTestNode(t)
	now := time.Now()
	tab := n.probes()
	j := &probeJob{stage: stageDiscovery, started: now}
	j.rep.ProbeID = 42
	for _, s := range j.stages() {
		s.Verdict = verdictPending
	}
	j.rep.Bloom.Verdict = verdictOK
	tab.jobs[42] = j
	n.cancelProbe(now.Add(time.Second), j)
	v := n.probePoll(now.Add(time.Second), 42).(map[string]any)
	rep := v["report"].(ProbeReport)
	if v["state"] != "done" || rep.Overall != "cancelled" || rep.ElapsedMs != 1000 {
		t.Fatalf("%v %+v", v["state"], rep)
	}
	if rep.Discovery.Verdict != verdictSkipped || str(rep.Discovery.Detail) != "cancelled" {
		t.Errorf("discovery %+v", rep.Discovery)
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// show_status reports what the local surfaces refused: the dropped probe
// reports, and the counters of the control socket and metrics endpoint
// the daemon hands over with SetLocalLimits.
func TestShowStatusLocalLimits(t *testing.T) {
	n := probeTestNode(t)
	now := time.Now()
	for i := range maxFinishedProbes + 3 {
		npub, pk := otherNpub(t)
		if _, _, err := n.probeStart(now.Add(time.Duration(i)*time.Millisecond), npub, pk); err != nil {
			t.Fatal(err)
		}
	}
	n.SetLocalLimits(func(l *ctl.LocalLimits) {
		l.ControlConnectionsRefused, l.ControlConnectionsEvicted, l.ControlRequestsBusy, l.MetricsConnectionsRefused = 1, 2, 3, 4
	})
	b, err := json.Marshal(n.showStatus())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		L map[string]uint64 `json:"local_limits"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"control_connections_refused": 1, "control_connections_evicted": 2, "control_requests_busy": 3,
		"metrics_connections_refused": 4, "probe_reports_dropped": 3}
	if len(got.L) != len(want) {
		t.Fatalf("local_limits %v, want %v", got.L, want)
	}
	for k, v := range want {
		if got.L[k] != v {
			t.Errorf("%s = %d, want %d", k, got.L[k], v)
		}
	}
}

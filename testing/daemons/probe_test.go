//go:build unix

package daemons

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

type probeStageJSON struct {
	Verdict string  `json:"verdict"`
	Reason  *string `json:"reason"`
	Detail  *string `json:"detail"`
	// The path stage's.
	CoordsKnown bool `json:"coords_known"`
	NextHop     *struct {
		Class      string `json:"class"`
		DirectPeer bool   `json:"direct_peer"`
	} `json:"next_hop"`
}

type probeReportJSON struct {
	Overall string `json:"overall"`
	Target  struct {
		DisplayName string `json:"display_name"`
	} `json:"target"`
	Bloom     probeStageJSON `json:"bloom"`
	Discovery probeStageJSON `json:"discovery"`
	Path      probeStageJSON `json:"path"`
	Session   probeStageJSON `json:"session"`
	RTT       probeStageJSON `json:"rtt"`
	Cleanup   struct {
		TornDown          bool    `json:"session_created_and_torn_down"`
		LeftIntact        bool    `json:"session_left_intact"`
		LeftIntactReason  *string `json:"left_intact_reason"`
		LookupIssued      bool    `json:"lookup_issued"`
		IdentityWasCached bool    `json:"identity_was_cached"`
	} `json:"cleanup"`
}

func (r *probeReportJSON) stages() map[string]probeStageJSON {
	return map[string]probeStageJSON{"bloom": r.Bloom, "discovery": r.Discovery, "path": r.Path, "session": r.Session, "rtt": r.RTT}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

type sessionsJSON struct {
	Sessions []struct {
		RemoteAddr string          `json:"remote_addr"`
		State      string          `json:"state"`
		MMP        json.RawMessage `json:"mmp"`
	} `json:"sessions"`
}

// sessionWithMMP reports whether d has an established session to addr
// carrying MMP figures.
func sessionWithMMP(d *Daemon, addr string) bool {
	var s sessionsJSON
	if d.Call("show_sessions", nil, &s) != nil {
		return false
	}
	for _, e := range s.Sessions {
		if e.RemoteAddr == addr && e.State == "established" && len(e.MMP) > 2 {
			var m map[string]any
			if json.Unmarshal(e.MMP, &m) == nil && m["etx"] != nil && m["loss_rate"] != nil {
				return true
			}
		}
	}
	return false
}

func hasSession(t *testing.T, d *Daemon, addr string) bool {
	t.Helper()
	var s sessionsJSON
	if err := d.Call("show_sessions", nil, &s); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Sessions {
		if e.RemoteAddr == addr {
			return true
		}
	}
	return false
}

// TestProbeAcrossALine runs four daemons A—B—C—D and probes D, three hops
// away, from A with fipsctl: a lookup, a three-hop path, a session the
// probe opens and tears down, and an RTT from session MMP; the session
// shows on both ends with MMP figures while it lives. Then two probes
// overlap so the second finds the first one's session pre-existing and
// leaves it alone.
func TestProbeAcrossALine(t *testing.T) {
	const n = 4
	ds, ids := Line(t, bins, "p", n)
	a, target := ds[0], ids[n-1]
	cAddr := target.NodeAddr().String()

	// Wait until the line agrees on its root and the filter A holds from B
	// covers the rest of the line (B, C, D): tree and filters have
	// converged. Filters travel on change and may settle before the tree
	// does; a probe between the two finds the target's coordinates in
	// another tree (disjoint_trees), which is right but not what this
	// test is about.
	root := minNodeAddr(ids)
	var rest []identity.NodeAddr
	for _, id := range ids[1:] {
		rest = append(rest, id.NodeAddr())
	}
	want := FilterEstimate(rest...)
	if _, ok := WaitFor(30*time.Second, func() bool { return treeAgrees(ds, ids, root) }); !ok {
		t.Fatalf("the line did not agree on root %s\n%s", root, a.Logs())
	}
	if _, ok := WaitFor(30*time.Second, func() bool {
		var b struct {
			PeerFilters []struct {
				HasFilter      bool     `json:"has_filter"`
				EstimatedCount *float64 `json:"estimated_count"`
			} `json:"peer_filters"`
		}
		if a.Call("show_bloom", nil, &b) != nil || len(b.PeerFilters) != 1 || !b.PeerFilters[0].HasFilter {
			return false
		}
		est := b.PeerFilters[0].EstimatedCount
		return est != nil && *est >= want-0.5
	}); !ok {
		t.Fatalf("A's filter from B never covered the line\n%s", a.Logs())
	}

	// Control-socket refusals.
	if err := a.Call("probe_start", map[string]string{"npub": ids[0].Npub()}, nil); err == nil || err.Error() != "cannot probe this node" {
		t.Errorf("probing ourselves: %v", err)
	}
	if err := a.Call("probe_poll", map[string]uint64{"probe_id": 999}, nil); err == nil || err.Error() != "unknown probe id: 999" {
		t.Errorf("unknown id: %v", err)
	}

	probe := func(npub string) (probeReportJSON, []byte, string, error) {
		cmd := exec.Command(bins.Fipsctl, "-s", a.Socket, "probe", npub, "--json")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var rep probeReportJSON
		if jerr := json.Unmarshal(out, &rep); jerr != nil {
			t.Fatalf("fipsctl probe --json: %v %v\n%s\n%s\n%s", err, jerr, out, stderr.String(), a.Logs())
		}
		t.Logf("probe: %s", out)
		return rep, out, stderr.String(), err
	}

	// A's neighbour B, whose coordinates nothing cached: bloom, discovery
	// and path are skipped as direct_peer, B is the next hop, and B is
	// named by its short npub; the key was cached (upstream reads it after
	// the probe seeded it).
	if rep, out, _, err := probe(ids[1].Npub()); err != nil || rep.Overall != "ok" ||
		rep.Target.DisplayName != identity.ShortNpub(ids[1].Npub()) || !rep.Cleanup.IdentityWasCached ||
		rep.Path.CoordsKnown || rep.Path.NextHop == nil || rep.Path.NextHop.Class != "direct_peer" || !rep.Path.NextHop.DirectPeer {
		t.Errorf("probing the neighbour: exit %v\n%s", err, out)
	} else {
		for _, s := range []probeStageJSON{rep.Bloom, rep.Discovery, rep.Path} {
			if s.Verdict != "skipped" || deref(s.Reason) != "direct_peer" {
				t.Errorf("probing the neighbour: a stage %+v, want skipped direct_peer\n%s", s, out)
			}
		}
	}

	rep, _, stderr, err := probe(target.Npub())
	// Every stage ok, exit 0; a loopback round trip under MMP's 1 ms
	// resolution is still a measured success.
	if err != nil || rep.Overall != "ok" {
		t.Fatalf("probe: exit %v overall %s\nstderr: %s", err, rep.Overall, stderr)
	}
	for name, s := range rep.stages() {
		if s.Verdict != "ok" {
			t.Errorf("stage %s: %+v", name, s)
		}
	}
	if !rep.Cleanup.LookupIssued || !rep.Cleanup.TornDown || rep.Cleanup.LeftIntact {
		t.Errorf("cleanup %+v", rep.Cleanup)
	}
	if hasSession(t, a, cAddr) {
		t.Error("the probe's session to C is still on A")
	}

	// Piped output: one line per settled stage.
	plain, _ := exec.Command(bins.Fipsctl, "-s", a.Socket, "probe", target.Npub()).Output()
	for _, st := range []string{"bloom", "discovery", "path", "session", "rtt", "overall"} {
		if strings.Count(string(plain), "\n  "+st+" ") != 1 && !strings.Contains(string(plain), "\n"+st+" ") {
			t.Errorf("piped output lacks one %q line:\n%s", st, plain)
		}
	}

	// Two overlapping probes: the second finds the first's session and
	// leaves it intact; the first tears it down afterwards.
	var s1 struct {
		ProbeID uint64 `json:"probe_id"`
	}
	if err := a.Call("probe_start", map[string]string{"npub": target.Npub()}, &s1); err != nil {
		t.Fatal(err)
	}
	type pollJSON struct {
		State  string          `json:"state"`
		Report json.RawMessage `json:"report"`
	}
	var first pollJSON
	if _, ok := WaitFor(10*time.Second, func() bool {
		var r probeReportJSON
		return a.Call("probe_poll", map[string]uint64{"probe_id": s1.ProbeID}, &first) == nil &&
			json.Unmarshal(first.Report, &r) == nil && (r.Session.Verdict == "ok" || first.State == "done")
	}); !ok || first.State == "done" {
		t.Fatalf("first probe did not reach an established session while running: %s", first.Report)
	}
	// While the probe's session lives it shows on both ends with MMP.
	aAddr := ids[0].NodeAddr().String()
	if !sessionWithMMP(a, cAddr) || !sessionWithMMP(ds[n-1], aAddr) {
		t.Errorf("the probe's session is not on both ends with MMP figures")
	}
	var s2 struct {
		ProbeID uint64 `json:"probe_id"`
	}
	if err := a.Call("probe_start", map[string]string{"npub": target.Npub()}, &s2); err != nil {
		t.Fatal(err)
	}
	var second, done1 probeReportJSON
	var secondRaw json.RawMessage
	for _, p := range []struct {
		id  uint64
		out *probeReportJSON
		raw *json.RawMessage
	}{{s2.ProbeID, &second, &secondRaw}, {s1.ProbeID, &done1, nil}} {
		var last pollJSON
		if _, ok := WaitFor(15*time.Second, func() bool {
			return a.Call("probe_poll", map[string]uint64{"probe_id": p.id}, &last) == nil && last.State == "done"
		}); !ok {
			t.Fatalf("probe %d did not finish", p.id)
		}
		if err := json.Unmarshal(last.Report, p.out); err != nil {
			t.Fatal(err)
		}
		if p.raw != nil {
			*p.raw = last.Report
		}
	}
	if second.Session.Verdict != "skipped" || deref(second.Session.Reason) != "preexisting" ||
		!second.Cleanup.LeftIntact || deref(second.Cleanup.LeftIntactReason) != "preexisting" || second.Cleanup.TornDown {
		t.Errorf("second probe did not leave the pre-existing session intact: %s", secondRaw)
	}
	if !done1.Cleanup.TornDown {
		t.Errorf("first probe did not tear its session down: %+v", done1.Cleanup)
	}
	if hasSession(t, a, cAddr) {
		t.Error("a session to C is still on A after both probes")
	}
	if err := a.Call("probe_poll", map[string]uint64{"probe_id": s1.ProbeID}, nil); err == nil ||
		err.Error() != fmt.Sprintf("unknown probe id: %d", s1.ProbeID) {
		t.Errorf("polling a delivered probe: %v", err)
	}
}

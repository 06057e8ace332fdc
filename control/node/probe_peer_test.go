package node

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// runProbe probes npub from ln through the control API and returns the
// finished report as JSON objects.
func runProbe(t *testing.T, ln *loopNode, npub string) map[string]any {
	t.Helper()
	ctx := context.Background()
	v, err := ln.n.apiProbeStart(ctx, json.RawMessage(`{"npub":"`+npub+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	id := v.(map[string]any)["probe_id"].(uint64)
	var rep map[string]any
	if !waitFor(30*time.Second, func() bool {
		v, err := ln.n.apiProbePoll(ctx, json.RawMessage(`{"probe_id":`+itoa(id)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		m := v.(map[string]any)
		rep = reportJSON(t, m["report"])
		return m["state"] == "done"
	}) {
		t.Fatalf("probe did not finish: %v", rep)
	}
	return rep
}

// reportJSON is a probe report as a client reads it.
func reportJSON(t *testing.T, r any) map[string]any {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// obj is rep's object at key, as a map.
func obj(rep map[string]any, key string) map[string]any {
	m, _ := rep[key].(map[string]any)
	return m
}

// A probe to a direct peer answers as upstream's does. The root (the
// smallest address) and its two children, which then link to each other:
// lateral peers, neither the other's ancestor; one probes the other.
// Nothing cached the target's coordinates yet: bloom and discovery are
// skipped as direct_peer (source direct_peer), and so is path, with no
// tree facts (coords_known false, no coordinates at all) but the peer
// named as the next hop — the path stage used to describe the peer from
// its TreeAnnounce coordinates instead, and failed as disjoint_trees
// before the tree had converged. The probe's session cached the
// coordinates, so a second probe is skipped as cached (source cache),
// which upstream asks before whether the target is a peer, and computes
// the path: up to the root and down, yet the next hop is the peer
// itself, one hop that leaves no tree walk (leaves_tree_walk was true
// for a lateral peer).
func TestProbeDirectPeer(t *testing.T) {
	var ids []*identity.Identity
	for range 3 {
		id, err := identity.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y *identity.Identity) int { return x.NodeAddr().Compare(y.NodeAddr()) })
	root := startLoopNode(t, Options{Identity: ids[0]})
	a := startLoopNode(t, Options{Identity: ids[1]}, root)
	b := startLoopNode(t, Options{Identity: ids[2]}, root)
	depth := func(ln *loopNode) int {
		v, _ := ln.do(func(time.Time) any { return len(ln.n.core.tree.Coords()) - 1 })
		d, _ := v.(int)
		return d
	}
	peers := func(ln *loopNode) int {
		v, _ := ln.do(func(time.Time) any { return ln.n.peers.PeerCount() })
		c, _ := v.(int)
		return c
	}
	if !waitFor(20*time.Second, func() bool { return depth(a) == 1 && depth(b) == 1 }) {
		t.Fatal("the children did not join the root")
	}
	if _, err := a.n.apiConnect(context.Background(), json.RawMessage(
		`{"npub":"`+b.n.Identity().Npub()+`","address":"`+b.addr+`","transport":"udp"}`)); err != nil {
		t.Fatal(err)
	}
	if !waitFor(20*time.Second, func() bool { return peers(a) == 2 && peers(b) == 2 }) {
		t.Fatal("the children did not link to each other")
	}
	if depth(a) != 1 || depth(b) != 1 {
		t.Fatalf("a child left the root: depths %d, %d", depth(a), depth(b))
	}
	npub := b.n.Identity().Npub()

	rep := runProbe(t, a, npub)
	for _, st := range []string{"bloom", "discovery", "path"} {
		if s := obj(rep, st); s["verdict"] != "skipped" || s["reason"] != "direct_peer" {
			t.Errorf("%s: %v, want skipped direct_peer", st, s)
		}
	}
	if src := obj(rep, "discovery")["source"]; src != "direct_peer" {
		t.Errorf("discovery source %v", src)
	}
	path := obj(rep, "path")
	if path["coords_known"] != false || len(path["our_coords"].([]any)) != 0 || len(path["their_coords"].([]any)) != 0 ||
		path["same_root"] != nil || path["tree_distance"] != nil || path["no_hop_reason"] != nil {
		t.Errorf("path claims tree facts it has no coordinates for: %v", path)
	}
	wantHop := map[string]any{"node_addr": b.n.Identity().NodeAddr().String(), "display_name": ShortNpub(npub),
		"class": "direct_peer", "direct_peer": true, "leaves_tree_walk": false}
	checkHop := func(hop map[string]any) {
		t.Helper()
		for k, v := range wantHop {
			if hop[k] != v {
				t.Errorf("next_hop %s = %v, want %v", k, hop[k], v)
			}
		}
	}
	checkHop(obj(path, "next_hop"))
	c := obj(rep, "cleanup")
	if c["identity_was_cached"] != true || c["coords_were_cached"] != false || c["lookup_issued"] != false ||
		c["session_created_and_torn_down"] != true {
		t.Errorf("cleanup %v", c)
	}
	if rep["overall"] != "ok" || obj(rep, "session")["verdict"] != "ok" {
		t.Errorf("overall %v, session %v", rep["overall"], obj(rep, "session"))
	}

	rep = runProbe(t, a, npub)
	for _, st := range []string{"bloom", "discovery"} {
		if s := obj(rep, st); s["verdict"] != "skipped" || s["reason"] != "cached" {
			t.Errorf("second probe %s: %v, want skipped cached", st, s)
		}
	}
	if src := obj(rep, "discovery")["source"]; src != "cache" {
		t.Errorf("second probe discovery source %v", src)
	}
	path = obj(rep, "path")
	if path["verdict"] != "ok" || path["coords_known"] != true || path["same_root"] != true ||
		path["tree_hops_up"] != 1.0 || path["tree_hops_down"] != 1.0 {
		t.Errorf("second probe path %v", path)
	}
	checkHop(obj(path, "next_hop"))
	if c := obj(rep, "cleanup"); c["coords_were_cached"] != true || c["identity_was_cached"] != true {
		t.Errorf("second probe cleanup %v", c)
	}
}

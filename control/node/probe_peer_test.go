package node

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
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

// newIdentities generates k identities.
func newIdentities(t *testing.T, k int) []*identity.Identity {
	t.Helper()
	ids := make([]*identity.Identity, k)
	for i := range ids {
		var err error
		if ids[i], err = identity.Generate(nil); err != nil {
			t.Fatal(err)
		}
	}
	return ids
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
	ids := newIdentities(t, 3)
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

// The names a probe gives, as upstream's: probe_start names its target by
// its short npub in the table display names read aliases from, so the
// target is named so in probe_start's answer, in its report and from then
// on everywhere — over a configured peer's alias, and in
// show_identity_cache for a node that was its short address there. The
// hosts file's name still comes first. identity_was_cached is read after
// the probe seeds the identity cache, so it is true whether or not the
// key was known; the cache keeps the key after the probe.
func TestProbeNamesAndIdentityCache(t *testing.T) {
	ids := newIdentities(t, 5)
	self, bob, known, unknown, hosted := ids[0], ids[1], ids[2], ids[3], ids[4]
	n, err := New(Options{Identity: self, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		StaticPeers: []StaticPeer{{PublicKey: bob.PublicKey(), Alias: "bob"}},
		HostName: func(a identity.NodeAddr) (string, bool) {
			return "zed", a == hosted.NodeAddr()
		}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	n.core.LearnIdentity(known.PublicKey())
	cacheName := func(a identity.NodeAddr) (string, bool) {
		for _, e := range n.identityCacheJSON(now).Entries {
			if e.NodeAddr == a {
				return e.DisplayName, true
			}
		}
		return "", false
	}
	if got, _ := cacheName(known.NodeAddr()); got != known.NodeAddr().ShortHex() {
		t.Fatalf("before any probe a cached key is named %q, want its short address", got)
	}
	if got := n.displayName(bob.NodeAddr(), ""); got != "bob" {
		t.Fatalf("before any probe the configured peer is named %q", got)
	}
	for _, c := range []struct {
		what string
		id   *identity.Identity
		want string
	}{
		{"aliased peer", bob, ShortNpub(bob.Npub())},
		{"cached key", known, ShortNpub(known.Npub())},
		{"unknown key", unknown, ShortNpub(unknown.Npub())},
		{"hosts name", hosted, "zed"},
	} {
		a := c.id.NodeAddr()
		data, _, err := n.probeStart(now, c.id.Npub(), c.id.PublicKey())
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if data["display_name"] != c.want {
			t.Errorf("%s: probe_start display_name %v, want %s", c.what, data["display_name"], c.want)
		}
		v, ok := n.probePoll(now, data["probe_id"].(uint64)).(map[string]any)
		if !ok || v["state"] != "done" {
			t.Fatalf("%s: poll %v", c.what, v)
		}
		rep := reportJSON(t, v["report"])
		if got := obj(rep, "target")["display_name"]; got != c.want {
			t.Errorf("%s: report display_name %v, want %s", c.what, got, c.want)
		}
		if got := obj(rep, "cleanup")["identity_was_cached"]; got != true {
			t.Errorf("%s: identity_was_cached %v, want true", c.what, got)
		}
		if got := n.displayName(a, ""); got != c.want {
			t.Errorf("%s: named %q after the probe, want %s", c.what, got, c.want)
		}
		if got, ok := cacheName(a); !ok || got != c.want {
			t.Errorf("%s: show_identity_cache after the probe: held %v, named %q, want %s", c.what, ok, got, c.want)
		}
	}
}

// The probe's names are bounded (fips-go): past max the oldest is
// forgotten.
func TestSeededNamesBound(t *testing.T) {
	s := seededNames{max: 2}
	ids := newIdentities(t, 3)
	for _, id := range ids {
		s.add(id.NodeAddr(), id.Npub())
	}
	if s.npub(ids[0].NodeAddr()) != "" || s.npub(ids[1].NodeAddr()) != ids[1].Npub() || s.npub(ids[2].NodeAddr()) != ids[2].Npub() {
		t.Errorf("after 3 names with max 2: %v", s.npubs)
	}
}

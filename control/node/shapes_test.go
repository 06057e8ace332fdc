package node

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/tree"
)

// kindOf names a JSON value's type as upstream's serde_json writes it:
// integers and floats apart (a float always has a '.' or an exponent).
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "float"
		}
		return "int"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

// typedShape maps every key path of doc to its value's kind; array
// elements contribute "<path>[]" paths (the union over the elements).
func typedShape(t *testing.T, doc []byte) map[string]string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	out := map[string]string{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		k := kindOf(v)
		if prev, ok := out[p]; !ok || prev == "null" {
			out[p] = k
		}
		switch x := v.(type) {
		case map[string]any:
			for key, e := range x {
				walk(p+"."+key, e)
			}
		case []any:
			for _, e := range x {
				walk(p+"[]", e)
			}
		}
	}
	walk("", v)
	return out
}

// fipsGoAdditions are the key paths fips-go adds to upstream's responses
// (additions only: prefixes of paths upstream does not have).
var fipsGoAdditions = map[string][]string{
	"show_routing": {".data.limits", ".data.lookup.req_leaf_not_forwarded", ".data.discovery.req_leaf_not_forwarded", ".data.retries[].resolved_addr", ".data.retries[].last_error"},
	"show_mmp":     {".data.peers[].link_layer.jitter_us", ".data.peers[].link_layer.stats", ".data.sessions[].session_layer.jitter_us", ".data.sessions[].session_layer.stats"},
	"show_metrics": {".data.session", ".data.ipv6", ".data.rendezvous", ".data.native_limits", ".data.tree.verify_deferred", ".data.tree.ancestry_contradicted", ".data.lookup.req_leaf_not_forwarded", ".data.discovery.req_leaf_not_forwarded"},
	"show_tree":    {".data.stats.verify_deferred", ".data.stats.ancestry_contradicted"},
	"show_sessions": {".data.sessions[].mmp.rtt_trend", ".data.sessions[].mmp.loss_trend", ".data.sessions[].mmp.goodput_trend",
		".data.sessions[].mmp.jitter_trend", ".data.sessions[].mmp.etx_trend", ".data.sessions[].mmp.spin_bit_role",
		".data.sessions[].mmp.ecn_ce_count", ".data.sessions[].mmp.jitter_us", ".data.sessions[].mmp.stats",
		".data.sessions[].post_quantum"},
	"show_stats_list": {".data.recorder"},
	"show_peers":      {".data.peers[].post_quantum"},
	"show_links":      {".data.links[].post_quantum"},
	"show_transports": {".data.transports[].stats.dropped_queue_full", ".data.transports[].stats.dropped_invalid", ".data.transports[].stats.connections_active", ".data.transports[].stats.connections_refused", ".data.transports[].stats.connect_failures", ".data.transports[].stats.kernel_drops", ".data.transports[].stats.unauthenticated_closed", ".data.transports[].stats.inbound_source_refused", ".data.transports[].stats.unauthenticated_evicted", ".data.transports[].stats.reply_dials_refused", ".data.transports[].stats.invalid_closed"},
}

func isAddition(cmd, p string) bool {
	for _, a := range fipsGoAdditions[cmd] {
		if p == a || strings.HasPrefix(p, a+".") || strings.HasPrefix(p, a+"[]") {
			return true
		}
	}
	return false
}

// compareShapes: every path of want is in got with the same kind (null
// matches anything: upstream's Option), and got has nothing else but
// fips-go's listed additions.
func compareShapes(t *testing.T, cmd string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for p, k := range want {
		g, ok := got[p]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+p+" ("+k+")")
		case g != k && g != "null" && k != "null":
			diffs = append(diffs, p+": "+g+", upstream "+k)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok && !isAddition(cmd, p) {
			diffs = append(diffs, "extra "+p)
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Errorf("%s: %s", cmd, d)
	}
}

func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// respond renders data as the control socket sends it.
func respond(t *testing.T, data any) []byte {
	t.Helper()
	resp, err := ctl.OK(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := resp.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f64(v float64) *float64 { return &v }

// fullMMP is link or session metrics with every optional value present.
func fullMMP(session bool) mmp.Snapshot {
	m := mmp.Snapshot{Mode: "full", SRTTMs: f64(23), LossRate: 0, ETX: 1, GoodputBps: 125000, DeliveryRatioForward: 1,
		DeliveryRatioReverse: 1, SmoothedLoss: f64(0), SmoothedETX: f64(1), Quality: f64(1.23), SpinBitRole: "initiator",
		RTTTrend: strp("stable"), LossTrend: strp("stable"), GoodputTrend: strp("rising"), JitterTrend: strp("falling"),
		ETXTrend: strp("stable"), ECNCECount: 2, JitterUs: 150}
	if session {
		mtu := uint16(1203)
		m.PathMTU = &mtu
	}
	return m
}

// shapeNode is a node (not running) with a published snapshot holding
// one of everything each show_* command lists, every optional value set
// and integral floats, so a float rendered as an integer shows.
func shapeNode(t *testing.T) (*Node, identity.NodeAddr) {
	t.Helper()
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	pk := other.PublicKey()
	a := pk.NodeAddr()
	n, err := New(Options{Identity: id, StaticPeers: []StaticPeer{{PublicKey: pk, Alias: "test-us01"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	est := 4.0
	s := &Snapshot{At: now, State: StateRunning, Names: map[identity.NodeAddr]nameInfo{a: {npub: pk.Npub(), alias: "test-us01"}},
		Peers:      []PeerView{{Addr: a, NodeAddr: a.String(), Npub: pk.Npub(), Alias: "test-us01", MMP: fullMMP(false)}},
		SessionMMP: []SessionMMPView{{Remote: a, Npub: pk.Npub(), MMP: fullMMP(true)}},
		Bloom: bloom.Snapshot{OwnNodeAddr: id.NodeAddr(), LeafDependents: []identity.NodeAddr{a}, LeafDependentCount: 1,
			PeerFilters:     []bloom.PeerFilterRow{{Peer: a, HasFilter: true, FilterSequence: 3, Filter: &bloom.PeerFilterInfo{EstimatedCount: &est, SetBits: 37, FillRatio: 1}}},
			UptreeFillRatio: f64(1), UptreeEstimatedCount: f64(3)},
		Tree: tree.Snapshot{MyNodeAddr: id.NodeAddr(), Root: a, MyCoords: []identity.NodeAddr{id.NodeAddr(), a}, Parent: a, Depth: 1,
			DeclarationSequence: 1, DeclarationSigned: true, PeerTreeCount: 1,
			Peers: []tree.PeerSnapshot{{NodeAddr: a, Depth: 0, Root: a, Coords: []identity.NodeAddr{a}, DistanceToUs: 1}}},
		Routing: route.Snapshot{PendingLookups: []route.PendingLookupRow{{Target: a, InitiatedMs: 1, LastSentMs: 2, Attempt: 1, AgeMs: 3}}},
		Retries: []peer.RetryInfo{{NodeAddr: a, Alias: "test-us01", Retries: 2, NextDial: now.Add(time.Minute), AutoReconnect: true}},
		Transports: []TransportView{{ID: 1, Type: "udp", State: transport.StateUp, MTU: 1280, LocalAddr: "0.0.0.0:2121"},
			{ID: 2, Type: "tcp", State: transport.StateUp, MTU: 1400, LocalAddr: "0.0.0.0:8443"}},
	}
	n.snap.Store(s)
	n.core.LearnIdentity(pk)
	return n, a
}

// TestShapesMatchUpstream: every show_* response this package renders has
// exactly the key paths and value types of the golden written from
// upstream's renderers (src/control/queries.rs), with every list
// populated and every optional key present, and nothing else but
// fips-go's listed additions. Each golden in turn has the key paths of
// upstream's own fixture for the command (src/control/snapshots), once
// its lists are emptied.
func TestShapesMatchUpstream(t *testing.T) {
	n, a := shapeNode(t)
	ms := uint16(1203)
	sessions := n.sessionRows([]session.SnapshotEntry{
		func() session.SnapshotEntry {
			k, w, d, st, pq := false, uint8(0), false, int64(1), true
			return session.SnapshotEntry{RemoteAddr: a.String(), State: "established", IsInitiator: true, Npub: n.staticNpubs[a],
				SessionStartMs: &st, CurrentKBit: &k, CoordsWarmupRemaining: &w, IsDraining: &d, PostQuantum: &pq}
		}(),
		func() session.SnapshotEntry {
			rc := 1
			return session.SnapshotEntry{RemoteAddr: a.String(), State: "initiating", Npub: n.staticNpubs[a], ResendCount: &rc}
		}(),
	}, func(identity.NodeAddr) (mmp.Snapshot, bool) { return fullMMP(true), true })
	if js, err := json.Marshal(sessions); err != nil || !strings.Contains(string(js), `"post_quantum":true`) {
		t.Fatalf("show_sessions lacks post_quantum: %v %s", err, js)
	}
	cache := n.cacheJSON(route.CacheSnapshot{Count: 1, MaxEntries: 50000, FillRatio: 0, DefaultTTLMs: 300000,
		Entries: []route.CacheEntryView{{NodeAddr: a, IPv6Addr: a.IPv6().String(), Depth: 1, Coords: []identity.NodeAddr{a}, PathMTU: &ms}}})
	all := map[string]any{
		"show_mmp": n.showMMP(), "show_bloom": n.showBloom(), "show_routing": n.showRouting(), "show_tree": n.showTree(),
		"show_metrics": n.showMetrics(), "show_transports": n.showTransports(), "show_sessions": sessions,
		"show_cache": cache, "show_identity_cache": n.identityCacheJSON(time.Now()),
	}
	for cmd, data := range statsShapes(t, n, a) {
		all[cmd] = data
	}
	for cmd, data := range all {
		golden := readGolden(t, filepath.Join("testdata", "upstream", cmd+".json"))
		compareShapes(t, cmd, typedShape(t, respond(t, data)), typedShape(t, golden))
		fixture := filepath.Join("..", "ctl", "testdata", "snapshots", cmd+".json")
		if _, err := os.Stat(fixture); err != nil {
			continue // show_metrics: upstream pins its families by test, not fixture
		}
		want := typedShape(t, readGolden(t, fixture))
		for p := range typedShape(t, golden) {
			if _, ok := want[p]; !ok && !strings.Contains(p, "[]") {
				t.Errorf("%s golden: %s is not in upstream's fixture", cmd, p)
			}
		}
		for p := range want {
			if _, ok := typedShape(t, golden)[p]; !ok {
				t.Errorf("%s golden lacks upstream's %s", cmd, p)
			}
		}
	}
}

// TestDisplayNames: upstream's short forms, and its order: hosts file,
// alias, short npub of a known key, short node address.
func TestDisplayNames(t *testing.T) {
	if got := ShortNpub("npub1sx42mj99aql52aklsg70y2jmr95u7uz2p40k769aw46ppjv302kqkhmu5r"); got != "npub1sx42...mu5r" {
		t.Errorf("ShortNpub = %q", got)
	}
	n, a := shapeNode(t)
	if got := n.displayName(a, ""); got != "test-us01" {
		t.Errorf("configured peer: %q, want its alias", got)
	}
	n.opts.HostName = func(x identity.NodeAddr) (string, bool) { return "from-hosts", x == a }
	if got := n.displayName(a, ""); got != "from-hosts" {
		t.Errorf("hosts entry: %q, want it to override the alias", got)
	}
	stranger, _ := identity.Generate(nil)
	sa := stranger.NodeAddr()
	if got, want := n.displayName(sa, stranger.Npub()), ShortNpub(stranger.Npub()); got != want {
		t.Errorf("known key: %q, want %q", got, want)
	}
	if got, want := n.displayName(sa, ""), shortHex(sa); got != want || len(got) != 11 {
		t.Errorf("unknown: %q, want %q", got, want)
	}
	if got := n.nameIn(n.Snapshot(), n.id.NodeAddr()); got != shortHex(n.id.NodeAddr()) {
		t.Errorf("self: %q, want the short hex, as upstream's show_tree parent_display_name at the root", got)
	}
}

// TestShapesMatchUpstreamNext: show_mmp of a v1 link (next's MMP, no
// spin bit) has the shape of upstream next's show_mmp, which is master's
// without link_layer.spin_bit_role (show_mmp_next.json); a v0 link keeps
// master's (TestShapesMatchUpstream).
func TestShapesMatchUpstreamNext(t *testing.T) {
	n, _ := shapeNode(t)
	s := *n.Snapshot()
	s.Peers = append([]PeerView(nil), s.Peers...)
	s.Peers[0].MMP.SpinBitRole = ""
	n.snap.Store(&s)
	golden := readGolden(t, filepath.Join("testdata", "upstream", "show_mmp_next.json"))
	compareShapes(t, "show_mmp", typedShape(t, respond(t, n.showMMP())), typedShape(t, golden))
}

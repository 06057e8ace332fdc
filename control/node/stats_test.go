package node

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/history"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"go.uber.org/goleak"
)

func rawParams(t *testing.T, kv ...string) json.RawMessage {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// must returns a (value, error) pair's value, failing t on the error.
func must(t *testing.T) func(any, error) any {
	return func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// statsShapes fills n's history with a sample of the configured peer a
// (an SRTT gap, then 23.5 ms) and renders every show_stats_* command.
func statsShapes(t *testing.T, n *Node, a identity.NodeAddr) map[string]any {
	t.Helper()
	t0 := time.Unix(1_700_000_000, 0)
	npub := n.staticNpubs[a]
	srtt := 23.5
	for i := range 5 {
		ps := history.PeerSample{Addr: a, Npub: npub}
		if i == 4 {
			ps.SRTTMs = &srtt
		}
		n.hist.Tick(t0.Add(time.Duration(i)*time.Second), history.NodeSample{}, []history.PeerSample{ps})
	}
	now, ok := t0.Add(4*time.Second), must(t)
	return map[string]any{
		"show_stats_list":              n.statsList(),
		"show_stats_history":           ok(n.statsHistory(rawParams(t, "metric", "srtt_ms", "peer", npub, "window", "2s"))),
		"show_stats_all_history":       ok(n.statsAllHistory(rawParams(t, "peer", npub, "window", "2s"))),
		"show_stats_peers":             n.statsPeers(now),
		"show_stats_history_all_peers": ok(n.statsHistoryAllPeers(rawParams(t, "metric", "srtt_ms", "window", "2s"))),
	}
}

// TestStatsGoldens: with a tracked peer, the show_stats_* responses
// render byte for byte as their goldens (upstream's key order and float
// spelling, gaps as null).
func TestStatsGoldens(t *testing.T) {
	n, a := shapeNode(t)
	for cmd, data := range statsShapes(t, n, a) {
		if cmd == "show_stats_list" {
			continue // the golden is upstream's fixture; see TestStatsEmptyFixtures
		}
		got := respondPretty(t, data)
		want := bytes.TrimSuffix(readGolden(t, filepath.Join("testdata", "upstream", cmd+".json")), []byte("\n"))
		// shapeNode's peer has a fresh key: the goldens name a fixed one.
		want = bytes.ReplaceAll(want, []byte("0011223344556677889900aabbccddee"), []byte(a.String()))
		want = bytes.ReplaceAll(want, []byte("npub1sx42mj99aql52aklsg70y2jmr95u7uz2p40k769aw46ppjv302kqkhmu5r"), []byte(n.staticNpubs[a]))
		if d, ok := data.(ctl.AllHistoryJSON); ok {
			// The golden lists the first of the seven peer series.
			if len(d.Series) != len(history.PeerMetrics()) {
				t.Errorf("%d peer series", len(d.Series))
			}
			d.Series = d.Series[:1]
			got = respondPretty(t, d)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got\n%s\nwant\n%s", cmd, got, want)
		}
	}
}

func respondPretty(t *testing.T, data any) []byte {
	t.Helper()
	b, err := ctl.Pretty(respond(t, data))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStatsEmptyFixtures: a node that has not sampled yet answers exactly
// upstream's fixtures (src/control/snapshots), which pin the empty
// history with the same requests; show_stats_list differs only by
// fips-go's recorder object. show_native_flows is upstream's answer with
// no native API flow or listener, the only one fips-go gives.
func TestStatsEmptyFixtures(t *testing.T) {
	id, _ := identity.Generate(nil)
	n, err := New(Options{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	list := n.statsList()
	if list.Recorder.MaxPeers != history.DefaultMaxPeers || list.Recorder.Samples != 0 {
		t.Errorf("recorder %+v", list.Recorder)
	}
	ok := must(t)
	var stripped map[string]any
	json.Unmarshal(ok(json.Marshal(list)).([]byte), &stripped)
	delete(stripped, "recorder")
	for cmd, data := range map[string]any{
		"show_stats_list":              stripped,
		"show_stats_history":           ok(n.statsHistory(rawParams(t, "metric", "mesh_size", "window", "10s", "granularity", "1s"))),
		"show_stats_all_history":       ok(n.statsAllHistory(rawParams(t, "window", "10s", "granularity", "1s"))),
		"show_stats_peers":             n.statsPeers(time.Now()),
		"show_stats_history_all_peers": ok(n.statsHistoryAllPeers(rawParams(t, "metric", "srtt_ms", "window", "10s", "granularity", "1s"))),
		"show_native_flows":            ok(n.showNativeFlows(context.Background())),
	} {
		got := respondPretty(t, data)
		want := bytes.TrimSuffix(readGolden(t, filepath.Join("..", "ctl", "testdata", "snapshots", cmd+".json")), []byte("\n"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got\n%s\nwant\n%s", cmd, got, want)
		}
	}
}

// TestStatsRequestErrors: upstream's argument checks, in its order, with
// its messages.
func TestStatsRequestErrors(t *testing.T) {
	n, a := shapeNode(t)
	npub := n.staticNpubs[a]
	stranger, _ := identity.Generate(nil)
	for _, tc := range []struct {
		f    func(json.RawMessage) (any, error)
		raw  json.RawMessage
		want string
	}{
		{n.statsHistory, nil, "missing params for show_stats_history"},
		{n.statsHistory, rawParams(t, "window", "1m"), "missing 'metric' parameter"},
		{n.statsHistory, rawParams(t, "metric", "mesh_size", "window", "10d"), "unknown duration unit: d (expected s, m, h)"},
		{n.statsHistory, rawParams(t, "metric", "mesh_size", "window", ""), "empty duration"},
		{n.statsHistory, rawParams(t, "metric", "mesh_size", "granularity", "5s"), "unknown granularity: 5s (expected 1s or 1m)"},
		{n.statsHistory, rawParams(t, "metric", "nope"), "unknown metric: nope"},
		{n.statsHistory, rawParams(t, "metric", "srtt_ms"), "unknown metric: srtt_ms"},
		{n.statsHistory, rawParams(t, "metric", "mesh_size", "peer", npub), "unknown peer metric: mesh_size"},
		{n.statsHistory, rawParams(t, "metric", "srtt_ms", "peer", "npub1bogus"), "invalid peer npub: "},
		{n.statsHistory, rawParams(t, "metric", "srtt_ms", "peer", npub), "peer not tracked in stats history: test-us01"},
		{n.statsHistory, rawParams(t, "metric", "srtt_ms", "peer", stranger.Npub()), "peer not tracked in stats history: " + shortHex(stranger.NodeAddr())},
		{n.statsAllHistory, rawParams(t, "peer", npub), "peer not tracked in stats history: test-us01"},
		{n.statsAllHistory, rawParams(t, "window", "x"), "invalid duration: x"},
		{n.statsHistoryAllPeers, nil, "missing params for show_stats_history_all_peers"},
		{n.statsHistoryAllPeers, rawParams(t, "metric", "mesh_size"), "unknown peer metric: mesh_size"},
		{n.statsHistoryAllPeers, rawParams(t, "metric", "srtt_ms", "granularity", "1h"), "unknown granularity: 1h (expected 1s or 1m)"},
	} {
		_, err := tc.f(tc.raw)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.raw, err, tc.want)
		}
	}
	// Without params, all_history is the node's, with upstream's defaults.
	v, err := n.statsAllHistory(nil)
	if d := v.(ctl.AllHistoryJSON); err != nil || d.Peer != nil || d.WindowSeconds != 600 || d.GranularitySeconds != 1 ||
		len(d.Series) != len(history.Metrics()) || len(d.Series[0].Values) != 600 {
		t.Errorf("defaults: %v %+v", err, v)
	}
	// A window or granularity that is not a string is the default, as
	// upstream's as_str().unwrap_or().
	v, err = n.statsHistory(json.RawMessage(`{"metric":"peer_count","window":5,"granularity":null}`))
	if s := v.(ctl.SeriesJSON); err != nil || len(s.Values) != 600 {
		t.Errorf("non-string window: %v %d", err, len(s.Values))
	}
	if v, err := n.statsHistory(rawParams(t, "metric", "peer_count", "window", "2h", "granularity", "1m")); err != nil ||
		len(v.(ctl.SeriesJSON).Values) != 120 || v.(ctl.SeriesJSON).GranularitySeconds != 60 {
		t.Errorf("2h at 1m: %v %+v", err, v)
	}
}

// TestStatusForwardingAndSparklines: show_status carries the forwarding
// family show_metrics has (every counter, by key) and the history's
// tails as its sparklines.
func TestStatusForwardingAndSparklines(t *testing.T) {
	n, _ := shapeNode(t)
	s := *n.Snapshot()
	fv := reflect.ValueOf(&s.RouteStats.Forwarding).Elem()
	for i := range fv.NumField() {
		fv.Field(i).SetUint(uint64(1000 + i))
	}
	for i := range 40 {
		n.hist.Tick(time.Unix(1_700_000_000+int64(i), 0), history.NodeSample{PeerCount: uint64(i), LossRate: 0.5}, nil)
	}
	s.Sparklines = n.hist.Sparklines()
	n.snap.Store(&s)
	d := n.showStatus()
	var got, want map[string]uint64
	b, _ := json.Marshal(d.Forwarding)
	json.Unmarshal(b, &got)
	b, _ = json.Marshal(s.RouteStats.Forwarding)
	json.Unmarshal(b, &want)
	if len(got) != fv.NumField() || !reflect.DeepEqual(got, want) {
		t.Errorf("forwarding\n got %v\nwant %v", got, want)
	}
	sp := d.Sparklines
	if len(sp.PeerCount) != history.SparklineLen || sp.PeerCount[0] != 10 || sp.PeerCount[29] != 39 ||
		sp.LossRate[29] != 0.5 || len(sp.MeshSize) != 30 || len(sp.BytesOut) != 30 {
		t.Errorf("sparklines %+v", sp)
	}
}

// TestHistorySampledOnTheLoopTick: a running node's loop samples the
// history on its tick, one slot a second with a 200 ms tick, and the
// show_stats_* handlers answer from it through the loop.
func TestHistorySampledOnTheLoopTick(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	b := loopbackNode(t, Options{TickInterval: 200 * time.Millisecond, Peer: peer.DefaultConfig()})
	go func() { done <- b.Run(ctx) }()
	await(t, 5*time.Second, "b to run", func() bool { return b.State() == StateRunning })
	a := loopbackNode(t, Options{TickInterval: 200 * time.Millisecond, Peer: peer.DefaultConfig(), StaticPeers: []StaticPeer{{
		PublicKey: b.Identity().PublicKey(), Alias: "bee", AutoReconnect: true,
		Addresses: []PeerAddress{{Transport: "udp", Addr: b.transports[1].LocalAddr(), Priority: 100}},
	}}})
	go func() { done <- a.Run(ctx) }()
	reg := ctl.NewRegistry()
	a.Register(reg)
	call := func(cmd string, params json.RawMessage) any {
		h, ok := reg.Lookup(cmd)
		if !ok {
			t.Fatalf("%s not registered", cmd)
		}
		v, err := h(context.Background(), params)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return v
	}
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}()
	await(t, 10*time.Second, "the peer in the history", func() bool {
		p := call("show_stats_peers", nil).(ctl.StatsPeersJSON)
		return p.Count == 1 && p.Peers[0].IsActive && p.Peers[0].DisplayName == "bee"
	})
	first := call("show_stats_list", nil).(ctl.StatsListJSON).Recorder.Samples
	start := time.Now()
	await(t, 5*time.Second, "two more samples", func() bool {
		return call("show_stats_list", nil).(ctl.StatsListJSON).Recorder.Samples >= first+2
	})
	// Ten 200 ms ticks make two one-second slots, not ten.
	if took := time.Since(start); took < 800*time.Millisecond {
		t.Errorf("two samples in %v: the history samples every tick", took)
	}
	await(t, 5*time.Second, "peer_count 1 in the sparkline", func() bool {
		pc := a.showStatus().Sparklines.PeerCount
		return len(pc) > 0 && pc[len(pc)-1] == 1
	})
	s := call("show_stats_history", rawParams(t, "metric", "packets_in", "peer", b.Identity().Npub(), "window", "3s")).(ctl.SeriesJSON)
	if len(s.Values) != 3 || s.Unit != "packets/s" {
		t.Errorf("peer series %+v", s)
	}
	if st := call("show_stats_list", nil).(ctl.StatsListJSON).Recorder; st.TrackedPeers != 1 || st.MissedSamples != 0 {
		t.Errorf("recorder %+v", st)
	}
}

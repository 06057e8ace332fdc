package metrics

import (
	"bytes"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/history"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/tree"
)

// fakeSource publishes whatever snapshot the test stores.
type fakeSource struct{ s atomic.Pointer[node.Snapshot] }

func (f *fakeSource) Snapshot() *node.Snapshot { return f.s.Load() }

func fakePeer(i int) node.PeerView {
	srtt := 12.5 + float64(i)
	return node.PeerView{
		NodeAddr: fmt.Sprintf("%032x", i+1), Npub: fmt.Sprintf("npub1peer%02dxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", i),
		Alias: fmt.Sprintf("peer%d", i), TransportType: "udp", Direction: peer.Outbound,
		Since: time.Unix(1_700_000_000, 0),
		Stats: peer.PeerStats{PacketsSent: uint64(10 * (i + 1)), PacketsRecv: uint64(20 * (i + 1)),
			BytesSent: uint64(1000 * (i + 1)), BytesRecv: uint64(2000 * (i + 1))},
		TreeView: tree.PeerView{HasTreePosition: true, Depth: i % 3, IsParent: i == 0},
		MMP: mmp.Snapshot{Mode: "full", SRTTMs: &srtt, LossRate: 0.01, ETX: 1.02, GoodputBps: 125_000,
			DeliveryRatioForward: 0.99, DeliveryRatioReverse: 0.98, JitterUs: 1500},
	}
}

// fullSnapshot exercises every metric the collector can export.
func fullSnapshot(peers int) *node.Snapshot {
	mesh := uint64(42)
	s := &node.Snapshot{At: time.Unix(1_700_000_100, 0), State: node.StateRunning, Started: time.Unix(1_700_000_000, 0),
		Sessions: 3, MeshSize: &mesh, IDCacheLen: 7, IDCacheMax: 10000, RxDrops: 5,
		LinkMsgs: map[string]uint64{"TreeAnnounce": 9, "SessionDatagram": 100}, Rejected: map[string]uint64{"tree_stale": 2},
		TunName: "fips0", TunState: "active",
		Tree:    tree.Snapshot{Depth: 2, PeerTreeCount: 3, Stats: tree.Stats{Received: 9, Accepted: 8}},
		Routing: route.Snapshot{CoordCacheEntries: 11, PendingLookups: []route.PendingLookupRow{{Attempt: 1}}},
		RouteStats: route.Stats{Forwarding: route.ForwardingStats{DeliveredPackets: 100, DeliveredBytes: 64000},
			Limits: route.LimitStats{CacheEvictedLRU: 1}},
		PeerStats: peer.Stats{PacketsIn: 321, HeartbeatsSent: 4},
		Transports: []node.TransportView{{ID: 1, Type: "udp", State: transport.StateUp, MTU: 1280,
			Stats: transport.Stats{PacketsSent: 300, BytesSent: 40000}},
			{ID: 2, Type: "tcp", Name: "backup", State: transport.StateDown, MTU: 1400, Stats: transport.Stats{ConnectionsUp: 2}}},
		IPv6: ctl.IPv6Stats{Sent: 17, Received: 18},
	}
	for i := range peers {
		s.Peers = append(s.Peers, fakePeer(i))
	}
	return s
}

func newTestRegistry(t *testing.T, s *node.Snapshot, maxLabels int) (*prometheus.Registry, *Collector, *fakeSource) {
	t.Helper()
	src := &fakeSource{}
	src.s.Store(s)
	reg, c, err := NewRegistry(src, Options{MaxPeerLabels: maxLabels, Info: Info{Version: "test", Npub: "npub1self", NodeAddr: "00"}})
	if err != nil {
		t.Fatal(err)
	}
	return reg, c, src
}

func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func exposition(t *testing.T, g prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// value is the sample of name whose labels include want (nil: any).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := Sample(fams, name, want)
	if !ok {
		t.Fatalf("no sample %s%v", name, want)
	}
	return v
}

// PromtoolCheck runs `promtool check metrics` on text; the test fails,
// rather than skips, without promtool (Debian package prometheus).
func promtoolCheck(t *testing.T, text []byte) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (apt-get install prometheus): %v", err)
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	return string(out)
}

// Every member of every show_* object the collector mirrors has help
// text, and no help text is left over: NewCollector checks both.
func TestEveryCounterHasHelp(t *testing.T) {
	c, err := NewCollector(&fakeSource{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Defs() {
		if d.Help == "" || d.Type == "" {
			t.Errorf("%s: help %q type %q", d.Name, d.Help, d.Type)
		}
		if d.Type == "counter" != strings.HasSuffix(d.Name, "_total") {
			t.Errorf("%s is a %s", d.Name, d.Type)
		}
	}
}

// Every show_metrics family member appears as a fips_<family>_<member>_total
// counter carrying the snapshot's value.
func TestShowMetricsFamiliesExported(t *testing.T) {
	s := fullSnapshot(2)
	reg, _, _ := newTestRegistry(t, s, 8)
	fams := gather(t, reg)
	m, err := flatten(node.MetricsOf(s))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for fam, members := range m {
		if fam == "discovery" {
			continue
		}
		for k, v := range members.(map[string]any) {
			name := "fips_" + fam + "_" + k + "_total"
			if r, ok := metricsRename()[fam][k]; ok {
				name = "fips_" + fam + "_" + r + "_total"
			}
			typ := dto.MetricType_COUNTER
			if fam == "rendezvous" && (k == "relays_configured" || k == "relays_connected" || k == "advert_cache_entries") {
				name, typ = "fips_"+fam+"_"+k, dto.MetricType_GAUGE
			}
			want, _ := number(v)
			if got := value(t, fams, name, nil); got != want {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
			if got := fams[name].GetType(); got != typ {
				t.Errorf("%s is %v", name, got)
			}
			n++
		}
	}
	if n < 90 {
		t.Errorf("only %d show_metrics counters", n)
	}
	if got := value(t, fams, "fips_forwarding_delivered_bytes_total", nil); got != 64000 {
		t.Errorf("delivered bytes %v", got)
	}
	if got := value(t, fams, "fips_transport_sent_bytes_total", map[string]string{"transport_id": "1", "type": "udp"}); got != 40000 {
		t.Errorf("transport bytes %v", got)
	}
	if got := value(t, fams, "fips_transport_connections_active", map[string]string{"name": "backup"}); got != 2 {
		t.Errorf("tcp connections %v", got)
	}
	if got := value(t, fams, "fips_peer_srtt_seconds", map[string]string{"peer": fakePeer(1).NodeAddr}); got != 0.0135 {
		t.Errorf("srtt %v s, want 0.0135", got)
	}
	if got := value(t, fams, "fips_mesh_estimated_nodes", nil); got != 42 {
		t.Errorf("mesh size %v", got)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil && (name == "go_goroutines" || runtime.GOOS == "linux") {
			t.Errorf("%s missing", name)
		}
	}
}

// The full exposition, Go runtime and process collectors included,
// passes promtool's lint.
func TestExpositionPassesPromtool(t *testing.T) {
	reg, _, _ := newTestRegistry(t, fullSnapshot(5), 3)
	text := exposition(t, reg)
	out := promtoolCheck(t, text)
	t.Logf("promtool check metrics on %d lines: ok %s", bytes.Count(text, []byte("\n")), strings.TrimSpace(out))
}

// Beyond metrics.max_peer_labels, peers share peer="_other" and are
// counted; a labelled peer keeps its label while up, and a freed slot
// goes to a waiting peer.
func TestPeerLabelCap(t *testing.T) {
	s := fullSnapshot(5)
	reg, _, src := newTestRegistry(t, s, 2)
	fams := gather(t, reg)
	if n := len(fams["fips_peer_info"].GetMetric()); n != 2 {
		t.Fatalf("%d labelled peers, want 2", n)
	}
	other := map[string]string{"peer": OtherPeer}
	// Peers 2, 3, 4 (bytes sent 3000+4000+5000).
	if got := value(t, fams, "fips_peer_sent_bytes_total", other); got != 12000 {
		t.Errorf("_other sent bytes %v, want 12000", got)
	}
	if _, ok := Sample(fams, "fips_peer_srtt_seconds", other); ok {
		t.Error("srtt summed over peers")
	}
	if got := value(t, fams, "fips_metrics_unlabelled_peers", nil); got != 3 {
		t.Errorf("unlabelled %v", got)
	}
	if got := value(t, fams, "fips_metrics_peer_labels_refused_total", nil); got != 3 {
		t.Errorf("refused %v", got)
	}
	// Peer 0 goes away: peer 1 keeps its label, peer 2 takes the slot.
	s2 := *s
	s2.Peers = s.Peers[1:]
	src.s.Store(&s2)
	fams = gather(t, reg)
	for i, want := range []bool{false, true, true, false, false} {
		_, ok := Sample(fams, "fips_peer_info", map[string]string{"peer": fakePeer(i).NodeAddr})
		if ok != want {
			t.Errorf("peer %d labelled %v, want %v", i, ok, want)
		}
	}
	if got := value(t, fams, "fips_metrics_peer_labels_refused_total", nil); got != 5 {
		t.Errorf("refused %v after two scrapes, want 3+2", got)
	}
	// A cap of 0 labels nobody.
	reg0, _, _ := newTestRegistry(t, s, 0)
	fams = gather(t, reg0)
	if fams["fips_peer_info"] != nil {
		t.Error("peers labelled with max_peer_labels 0")
	}
	if got := value(t, fams, "fips_peer_received_bytes_total", other); got != 2000*(1+2+3+4+5) {
		t.Errorf("_other received %v", got)
	}
}

// Before the node publishes anything, a scrape still answers.
func TestNoSnapshotYet(t *testing.T) {
	reg, _, _ := newTestRegistry(t, nil, 4)
	fams := gather(t, reg)
	if got := value(t, fams, "fips_node_info", map[string]string{"version": "test"}); got != 1 {
		t.Errorf("node info %v", got)
	}
	if fams["fips_peers"] != nil {
		t.Error("fips_peers without a snapshot")
	}
}

// TestStatsHistoryRecorder: the history recorder's counters are exported
// as the snapshot carries them.
func TestStatsHistoryRecorder(t *testing.T) {
	s := fullSnapshot(1)
	s.History = history.Stats{MaxPeers: 256, TrackedPeers: 3, Samples: 120, MissedSamples: 2, PeerSamplesRefused: 7,
		PeersDisplaced: 1, PeersExpired: 4}
	reg, _, _ := newTestRegistry(t, s, 8)
	fams := gather(t, reg)
	for name, want := range map[string]float64{
		"fips_stats_history_tracked_peers": 3, "fips_stats_history_max_tracked_peers": 256,
		"fips_stats_history_samples_total": 120, "fips_stats_history_missed_samples_total": 2,
		"fips_stats_history_peer_samples_refused_total": 7, "fips_stats_history_peers_displaced_total": 1,
		"fips_stats_history_peers_expired_total": 4,
	} {
		if got := value(t, fams, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

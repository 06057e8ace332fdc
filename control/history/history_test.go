package history

import (
	"math"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// clock is a virtual clock: tick i happens i seconds after t0.
var t0 = time.Unix(1_700_000_000, 0)

func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

func node(t int) NodeSample {
	ms := uint64(10 + t)
	return NodeSample{MeshSize: &ms, TreeDepth: 2, PeerCount: 3, ParentSwitches: uint64(t), BytesIn: uint64(100 * t),
		BytesOut: uint64(200 * t), PacketsIn: uint64(t), PacketsOut: uint64(2 * t), LossRate: 0.01 * float64(t),
		ActiveSessions: uint64(t)}
}

func addr(tag byte) identity.NodeAddr {
	var a identity.NodeAddr
	for i := range a {
		a[i] = tag
	}
	return a
}

func peer(tag byte, t int) PeerSample {
	srtt, loss := 10+float64(t), 0.01*float64(t)
	return PeerSample{Addr: addr(tag), Npub: "npub-" + string('a'+rune(tag)), SRTTMs: &srtt, LossRate: &loss,
		BytesIn: uint64(50 * t), BytesOut: uint64(75 * t), PacketsIn: uint64(t), PacketsOut: uint64(2 * t)}
}

// same compares series values, NaN equal to NaN.
func same(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d: %v", what, len(got), len(want), got)
	}
	for i := range got {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || !math.IsNaN(want[i]) && math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("%s[%d] = %v, want %v (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

func nans(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

func allNaN(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return false
		}
	}
	return true
}

func TestFastRing(t *testing.T) {
	h := New(Config{})
	for i := range 10 {
		if !h.Tick(at(i), node(i), nil) {
			t.Fatalf("tick %d not sampled", i)
		}
	}
	s := h.Query(MeshSize, 5*time.Second, Fast)
	if s.Metric != "mesh_size" || s.Unit != "nodes" || s.GranularitySeconds != 1 {
		t.Errorf("series header %+v", s)
	}
	same(t, "mesh_size", s.Values, []float64{15, 16, 17, 18, 19})
	// A young ring is padded in front to the window's width.
	same(t, "padded", h.Query(MeshSize, 12*time.Second, Fast).Values, append(nans(2), 10, 11, 12, 13, 14, 15, 16, 17, 18, 19))
	// Counters are rates: the first sample 0, then the growth per second.
	same(t, "parent_switches", h.Query(ParentSwitches, 4*time.Second, Fast).Values, []float64{1, 1, 1, 1})
	same(t, "bytes_out", h.Query(BytesOut, 10*time.Second, Fast).Values, []float64{0, 200, 200, 200, 200, 200, 200, 200, 200, 200})
	same(t, "recent", h.Recent(MeshSize, 3), []float64{17, 18, 19})
	if got := h.Recent(MeshSize, 100); len(got) != 10 {
		t.Errorf("recent(100) has %d values", len(got))
	}
	if sp := h.Sparklines(); len(sp.MeshSize) != 10 || sp.LossRate[9] != 0.09 {
		t.Errorf("sparklines %+v", sp)
	}
}

func TestFastRingWraps(t *testing.T) {
	h := New(Config{})
	for i := range FastCapacity + 10 {
		h.Tick(at(i), node(i), nil)
	}
	s := h.Query(MeshSize, 2*time.Hour, Fast)
	if len(s.Values) != FastCapacity || s.Values[0] != 20 || s.Values[FastCapacity-1] != float64(FastCapacity+19) {
		t.Errorf("%d values, first %v last %v", len(s.Values), s.Values[0], s.Values[len(s.Values)-1])
	}
	if sp := h.Sparklines().MeshSize; len(sp) != SparklineLen || sp[SparklineLen-1] != float64(FastCapacity+19) {
		t.Errorf("sparkline %v", sp)
	}
}

func TestTicksBetweenSlotsAreNotSampled(t *testing.T) {
	h := New(Config{})
	// A 250 ms loop tick: one sample a second, on the first tick due.
	n := 0
	for i := range 40 {
		if h.Tick(t0.Add(time.Duration(i)*250*time.Millisecond), node(i/4), nil) {
			n++
		}
	}
	if n != 10 || h.Stats().Samples != 10 || h.Stats().MissedSamples != 0 {
		t.Errorf("%d samples, stats %+v", n, h.Stats())
	}
	// A tick a little early (ticker jitter) still takes its slot.
	h2 := New(Config{})
	h2.Tick(at(0), node(0), nil)
	if !h2.Tick(at(1).Add(-50*time.Millisecond), node(1), nil) {
		t.Error("a tick 50 ms early was not sampled")
	}
	// A late tick does not make the next one look missed.
	h2.Tick(at(2).Add(600*time.Millisecond), node(2), nil)
	h2.Tick(at(3), node(3), nil)
	if st := h2.Stats(); st.Samples != 4 || st.MissedSamples != 0 {
		t.Errorf("late tick: %+v", st)
	}
}

func TestMissedSecondsAreGaps(t *testing.T) {
	h := New(Config{})
	h.Tick(at(0), node(0), nil)
	h.Tick(at(1), node(1), nil)
	// The loop stalls for 3 s: two missed slots, and the growth over the
	// stall spread over its three seconds.
	h.Tick(at(4), node(4), nil)
	if st := h.Stats(); st.MissedSamples != 2 || st.Samples != 3 {
		t.Errorf("stats %+v", st)
	}
	nan := math.NaN()
	same(t, "mesh_size", h.Query(MeshSize, 5*time.Second, Fast).Values, []float64{10, 11, nan, nan, 14})
	same(t, "bytes_in", h.Query(BytesIn, 5*time.Second, Fast).Values, []float64{0, 100, nan, nan, 100})
	// A host that slept for a week fills at most a day of gaps.
	h.Tick(at(4+7*86400), node(5), nil)
	if st := h.Stats(); st.MissedSamples != 2+uint64(maxGapSlots) {
		t.Errorf("after a week: %+v", st)
	}
	if !allNaN(h.Query(MeshSize, time.Hour, Fast).Values[:FastCapacity-1]) {
		t.Error("the week left samples behind")
	}
	if !h.Tick(at(5+7*86400), node(6), nil) {
		t.Error("no sample a second after waking")
	}
}

func TestLongTickInterval(t *testing.T) {
	// node.tick_interval_secs 5: each tick fills its five seconds, the
	// rate spread over them, and nothing counts as missed.
	h := New(Config{TickInterval: 5 * time.Second})
	for i := 0; i <= 20; i += 5 {
		if !h.Tick(at(i), node(i), nil) {
			t.Fatalf("tick at %d s not sampled", i)
		}
	}
	if st := h.Stats(); st.Samples != 21 || st.MissedSamples != 0 {
		t.Errorf("stats %+v", st)
	}
	same(t, "mesh_size", h.Query(MeshSize, 6*time.Second, Fast).Values, []float64{25, 30, 30, 30, 30, 30})
	same(t, "bytes_in", h.Query(BytesIn, 3*time.Second, Fast).Values, []float64{100, 100, 100})
	// A tick 12 s late: its five seconds filled, the twelve before missed.
	h.Tick(at(37), node(37), nil)
	if st := h.Stats(); st.Samples != 26 || st.MissedSamples != 12 {
		t.Errorf("after a stall: %+v", st)
	}
	v := h.Query(MeshSize, 18*time.Second, Fast).Values
	same(t, "stall", v, append(append([]float64{30}, nans(12)...), 47, 47, 47, 47, 47))
}

func TestSlowRing(t *testing.T) {
	h := New(Config{})
	for i := range 60 {
		s := node(i)
		s.ParentSwitches = uint64(i)
		h.Tick(at(i), s, nil)
	}
	// Last for gauges, mean for rates, sum for events.
	same(t, "mesh_size", h.Query(MeshSize, 5*time.Minute, Slow).Values, append(nans(4), 69))
	if s := h.Query(MeshSize, time.Minute, Slow); s.GranularitySeconds != 60 {
		t.Errorf("granularity %d", s.GranularitySeconds)
	}
	same(t, "loss_rate", h.Query(LossRate, time.Minute, Slow).Values, []float64{0.295})
	same(t, "parent_switches", h.Query(ParentSwitches, time.Minute, Slow).Values, []float64{59})
	// A day's window at 1 min is the whole slow ring, padded.
	for i := 60; i < 1800; i++ {
		h.Tick(at(i), node(i), nil)
	}
	v := h.Query(MeshSize, 24*time.Hour, Slow).Values
	if len(v) != SlowCapacity || !allNaN(v[:SlowCapacity-30]) || allNaN(v[SlowCapacity-30:]) {
		t.Errorf("slow day: %d values", len(v))
	}
	if v := h.Query(MeshSize, 48*time.Hour, Slow).Values; len(v) != SlowCapacity {
		t.Errorf("window beyond the ring: %d values", len(v))
	}
	if v := h.Query(MeshSize, 30*time.Second, Slow).Values; len(v) != 0 {
		t.Errorf("window under a minute at 1m: %v", v)
	}
}

func TestPeerRings(t *testing.T) {
	h := New(Config{})
	for i := range 5 {
		h.Tick(at(i), node(i), nil)
	}
	a := addr(1)
	if _, ok := h.PeerQuery(a, PeerSRTTMs, time.Minute, Fast); ok || h.HasPeer(a) {
		t.Fatal("untracked peer answered")
	}
	// A new peer shares the node rings' time axis: its first value at the tail.
	h.Tick(at(5), node(5), []PeerSample{peer(1, 5)})
	s, ok := h.PeerQuery(a, PeerSRTTMs, time.Minute, Fast)
	if !ok || s.Metric != "srtt_ms" || s.Unit != "ms" {
		t.Fatalf("%v %+v", ok, s)
	}
	same(t, "srtt", s.Values, append(nans(59), 15))
	// Absent for two ticks: gaps; back: the counter needs a new baseline.
	h.Tick(at(6), node(6), nil)
	h.Tick(at(7), node(7), nil)
	h.Tick(at(8), node(8), []PeerSample{peer(1, 8)})
	h.Tick(at(9), node(9), []PeerSample{peer(1, 9)})
	nan := math.NaN()
	s, _ = h.PeerQuery(a, PeerSRTTMs, 5*time.Second, Fast)
	same(t, "srtt", s.Values, []float64{15, nan, nan, 18, 19})
	s, _ = h.PeerQuery(a, PeerBytesIn, 5*time.Second, Fast)
	same(t, "bytes_in", s.Values, []float64{nan, nan, nan, nan, 50})
	// A total that goes down (a new link) is a gap, then a new baseline.
	p := peer(1, 10)
	p.BytesIn = 10
	h.Tick(at(10), node(10), []PeerSample{p})
	p.BytesIn = 40
	h.Tick(at(11), node(11), []PeerSample{p})
	s, _ = h.PeerQuery(a, PeerBytesIn, 3*time.Second, Fast)
	same(t, "bytes_in after reset", s.Values, []float64{50, nan, 30})
	// No MMP measurement yet: a gap.
	p.SRTTMs = nil
	h.Tick(at(12), node(12), []PeerSample{p})
	s, _ = h.PeerQuery(a, PeerSRTTMs, time.Second, Fast)
	same(t, "srtt without mmp", s.Values, nans(1))
	infos := h.Peers()
	if len(infos) != 1 || infos[0].Addr != a || infos[0].Npub != "npub-b" || !infos[0].FirstSeen.Equal(at(5)) || !infos[0].LastContact.Equal(at(12)) {
		t.Errorf("peers %+v", infos)
	}
}

func TestPeerSlowRing(t *testing.T) {
	h := New(Config{})
	a := addr(1)
	// Present every other second: the minute's mean skips the gaps.
	want := 0.0
	for i := range 60 {
		var ps []PeerSample
		if i%2 == 0 {
			ps = []PeerSample{peer(1, i)}
			want += 10 + float64(i)
		}
		h.Tick(at(i), node(i), ps)
	}
	s, _ := h.PeerQuery(a, PeerSRTTMs, time.Minute, Slow)
	same(t, "mean", s.Values, []float64{want / 30})
	// A minute of nothing but gaps folds to a gap.
	for i := 60; i < 120; i++ {
		h.Tick(at(i), node(i), nil)
	}
	s, _ = h.PeerQuery(a, PeerSRTTMs, 3*time.Minute, Slow)
	same(t, "all-gap minute", s.Values, []float64{math.NaN(), want / 30, math.NaN()})
}

func TestPeerRetention(t *testing.T) {
	h := New(Config{})
	a := addr(1)
	h.Tick(at(0), node(0), []PeerSample{peer(1, 0)})
	// Ticking once a minute: each tick fills the 59 seconds between.
	i := 60
	for ; at(i).Sub(t0) < PeerRetention; i += 60 {
		h.Tick(at(i), node(i), nil)
		if !h.HasPeer(a) {
			t.Fatalf("evicted after %v", at(i).Sub(t0))
		}
		if i == 2*FastCapacity {
			// Absent for the fast ring's whole span: its fast samples are
			// freed, and queries still answer a full window of gaps.
			if n := h.peers[a].rings[PeerSRTTMs].fast.len(); n != 0 {
				t.Errorf("fast ring of a long-absent peer holds %d samples", n)
			}
			s, _ := h.PeerQuery(a, PeerSRTTMs, time.Hour, Fast)
			if len(s.Values) != FastCapacity || !allNaN(s.Values) {
				t.Errorf("long-absent peer: %d values", len(s.Values))
			}
		}
	}
	h.Tick(at(i), node(i), nil)
	if h.HasPeer(a) || h.Stats().PeersExpired != 1 || h.Stats().TrackedPeers != 0 {
		t.Errorf("not evicted after %v: %+v", at(i).Sub(t0), h.Stats())
	}
}

func TestPeerCap(t *testing.T) {
	h := New(Config{MaxPeers: 2})
	h.Tick(at(0), node(0), []PeerSample{peer(1, 0), peer(2, 0)})
	// A third peer while both tracked peers are active: refused, counted.
	h.Tick(at(1), node(1), []PeerSample{peer(1, 1), peer(2, 1), peer(3, 1)})
	if h.HasPeer(addr(3)) || h.Stats().PeerSamplesRefused != 1 || h.Stats().TrackedPeers != 2 {
		t.Fatalf("refusal: %+v", h.Stats())
	}
	// Peer 2 leaves before peer 1: peer 3 takes the room of the peer
	// heard from longest ago.
	h.Tick(at(2), node(2), []PeerSample{peer(1, 2)})
	h.Tick(at(3), node(3), nil)
	h.Tick(at(4), node(4), []PeerSample{peer(3, 4)})
	if !h.HasPeer(addr(3)) || h.HasPeer(addr(2)) || !h.HasPeer(addr(1)) || h.Stats().PeersDisplaced != 1 {
		t.Errorf("displacement: %+v", h.Stats())
	}
	// The same peer twice in one tick is one sample.
	h.Tick(at(5), node(5), []PeerSample{peer(3, 5), peer(3, 5)})
	if s, _ := h.PeerQuery(addr(3), PeerPacketsIn, time.Second, Fast); s.Values[0] != 1 {
		t.Errorf("duplicate sample: %v", s.Values)
	}
	if h.Stats().MaxPeers != 2 || New(Config{}).Stats().MaxPeers != DefaultMaxPeers {
		t.Error("max peers")
	}
}

func TestParse(t *testing.T) {
	for _, m := range Metrics() {
		if got, err := ParseMetric(m.Name()); err != nil || got != m {
			t.Errorf("%s: %v %v", m.Name(), got, err)
		}
	}
	for _, m := range PeerMetrics() {
		if got, err := ParsePeerMetric(m.Name()); err != nil || got != m {
			t.Errorf("%s: %v %v", m.Name(), got, err)
		}
	}
	if _, err := ParseMetric("srtt_ms"); err == nil || err.Error() != "unknown metric: srtt_ms" {
		t.Errorf("node srtt_ms: %v", err)
	}
	if _, err := ParsePeerMetric("mesh_size"); err == nil || err.Error() != "unknown peer metric: mesh_size" {
		t.Errorf("peer mesh_size: %v", err)
	}
	if g, err := ParseGranularity("1m"); err != nil || g != Slow {
		t.Error("1m")
	}
	if _, err := ParseGranularity("1h"); err == nil || err.Error() != "unknown granularity: 1h (expected 1s or 1m)" {
		t.Errorf("1h: %v", err)
	}
	for in, want := range map[string]time.Duration{"10m": 10 * time.Minute, "90s": 90 * time.Second, "24h": 24 * time.Hour,
		"0s": 0, "+5s": 5 * time.Second} {
		if got, err := ParseWindow(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for in, want := range map[string]string{"": "empty duration", "m": "invalid duration: m", "x5m": "invalid duration: x5m",
		"-5m": "invalid duration: -5m", "10": "unknown duration unit: 0 (expected s, m, h)",
		"10d": "unknown duration unit: d (expected s, m, h)", "5µ": "unknown duration unit: µ (expected s, m, h)",
		"99999999999999999999s": "invalid duration: 99999999999999999999s", "9999999999999h": "invalid duration: 9999999999999h"} {
		if _, err := ParseWindow(in); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"10m", "", "5µ", "+1h", "99999999999999999999s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseWindow(s)
		if err == nil && (d < 0 || d%time.Second != 0) {
			t.Errorf("%q: %v", s, d)
		}
		h := New(Config{MaxPeers: 1})
		if err == nil {
			if v := h.Query(BytesIn, d, Fast).Values; len(v) > FastCapacity {
				t.Errorf("%q: %d values", s, len(v))
			}
		}
	})
}

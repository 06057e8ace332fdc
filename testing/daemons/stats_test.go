//go:build unix

package daemons

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

type statsSeries struct {
	Metric             string     `json:"metric"`
	Unit               string     `json:"unit"`
	GranularitySeconds uint64     `json:"granularity_seconds"`
	Values             []*float64 `json:"values"`
}

type statsPeers struct {
	Count int `json:"count"`
	Peers []struct {
		Npub     string `json:"npub"`
		NodeAddr string `json:"node_addr"`
		IsActive bool   `json:"is_active"`
	} `json:"peers"`
}

func lastValue(v []*float64) (float64, bool) {
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] != nil {
			return *v[i], true
		}
	}
	return 0, false
}

// TestStatsHistoryOfALinkedPair: the daemon's loop samples its history
// once a second. A linked peer shows up in show_stats_peers and its own
// series, show_status' sparklines fill, fipsctl renders the series, and
// after the peer leaves its history is kept (inactive) for the retention.
func TestStatsHistoryOfALinkedPair(t *testing.T) {
	a, b, _ := linkedPair(t)
	defer a.Stop()

	// Heartbeats and MMP reports flow: within a few seconds the peer's
	// bytes_in series has a measured rate and the node counts one peer.
	var peers statsPeers
	var in statsSeries
	if took, ok := WaitFor(15*time.Second, func() bool {
		if a.Call("show_stats_peers", nil, &peers) != nil || peers.Count != 1 || !peers.Peers[0].IsActive {
			return false
		}
		if a.Call("show_stats_history", map[string]string{"metric": "bytes_in", "peer": npubB, "window": "5s"}, &in) != nil {
			return false
		}
		v, ok := lastValue(in.Values)
		return ok && v > 0
	}); !ok {
		t.Fatalf("no peer history after %v: %+v %+v\n%s", took, peers, in, a.Logs())
	}
	if peers.Peers[0].Npub != npubB || in.Unit != "bytes/s" || len(in.Values) != 5 || in.GranularitySeconds != 1 {
		t.Errorf("peers %+v series %+v", peers, in)
	}
	var st struct {
		UptimeSecs uint64 `json:"uptime_secs"`
		Sparklines struct {
			PeerCount []*float64 `json:"peer_count"`
			BytesIn   []*float64 `json:"bytes_in"`
		} `json:"sparklines"`
	}
	if err := a.Call("show_status", nil, &st); err != nil {
		t.Fatal(err)
	}
	if v, ok := lastValue(st.Sparklines.PeerCount); !ok || v != 1 || len(st.Sparklines.PeerCount) > 30 {
		t.Errorf("sparklines %+v", st.Sparklines)
	}

	// One sample a second on the loop's tick: the recorder's count keeps
	// pace with the uptime.
	var list struct {
		Recorder struct {
			Samples       uint64 `json:"samples"`
			MissedSamples uint64 `json:"missed_samples"`
			TrackedPeers  int    `json:"tracked_peers"`
		} `json:"recorder"`
	}
	if err := a.Call("show_stats_list", nil, &list); err != nil {
		t.Fatal(err)
	}
	first := list.Recorder.Samples
	if _, ok := WaitFor(5*time.Second, func() bool {
		return a.Call("show_stats_list", nil, &list) == nil && list.Recorder.Samples >= first+2
	}); !ok {
		t.Errorf("samples stuck at %d", list.Recorder.Samples)
	}
	if list.Recorder.TrackedPeers != 1 || list.Recorder.MissedSamples != 0 {
		t.Errorf("recorder %+v", list.Recorder)
	}
	if up := st.UptimeSecs; first+2 < up || first > up+2 {
		t.Errorf("%d samples after %d s up", first, up)
	}

	// fipsctl renders the node's series.
	out, err := exec.Command(bins.Fipsctl, "-s", a.Socket, "stats", "history", "peer_count", "--window", "5s", "--plot").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "peer_count (peers) — 5 samples @ 1s = 5s window") ||
		!strings.Contains(string(out), "last=1.000") {
		t.Errorf("fipsctl stats history --plot: %v\n%s", err, out)
	}
	out, err = exec.Command(bins.Fipsctl, "-s", a.Socket, "stats", "history", "srtt_ms", "--peer", npubB, "--window", "3s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\"metric\": \"srtt_ms\"") || !strings.Contains(string(out), "\"unit\": \"ms\"") {
		t.Errorf("fipsctl stats history --peer: %v\n%s", err, out)
	}

	// The peer leaves: its history stays, inactive, with its npub.
	if code := b.Stop(); code != 0 {
		t.Fatalf("b exit %d", code)
	}
	if _, ok := WaitFor(5*time.Second, func() bool {
		return a.Call("show_stats_peers", nil, &peers) == nil && peers.Count == 1 && !peers.Peers[0].IsActive
	}); !ok {
		t.Fatalf("departed peer: %+v", peers)
	}
	if peers.Peers[0].Npub != npubB {
		t.Errorf("departed peer's npub %q", peers.Peers[0].Npub)
	}
	var all struct {
		Peer   *string       `json:"peer"`
		Series []statsSeries `json:"series"`
	}
	if err := a.Call("show_stats_all_history", map[string]string{"peer": npubB, "window": "3s"}, &all); err != nil ||
		all.Peer == nil || *all.Peer != npubB || len(all.Series) != 7 {
		t.Errorf("all_history of the departed peer: %v %+v", err, all)
	}
	out, err = exec.Command(bins.Fipsctl, "-s", a.Socket, "stats", "history-all-peers", "srtt_ms", "--window", "4s", "--plot").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "(inactive) (ms) — 4 samples @ 1s = 4s window") {
		t.Errorf("fipsctl stats history-all-peers --plot: %v\n%s", err, out)
	}
}

package node

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/history"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
)

// Stats history (upstream's stats_history): the loop samples the node and
// its peers into the rings on its tick; the show_stats_* commands read
// them on the loop (a query copies at most a ring's 3600 samples), and
// show_status' sparklines come with the published snapshot.

// recordHistory samples the node into the history: on the loop, on its
// tick (the history takes one slot a second, whatever the tick interval).
func (n *Node) recordHistory(now time.Time) {
	c := n.core
	rs := c.route.Stats()
	n.addEngineForwarding(&rs) // what the dataplane workers carried counts too
	fwd := rs.Forwarding
	s := history.NodeSample{TreeDepth: uint32(c.tree.Depth()), PeerCount: uint64(n.peers.PeerCount()),
		ParentSwitches: c.tree.Stats().ParentSwitches, BytesIn: fwd.ReceivedBytes,
		BytesOut: fwd.ForwardedBytes + fwd.OriginatedBytes, PacketsIn: fwd.ReceivedPackets,
		PacketsOut: fwd.ForwardedPackets + fwd.OriginatedPackets, ActiveSessions: uint64(c.sess.Len())}
	if est, ok := c.bloom.MeshSizeEstimate(); ok {
		s.MeshSize = &est
	}
	peers := n.histPeers[:0]
	var lossSum float64
	n.peers.Peers(func(p *peer.Peer) {
		m := p.MMP().Snapshot()
		loss := m.LossRate
		lossSum += loss
		st := p.Stats()
		ps := history.PeerSample{Addr: p.NodeAddr, SRTTMs: m.SRTTMs, LossRate: &loss, BytesIn: st.BytesRecv,
			BytesOut: st.BytesSent, PacketsIn: st.PacketsRecv, PacketsOut: st.PacketsSent,
			ECNCE: uint64(m.ECNCECount)}
		if !n.hist.HasPeer(p.NodeAddr) { // the npub is kept from the first sample
			ps.Npub = p.PublicKey.Npub()
		}
		peers = append(peers, ps)
	})
	if len(peers) > 0 {
		s.LossRate = lossSum / float64(len(peers))
	}
	n.hist.Tick(now, s, peers)
	clear(peers)
	n.histPeers = peers
}

func (n *Node) registerStats(r ctlRegistry) {
	r.Register("show_stats_list", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.onLoopCtx(ctx, func(time.Time) (any, error) { return n.statsList(), nil })
	})
	r.Register("show_stats_history", func(ctx context.Context, raw json.RawMessage) (any, error) {
		return n.onLoopCtx(ctx, func(time.Time) (any, error) { return n.statsHistory(raw) })
	})
	r.Register("show_stats_all_history", func(ctx context.Context, raw json.RawMessage) (any, error) {
		return n.onLoopCtx(ctx, func(time.Time) (any, error) { return n.statsAllHistory(raw) })
	})
	r.Register("show_stats_peers", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.onLoopCtx(ctx, func(now time.Time) (any, error) { return n.statsPeers(now), nil })
	})
	r.Register("show_stats_history_all_peers", func(ctx context.Context, raw json.RawMessage) (any, error) {
		return n.onLoopCtx(ctx, func(time.Time) (any, error) { return n.statsHistoryAllPeers(raw) })
	})
}

// onLoopCtx runs f on the loop and returns its result or error.
func (n *Node) onLoopCtx(ctx context.Context, f func(now time.Time) (any, error)) (any, error) {
	type result struct {
		v   any
		err error
	}
	v, err := n.Do(ctx, func(now time.Time) any {
		r, err := f(now)
		return result{r, err}
	})
	if err != nil {
		return nil, err
	}
	r := v.(result)
	return r.v, r.err
}

func (n *Node) statsList() ctl.StatsListJSON {
	out := ctl.StatsListJSON{FastRingSeconds: history.FastCapacity, SlowRingMinutes: history.SlowCapacity,
		PeerRetentionSeconds: uint64(history.PeerRetention / time.Second), Recorder: n.hist.Stats()}
	for _, m := range history.Metrics() {
		out.Metrics = append(out.Metrics, ctl.StatsMetricJSON{Name: m.Name(), Scope: "node", Unit: m.Unit()})
	}
	for _, m := range history.PeerMetrics() {
		out.Metrics = append(out.Metrics, ctl.StatsMetricJSON{Name: m.Name(), Scope: "peer", Unit: m.Unit()})
	}
	return out
}

func floats(v []float64) ctl.List[ctl.Float] {
	out := make(ctl.List[ctl.Float], len(v))
	for i, x := range v {
		out[i] = ctl.Float(x)
	}
	return out
}

func seriesJSON(s history.Series) ctl.SeriesJSON {
	return ctl.SeriesJSON{GranularitySeconds: s.GranularitySeconds, Metric: s.Metric, Unit: s.Unit, Values: floats(s.Values)}
}

// windowParams reads upstream's optional window (default 10m) and
// granularity (default 1s); a value that is not a string is the default,
// as upstream's as_str().unwrap_or().
func windowParams(p ctl.Params) (time.Duration, history.Granularity, error) {
	ws, ok := p.OptString("window")
	if !ok {
		ws = "10m"
	}
	w, err := history.ParseWindow(ws)
	if err != nil {
		return 0, 0, ctl.Errorf("%v", err)
	}
	gs, ok := p.OptString("granularity")
	if !ok {
		gs = "1s"
	}
	g, err := history.ParseGranularity(gs)
	if err != nil {
		return 0, 0, ctl.Errorf("%v", err)
	}
	return w, g, nil
}

// peerParam reads the optional peer npub: present reports whether one
// was given (as a string).
func peerParam(p ctl.Params) (npub string, a identity.NodeAddr, present bool, err error) {
	npub, present = p.OptString("peer")
	if !present {
		return "", a, false, nil
	}
	pk, derr := identity.DecodeNpub(npub)
	if derr != nil {
		return npub, a, true, ctl.Errorf("invalid peer npub: %v", derr)
	}
	return npub, pk.NodeAddr(), true, nil
}

func (n *Node) notTracked(a identity.NodeAddr) error {
	return ctl.Errorf("peer not tracked in stats history: %s", n.displayName(a, n.liveNpub(a)))
}

// statsHistory is show_stats_history: one node metric, or with peer one
// peer metric, in upstream's order of checks.
func (n *Node) statsHistory(raw json.RawMessage) (any, error) {
	p, err := ctl.RequireParams("show_stats_history", raw)
	if err != nil {
		return nil, err
	}
	name, err := p.String("metric")
	if err != nil {
		return nil, err
	}
	w, g, err := windowParams(p)
	if err != nil {
		return nil, err
	}
	_, a, byPeer, err := peerParam(p)
	if err != nil {
		return nil, err
	}
	if byPeer {
		m, err := history.ParsePeerMetric(name)
		if err != nil {
			return nil, ctl.Errorf("%v", err)
		}
		s, ok := n.hist.PeerQuery(a, m, w, g)
		if !ok {
			return nil, n.notTracked(a)
		}
		return seriesJSON(s), nil
	}
	m, err := history.ParseMetric(name)
	if err != nil {
		return nil, ctl.Errorf("%v", err)
	}
	return seriesJSON(n.hist.Query(m, w, g)), nil
}

func (n *Node) statsAllHistory(raw json.RawMessage) (any, error) {
	p := ctl.ParseParams(raw)
	w, g, err := windowParams(p)
	if err != nil {
		return nil, err
	}
	npub, a, byPeer, err := peerParam(p)
	if err != nil {
		return nil, err
	}
	out := ctl.AllHistoryJSON{GranularitySeconds: g.Seconds(), WindowSeconds: uint64(w / time.Second), Series: []ctl.SeriesJSON{}}
	if byPeer {
		if !n.hist.HasPeer(a) {
			return nil, n.notTracked(a)
		}
		out.Peer = &npub
		for _, m := range history.PeerMetrics() {
			s, _ := n.hist.PeerQuery(a, m, w, g)
			out.Series = append(out.Series, seriesJSON(s))
		}
		return out, nil
	}
	for _, m := range history.Metrics() {
		out.Series = append(out.Series, seriesJSON(n.hist.Query(m, w, g)))
	}
	return out, nil
}

func secsAgo(now, t time.Time) uint64 { return uint64(max(0, now.Sub(t)) / time.Second) }

// byActiveThenName is upstream's order for the stats peer lists; the node
// address breaks ties, which upstream leaves to its hash map.
func byActiveThenName(aActive bool, aName, aAddr string, bActive bool, bName, bAddr string) int {
	if aActive != bActive {
		if aActive {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(aName, bName), cmp.Compare(aAddr, bAddr))
}

func (n *Node) statsPeers(now time.Time) ctl.StatsPeersJSON {
	out := ctl.StatsPeersJSON{Peers: []ctl.StatsPeerJSON{}}
	for _, pi := range n.hist.Peers() {
		live := n.peers.Peer(pi.Addr)
		npub := pi.Npub
		if live != nil {
			npub = live.PublicKey.Npub()
		}
		out.Peers = append(out.Peers, ctl.StatsPeerJSON{DisplayName: n.displayName(pi.Addr, n.liveNpub(pi.Addr)),
			FirstSeenSecsAgo: secsAgo(now, pi.FirstSeen), IsActive: live != nil,
			LastContactSecsAgo: secsAgo(now, pi.LastContact), NodeAddr: pi.Addr.String(), Npub: npub})
	}
	slices.SortFunc(out.Peers, func(x, y ctl.StatsPeerJSON) int {
		return byActiveThenName(x.IsActive, x.DisplayName, x.NodeAddr, y.IsActive, y.DisplayName, y.NodeAddr)
	})
	out.Count = len(out.Peers)
	return out
}

func (n *Node) statsHistoryAllPeers(raw json.RawMessage) (any, error) {
	p, err := ctl.RequireParams("show_stats_history_all_peers", raw)
	if err != nil {
		return nil, err
	}
	name, err := p.String("metric")
	if err != nil {
		return nil, err
	}
	m, err := history.ParsePeerMetric(name)
	if err != nil {
		return nil, ctl.Errorf("%v", err)
	}
	w, g, err := windowParams(p)
	if err != nil {
		return nil, err
	}
	out := ctl.HistoryAllPeersJSON{GranularitySeconds: g.Seconds(), Metric: m.Name(), Unit: m.Unit(),
		WindowSeconds: uint64(w / time.Second), Peers: []ctl.PeerSeriesJSON{}}
	for _, pi := range n.hist.Peers() {
		s, _ := n.hist.PeerQuery(pi.Addr, m, w, g)
		out.Peers = append(out.Peers, ctl.PeerSeriesJSON{DisplayName: n.displayName(pi.Addr, n.liveNpub(pi.Addr)),
			IsActive: n.peers.Peer(pi.Addr) != nil, NodeAddr: pi.Addr.String(), Values: floats(s.Values)})
	}
	slices.SortFunc(out.Peers, func(x, y ctl.PeerSeriesJSON) int {
		return byActiveThenName(x.IsActive, x.DisplayName, x.NodeAddr, y.IsActive, y.DisplayName, y.NodeAddr)
	})
	return out, nil
}

// sparklines is show_status' sparklines from the snapshot's tails.
func sparklines(s history.Sparklines) ctl.Sparklines {
	return ctl.Sparklines{BytesIn: floats(s.BytesIn), BytesOut: floats(s.BytesOut), LossRate: floats(s.LossRate),
		MeshSize: floats(s.MeshSize), PeerCount: floats(s.PeerCount), TreeDepth: floats(s.TreeDepth)}
}

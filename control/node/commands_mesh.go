package node

import (
	"context"
	"encoding/json"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
)

// registerMesh installs the routing-layer commands. Their responses have
// upstream's keys and value types (floats as floats); fips-go's
// additions are new keys beside them, never changes to upstream's.
func (n *Node) registerMesh(r ctlRegistry) {
	n.registerProbe(r)
	r.Register("show_tree", func(context.Context, json.RawMessage) (any, error) { return n.showTree(), nil })
	r.Register("show_bloom", func(context.Context, json.RawMessage) (any, error) { return n.showBloom(), nil })
	r.Register("show_routing", func(context.Context, json.RawMessage) (any, error) { return n.showRouting(), nil })
	r.Register("show_rendezvous", func(context.Context, json.RawMessage) (any, error) {
		if v := n.Snapshot().Rendezvous; v != nil {
			return &v.RendezvousView, nil
		}
		return ctl.RendezvousView{Peers: []ctl.TraversalView{}, Adopted: map[string]string{}}, nil
	})
	r.Register("show_metrics", func(context.Context, json.RawMessage) (any, error) { return n.showMetrics(), nil })
	// The cache tables can hold tens of thousands of entries: they are
	// read on the event loop when asked for, not copied into every snapshot.
	r.Register("show_cache", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.Do(ctx, func(now time.Time) any { return n.cacheJSON(n.core.route.CacheSnapshot(now)) })
	})
	r.Register("show_mmp", func(context.Context, json.RawMessage) (any, error) { return n.showMMP(), nil })
	r.Register("show_sessions", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.Do(ctx, func(now time.Time) any { return n.sessionsJSON() })
	})
	r.Register("show_identity_cache", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.Do(ctx, func(now time.Time) any { return n.identityCacheJSON(now) })
	})
}

func errorSignals(r route.ErrorStats, s session.Stats) ctl.ErrorSignalsJSON {
	return ctl.ErrorSignalsJSON{CoordsRequired: s.CoordsRequired, LookupRespMTUBelowFloor: r.LookupRespMTUBelowFloor,
		MTUExceeded: s.MtuExceeded, MTUExceededBelowFloor: s.MtuExceededBelowFloor, PathBroken: s.PathBroken,
		PathMTUNotifBelowFloor: s.PathMtuNotifBelowFloor, UnboundBroken: s.UnboundBroken, UnboundCoords: s.UnboundCoords,
		UnboundForged: s.SignalsForged, UnboundMTU: s.UnboundMTU}
}

func (n *Node) showRouting() ctl.RoutingJSON {
	s := n.LiveSnapshot()
	rows := make([]route.PendingLookupRow, len(s.Routing.PendingLookups))
	for i, r := range s.Routing.PendingLookups {
		r.DisplayName = n.nameIn(s, r.Target)
		rows[i] = r
	}
	retries := make([]ctl.RetryJSON, 0, len(s.Retries))
	for _, r := range s.Retries {
		j := ctl.RetryJSON{AutoReconnect: r.AutoReconnect, DisplayName: n.nameIn(s, r.NodeAddr), NodeAddr: r.NodeAddr.String(),
			ResolvedAddr: r.Addr, RetryAfterMs: msSince(r.NextDial), RetryCount: uint32(r.Retries)}
		if r.Err != nil {
			j.LastError = r.Err.Error()
		}
		retries = append(retries, j)
	}
	return ctl.RoutingJSON{RouteSnapshot: routeSnapshotJSON(s.Routing), IdentityCacheEntries: s.IDCacheLen, Retries: retries,
		Discovery: ctl.RouteLookupStats(s.Routing.Lookup), ErrorSignals: errorSignals(s.RouteStats.Errors, s.SessStats),
		Congestion: s.congestion(), Limits: ctl.RouteLimitStats(s.RouteStats.Limits), PendingLookups: pendingLookupsJSON(rows)}
}

func sessionLayer(s *Snapshot) ctl.SessionMetricsJSON {
	st := s.SessStats
	return ctl.SessionMetricsJSON{NoRouteLookups: s.NoRouteLookups, SetupSuperseded: st.SetupSuperseded,
		ResponderSuperseded: st.ResponderSuperseded, RespondersEvicted: st.RespondersEvicted,
		SessionsEvicted: st.SessionsEvicted, SessionsRefused: st.SessionsRefused,
		MtuExceededOffPath: st.MtuExceededOffPath, PathBrokenOffPath: st.PathBrokenOffPath,
		MtuExceededContradicted: st.MtuExceededContradicted, ClampsExpired: st.ClampsExpired,
		AckIdentityMismatch: st.AckIdentityMismatch, DualAcks: st.DualAcks,
		PQOffered: st.PQOffered, PQOfferResends: st.PQOfferResends, PQAccepted: st.PQAccepted, PQUpgrades: st.PQUpgrades,
		PQFallbacks: st.PQFallbacks, PQRefused: st.PQRefused, PQConfirmFailed: st.PQConfirmFailed,
		PQMessagesRefused: st.PQMessagesRefused, PQFragmentsRefused: st.PQFragmentsRefused, PQClassicDropped: st.PQClassicDropped}
}

func (s *Snapshot) congestion() ctl.CongestionJSON {
	return ctl.CongestionJSON{RouteCongestionStats: ctl.RouteCongestionStats(s.RouteStats.Congestion), CEReceived: s.CEReceived, KernelDropEvents: s.KernelDropEvents}
}

func (n *Node) showMetrics() ctl.MetricsJSON { return MetricsOf(n.LiveSnapshot()) }

// MetricsOf is show_metrics computed from a published snapshot (the
// Prometheus collector reads the same families this way).
func MetricsOf(s *Snapshot) ctl.MetricsJSON {
	var rdv ctl.RendezvousStats
	if s.Rendezvous != nil {
		rdv = s.Rendezvous.Stats
	}
	return ctl.MetricsJSON{Rendezvous: rdv, Forwarding: ctl.RouteForwardingStats(s.RouteStats.Forwarding),
		Lookup: ctl.RouteLookupStats(s.RouteStats.Lookup), Discovery: ctl.RouteLookupStats(s.RouteStats.Lookup),
		Tree: ctl.TreeStats(s.Tree.Stats), Bloom: ctl.BloomStats(s.Bloom.Stats), Errors: errorSignals(s.RouteStats.Errors, s.SessStats),
		Congestion: s.congestion(),
		Session:    sessionLayer(s),
		IPv6:       s.IPv6, Native: s.Native, NativeLimits: s.NativeLimits}
}

// liveNpub is the npub of an active peer or a session's remote (on the
// loop), "" otherwise: the keys upstream's display names use.
func (n *Node) liveNpub(a identity.NodeAddr) string {
	if p := n.core.peers.Peer(a); p != nil {
		return p.PublicKey.Npub()
	}
	if pk, ok := n.core.sess.RemoteKey(a); ok {
		return pk.Npub()
	}
	return ""
}

func (n *Node) identityCacheJSON(now time.Time) ctl.IdentityCacheJSON {
	c := n.core
	out := ctl.IdentityCacheJSON{Entries: []ctl.IdentityCacheEntry{}, Count: c.ids.Len(), MaxEntries: c.ids.max}
	c.ids.each(func(e *idEntry) {
		out.Entries = append(out.Entries, ctl.IdentityCacheEntry{NodeAddr: e.addr, Npub: e.pk.Npub(), DisplayName: n.displayName(e.addr, n.liveNpub(e.addr)),
			IPv6Addr: e.addr.IPv6().String(), LastSeenMs: msSince(e.lastSeen), AgeMs: uint64(max(0, now.Sub(e.lastSeen).Milliseconds()))})
	})
	return out
}

func (n *Node) cacheJSON(c route.CacheSnapshot) ctl.CacheJSON {
	for i := range c.Entries {
		c.Entries[i].DisplayName = n.displayName(c.Entries[i].NodeAddr, n.liveNpub(c.Entries[i].NodeAddr))
	}
	return ctl.CacheJSON{AvgAgeMs: c.AvgAgeMs, Count: c.Count, DefaultTTLMs: c.DefaultTTLMs, Entries: cacheEntriesJSON(c.Entries),
		Expired: c.Expired, FillRatio: ctl.Float(c.FillRatio), MaxEntries: c.MaxEntries}
}

func (n *Node) showTree() ctl.TreeJSON {
	s := n.LiveSnapshot()
	out := ctl.TreeJSON{TreeSnapshot: treeSnapshotJSON(s.Tree), ParentDisplayName: n.nameIn(s, s.Tree.Parent), Peers: []ctl.TreePeerJSON{}}
	if ni, ok := s.Names[s.Tree.Root]; ok {
		out.RootNpub = &ni.npub
	}
	for _, p := range s.Tree.Peers {
		out.Peers = append(out.Peers, ctl.TreePeerJSON{TreePeerSnapshot: ctl.TreePeerSnapshot(p), DisplayName: n.nameIn(s, p.NodeAddr)})
	}
	return out
}

func floatPtr(p *float64) *ctl.Float {
	if p == nil {
		return nil
	}
	return ctl.FloatPtr(*p)
}

func (n *Node) showBloom() ctl.BloomJSON {
	s := n.LiveSnapshot()
	b := s.Bloom
	// is_leaf_only is node.leaf_only, as upstream's show_bloom says it
	// (node.is_leaf_only()), not the filter state's own flag.
	out := ctl.BloomJSON{IsLeafOnly: b.IsLeafOnly || n.opts.LeafOnly, LeafDependentCount: b.LeafDependentCount, LeafDependents: b.LeafDependents,
		OwnNodeAddr: b.OwnNodeAddr, PeerFilters: make([]map[string]any, 0, len(b.PeerFilters)), Sequence: b.Sequence,
		Stats: ctl.BloomStats(b.Stats), UptreeEstimatedCount: floatPtr(b.UptreeEstimatedCount), UptreeFillRatio: floatPtr(b.UptreeFillRatio)}
	if out.LeafDependents == nil {
		out.LeafDependents = []identity.NodeAddr{}
	}
	for _, r := range b.PeerFilters {
		pf := map[string]any{"peer": r.Peer, "display_name": n.nameIn(s, r.Peer), "has_filter": r.HasFilter,
			"filter_sequence": r.FilterSequence}
		if f := r.Filter; f != nil {
			pf["estimated_count"] = floatPtr(f.EstimatedCount)
			pf["set_bits"] = f.SetBits
			pf["fill_ratio"] = ctl.Float(f.FillRatio)
		}
		out.PeerFilters = append(out.PeerFilters, pf)
	}
	return out
}

// mmpObject renders link or session metrics as upstream's mmp objects:
// show_peers' and show_sessions' "mmp" (upstream's keys only, quality
// under qkey: lqi or sqi) or, with layer set, show_mmp's link_layer /
// session_layer (with trends, spin-bit role, ECN count; path_mtu for a
// session). fips-go's jitter_us and report counters follow in the layer
// objects. A v1 link or XX session has no spin bit, and as on upstream
// next no spin_bit_role.
func mmpObject(m mmp.Snapshot, qkey string, layer, session bool) map[string]any {
	o := map[string]any{"loss_rate": ctl.Float(m.LossRate), "etx": ctl.Float(m.ETX)}
	if !layer || !session {
		o["goodput_bps"] = ctl.Float(m.GoodputBps)
		o["delivery_ratio_forward"] = ctl.Float(m.DeliveryRatioForward)
		o["delivery_ratio_reverse"] = ctl.Float(m.DeliveryRatioReverse)
	}
	if !layer {
		o["mode"] = m.Mode
	}
	if session {
		var pmtu uint16
		if m.PathMTU != nil {
			pmtu = *m.PathMTU
		}
		o["path_mtu"] = pmtu
	}
	if m.SRTTMs != nil {
		o["srtt_ms"] = ctl.Float(*m.SRTTMs)
		if m.Quality != nil {
			o[qkey] = ctl.Float(*m.Quality)
		}
	}
	if m.SmoothedLoss != nil {
		o["smoothed_loss"] = ctl.Float(*m.SmoothedLoss)
	}
	if m.SmoothedETX != nil {
		o["smoothed_etx"] = ctl.Float(*m.SmoothedETX)
	}
	if !layer {
		if session { // what fips-go's show_sessions mmp always carried beside upstream's keys
			for k, v := range map[string]*string{"rtt_trend": m.RTTTrend, "loss_trend": m.LossTrend, "goodput_trend": m.GoodputTrend,
				"jitter_trend": m.JitterTrend, "etx_trend": m.ETXTrend} {
				if v != nil {
					o[k] = *v
				}
			}
			o["ecn_ce_count"], o["jitter_us"], o["stats"] = m.ECNCECount, m.JitterUs, m.Stats
			spinRole(o, m)
		}
		return o
	}
	trend := func(key string, t *string) {
		if t != nil {
			o[key] = *t
		}
	}
	trend("rtt_trend", m.RTTTrend)
	trend("loss_trend", m.LossTrend)
	if session {
		trend("etx_trend", m.ETXTrend)
	} else {
		trend("goodput_trend", m.GoodputTrend)
		trend("jitter_trend", m.JitterTrend)
		spinRole(o, m)
		o["ecn_ce_count"] = m.ECNCECount
	}
	o["jitter_us"] = m.JitterUs // ours
	o["stats"] = m.Stats        // ours
	return o
}

// spinRole adds master's spin_bit_role where the metrics have one.
func spinRole(o map[string]any, m mmp.Snapshot) {
	if m.SpinBitRole != "" {
		o["spin_bit_role"] = m.SpinBitRole
	}
}

func (n *Node) sessionsJSON() map[string]any {
	c := n.core
	return n.sessionRows(c.sess.Snapshot(), func(a identity.NodeAddr) (mmp.Snapshot, bool) {
		if sm := c.smmp[a]; sm != nil {
			return sm.link.Snapshot(), true
		}
		return mmp.Snapshot{}, false
	})
}

// sessionRows renders show_sessions from the session table's rows and
// each session's metrics.
func (n *Node) sessionRows(rows []session.SnapshotEntry, metrics func(identity.NodeAddr) (mmp.Snapshot, bool)) map[string]any {
	out := make([]ctl.SessionJSON, 0, len(rows))
	for _, r := range rows {
		row := ctl.SessionJSON{SessionEntry: sessionEntryJSON(r)}
		if a, err := identity.ParseNodeAddr(r.RemoteAddr); err == nil {
			row.DisplayName = n.displayName(a, r.Npub)
			if m, ok := metrics(a); ok {
				row.MMP = mmpObject(m, "sqi", false, true)
			}
		}
		out = append(out, row)
	}
	return map[string]any{"sessions": out}
}

// showMMP is show_mmp: link metrics per peer, end-to-end metrics per
// session, in upstream's nesting.
func (n *Node) showMMP() map[string]any {
	s := n.LiveSnapshot()
	peers := make([]ctl.MMPPeerJSON, 0, len(s.Peers))
	for _, p := range s.Peers {
		peers = append(peers, ctl.MMPPeerJSON{Peer: p.NodeAddr, DisplayName: n.displayName(p.Addr, p.Npub), Mode: p.MMP.Mode,
			LinkLayer: mmpObject(p.MMP, "lqi", true, false)})
	}
	sessions := make([]ctl.MMPSessionJSON, 0, len(s.SessionMMP))
	for _, v := range s.SessionMMP {
		sessions = append(sessions, ctl.MMPSessionJSON{Remote: v.Remote.String(), DisplayName: n.displayName(v.Remote, v.Npub),
			Mode: v.MMP.Mode, SessionLayer: mmpObject(v.MMP, "sqi", true, true)})
	}
	return map[string]any{"peers": peers, "sessions": sessions}
}

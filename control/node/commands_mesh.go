package node

import (
	"context"
	"encoding/json"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/tree"
)

// registerMesh installs the routing-layer commands.
func (n *Node) registerMesh(r ctlRegistry) {
	n.registerProbe(r)
	r.Register("show_tree", func(context.Context, json.RawMessage) (any, error) { return n.showTree(), nil })
	r.Register("show_bloom", func(context.Context, json.RawMessage) (any, error) { return n.showBloom(), nil })
	r.Register("show_routing", func(context.Context, json.RawMessage) (any, error) { return n.showRouting(), nil })
	r.Register("show_metrics", func(context.Context, json.RawMessage) (any, error) { return n.showMetrics(), nil })
	// The cache tables can hold tens of thousands of entries: they are
	// read on the event loop when asked for, not copied into every snapshot.
	r.Register("show_cache", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.Do(ctx, func(now time.Time) any { return n.core.route.CacheSnapshot(now) })
	})
	r.Register("show_mmp", func(context.Context, json.RawMessage) (any, error) { return n.showMMP(), nil })
	r.Register("show_sessions", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.Do(ctx, func(now time.Time) any { return n.core.sessionsJSON() })
	})
	r.Register("show_identity_cache", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return n.Do(ctx, func(now time.Time) any { return n.core.identityCacheJSON(now) })
	})
}

// RoutingJSON is show_routing.
type RoutingJSON struct {
	route.Snapshot
	IdentityCacheEntries   int                      `json:"identity_cache_entries"`
	PendingTunDestinations int                      `json:"pending_tun_destinations"`
	PendingTunPackets      int                      `json:"pending_tun_packets"`
	Retries                []RetryJSON              `json:"retries"`
	Discovery              route.LookupStats        `json:"discovery"`
	ErrorSignals           route.ErrorStats         `json:"error_signals"`
	Congestion             route.CongestionStats    `json:"congestion"`
	Limits                 route.LimitStats         `json:"limits"`
	PendingLookups         []route.PendingLookupRow `json:"pending_lookups"`
}

func (n *Node) showRouting() RoutingJSON {
	s := n.Snapshot()
	rows := make([]route.PendingLookupRow, len(s.Routing.PendingLookups))
	for i, r := range s.Routing.PendingLookups {
		r.DisplayName = s.displayName(r.Target)
		rows[i] = r
	}
	retries := make([]RetryJSON, 0, len(s.Retries))
	for _, r := range s.Retries {
		j := RetryJSON{AutoReconnect: r.AutoReconnect, DisplayName: s.displayName(r.NodeAddr), NodeAddr: r.NodeAddr.String(),
			ResolvedAddr: r.Addr, RetryAfterMs: msSince(r.NextDial), RetryCount: uint32(r.Retries)}
		if r.Err != nil {
			j.LastError = r.Err.Error()
		}
		retries = append(retries, j)
	}
	return RoutingJSON{Snapshot: s.Routing, IdentityCacheEntries: s.IDCacheLen, Retries: retries,
		Discovery: s.Routing.Lookup, ErrorSignals: s.RouteStats.Errors, Congestion: s.RouteStats.Congestion,
		Limits: s.RouteStats.Limits, PendingLookups: rows}
}

// RetryJSON is one show_routing retries entry: upstream's keys, plus
// fips-go's resolved_addr (the address the last attempt dialled, a host
// name's answer; "" before any) and last_error (why the last attempt could
// not dial, omitted when it could).
type RetryJSON struct {
	AutoReconnect bool   `json:"auto_reconnect"`
	DisplayName   string `json:"display_name"`
	LastError     string `json:"last_error,omitempty"`
	NodeAddr      string `json:"node_addr"`
	ResolvedAddr  string `json:"resolved_addr"`
	RetryAfterMs  uint64 `json:"retry_after_ms"`
	RetryCount    uint32 `json:"retry_count"`
}

// MetricsJSON is show_metrics: upstream's counter families.
type MetricsJSON struct {
	Forwarding route.ForwardingStats `json:"forwarding"`
	Lookup     route.LookupStats     `json:"lookup"`
	Discovery  route.LookupStats     `json:"discovery"` // legacy name of lookup
	Tree       tree.Stats            `json:"tree"`
	Bloom      bloom.Stats           `json:"bloom"`
	Congestion CongestionJSON        `json:"congestion"`
	Errors     route.ErrorStats      `json:"errors"`
	Session    SessionMetricsJSON    `json:"session"` // ours, not upstream's
	IPv6       IPv6Stats             `json:"ipv6"`    // ours, not upstream's
}

// SessionMetricsJSON is what the node counts about its own sessions.
type SessionMetricsJSON struct {
	// NoRouteLookups: lookups started because an established session's
	// datagram found no route (stale coordinates after the tree moved).
	NoRouteLookups uint64 `json:"no_route_lookups"`
}

// CongestionJSON is the congestion family: the router's counters plus
// what the node and sessions see.
type CongestionJSON struct {
	route.CongestionStats
	CEReceived       uint64 `json:"ce_received"`        // datagrams delivered to us with CE
	KernelDropEvents uint64 `json:"kernel_drop_events"` // ticks on which a transport's kernel drops grew
}

func (n *Node) showMetrics() MetricsJSON {
	s := n.Snapshot()
	return MetricsJSON{Forwarding: s.RouteStats.Forwarding, Lookup: s.RouteStats.Lookup, Discovery: s.RouteStats.Lookup,
		Tree: s.Tree.Stats, Bloom: s.Bloom.Stats, Errors: s.RouteStats.Errors,
		Congestion: CongestionJSON{CongestionStats: s.RouteStats.Congestion, CEReceived: s.CEReceived, KernelDropEvents: s.KernelDropEvents},
		Session:    SessionMetricsJSON{NoRouteLookups: s.NoRouteLookups},
		IPv6:       s.IPv6}
}

// IdentityCacheJSON is show_identity_cache.
type IdentityCacheJSON struct {
	Entries    []IdentityCacheEntry `json:"entries"`
	Count      int                  `json:"count"`
	MaxEntries int                  `json:"max_entries"`
}

// IdentityCacheEntry is one cached key.
type IdentityCacheEntry struct {
	NodeAddr    identity.NodeAddr `json:"node_addr"`
	Npub        string            `json:"npub"`
	DisplayName string            `json:"display_name"`
	IPv6Addr    string            `json:"ipv6_addr"`
	LastSeenMs  uint64            `json:"last_seen_ms"`
	AgeMs       uint64            `json:"age_ms"`
}

func (c *Core) identityCacheJSON(now time.Time) IdentityCacheJSON {
	out := IdentityCacheJSON{Entries: []IdentityCacheEntry{}, Count: c.ids.Len(), MaxEntries: c.ids.max}
	c.ids.each(func(e *idEntry) {
		name := e.pk.Npub()
		if p := c.peers.Peer(e.addr); p != nil && p.Alias != "" {
			name = p.Alias
		}
		out.Entries = append(out.Entries, IdentityCacheEntry{NodeAddr: e.addr, Npub: e.pk.Npub(), DisplayName: displayName(name, e.pk.Npub()),
			IPv6Addr: e.addr.IPv6().String(), LastSeenMs: msSince(e.lastSeen), AgeMs: uint64(max(0, now.Sub(e.lastSeen).Milliseconds()))})
	})
	return out
}

// TreePeerJSON is one show_tree peer: the tree's view plus the node's
// display name.
type TreePeerJSON struct {
	tree.PeerSnapshot
	DisplayName string `json:"display_name"`
}

// TreeJSON is show_tree: the tree snapshot plus what the node knows about
// names.
type TreeJSON struct {
	tree.Snapshot
	RootNpub          *string        `json:"root_npub"`
	ParentDisplayName string         `json:"parent_display_name"`
	Peers             []TreePeerJSON `json:"peers"`
}

func (s *Snapshot) displayName(a identity.NodeAddr) string {
	if ni, ok := s.Names[a]; ok {
		return displayName(ni.alias, ni.npub)
	}
	return a.Short()
}

func (n *Node) showTree() TreeJSON {
	s := n.Snapshot()
	out := TreeJSON{Snapshot: s.Tree, ParentDisplayName: s.displayName(s.Tree.Parent), Peers: []TreePeerJSON{}}
	if ni, ok := s.Names[s.Tree.Root]; ok {
		out.RootNpub = &ni.npub
	}
	for _, p := range s.Tree.Peers {
		out.Peers = append(out.Peers, TreePeerJSON{PeerSnapshot: p, DisplayName: s.displayName(p.NodeAddr)})
	}
	return out
}

func (n *Node) showBloom() bloom.Snapshot {
	s := n.Snapshot()
	b := s.Bloom
	rows := make([]bloom.PeerFilterRow, len(b.PeerFilters))
	for i, r := range b.PeerFilters {
		r.DisplayName = s.displayName(r.Peer)
		rows[i] = r
	}
	b.PeerFilters = rows
	return b
}

// SessionJSON is one show_sessions entry.
type SessionJSON struct {
	session.SnapshotEntry
	DisplayName string        `json:"display_name"`
	MMP         *mmp.Snapshot `json:"mmp,omitempty"`
}

func (c *Core) sessionsJSON() map[string]any {
	rows := c.sess.Snapshot()
	out := make([]SessionJSON, 0, len(rows))
	for _, r := range rows {
		name := displayName("", r.Npub)
		if a, err := identity.ParseNodeAddr(r.RemoteAddr); err == nil {
			if p := c.peers.Peer(a); p != nil && p.Alias != "" {
				name = p.Alias
			}
		}
		row := SessionJSON{SnapshotEntry: r, DisplayName: name}
		if a, err := identity.ParseNodeAddr(r.RemoteAddr); err == nil {
			if sm := c.smmp[a]; sm != nil {
				snap := sm.link.Snapshot()
				row.MMP = &snap
			}
		}
		out = append(out, row)
	}
	return map[string]any{"sessions": out}
}

// MMPPeerJSON is one show_mmp link row.
type MMPPeerJSON struct {
	NodeAddr    string `json:"node_addr"`
	Npub        string `json:"npub"`
	DisplayName string `json:"display_name"`
	mmp.Snapshot
	LQI *float64 `json:"lqi,omitempty"`
}

// MMPSessionJSON is one show_mmp session row.
type MMPSessionJSON struct {
	RemoteAddr  string `json:"remote_addr"`
	DisplayName string `json:"display_name"`
	mmp.Snapshot
	SQI *float64 `json:"sqi,omitempty"`
}

// showMMP is show_mmp: link metrics per peer, end-to-end metrics per
// session.
func (n *Node) showMMP() map[string]any {
	s := n.Snapshot()
	peers := make([]MMPPeerJSON, 0, len(s.Peers))
	for _, p := range s.Peers {
		peers = append(peers, MMPPeerJSON{NodeAddr: p.NodeAddr, Npub: p.Npub, DisplayName: displayName(p.Alias, p.Npub),
			Snapshot: p.MMP, LQI: p.MMP.Quality})
	}
	sessions := make([]MMPSessionJSON, 0, len(s.SessionMMP))
	for _, v := range s.SessionMMP {
		sessions = append(sessions, MMPSessionJSON{RemoteAddr: v.Remote.String(), DisplayName: s.displayName(v.Remote),
			Snapshot: v.MMP, SQI: v.MMP.Quality})
	}
	return map[string]any{"peers": peers, "sessions": sessions}
}

package node

import (
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/tree"
)

// The routing packages' snapshots in the control socket's schema
// (control/ctl copies their layouts so that clients need not link them).
// A nil slice stays nil and an empty one empty: they render as null and
// [] respectively.

func convertAll[S, D any](s []S, f func(S) D) []D {
	if s == nil {
		return nil
	}
	out := make([]D, len(s))
	for i := range s {
		out[i] = f(s[i])
	}
	return out
}

func routeSnapshotJSON(s route.Snapshot) ctl.RouteSnapshot {
	return ctl.RouteSnapshot{CoordCacheEntries: s.CoordCacheEntries,
		PendingLookups: pendingLookupsJSON(s.PendingLookups),
		RecentRequests: s.RecentRequests, Forwarding: ctl.RouteForwardingStats(s.Forwarding), Lookup: ctl.RouteLookupStats(s.Lookup)}
}

func pendingLookupsJSON(rows []route.PendingLookupRow) []ctl.RoutePendingLookup {
	return convertAll(rows, func(r route.PendingLookupRow) ctl.RoutePendingLookup { return ctl.RoutePendingLookup(r) })
}

func cacheEntriesJSON(es []route.CacheEntryView) []ctl.RouteCacheEntry {
	return convertAll(es, func(e route.CacheEntryView) ctl.RouteCacheEntry { return ctl.RouteCacheEntry(e) })
}

func treeSnapshotJSON(s tree.Snapshot) ctl.TreeSnapshot {
	return ctl.TreeSnapshot{MyNodeAddr: s.MyNodeAddr, Root: s.Root, IsRoot: s.IsRoot, Depth: s.Depth, MyCoords: s.MyCoords,
		Parent: s.Parent, DeclarationSequence: s.DeclarationSequence, DeclarationSigned: s.DeclarationSigned,
		PeerTreeCount: s.PeerTreeCount,
		Peers:         convertAll(s.Peers, func(p tree.PeerSnapshot) ctl.TreePeerSnapshot { return ctl.TreePeerSnapshot(p) }),
		Stats:         ctl.TreeStats(s.Stats)}
}

func sessionEntryJSON(e session.SnapshotEntry) ctl.SessionEntry {
	return ctl.SessionEntry{RemoteAddr: e.RemoteAddr, State: e.State, IsInitiator: e.IsInitiator, LastActivityMs: e.LastActivityMs,
		Npub: e.Npub, Stats: ctl.SessionEntryStats(e.Stats), ResendCount: e.ResendCount, SessionStartMs: e.SessionStartMs,
		CurrentKBit: e.CurrentKBit, CoordsWarmupRemaining: e.CoordsWarmupRemaining, IsDraining: e.IsDraining,
		PostQuantum: e.PostQuantum, NoisePattern: e.NoisePattern}
}

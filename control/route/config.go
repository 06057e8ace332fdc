package route

import "time"

// Config holds the routing and lookup settings. The zero value is not
// useful; start from DefaultConfig.
type Config struct {
	// NextHop is the transit next-hop rule (node.routing.next_hop, a
	// fips-go addition): NextHopDistance by default, NextHopUpstream for
	// upstream's order. See FindNextHop.
	NextHop NextHopRule
	// FullFilterLookups is node.routing.full_filter_lookups "tree" (a
	// fips-go addition, the default): a lookup may also go to a tree peer
	// whose latest filter was refused over the FPR cap. Upstream
	// ("upstream") sends lookups only where a filter holds the target, so
	// once a mesh outgrows what a filter holds (about 2,100 nodes at
	// upstream's 0.20 cap) the parent's filter, which covers everything
	// outside our subtree, is refused and lookups for anything outside it
	// fail at once.
	FullFilterLookups bool

	// Coordinate cache: node.cache.coord_size and coord_ttl_secs.
	CoordCacheSize int
	CoordCacheTTL  time.Duration

	// SessionTTL is node.session.default_ttl: the TTL of datagrams this
	// node originates, routing error signals included.
	SessionTTL uint8

	// Routing error signals: at most one per destination per
	// ErrorInterval; limiter entries older than ErrorMaxAge are dropped.
	ErrorInterval time.Duration
	ErrorMaxAge   time.Duration

	// Lookups (node.lookup.*).
	LookupTTL             uint8           // ttl
	LookupAttemptTimeouts []time.Duration // attempt_timeouts_secs
	LookupRecentExpiry    time.Duration   // recent_expiry_secs: request-id dedup window
	LookupMaxRecent       int             // request ids remembered
	LookupForwardInterval time.Duration   // forward_min_interval per target
	LookupForwardMaxAge   time.Duration   // forward limiter entry age
	LookupBackoffBase     time.Duration   // backoff_base_secs (0 with max 0: disabled)
	LookupBackoffMax      time.Duration   // backoff_max_secs

	// Leaf is upstream next's Leaf profile (node.leaf_only on a node whose
	// wire format is v1): lookups in transit are not forwarded (and
	// control/node makes its tree a Leaf too: tree.SetLeaf).
	Leaf bool
	// LookupMinMTU is the min_mtu this node's lookup requests carry (next
	// sends its tun.mtu; master, and a v0 node, 0). Forwarding, a request
	// goes only to peers whose link MTU is at least its min_mtu (0 or an
	// unknown link MTU passes), as on next.
	LookupMinMTU uint16

	// Bounds with no upstream counterpart (upstream's tables are
	// unbounded). A refusal is counted in Stats.Limits.
	MaxErrorLimiterEntries   int // destinations the error-signal limiter tracks
	MaxForwardLimiterEntries int // targets the lookup forward limiter tracks
	MaxPendingLookups        int // lookups in flight
	MaxBackoffEntries        int // targets with a recorded lookup failure
}

// NextHopRule selects how FindNextHop ranks the peers strictly closer
// to the destination in the tree.
type NextHopRule uint8

// Next-hop rules.
const (
	// NextHopDistance: least tree distance first (then bloom hit, link
	// cost, address). Measured with testing/sim at 1,000 nodes: mean
	// stretch 1.30 where upstream's order gives 1.49 (internet-like),
	// 1.75 against 1.93 (random); docs/scale.md.
	NextHopDistance NextHopRule = iota
	// NextHopUpstream: upstream's find_next_hop — bloom candidates by
	// link cost first, then greedy tree routing.
	NextHopUpstream
)

// String is the node.routing.next_hop value.
func (h NextHopRule) String() string {
	switch h {
	case NextHopDistance:
		return "distance"
	case NextHopUpstream:
		return "upstream"
	}
	return "unknown"
}

// DefaultConfig returns upstream's defaults, with fips-go's next-hop
// rule (NextHopDistance) and lookups through full filters
// (FullFilterLookups).
func DefaultConfig() Config {
	return Config{
		NextHop:           NextHopDistance,
		FullFilterLookups: true,
		CoordCacheSize:    50_000,
		CoordCacheTTL:     300 * time.Second,
		SessionTTL:        64,
		ErrorInterval:     100 * time.Millisecond,
		ErrorMaxAge:       10 * time.Second,
		LookupTTL:         64,
		LookupAttemptTimeouts: []time.Duration{
			1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		},
		LookupRecentExpiry:       10 * time.Second,
		LookupMaxRecent:          4096,
		LookupForwardInterval:    2 * time.Second,
		LookupForwardMaxAge:      60 * time.Second,
		MaxErrorLimiterEntries:   16384,
		MaxForwardLimiterEntries: 16384,
		MaxPendingLookups:        1024,
		MaxBackoffEntries:        4096,
	}
}

// normalized replaces values no table can work with by the smallest
// workable ones, and copies the attempt list so the caller's slice is not
// shared.
func (c Config) normalized() Config {
	if c.CoordCacheSize < 1 {
		c.CoordCacheSize = 1
	}
	if c.LookupMaxRecent < 0 {
		c.LookupMaxRecent = 0
	}
	for _, p := range []*int{&c.MaxErrorLimiterEntries, &c.MaxForwardLimiterEntries, &c.MaxPendingLookups, &c.MaxBackoffEntries} {
		if *p < 1 {
			*p = 1
		}
	}
	c.LookupAttemptTimeouts = append([]time.Duration(nil), c.LookupAttemptTimeouts...)
	return c
}

package route

import (
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/ratelimit"
)

// Router is one node's routing and lookup state. Not safe for concurrent
// use.
type Router struct {
	namer  func(identity.NodeAddr) string
	fwdLog *slog.Logger // upstream's forwarding target
	// delivery is what HandleSessionDatagram returns for local datagrams.
	delivery Delivery

	id    *identity.Identity
	self  identity.NodeAddr
	cfg   Config
	topo  Topology
	flt   Filters
	links Links
	ids   Identities
	log   *slog.Logger
	rnd   io.Reader

	cache      *CoordCache
	errLimiter *ratelimit.Keyed[identity.NodeAddr]

	// Lookups.
	recent      map[uint64]*recentRequest
	recentOrder []uint64                          // request ids in arrival order
	recentBy    map[identity.NodeAddr]*peerRecent // the ids each peer sent, for the fair share
	proofs      *ratelimit.Keyed[identity.NodeAddr]
	pending     map[identity.NodeAddr]*pendingLookup
	backoff     map[identity.NodeAddr]*backoffEntry
	fwdLimiter  *ratelimit.Keyed[identity.NodeAddr]
	onLookup    func(now time.Time, ev LookupEvent)

	stats Stats
	buf   []byte // scratch for outgoing messages; Links.Send does not retain it
}

// New returns a Router for the node self. rnd feeds request ids and
// signature nonces (nil: crypto/rand); log may be nil.
func New(self *identity.Identity, cfg Config, topo Topology, filters Filters, links Links, ids Identities, log *slog.Logger, rnd io.Reader) *Router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fwdLog := logging.WithTarget(log, "fips::node::dataplane::forwarding")
	log = logging.WithTarget(log, "fips::node::handlers::lookup")
	cfg = cfg.normalized()
	errAge := max(cfg.ErrorMaxAge, cfg.ErrorInterval)
	fwdAge := max(cfg.LookupForwardMaxAge, cfg.LookupForwardInterval)
	return &Router{
		id: self, self: self.NodeAddr(), cfg: cfg, topo: topo, flt: filters, links: links, ids: ids, log: log, rnd: rnd,
		fwdLog:     fwdLog,
		cache:      NewCoordCache(cfg.CoordCacheSize, cfg.CoordCacheTTL),
		errLimiter: newAddrLimiter(msDuration(cfg.ErrorInterval), msDuration(errAge), cfg.MaxErrorLimiterEntries),
		recent:     map[uint64]*recentRequest{},
		recentBy:   map[identity.NodeAddr]*peerRecent{},
		proofs:     newProofBuckets(),
		pending:    map[identity.NodeAddr]*pendingLookup{},
		backoff:    map[identity.NodeAddr]*backoffEntry{},
		fwdLimiter: newAddrLimiter(msDuration(cfg.LookupForwardInterval), msDuration(fwdAge), cfg.MaxForwardLimiterEntries),
	}
}

// Cache is the coordinate cache, for the session layer's reads and
// writes and for PathBroken handling (Remove). On tree changes the node
// invalidates as upstream does, with our own address as self and our
// current root as root: parent switch and ancestry update →
// InvalidateViaNode(self); becoming root → InvalidateOtherRoots(self);
// loop drop and parent loss → InvalidateViaNode(self) then
// InvalidateOtherRoots(root). All but parent loss also call
// ResetLookupBackoff, as do a new peer and a tree change after a first
// RTT sample.
func (r *Router) Cache() *CoordCache { return r.cache }

// Config returns the normalised configuration in use.
func (r *Router) Config() Config {
	c := r.cfg
	c.LookupAttemptTimeouts = slices.Clone(c.LookupAttemptTimeouts)
	return c
}

// Tick runs the once-a-second work: lookup retries and timeouts (upstream
// check_pending_lookups), then expiry of request-id dedup entries, limiter
// entries and coordinate-cache entries.
func (r *Router) Tick(now time.Time) {
	n := ms(now)
	r.pollPending(now)
	r.purgeRecent(n)
	r.errLimiter.Sweep(msTime(n))
	r.fwdLimiter.Sweep(msTime(n))
	r.cache.purgeExpired(n)
	r.pruneBackoff(n)
	r.proofs.Sweep(msTime(n))
}

// Stats returns the counters.
func (r *Router) Stats() Stats {
	s := r.stats
	s.Limits.CacheEvictedLRU = r.cache.evictedLRU
	s.Limits.CacheEvictedExpired = r.cache.evictedExpired
	s.Limits.CachePurgedExpired = r.cache.purged
	s.Limits.ErrorLimiterFull = r.errLimiter.NoRoom
	s.Limits.ForwardLimiterFull = r.fwdLimiter.NoRoom
	return s
}

// Snapshot is the show_routing view at now.
func (r *Router) Snapshot(now time.Time) Snapshot {
	n := ms(now)
	s := Snapshot{CoordCacheEntries: r.cache.Len(), RecentRequests: len(r.recent),
		Forwarding: r.stats.Forwarding, Lookup: r.stats.Lookup, PendingLookups: []PendingLookupRow{}}
	for _, t := range sortedKeys(r.pending) {
		p := r.pending[t]
		s.PendingLookups = append(s.PendingLookups, PendingLookupRow{Target: t, InitiatedMs: p.initiated,
			LastSentMs: p.lastSent, Attempt: p.attempt, AgeMs: satSub(n, p.initiated)})
	}
	return s
}

// CacheSnapshot is the show_cache view at now.
func (r *Router) CacheSnapshot(now time.Time) CacheSnapshot { return r.cache.Snapshot(now) }

func sortedKeys[V any](m map[identity.NodeAddr]V) []identity.NodeAddr {
	keys := make([]identity.NodeAddr, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, identity.NodeAddr.Compare)
	return keys
}

// scratch returns a buffer of n bytes that lives until the next call.
func (r *Router) scratch(n int) []byte {
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	return r.buf[:n]
}

// SetNamer sets the display names of the log lines (upstream's
// peer_display_name); without one a node is named by its short hex.
func (r *Router) SetNamer(f func(identity.NodeAddr) string) { r.namer = f }

func (r *Router) name(a identity.NodeAddr) slog.LogValuer { return logging.Named(r.namer, a) }

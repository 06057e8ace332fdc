package ctl

import "github.com/fips-go/fips/control/identity"

// Response data of the routing-layer commands (show_routing, show_metrics,
// show_cache, show_tree, show_bloom, show_sessions). The objects the
// routing packages build (route, tree, bloom, session, rendezvous) are
// copied here field for field, with the same JSON keys in the same order,
// so that clients decode them without linking those packages; control/node
// converts.

// RoutingJSON is show_routing.
type RoutingJSON struct {
	RouteSnapshot
	IdentityCacheEntries   int                  `json:"identity_cache_entries"`
	PendingTunDestinations int                  `json:"pending_tun_destinations"`
	PendingTunPackets      int                  `json:"pending_tun_packets"`
	Retries                []RetryJSON          `json:"retries"`
	Discovery              RouteLookupStats     `json:"discovery"`
	ErrorSignals           ErrorSignalsJSON     `json:"error_signals"`
	Congestion             CongestionJSON       `json:"congestion"`
	Limits                 RouteLimitStats      `json:"limits"` // ours, not upstream's
	PendingLookups         []RoutePendingLookup `json:"pending_lookups"`
}

// MetricsJSON is show_metrics: upstream's counter families, plus fips-go's
// session and ipv6. native is upstream's native-API family, native_limits ours.
type MetricsJSON struct {
	Forwarding RouteForwardingStats `json:"forwarding"`
	Lookup     RouteLookupStats     `json:"lookup"`
	Discovery  RouteLookupStats     `json:"discovery"` // legacy name of lookup
	Tree       TreeStats            `json:"tree"`
	Bloom      BloomStats           `json:"bloom"`
	Congestion CongestionJSON       `json:"congestion"`
	Errors     ErrorSignalsJSON     `json:"errors"`
	Native     NativeStatsJSON      `json:"native"`
	// NativeLimits is the native API's refusals at its bounds (ours).
	NativeLimits NativeLimitsJSON   `json:"native_limits"`
	Session      SessionMetricsJSON `json:"session"` // ours, not upstream's
	IPv6         IPv6Stats          `json:"ipv6"`    // ours, not upstream's
	// Rendezvous is Nostr discovery's counters (ours); zero when off.
	Rendezvous RendezvousStats `json:"rendezvous"`
}

// CongestionJSON is the congestion family: the router's counters plus
// what the node and sessions see.
type CongestionJSON struct {
	RouteCongestionStats
	CEReceived       uint64 `json:"ce_received"`        // datagrams delivered to us with CE
	KernelDropEvents uint64 `json:"kernel_drop_events"` // transitions into kernel drops, as upstream counts them
}

// CacheJSON is show_cache: upstream's keys, fill_ratio a float.
type CacheJSON struct {
	AvgAgeMs     int64             `json:"avg_age_ms"`
	Count        int               `json:"count"`
	DefaultTTLMs int64             `json:"default_ttl_ms"`
	Entries      []RouteCacheEntry `json:"entries"`
	Expired      int               `json:"expired"`
	FillRatio    Float             `json:"fill_ratio"`
	MaxEntries   int               `json:"max_entries"`
}

// TreePeerJSON is one show_tree peer: the tree's view plus the node's
// display name.
type TreePeerJSON struct {
	TreePeerSnapshot
	DisplayName string `json:"display_name"`
}

// TreeJSON is show_tree: the tree snapshot plus what the node knows about
// names.
type TreeJSON struct {
	TreeSnapshot
	RootNpub          *string        `json:"root_npub"`
	ParentDisplayName string         `json:"parent_display_name"`
	Peers             []TreePeerJSON `json:"peers"`
}

// BloomJSON is show_bloom. Each peer_filters entry carries its filter's
// estimated_count, set_bits and fill_ratio beside the peer's keys, as
// upstream's does, when a filter is held.
type BloomJSON struct {
	IsLeafOnly           bool                `json:"is_leaf_only"`
	LeafDependentCount   int                 `json:"leaf_dependent_count"`
	LeafDependents       []identity.NodeAddr `json:"leaf_dependents"`
	OwnNodeAddr          identity.NodeAddr   `json:"own_node_addr"`
	PeerFilters          []map[string]any    `json:"peer_filters"`
	Sequence             uint64              `json:"sequence"`
	Stats                BloomStats          `json:"stats"`
	UptreeEstimatedCount *Float              `json:"uptree_estimated_count"`
	UptreeFillRatio      *Float              `json:"uptree_fill_ratio"`
}

// SessionJSON is one show_sessions entry.
type SessionJSON struct {
	SessionEntry
	DisplayName string         `json:"display_name"`
	MMP         map[string]any `json:"mmp,omitempty"`
}

// RouteSnapshot is show_routing's routing-table part (route.Snapshot's
// layout).
type RouteSnapshot struct {
	CoordCacheEntries int                  `json:"coord_cache_entries"` // expired entries not yet purged included
	PendingLookups    []RoutePendingLookup `json:"pending_lookups"`     // by target address, never nil
	RecentRequests    int                  `json:"recent_requests"`
	Forwarding        RouteForwardingStats `json:"forwarding"`
	Lookup            RouteLookupStats     `json:"lookup"`
}

// RoutePendingLookup is one show_routing pending_lookups entry
// (route.PendingLookupRow's layout).
type RoutePendingLookup struct {
	Target      identity.NodeAddr `json:"target"`
	DisplayName string            `json:"display_name"` // left empty; the node fills it
	InitiatedMs int64             `json:"initiated_ms"` // Unix ms
	LastSentMs  int64             `json:"last_sent_ms"` // Unix ms
	Attempt     int               `json:"attempt"`      // 1 = first request
	AgeMs       int64             `json:"age_ms"`
}

// RouteForwardingStats is the forwarding family of show_routing and
// show_metrics, in upstream's order there (route.ForwardingStats' layout;
// show_status' is [ForwardingStats]).
type RouteForwardingStats struct {
	ReceivedPackets        uint64 `json:"received_packets"`
	ReceivedBytes          uint64 `json:"received_bytes"`
	DecodeErrorPackets     uint64 `json:"decode_error_packets"`
	DecodeErrorBytes       uint64 `json:"decode_error_bytes"`
	WarmMalformedPackets   uint64 `json:"warm_malformed_packets"` // not a drop: only the cache warming was abandoned
	WarmMalformedBytes     uint64 `json:"warm_malformed_bytes"`
	TTLExhaustedPackets    uint64 `json:"ttl_exhausted_packets"`
	TTLExhaustedBytes      uint64 `json:"ttl_exhausted_bytes"`
	DeliveredPackets       uint64 `json:"delivered_packets"`
	DeliveredBytes         uint64 `json:"delivered_bytes"`
	ForwardedPackets       uint64 `json:"forwarded_packets"`
	ForwardedBytes         uint64 `json:"forwarded_bytes"`
	DropNoRoutePackets     uint64 `json:"drop_no_route_packets"`
	DropNoRouteBytes       uint64 `json:"drop_no_route_bytes"`
	DropMTUExceededPackets uint64 `json:"drop_mtu_exceeded_packets"`
	DropMTUExceededBytes   uint64 `json:"drop_mtu_exceeded_bytes"`
	DropSendErrorPackets   uint64 `json:"drop_send_error_packets"`
	DropSendErrorBytes     uint64 `json:"drop_send_error_bytes"`
	OriginatedPackets      uint64 `json:"originated_packets"`
	OriginatedBytes        uint64 `json:"originated_bytes"`
	RouteTreeUp            uint64 `json:"route_tree_up"`
	RouteTreeDown          uint64 `json:"route_tree_down"`
	RouteTreeDownCross     uint64 `json:"route_tree_down_cross"`
	RouteCrosslinkDescend  uint64 `json:"route_crosslink_descend"`
	RouteCrosslinkAscend   uint64 `json:"route_crosslink_ascend"`
	RouteDirectPeer        uint64 `json:"route_direct_peer"`
}

// RouteLookupStats is the lookup family (show_metrics' lookup and
// discovery, show_routing's lookup and discovery): route.LookupStats'
// layout.
type RouteLookupStats struct {
	ReqReceived           uint64 `json:"req_received"`
	ReqDecodeError        uint64 `json:"req_decode_error"`
	ReqDuplicate          uint64 `json:"req_duplicate"`
	ReqDedupCacheFull     uint64 `json:"req_dedup_cache_full"`
	ReqTargetIsUs         uint64 `json:"req_target_is_us"`
	ReqForwarded          uint64 `json:"req_forwarded"`
	ReqTTLExhausted       uint64 `json:"req_ttl_exhausted"`
	ReqInitiated          uint64 `json:"req_initiated"`
	ReqDeduplicated       uint64 `json:"req_deduplicated"`
	ReqBackoffSuppressed  uint64 `json:"req_backoff_suppressed"`
	ReqForwardRateLimited uint64 `json:"req_forward_rate_limited"`
	ReqBloomMiss          uint64 `json:"req_bloom_miss"`
	ReqNoTreePeer         uint64 `json:"req_no_tree_peer"`
	ReqFallbackForwarded  uint64 `json:"req_fallback_forwarded"`
	RespReceived          uint64 `json:"resp_received"`
	RespDecodeError       uint64 `json:"resp_decode_error"`
	RespForwarded         uint64 `json:"resp_forwarded"`
	RespIdentityMiss      uint64 `json:"resp_identity_miss"`
	RespProofFailed       uint64 `json:"resp_proof_failed"`
	RespNoRoute           uint64 `json:"resp_no_route"`
	RespAccepted          uint64 `json:"resp_accepted"`
	RespTimedOut          uint64 `json:"resp_timed_out"`
	// ReqLeafNotForwarded: requests a Leaf node (next's profile) did not
	// forward, as next does.
	ReqLeafNotForwarded uint64 `json:"req_leaf_not_forwarded"`
}

// RouteCongestionStats is the routing layer's part of the congestion family
// (route.CongestionStats' layout).
type RouteCongestionStats struct {
	CEForwarded        uint64 `json:"ce_forwarded"`        // forwards sent with CE
	CongestionDetected uint64 `json:"congestion_detected"` // forwards whose next hop was congested
}

// RouteLimitStats is show_routing's limits (fips-go addition):
// route.LimitStats' layout.
type RouteLimitStats struct {
	CacheEvictedLRU     uint64 `json:"cache_evicted_lru"`     // live entries evicted from a full cache
	CacheEvictedExpired uint64 `json:"cache_evicted_expired"` // expired entries evicted from a full cache
	CachePurgedExpired  uint64 `json:"cache_purged_expired"`  // expired entries dropped by Tick
	ErrorLimiterFull    uint64 `json:"error_limiter_full"`    // routing error signals not sent: limiter full
	ForwardLimiterFull  uint64 `json:"forward_limiter_full"`  // lookup requests not forwarded: limiter full
	PendingLookupsFull  uint64 `json:"pending_lookups_full"`  // lookups not started: too many in flight
	BackoffFull         uint64 `json:"backoff_full"`          // lookup failures not recorded: table full
	ErrorRateLimited    uint64 `json:"error_rate_limited"`    // routing error signals suppressed by the 100 ms limit
	ErrorNoReverseRoute uint64 `json:"error_no_reverse_route"`
	// RecentEvictedFairShare (ours): remembered lookup request ids of the
	// peer holding the most dropped to remember one from a peer holding
	// fewer, when the table was full.
	RecentEvictedFairShare uint64 `json:"recent_evicted_fair_share"`
	// ProofsRateLimited (ours): LookupRequests naming us left unanswered
	// and unsolicited LookupResponses left unchecked because the peer had
	// spent its budget of signatures and checks. BadProofsLimited (ours):
	// responses for a pending lookup left unchecked after 4 bad proofs in
	// its current attempt. ProofBucketsFull (ours): proof work refused
	// because the per-peer budget table was full.
	ProofsRateLimited uint64 `json:"proofs_rate_limited"`
	BadProofsLimited  uint64 `json:"bad_proofs_limited"`
	ProofBucketsFull  uint64 `json:"proof_buckets_full"`
}

// RouteCacheEntry is one show_cache entry (route.CacheEntryView's layout).
type RouteCacheEntry struct {
	NodeAddr    identity.NodeAddr   `json:"node_addr"`
	DisplayName string              `json:"display_name"` // left empty; the node fills it
	IPv6Addr    string              `json:"ipv6_addr"`
	Depth       int                 `json:"depth"`
	Coords      []identity.NodeAddr `json:"coords"`
	AgeMs       int64               `json:"age_ms"`
	LastUsedMs  int64               `json:"last_used_ms"`       // Unix ms
	PathMTU     *uint16             `json:"path_mtu,omitempty"` // only when learned from a lookup
}

// TreeSnapshot is the tree part of show_tree (tree.Snapshot's layout).
type TreeSnapshot struct {
	MyNodeAddr identity.NodeAddr `json:"my_node_addr"`
	Root       identity.NodeAddr `json:"root"`
	IsRoot     bool              `json:"is_root"`
	Depth      int               `json:"depth"`
	// MyCoords is self to root.
	MyCoords []identity.NodeAddr `json:"my_coords"`
	// Parent is the second coordinate, or ourselves at the root (upstream
	// reads it from the coordinates, not the declaration).
	Parent              identity.NodeAddr `json:"parent"`
	DeclarationSequence uint64            `json:"declaration_sequence"`
	DeclarationSigned   bool              `json:"declaration_signed"`
	// PeerTreeCount is the number of peers with an accepted declaration.
	PeerTreeCount int                `json:"peer_tree_count"`
	Peers         []TreePeerSnapshot `json:"peers"` // by node address
	Stats         TreeStats          `json:"stats"`
}

// TreePeerSnapshot is the tree part of one show_tree peer
// (tree.PeerSnapshot's layout).
type TreePeerSnapshot struct {
	NodeAddr identity.NodeAddr   `json:"node_addr"`
	Depth    int                 `json:"depth"`
	Root     identity.NodeAddr   `json:"root"`
	Coords   []identity.NodeAddr `json:"coords"`
	// DistanceToUs is math.MaxUint64 (upstream's usize::MAX) when the
	// peer's root is not ours.
	DistanceToUs uint64 `json:"distance_to_us"`
}

// TreeStats is the tree family (show_metrics' tree, show_tree's stats):
// tree.Stats' layout.
type TreeStats struct {
	Accepted        uint64 `json:"accepted"`         // announces that passed every check and were fresher
	AddrMismatch    uint64 `json:"addr_mismatch"`    // declaring node was not the sending peer
	AncestryChanged uint64 `json:"ancestry_changed"` // same parent, new address path: re-announced
	// AncestryContradicted (ours): announces whose ancestry contradicts
	// a declaration signed by the node it names.
	AncestryContradicted uint64 `json:"ancestry_contradicted"`
	AncestryInvalid      uint64 `json:"ancestry_invalid"`     // signed, but the ancestry broke the semantic rules
	DecodeError          uint64 `json:"decode_error"`         // malformed announce
	FlapDampened         uint64 `json:"flap_dampened"`        // dampening episodes engaged
	LoopDetected         uint64 `json:"loop_detected"`        // our parent's path came to contain us
	OutboundSignFailed   uint64 `json:"outbound_sign_failed"` // signing our own declaration failed
	ParentLosses         uint64 `json:"parent_losses"`        // our parent was removed
	ParentSwitches       uint64 `json:"parent_switches"`      // switches and self-root promotions
	RateLimited          uint64 `json:"rate_limited"`         // sends deferred to the tick by the per-peer interval
	Received             uint64 `json:"received"`             // announces handed to HandleAnnounce
	SendFailed           uint64 `json:"send_failed"`          // Env.SendTreeAnnounce errors
	Sent                 uint64 `json:"sent"`                 // announces handed to Env.SendTreeAnnounce
	SigFailed            uint64 `json:"sig_failed"`           // declaration signature did not verify
	Stale                uint64 `json:"stale"`                // sequence not above the stored one
	UnknownPeer          uint64 `json:"unknown_peer"`         // sender is not an active peer
	// VerifyDeferred (ours): announces left unchecked because their
	// sender had spent its budget of signature checks; the newest is
	// handled at the next tick with budget.
	VerifyDeferred uint64 `json:"verify_deferred"`
}

// BloomStats is the bloom family (show_metrics' bloom, show_bloom's stats):
// bloom.Stats' layout.
type BloomStats struct {
	Received           uint64 `json:"received"`            // every HandleFilterAnnounce call
	DecodeError        uint64 `json:"decode_error"`        // ReasonDecode
	Invalid            uint64 `json:"invalid"`             // ReasonInvalid
	NonV1              uint64 `json:"non_v1"`              // ReasonNonV1 (fips-go: also a hash count other than 5)
	UnknownPeer        uint64 `json:"unknown_peer"`        // ReasonUnknownPeer
	Stale              uint64 `json:"stale"`               // ReasonStale
	FillExceeded       uint64 `json:"fill_exceeded"`       // ReasonFillExceeded
	Accepted           uint64 `json:"accepted"`            // stored filters
	Sent               uint64 `json:"sent"`                // announces Env accepted
	DebounceSuppressed uint64 `json:"debounce_suppressed"` // see Tick
	SendFailed         uint64 `json:"send_failed"`         // announces Env refused
}

// RendezvousStats is Nostr discovery's counters (show_metrics' rendezvous):
// rendezvous.Stats' layout.
type RendezvousStats struct {
	RelaysConfigured     int    `json:"relays_configured"`
	RelaysConnected      int    `json:"relays_connected"`
	RelayConnects        uint64 `json:"relay_connects"`
	RelayConnectFailures uint64 `json:"relay_connect_failures"`
	AdvertsPublished     uint64 `json:"adverts_published"`
	AdvertPublishErrors  uint64 `json:"advert_publish_errors"`
	InboxPublished       uint64 `json:"inbox_relays_published"`
	AdvertsReceived      uint64 `json:"adverts_received"`
	AdvertsRejected      uint64 `json:"adverts_rejected"`
	AdvertCacheEntries   int    `json:"advert_cache_entries"`
	AdvertCacheEvicted   uint64 `json:"advert_cache_evicted"`
	EventsDropped        uint64 `json:"relay_events_dropped"`
	SignalsReceived      uint64 `json:"signals_received"`
	SignalsInvalid       uint64 `json:"signals_invalid"`
	SignalsDropped       uint64 `json:"signals_dropped"`
	SignalsStrangerDrops uint64 `json:"signals_dropped_stranger"` // strangers' among signals_dropped
	OffersSent           uint64 `json:"offers_sent"`
	OffersReceived       uint64 `json:"offers_received"`
	OffersRejected       uint64 `json:"offers_rejected"`
	OffersRefusedGlobal  uint64 `json:"offers_refused_global"`
	OffersRefusedNpub    uint64 `json:"offers_refused_per_npub"`
	OffersReplayed       uint64 `json:"offers_replayed"`
	// SeenSessionsEvicted counts session ids dropped, oldest first, from
	// the full replay cache (seen_sessions_max).
	SeenSessionsEvicted uint64 `json:"seen_sessions_evicted"`
	// Offers from strangers (neither configured nor being initiated to)
	// refused by the shared rate, the per-author interval and the
	// concurrency share (StrangerGate).
	OffersRefusedStrangerRate   uint64 `json:"offers_refused_stranger_rate"`
	OffersRefusedStrangerAuthor uint64 `json:"offers_refused_stranger_author"`
	OffersRefusedStrangerSlots  uint64 `json:"offers_refused_stranger_slots"`
	// StrangerTargetsCapped counts a stranger's planned punch targets
	// dropped past MaxStrangerPunchTargets.
	StrangerTargetsCapped uint64 `json:"stranger_punch_targets_capped"`
	// PunchForeign counts punch packets with the session hash from a
	// source outside the session's targets: ignored, never adopted.
	PunchForeign       uint64 `json:"punch_packets_foreign"`
	OffersElection     uint64 `json:"offers_yielded_election"`
	AnswersSent        uint64 `json:"answers_sent"`
	AnswersReceived    uint64 `json:"answers_received"`
	AnswersUnmatched   uint64 `json:"answers_unmatched"`
	AttemptsStarted    uint64 `json:"traversals_started"`
	AttemptsSucceeded  uint64 `json:"traversals_succeeded"`
	AttemptsFailed     uint64 `json:"traversals_failed"`
	ResponderSucceeded uint64 `json:"responder_punches_succeeded"`
	ResponderFailed    uint64 `json:"responder_punches_failed"`
	EstablishedDropped uint64 `json:"established_dropped"`
	STUNFailures       uint64 `json:"stun_failures"`
	Cooldowns          uint64 `json:"cooldowns_entered"`
}

// SessionEntry is the session part of one show_sessions entry
// (session.SnapshotEntry's layout).
type SessionEntry struct {
	RemoteAddr            string            `json:"remote_addr"`
	State                 string            `json:"state"`
	IsInitiator           bool              `json:"is_initiator"`
	LastActivityMs        int64             `json:"last_activity_ms"`
	Npub                  string            `json:"npub"`
	Stats                 SessionEntryStats `json:"stats"`
	ResendCount           *int              `json:"resend_count,omitempty"`
	SessionStartMs        *int64            `json:"session_start_ms,omitempty"`
	CurrentKBit           *bool             `json:"current_k_bit,omitempty"`
	CoordsWarmupRemaining *uint8            `json:"coords_warmup_remaining,omitempty"`
	IsDraining            *bool             `json:"is_draining,omitempty"`
	// PostQuantum (fips-go addition, issue 32): the session's current
	// keys come from an ML-KEM-768 upgrade; established sessions only.
	PostQuantum *bool `json:"post_quantum,omitempty"`
	// NoisePattern (fips-go addition, issue 30): "XK" (upstream master's
	// sessions) or "XX" (upstream next's).
	NoisePattern string `json:"noise_pattern,omitempty"`
}

// SessionEntryStats is one show_sessions entry's stats object
// (session.SnapshotStats' layout).
type SessionEntryStats struct {
	PacketsSent uint64 `json:"packets_sent"`
	PacketsRecv uint64 `json:"packets_recv"`
	BytesSent   uint64 `json:"bytes_sent"`
	BytesRecv   uint64 `json:"bytes_recv"`
}

// TraversalView is one Nostr peer's discovery state (show_peers,
// show_rendezvous).
type TraversalView struct {
	Npub        string `json:"npub"`
	Alias       string `json:"alias,omitempty"`
	State       string `json:"state"` // idle, in_flight, linked, cooldown, disabled
	Attempts    uint64 `json:"attempts"`
	LastOutcome string `json:"last_outcome,omitempty"` // success, failure
	LastReason  string `json:"last_reason,omitempty"`
	LastAtMs    uint64 `json:"last_at_ms,omitempty"`
	NextAtMs    uint64 `json:"next_attempt_at_ms,omitempty"`
	NostrPeerFailure
}

// RendezvousView is show_rendezvous: Nostr discovery's state.
type RendezvousView struct {
	Enabled bool              `json:"enabled"`
	Npub    string            `json:"npub"`
	Policy  string            `json:"policy"`
	Stats   RendezvousStats   `json:"stats"`
	Peers   []TraversalView   `json:"peers"`
	Adopted map[string]string `json:"adopted_transports"` // transport id → peer npub
	// AdoptRefused counts punched paths refused because
	// MaxBootstrapTransports were adopted and waiting.
	AdoptRefused uint64 `json:"adopt_refused"`
}

// NostrPeerFailure is a Nostr peer's failure state in show_rendezvous
// (rendezvous.PeerFailure's layout: no JSON tags, so its keys are the
// field names).
type NostrPeerFailure struct {
	ConsecutiveFailures uint32
	CooldownUntilMs     uint64 // 0: none
	LastFailureMs       uint64
	LastWarnMs          uint64
	SkewMs              int64
	HasSkew             bool
}

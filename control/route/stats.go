package route

import "github.com/fips-go/fips/control/identity"

// ForwardingStats is upstream's "forwarding" counter family. Byte counts
// of received, dropped and delivered datagrams measure the message without
// its type byte, those of forwarded and originated datagrams the encoded
// message with it, as upstream counts them.
type ForwardingStats struct {
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

func (s *ForwardingStats) routeClass(c RouteClass) {
	switch c {
	case ClassTreeUp:
		s.RouteTreeUp++
	case ClassTreeDown:
		s.RouteTreeDown++
	case ClassTreeDownCross:
		s.RouteTreeDownCross++
	case ClassCrosslinkDescend:
		s.RouteCrosslinkDescend++
	case ClassCrosslinkAscend:
		s.RouteCrosslinkAscend++
	case ClassDirectPeer:
		s.RouteDirectPeer++
	}
}

// LookupStats is upstream's "lookup" counter family (also rendered under
// the legacy key "discovery").
type LookupStats struct {
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

// CongestionStats are the members of upstream's "congestion" family that
// forwarding counts; the node adds ce_received and kernel_drop_events.
type CongestionStats struct {
	CEForwarded        uint64 `json:"ce_forwarded"`        // forwards sent with CE
	CongestionDetected uint64 `json:"congestion_detected"` // forwards whose next hop was congested
}

// ErrorStats is the member of upstream's "error_signals" family that
// lookups count; the session layer counts the rest.
type ErrorStats struct {
	LookupRespMTUBelowFloor uint64 `json:"lookup_resp_mtu_below_floor"`
}

// LimitStats counts what the bounded tables refused or evicted (no
// upstream counterpart except the cache, whose evictions upstream does
// not count).
type LimitStats struct {
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

// Stats are the Router's counters.
type Stats struct {
	Forwarding ForwardingStats `json:"forwarding"`
	Lookup     LookupStats     `json:"lookup"`
	Congestion CongestionStats `json:"congestion"`
	Errors     ErrorStats      `json:"error_signals"`
	Limits     LimitStats      `json:"limits"`
}

// Snapshot is the part of show_routing the Router owns; the node adds
// identity_cache_entries, pending_tun_destinations, pending_tun_packets,
// retries, error_signals and congestion, and renders lookup under both
// "lookup" and "discovery".
type Snapshot struct {
	CoordCacheEntries int                `json:"coord_cache_entries"` // expired entries not yet purged included
	PendingLookups    []PendingLookupRow `json:"pending_lookups"`     // by target address, never nil
	RecentRequests    int                `json:"recent_requests"`
	Forwarding        ForwardingStats    `json:"forwarding"`
	Lookup            LookupStats        `json:"lookup"`
}

// PendingLookupRow is one lookup in flight.
type PendingLookupRow struct {
	Target      identity.NodeAddr `json:"target"`
	DisplayName string            `json:"display_name"` // left empty; the node fills it
	InitiatedMs int64             `json:"initiated_ms"` // Unix ms
	LastSentMs  int64             `json:"last_sent_ms"` // Unix ms
	Attempt     int               `json:"attempt"`      // 1 = first request
	AgeMs       int64             `json:"age_ms"`
}

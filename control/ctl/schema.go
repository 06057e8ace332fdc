package ctl

import (
	"github.com/fips-go/fips/control/history"
	"github.com/fips-go/fips/control/identity"
)

// Response data of control/node's commands beyond the snapshot-pinned ones
// in types.go: fips-go's additions to show_status, the routing-layer
// commands' self-contained objects and the stats history commands. Field
// order is the order of the keys in the responses.

// StatusData is show_status: every upstream key, plus fips-go additions
// under new keys.
type StatusData struct {
	ShowStatus
	// LinkLayer counts what the link layer did and refused (msg1 rate
	// limiting, decrypt failures, unknown indices, …).
	LinkLayer LinkLayerStats `json:"link_layer"`
	// LANRendezvous is mDNS browsing's counters (queries, answers,
	// host_capped, …); absent when node.rendezvous.lan is off.
	LANRendezvous *LANStats `json:"lan_rendezvous,omitempty"`
	// ReceiveQueueDrops counts received packets refused because the event
	// loop had stopped. A full receive queue (node.buffers.packet_channel)
	// holds the transport's reader back instead, so overload shows as the
	// transport's kernel_drops.
	ReceiveQueueDrops uint64 `json:"receive_queue_drops"`
	// ReceiveQueueAQMDrops counts established frames dropped because they
	// had waited longer than CoDel's target for longer than its interval
	// (a standing queue at a node that cannot keep up).
	ReceiveQueueAQMDrops uint64 `json:"receive_queue_aqm_drops"`
	// Dataplane says which dataplane runs (xdp or userspace) and why, and
	// where the XDP program is attached.
	Dataplane DataplaneView `json:"dataplane"`
	// LocalLimits counts what the local surfaces refused.
	LocalLimits LocalLimits `json:"local_limits"`
	// SessionLayer counts what the session layer refused, evicted and
	// ignored (show_metrics' session family).
	SessionLayer SessionMetricsJSON `json:"session_layer"`
}

// LocalLimits counts what the operator-facing surfaces refused at their
// bounds (fips-go addition to show_status).
type LocalLimits struct {
	// ControlConnectionsRefused: connections turned away with every
	// control socket slot running a command.
	ControlConnectionsRefused uint64 `json:"control_connections_refused"`
	// ControlConnectionsEvicted: idle connections (no complete request)
	// closed to make room for a new one.
	ControlConnectionsEvicted uint64 `json:"control_connections_evicted"`
	// ControlRequestsBusy: requests answered "query timeout" because no
	// handler slot came free within the handler timeout.
	ControlRequestsBusy uint64 `json:"control_requests_busy"`
	// MetricsConnectionsRefused: metrics endpoint connections closed at
	// its connection bound.
	MetricsConnectionsRefused uint64 `json:"metrics_connections_refused"`
	// ProbeReportsDropped: finished probe reports dropped unpolled past
	// the bound on held reports.
	ProbeReportsDropped uint64 `json:"probe_reports_dropped"`
}

// NativeFlowsJSON is show_native_flows: the native datagram API's flows
// (pending and established, by flow id), listeners (by port) and counters.
// Empty lists and zero counters with node.native_api off, as upstream.
type NativeFlowsJSON struct {
	Flows     []NativeFlowJSON     `json:"flows"`
	Listeners []NativeListenerJSON `json:"listeners"`
	Stats     NativeStatsJSON      `json:"stats"`
}

// NativeFlowJSON is one show_native_flows flow: upstream's keys. state is
// "established" or "pending_accept"; queued is the datagrams waiting for
// the client (established) or held for the hand-off (pending).
type NativeFlowJSON struct {
	AgeMs      uint64 `json:"age_ms"`
	FlowID     uint64 `json:"flow_id"`
	LocalPort  uint16 `json:"local_port"`
	Peer       string `json:"peer"`
	PeerAddr   string `json:"peer_addr"`
	Queued     int    `json:"queued"`
	RemotePort uint16 `json:"remote_port"`
	State      string `json:"state"`
}

// NativeListenerJSON is one show_native_flows listener: its port and the
// flows announced on it and not yet taken.
type NativeListenerJSON struct {
	Backlog   int    `json:"backlog"`
	LocalPort uint16 `json:"local_port"`
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

// ErrorSignalsJSON is upstream's error-signal family (show_routing's
// error_signals, show_metrics' errors): what the lookups and the session
// layer counted of routing error signals.
type ErrorSignalsJSON struct {
	CoordsRequired          uint64 `json:"coords_required"`
	LookupRespMTUBelowFloor uint64 `json:"lookup_resp_mtu_below_floor"`
	MTUExceeded             uint64 `json:"mtu_exceeded"`
	MTUExceededBelowFloor   uint64 `json:"mtu_exceeded_below_floor"`
	PathBroken              uint64 `json:"path_broken"`
	PathMTUNotifBelowFloor  uint64 `json:"path_mtu_notif_below_floor"`
	UnboundBroken           uint64 `json:"unbound_broken"`
	UnboundCoords           uint64 `json:"unbound_coords"`
	UnboundForged           uint64 `json:"unbound_forged"`
	UnboundMTU              uint64 `json:"unbound_mtu"`
}

// NativeStatsJSON is upstream's native datagram API counter family.
type NativeStatsJSON struct {
	DropArrivalQueueFull   uint64 `json:"drop_arrival_queue_full"`
	DropBacklogFull        uint64 `json:"drop_backlog_full"`
	DropFlowQueueFull      uint64 `json:"drop_flow_queue_full"`
	DropListenerGone       uint64 `json:"drop_listener_gone"`
	DropListenerNotReading uint64 `json:"drop_listener_not_reading"`
	DropNoPort             uint64 `json:"drop_no_port"`
	DropOversize           uint64 `json:"drop_oversize"`
	DropPendingQueueFull   uint64 `json:"drop_pending_queue_full"`
	DropTooManyFlows       uint64 `json:"drop_too_many_flows"`
	FlowsAccepted          uint64 `json:"flows_accepted"`
	FlowsClosed            uint64 `json:"flows_closed"`
	FlowsExpired           uint64 `json:"flows_expired"`
	FlowsOpened            uint64 `json:"flows_opened"`
	ReceivedBytes          uint64 `json:"received_bytes"`
	ReceivedDatagrams      uint64 `json:"received_datagrams"`
	SentBytes              uint64 `json:"sent_bytes"`
	SentDatagrams          uint64 `json:"sent_datagrams"`
}

// NativeLimitsJSON is show_metrics' native_limits (ours, not upstream's):
// setup calls and arriving flows the native API refused at its bounds,
// which upstream counts nowhere.
type NativeLimitsJSON struct {
	// DropClientLimit: arriving flows dropped because the listener's
	// client held node.native_api.max_flows_per_client.
	DropClientLimit uint64 `json:"drop_client_limit"`
	// RefusedClientLimit: connect and listen calls refused (EMFILE) at
	// node.native_api.max_flows_per_client.
	RefusedClientLimit uint64 `json:"refused_client_limit"`
	// RefusedTooManyFlows: connect calls refused (EMFILE) at
	// node.native_api.max_flows.
	RefusedTooManyFlows uint64 `json:"refused_too_many_flows"`
	// RefusedPortInUse: connect and listen calls refused (EADDRINUSE)
	// for a held port or an existing flow.
	RefusedPortInUse uint64 `json:"refused_port_in_use"`
	// RefusedConnections: setup connections closed on accept because 64
	// were open, every one running a command; EvictedConnections: idle
	// setup connections closed to make room for a new one.
	RefusedConnections uint64 `json:"refused_connections"`
	EvictedConnections uint64 `json:"evicted_connections"`
}

// SessionMetricsJSON is what the node counts about its own sessions.
type SessionMetricsJSON struct {
	// NoRouteLookups: lookups started because an established session's
	// datagram found no route (stale coordinates after the tree moved).
	NoRouteLookups uint64 `json:"no_route_lookups"`
	// SetupSuperseded and ResponderSuperseded: answered handshakes
	// replaced, before their msg3, by a setup with a new msg1 or by our
	// own setup for waiting traffic (a spoofed setup cannot hold a
	// source's sessions off).
	SetupSuperseded     uint64 `json:"setup_superseded"`
	ResponderSuperseded uint64 `json:"responder_superseded"`
	// RespondersEvicted: answered handshakes dropped, oldest first, past
	// 4,096 awaiting their msg3.
	RespondersEvicted uint64 `json:"responders_evicted"`
	// SessionsEvicted: sessions dropped, least proven first, to hold
	// node.session.max_sessions. SessionsRefused: strangers'
	// SessionSetups refused because only proven sessions were held.
	SessionsEvicted uint64 `json:"sessions_evicted"`
	SessionsRefused uint64 `json:"sessions_refused"`
	// MtuExceededOffPath and PathBrokenOffPath: routing signals for one
	// of our sessions from a node not on its path (or naming another
	// reporter than their sender). The MtuExceeded is ignored; the
	// PathBroken starts a lookup but keeps the coordinates and the clamp.
	MtuExceededOffPath uint64 `json:"mtu_exceeded_off_path"`
	PathBrokenOffPath  uint64 `json:"path_broken_off_path"`
	// MtuExceededContradicted: MtuExceeded ignored for naming less than
	// the path MTU the destination reported end to end.
	MtuExceededContradicted uint64 `json:"mtu_exceeded_contradicted"`
	// ClampsExpired: MtuExceeded clamps released after 10 minutes
	// without confirmation.
	ClampsExpired uint64 `json:"clamps_expired"`
	// AckIdentityMismatch: SessionAcks of XX sessions (upstream next's
	// pattern) that authenticated another key than the one dialled; the
	// initiation goes on (upstream next's counter of the same name).
	AckIdentityMismatch uint64 `json:"ack_identity_mismatch"`
	// DualAcks: SessionSetups answered with both an XK and an XX
	// SessionAck (a remote whose line is unknown, session pattern auto).
	DualAcks uint64 `json:"dual_acks"`
	// The post-quantum upgrade of sessions (issue 32): exchanges offered
	// and offers sent again, offers answered, epochs cut over to
	// ML-KEM-768-derived keys, sessions left classical (pq preferred) or
	// torn down (pq required) because the peer did not upgrade, key
	// confirmations that failed, offers/accepts/confirms refused
	// (replayed, out of epoch, unexpected), malformed or conflicting
	// fragments, and data packets refused on a classical epoch under pq
	// required.
	PQOffered          uint64 `json:"pq_offered"`
	PQOfferResends     uint64 `json:"pq_offer_resends"`
	PQAccepted         uint64 `json:"pq_accepted"`
	PQUpgrades         uint64 `json:"pq_upgrades"`
	PQFallbacks        uint64 `json:"pq_fallbacks"`
	PQRefused          uint64 `json:"pq_refused"`
	PQConfirmFailed    uint64 `json:"pq_confirm_failed"`
	PQMessagesRefused  uint64 `json:"pq_messages_refused"`
	PQFragmentsRefused uint64 `json:"pq_fragments_refused"`
	PQClassicDropped   uint64 `json:"pq_classic_dropped"`
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

// MMPPeerJSON is one show_mmp peers entry (link layer).
type MMPPeerJSON struct {
	DisplayName string         `json:"display_name"`
	LinkLayer   map[string]any `json:"link_layer"`
	Mode        string         `json:"mode"`
	Peer        string         `json:"peer"`
}

// MMPSessionJSON is one show_mmp sessions entry (session layer).
type MMPSessionJSON struct {
	DisplayName  string         `json:"display_name"`
	Mode         string         `json:"mode"`
	Remote       string         `json:"remote"`
	SessionLayer map[string]any `json:"session_layer"`
}

// IPv6Stats counts the adapter's decisions (show_metrics "ipv6").
type IPv6Stats struct {
	Sent        uint64 `json:"sent"`         // packets from the device sent into sessions
	Received    uint64 `json:"received"`     // packets from sessions written to the device
	NotFIPS     uint64 `json:"not_fips"`     // destination outside fd00::/8: unreachable
	UnknownDest uint64 `json:"unknown_dest"` // no cached key for the destination: unreachable
	TooBig      uint64 `json:"too_big"`      // over the mesh's IPv6 MTU: Packet Too Big
	Hairpin     uint64 `json:"hairpin"`      // to our own address, looped back
	Dropped     uint64 `json:"dropped"`      // malformed or refused by the session layer
	CEMarked    uint64 `json:"ce_marked"`    // delivered with CE set (mesh congestion)
	MSSClamped  uint64 `json:"mss_clamped"`  // TCP SYN/SYN-ACK MSS lowered
	// LookupUnreachable: queued packets answered as unreachable because
	// the lookup of their destination failed.
	LookupUnreachable uint64 `json:"lookup_unreachable"`
	// Device side, counted by the node.
	ReadQueueDrops uint64 `json:"read_queue_drops"` // read from the device after the loop stopped
	// ReadQueueAQMDrops: read from the device and dropped by CoDel (they
	// waited for the loop over 5 ms, for over 100 ms): the sender's TCP
	// backs off instead of filling the queue.
	ReadQueueAQMDrops uint64 `json:"read_queue_aqm_drops"`
	WriteErrors       uint64 `json:"write_errors"` // writes to the device that failed
}

// StatsMetricJSON is one show_stats_list metric.
type StatsMetricJSON struct {
	Name  string `json:"name"`
	Scope string `json:"scope"` // node|peer
	Unit  string `json:"unit"`
}

// StatsListJSON is show_stats_list: upstream's metric list and ring
// sizes, plus fips-go's recorder counters (what the history holds and
// refused).
type StatsListJSON struct {
	FastRingSeconds      int               `json:"fast_ring_seconds"`
	Metrics              []StatsMetricJSON `json:"metrics"`
	PeerRetentionSeconds uint64            `json:"peer_retention_seconds"`
	Recorder             history.Stats     `json:"recorder"` // ours
	SlowRingMinutes      int               `json:"slow_ring_minutes"`
}

// SeriesJSON is one series (show_stats_history, an all_history entry).
type SeriesJSON struct {
	GranularitySeconds uint64      `json:"granularity_seconds"`
	Metric             string      `json:"metric"`
	Unit               string      `json:"unit"`
	Values             List[Float] `json:"values"` // oldest first; null for a gap
}

// AllHistoryJSON is show_stats_all_history: every node metric, or every
// metric of one peer.
type AllHistoryJSON struct {
	GranularitySeconds uint64       `json:"granularity_seconds"`
	Peer               *string      `json:"peer"` // the npub asked for; null for the node
	Series             []SeriesJSON `json:"series"`
	WindowSeconds      uint64       `json:"window_seconds"`
}

// StatsPeerJSON is one show_stats_peers entry.
type StatsPeerJSON struct {
	DisplayName        string `json:"display_name"`
	FirstSeenSecsAgo   uint64 `json:"first_seen_secs_ago"`
	IsActive           bool   `json:"is_active"`
	LastContactSecsAgo uint64 `json:"last_contact_secs_ago"`
	NodeAddr           string `json:"node_addr"`
	Npub               string `json:"npub"`
}

// StatsPeersJSON is show_stats_peers: the peers the history tracks,
// active ones first, then by display name.
type StatsPeersJSON struct {
	Count int             `json:"count"`
	Peers []StatsPeerJSON `json:"peers"`
}

// PeerSeriesJSON is one show_stats_history_all_peers entry.
type PeerSeriesJSON struct {
	DisplayName string      `json:"display_name"`
	IsActive    bool        `json:"is_active"`
	NodeAddr    string      `json:"node_addr"`
	Values      List[Float] `json:"values"`
}

// HistoryAllPeersJSON is show_stats_history_all_peers: one peer metric
// across every tracked peer.
type HistoryAllPeersJSON struct {
	GranularitySeconds uint64           `json:"granularity_seconds"`
	Metric             string           `json:"metric"`
	Peers              []PeerSeriesJSON `json:"peers"`
	Unit               string           `json:"unit"`
	WindowSeconds      uint64           `json:"window_seconds"`
}

// LinkLayerStats is show_status' link_layer (fips-go addition): what the
// link layer did and, above all, what it refused (peer.Stats' layout).
type LinkLayerStats struct {
	PacketsIn          uint64 `json:"packets_in"`
	DropMalformed      uint64 `json:"drop_malformed"`
	DropUnknownIndex   uint64 `json:"drop_unknown_index"`
	DropDecrypt        uint64 `json:"drop_decrypt_failed"`
	DropReplay         uint64 `json:"drop_replay"`
	DropUnknownMsgType uint64 `json:"drop_unknown_msg_type"`
	// OpenedForRemoved: frames a dataplane worker opened for a peer the
	// loop had removed by the time it saw them.
	OpenedForRemoved uint64 `json:"opened_for_removed"`
	Msg1Received     uint64 `json:"msg1_received"`
	Msg1RateLimited  uint64 `json:"msg1_rate_limited"` // sum of the four below
	// Which bucket refused: the stranger source's own, the one all
	// strangers share, the active peer's own, the one all peers share;
	// and source buckets evicted from the bounded table to make room.
	Msg1SourceLimited      uint64 `json:"msg1_source_limited"`
	Msg1StrangerLimited    uint64 `json:"msg1_stranger_limited"`
	Msg1PeerBucketLimited  uint64 `json:"msg1_peer_bucket_limited"`
	Msg1EstablishedLimited uint64 `json:"msg1_established_limited"`
	Msg1SourcesEvicted     uint64 `json:"msg1_sources_evicted"`
	// Msg1Replayed: copies of a msg1 whose session already authenticated
	// a frame, refused before cryptography.
	Msg1Replayed     uint64 `json:"msg1_replayed"`
	Msg1NotAccepting uint64 `json:"msg1_not_accepting"`
	// Msg1DialWaiver: msg1s a transport that refuses strangers took
	// because a dial of ours to their source is in flight.
	Msg1DialWaiver       uint64 `json:"msg1_dial_waiver"`
	Msg1DecryptFailed    uint64 `json:"msg1_decrypt_failed"`
	Msg1Duplicate        uint64 `json:"msg1_duplicate"`
	Msg1ACLDenied        uint64 `json:"msg1_acl_denied"`
	Msg1PeerLimit        uint64 `json:"msg1_peer_limit"`
	Msg1Ignored          uint64 `json:"msg1_ignored"`
	Msg1IdentityMismatch uint64 `json:"msg1_identity_mismatch"`
	Msg2Received         uint64 `json:"msg2_received"`
	Msg2Unmatched        uint64 `json:"msg2_unmatched"`
	Msg2DecryptFailed    uint64 `json:"msg2_decrypt_failed"`
	// Msg2LegLimited counts msg2s for a pending handshake refused before
	// any DH because the leg's budget for their source was spent.
	Msg2LegLimited    uint64 `json:"msg2_leg_limited"`
	Msg2ACLDenied     uint64 `json:"msg2_acl_denied"`
	Msg2WrongIdentity uint64 `json:"msg2_wrong_identity"`
	// RekeyStaticMismatch: of those, msg2s answering our rekey of a v1
	// link (upstream next's handshake rekey_static_mismatch): an on-path
	// stranger holding key rotation back; the session is kept.
	RekeyStaticMismatch  uint64 `json:"rekey_static_mismatch"`
	HandshakesStarted    uint64 `json:"handshakes_started"`
	HandshakeResends     uint64 `json:"handshake_resends"`
	HandshakeTimeouts    uint64 `json:"handshake_timeouts"`
	HandshakesSuperseded uint64 `json:"handshakes_superseded"`
	ConnectionLimit      uint64 `json:"connection_limit"`
	// DiscoveredLimit: dials to mDNS-discovered peers refused for the
	// discovered budget (all of it, or one host's share, in flight).
	// DiscoveredEvicted: handshakes to mDNS-discovered peers dropped so a
	// configured peer's dial got a slot at max_connections.
	DiscoveredLimit   uint64 `json:"discovered_limit"`
	DiscoveredEvicted uint64 `json:"discovered_evicted"`
	// BeaconDialLimited: peers found by Ethernet beacons that nobody
	// configured, not dialled for the discovered-dial pace
	// (node.rendezvous.lan.dial_burst / dial_rate; fips-go addition).
	BeaconDialLimited uint64 `json:"beacon_dial_limited"`
	// AnonymousDials: v1 handshakes started to a neighbour known by its
	// address alone (upstream next's keyless Ethernet beacon).
	// AnonymousDialLimited: such dials refused for the in-flight bound.
	// AnonymousPeerLimit: such handshakes dropped at msg2 for max_peers.
	AnonymousDials       uint64 `json:"anonymous_dials"`
	AnonymousDialLimited uint64 `json:"anonymous_dial_limited"`
	AnonymousPeerLimit   uint64 `json:"anonymous_peer_limit"`
	// DropOtherVersion: packets of another FMP version dropped before
	// dispatch (version 1 is upstream's `next` format, which this node
	// is not configured to speak: docs/next.md, node.wire_format); they
	// count in drop_malformed too,
	// as before (fips-go addition).
	DropOtherVersion uint64 `json:"drop_other_version"`
	// DropVersionMismatch: established frames whose FMP version is not
	// their link's (a v1 frame for a v0 link's index or the reverse),
	// dropped before any decryption (fips-go addition).
	DropVersionMismatch uint64 `json:"drop_version_mismatch"`
	// WireFormatRefused: handshakes that authenticated a peer configured
	// (peers[].wire_format, else node.wire_format) not to use their
	// format (fips-go addition).
	WireFormatRefused uint64 `json:"wire_format_refused"`
	// v1 (upstream next) handshakes (fips-go additions): msg2s sent
	// (duplicates resent count in msg1_duplicate), msg3s sent and
	// received, msg3s naming no pending handshake, refused by their
	// pending handshake's budget, failing to authenticate; negotiation
	// payloads refused (upstream's bad_state); pending handshakes evicted
	// (table full) or expired (no msg3 within the handshake timeout);
	// rekeys of v1 links refused (not implemented yet).
	V1Msg2Sent          uint64 `json:"v1_msg2_sent"`
	V1Msg3Sent          uint64 `json:"v1_msg3_sent"`
	V1Msg3Received      uint64 `json:"v1_msg3_received"`
	V1Msg3Unmatched     uint64 `json:"v1_msg3_unmatched"`
	V1Msg3Limited       uint64 `json:"v1_msg3_limited"`
	V1Msg3DecryptFailed uint64 `json:"v1_msg3_decrypt_failed"`
	V1NegotiationFailed uint64 `json:"v1_negotiation_failed"`
	V1PendingEvicted    uint64 `json:"v1_pending_evicted"`
	V1PendingExpired    uint64 `json:"v1_pending_expired"`
	V1RekeysRefused     uint64 `json:"v1_rekeys_refused"`
	PeersPromoted       uint64 `json:"peers_promoted"`
	PeersRemoved        uint64 `json:"peers_removed"`
	PeerRestarts        uint64 `json:"peer_restarts"`
	CrossConnections    uint64 `json:"cross_connections"`
	LinksDead           uint64 `json:"links_dead"`
	// Answered handshakes awaiting their first authenticated frame:
	// proved, evicted (table full, oldest first), expired (handshake
	// timeout), and a peer's unproven rekeys evicted beyond four.
	HandshakesProven       uint64 `json:"handshakes_proven"`
	UnprovenEvicted        uint64 `json:"unproven_evicted"`
	UnprovenExpired        uint64 `json:"unproven_expired"`
	RekeyCandidatesEvicted uint64 `json:"rekey_candidates_evicted"`
	// RestartsUnproven: msg1s from an active peer's key with a new epoch
	// (a restart, or a replay from an earlier run) answered while the
	// live link stays; PeerRestarts counts those that proved themselves.
	RestartsUnproven uint64 `json:"restarts_unproven"`
	DisconnectsRecv  uint64 `json:"disconnects_received"`
	DisconnectsSent  uint64 `json:"disconnects_sent"`
	HeartbeatsSent   uint64 `json:"heartbeats_sent"`
	HeartbeatsRecv   uint64 `json:"heartbeats_received"`
	RekeysInitiated  uint64 `json:"rekeys_initiated"`
	RekeysResponded  uint64 `json:"rekeys_responded"`
	RekeyCutovers    uint64 `json:"rekey_cutovers"`
	RekeysAbandoned  uint64 `json:"rekeys_abandoned"`
	SendErrors       uint64 `json:"send_errors"`
	ReportsSent      uint64 `json:"mmp_reports_sent"`
	// ReportsDraining: MMP reports that arrived on the session a rekey
	// replaced, ignored (they describe the old session's counters).
	ReportsDraining uint64 `json:"mmp_reports_draining"`
	// The post-quantum upgrade of links (issue 32, fips-go addition):
	// exchanges offered and offers sent again, offers answered, sessions
	// cut over to ML-KEM-768-derived keys, links left classical (pq
	// preferred) or torn down (pq required) because the peer did not
	// upgrade, key confirmations that failed, offers and accepts refused
	// (replayed, out of their session, unexpected), and malformed or
	// conflicting fragments.
	PQOffered          uint64 `json:"pq_offered"`
	PQOfferResends     uint64 `json:"pq_offer_resends"`
	PQAccepted         uint64 `json:"pq_accepted"`
	PQUpgrades         uint64 `json:"pq_upgrades"`
	PQFallbacks        uint64 `json:"pq_fallbacks"`
	PQRefused          uint64 `json:"pq_refused"`
	PQConfirmFailed    uint64 `json:"pq_confirm_failed"`
	PQMessagesRefused  uint64 `json:"pq_messages_refused"`
	PQFragmentsRefused uint64 `json:"pq_fragments_refused"`
}

// LANStats is show_status' lan_rendezvous (fips-go addition): what mDNS
// browsing saw (lan.Stats' layout).
type LANStats struct {
	Queries    uint64 `json:"queries"`
	Answers    uint64 `json:"answers"`
	Discovered uint64 `json:"discovered"`
	Ignored    uint64 `json:"ignored"`
	Dropped    uint64 `json:"dropped"`     // events the node had no room for
	HostCapped uint64 `json:"host_capped"` // peers past maxPerHost from one host in one query
	// DialLimited: discovered peers nobody configured that were not
	// dialled, past the LAN dial rate (node.rendezvous.lan.dial_burst,
	// dial_rate).
	DialLimited uint64 `json:"dial_limited"`
}

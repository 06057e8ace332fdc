package peer

// Stats counts what the link layer did and, above all, what it refused.
type Stats struct {
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
	// address alone (upstream next's keyless Ethernet beacon), whose key
	// msg2 reveals. AnonymousDialLimited: such dials refused because
	// max_anonymous of them were in flight (fips-go's bound).
	// AnonymousPeerLimit: anonymous handshakes dropped at msg2 because
	// the key it revealed would be a new peer past max_peers.
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

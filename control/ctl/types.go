package ctl

// Response data of the commands whose schemas upstream pins with snapshot
// fixtures (src/control/snapshots/*.json, copied to testdata/snapshots).
// Field order is the alphabetical order of the JSON names, so that the
// encoding is byte-identical to upstream's (serde_json Values keep their
// keys sorted). Conventions:
//
//   - a field tagged omitempty is one upstream adds only when it has a
//     value; a pointer without omitempty is upstream's explicit null;
//   - List and Counts render nil as [] and {}, never null;
//   - Float renders as serde does (3.0, 1e16) and NaN/Inf as null;
//   - node addresses are 32 lowercase hex digits, npubs bech32, IPv6
//     addresses in RFC 5952 text.

// ShowStatus is show_status's data: the node overview.
type ShowStatus struct {
	ConnectionCount     uint64          `json:"connection_count"`
	ControlSocket       string          `json:"control_socket"`
	EffectiveIPv6MTU    uint16          `json:"effective_ipv6_mtu"`
	EstimatedMeshSize   *uint64         `json:"estimated_mesh_size"` // null without an estimate
	ExePath             string          `json:"exe_path"`            // "-" when unknown
	Forwarding          ForwardingStats `json:"forwarding"`
	IPv6Addr            string          `json:"ipv6_addr"`
	IsLeafOnly          bool            `json:"is_leaf_only"`
	IsRoot              bool            `json:"is_root"`
	LinkCount           uint64          `json:"link_count"`
	NodeAddr            string          `json:"node_addr"`
	Npub                string          `json:"npub"`
	PeerCount           uint64          `json:"peer_count"`
	Persistent          bool            `json:"persistent"` // persistent || nsec configured
	PID                 uint32          `json:"pid"`
	Root                string          `json:"root"` // tree root's node address
	SessionCount        uint64          `json:"session_count"`
	Sparklines          Sparklines      `json:"sparklines"`
	State               string          `json:"state"` // created|starting|running|degraded|draining|failed|stopping|stopped
	TransportCount      uint64          `json:"transport_count"`
	TransportPeerCounts Counts          `json:"transport_peer_counts"` // type name → peers; configured types at 0
	TunName             string          `json:"tun_name"`              // "-" when none
	TunState            string          `json:"tun_state"`             // disabled|configured|active|failed
	UptimeSecs          uint64          `json:"uptime_secs"`
	Version             string          `json:"version"`
}

// Sparklines are show_status's inline history: the last 30 one-second
// samples of each series.
type Sparklines struct {
	BytesIn   List[Float] `json:"bytes_in"`
	BytesOut  List[Float] `json:"bytes_out"`
	LossRate  List[Float] `json:"loss_rate"`
	MeshSize  List[Float] `json:"mesh_size"`
	PeerCount List[Float] `json:"peer_count"`
	TreeDepth List[Float] `json:"tree_depth"`
}

// ForwardingStats is the forwarding counter family (show_status.forwarding,
// show_routing.forwarding, show_metrics.forwarding).
type ForwardingStats struct {
	DecodeErrorBytes       uint64 `json:"decode_error_bytes"`
	DecodeErrorPackets     uint64 `json:"decode_error_packets"`
	DeliveredBytes         uint64 `json:"delivered_bytes"`
	DeliveredPackets       uint64 `json:"delivered_packets"`
	DropMTUExceededBytes   uint64 `json:"drop_mtu_exceeded_bytes"`
	DropMTUExceededPackets uint64 `json:"drop_mtu_exceeded_packets"`
	DropNoRouteBytes       uint64 `json:"drop_no_route_bytes"`
	DropNoRoutePackets     uint64 `json:"drop_no_route_packets"`
	DropSendErrorBytes     uint64 `json:"drop_send_error_bytes"`
	DropSendErrorPackets   uint64 `json:"drop_send_error_packets"`
	ForwardedBytes         uint64 `json:"forwarded_bytes"`
	ForwardedPackets       uint64 `json:"forwarded_packets"`
	OriginatedBytes        uint64 `json:"originated_bytes"`
	OriginatedPackets      uint64 `json:"originated_packets"`
	ReceivedBytes          uint64 `json:"received_bytes"`
	ReceivedPackets        uint64 `json:"received_packets"`
	RouteCrosslinkAscend   uint64 `json:"route_crosslink_ascend"`
	RouteCrosslinkDescend  uint64 `json:"route_crosslink_descend"`
	RouteDirectPeer        uint64 `json:"route_direct_peer"`
	RouteTreeDown          uint64 `json:"route_tree_down"`
	RouteTreeDownCross     uint64 `json:"route_tree_down_cross"`
	RouteTreeUp            uint64 `json:"route_tree_up"`
	TTLExhaustedBytes      uint64 `json:"ttl_exhausted_bytes"`
	TTLExhaustedPackets    uint64 `json:"ttl_exhausted_packets"`
	WarmMalformedBytes     uint64 `json:"warm_malformed_bytes"`
	WarmMalformedPackets   uint64 `json:"warm_malformed_packets"`
}

// ShowACL is show_acl's data: the loaded peers.allow / peers.deny state.
type ShowACL struct {
	AllowAll          bool         `json:"allow_all"`
	AllowEntries      List[string] `json:"allow_entries"` // effective allow npubs
	AllowFile         string       `json:"allow_file"`
	AllowFileEntries  List[string] `json:"allow_file_entries"` // lines as written
	DefaultDecision   string       `json:"default_decision"`   // allow|deny
	DenyAll           bool         `json:"deny_all"`
	DenyEntries       List[string] `json:"deny_entries"`
	DenyFile          string       `json:"deny_file"`
	DenyFileEntries   List[string] `json:"deny_file_entries"`
	EffectiveMode     string       `json:"effective_mode"` // allow_all|allow_then_deny_all|allow_then_deny|allowlist|deny_all|denylist|default_open
	EnforcementActive bool         `json:"enforcement_active"`
}

// ShowPeers is show_peers's data.
type ShowPeers struct {
	Peers List[PeerInfo] `json:"peers"`
}

// PeerInfo is one authenticated peer in show_peers.
type PeerInfo struct {
	AuthenticatedAtMs          uint64         `json:"authenticated_at_ms"`
	Connectivity               string         `json:"connectivity"`
	ConsecutiveDecryptFailures uint32         `json:"consecutive_decrypt_failures"`
	CurrentKBit                bool           `json:"current_k_bit"`
	Direction                  string         `json:"direction,omitempty"` // present when the link is known
	DisplayName                string         `json:"display_name"`
	EffectiveDepth             *Float         `json:"effective_depth"` // tree_depth + link cost; null without coords or unmeasured (cold-start gate)
	FilterSequence             uint64         `json:"filter_sequence"`
	HasBloomFilter             bool           `json:"has_bloom_filter"`
	HasTreePosition            bool           `json:"has_tree_position"`
	IPv6Addr                   string         `json:"ipv6_addr"`
	IsChild                    bool           `json:"is_child"`
	IsParent                   bool           `json:"is_parent"`
	LastSeenMs                 uint64         `json:"last_seen_ms"`
	LinkID                     uint64         `json:"link_id"`
	MMP                        *PeerMMP       `json:"mmp,omitempty"`
	NodeAddr                   string         `json:"node_addr"`
	Noise                      *NoiseCounters `json:"noise,omitempty"`
	NostrTraversal             NostrTraversal `json:"nostr_traversal"` // always present
	Npub                       string         `json:"npub"`
	OurSessionIndex            string         `json:"our_session_index,omitempty"` // 8 lowercase hex digits
	// PostQuantum (fips-go addition, issue 32): the link's current keys
	// come from an ML-KEM-768 upgrade (node.link.pq).
	PostQuantum bool `json:"post_quantum"`
	// Profile (fips-go addition), on v1 links only: the node profile the
	// peer declared ("full", "non-routing", "leaf").
	Profile          string       `json:"profile,omitempty"`
	RekeyDraining    bool         `json:"rekey_draining,omitempty"`    // only emitted when true
	RekeyInProgress  bool         `json:"rekey_in_progress,omitempty"` // only emitted when true
	ReplaySuppressed uint32       `json:"replay_suppressed"`
	Stats            TrafficStats `json:"stats"`
	TransportAddr    string       `json:"transport_addr,omitempty"`
	TransportType    string       `json:"transport_type,omitempty"` // present when link and transport are known
	TreeDepth        *uint64      `json:"tree_depth,omitempty"`     // present when the peer's coords are known
	// WireFormat (fips-go addition) is the link's format: "v0" (upstream
	// master's v0.2) or "v1" (upstream next's).
	WireFormat string `json:"wire_format"`
}

// TrafficStats are a peer's link counters in show_peers.
type TrafficStats struct {
	BytesRecv   uint64 `json:"bytes_recv"`
	BytesSent   uint64 `json:"bytes_sent"`
	PacketsRecv uint64 `json:"packets_recv"`
	PacketsSent uint64 `json:"packets_sent"`
}

// NostrTraversal is a peer's Nostr NAT-traversal failure state; zero (and
// nulls) when Nostr discovery is off or the npub was never seen.
type NostrTraversal struct {
	ConsecutiveFailures uint32  `json:"consecutive_failures"`
	CooldownUntilMs     *uint64 `json:"cooldown_until_ms"`
	InCooldown          bool    `json:"in_cooldown"` // CooldownUntilMs != nil
	LastObservedSkewMs  *int64  `json:"last_observed_skew_ms"`
}

// NoiseCounters are a peer's Noise session counters.
type NoiseCounters struct {
	HighestRecvCounter uint64 `json:"highest_recv_counter"`
	SendCounter        uint64 `json:"send_counter"`
}

// PeerMMP is a peer's link-layer MMP summary in show_peers.
type PeerMMP struct {
	DeliveryRatioForward Float  `json:"delivery_ratio_forward"`
	DeliveryRatioReverse Float  `json:"delivery_ratio_reverse"`
	ETX                  Float  `json:"etx"`
	GoodputBps           Float  `json:"goodput_bps"`
	LossRate             Float  `json:"loss_rate"`
	LQI                  *Float `json:"lqi,omitempty"` // smoothed_etx × (1 + srtt_ms/100), when both known
	Mode                 string `json:"mode"`          // full|lightweight|minimal
	SmoothedETX          *Float `json:"smoothed_etx,omitempty"`
	SmoothedLoss         *Float `json:"smoothed_loss,omitempty"`
	SrttMs               *Float `json:"srtt_ms,omitempty"`
}

// ShowLinks is show_links's data.
type ShowLinks struct {
	Links List[LinkInfo] `json:"links"`
}

// LinkInfo is one link in show_links.
type LinkInfo struct {
	CreatedAtMs uint64 `json:"created_at_ms"`
	Direction   string `json:"direction"`
	LinkID      uint64 `json:"link_id"`
	// PostQuantum (fips-go addition, issue 32): a connected link's
	// current keys come from an ML-KEM-768 upgrade (node.link.pq); absent
	// while connecting.
	PostQuantum *bool     `json:"post_quantum,omitempty"`
	RemoteAddr  string    `json:"remote_addr"`
	State       string    `json:"state"`
	Stats       LinkStats `json:"stats"`
	TransportID uint32    `json:"transport_id"`
}

// LinkStats are a link's counters in show_links.
type LinkStats struct {
	BytesRecv   uint64 `json:"bytes_recv"`
	BytesSent   uint64 `json:"bytes_sent"`
	LastRecvMs  uint64 `json:"last_recv_ms"`
	PacketsRecv uint64 `json:"packets_recv"`
	PacketsSent uint64 `json:"packets_sent"`
}

// ShowTransports is show_transports's data.
type ShowTransports struct {
	Transports List[TransportInfo] `json:"transports"`
}

// TransportInfo is one transport instance in show_transports.
type TransportInfo struct {
	LocalAddr    string `json:"local_addr,omitempty"`
	MTU          uint16 `json:"mtu"`
	Name         string `json:"name,omitempty"` // named instances only
	OnionAddress string `json:"onion_address,omitempty"`
	State        string `json:"state"`
	// Stats is the transport type's counter snapshot (a struct or map the
	// transport defines); it must be set, nil renders as null.
	Stats         any    `json:"stats"`
	TorMode       string `json:"tor_mode,omitempty"`
	TorMonitoring any    `json:"tor_monitoring,omitempty"`
	TransportID   uint32 `json:"transport_id"`
	Type          string `json:"type"` // udp|tcp|ethernet|tor|nym|ble
}

// ShowConnections is show_connections's data.
type ShowConnections struct {
	Connections List[ConnectionInfo] `json:"connections"`
}

// ConnectionInfo is one handshake in progress in show_connections.
type ConnectionInfo struct {
	Direction      string `json:"direction"`
	ExpectedPeer   string `json:"expected_peer,omitempty"` // npub, when dialled to a known peer
	HandshakeState string `json:"handshake_state"`
	IdleMs         uint64 `json:"idle_ms"`
	LinkID         uint64 `json:"link_id"`
	ResendCount    uint32 `json:"resend_count"`
	StartedAtMs    uint64 `json:"started_at_ms"`
}

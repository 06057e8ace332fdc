package config

import (
	"log/slog"
	"math"
	"strings"
	"time"
)

// Config is the whole of fips.yaml. The zero value is not meaningful; start
// from Default() or one of the loaders, which apply upstream's defaults to
// every key a file leaves out.
type Config struct {
	Node       NodeConfig       `yaml:"node"`
	TUN        TUNConfig        `yaml:"tun"`
	DNS        DNSConfig        `yaml:"dns"`
	Transports TransportsConfig `yaml:"transports"`
	Peers      []PeerConfig     `yaml:"peers"`
	// Gateway is read by fips-gateway (Linux only); nil when the file has no
	// gateway section. Upstream parses it only on Linux, and so do we.
	Gateway *GatewayConfig `yaml:"gateway"`
	// Metrics is metrics.* (fips-go addition): the Prometheus endpoint.
	Metrics MetricsConfig `yaml:"metrics"`
	// Dataplane is dataplane.* (fips-go addition): the kernel fast path.
	Dataplane DataplaneConfig `yaml:"dataplane"`

	// src maps a dotted key path to where the loaders found it, so
	// validation can cite file and line.
	src map[string]srcPos
}

// Default is the configuration of a node started with an empty fips.yaml.
// Note that it has no transports, so such a node would not start; the
// shipped fips.yaml enables UDP and TCP.
func Default() *Config {
	return &Config{
		Node:      defaultNodeConfig(),
		TUN:       defaultTUNConfig(),
		DNS:       defaultDNSConfig(),
		Metrics:   defaultMetricsConfig(),
		Dataplane: defaultDataplaneConfig(),
	}
}

// NodeConfig is node.*.
type NodeConfig struct {
	Identity              IdentityConfig `yaml:"identity"`
	LeafOnly              bool           `yaml:"leaf_only"`
	TickIntervalSecs      uint64         `yaml:"tick_interval_secs"`
	BaseRTTMs             uint64         `yaml:"base_rtt_ms"`
	HeartbeatIntervalSecs uint64         `yaml:"heartbeat_interval_secs"`
	LinkDeadTimeoutSecs   uint64         `yaml:"link_dead_timeout_secs"`
	// DrainTimeoutSecs bounds the shutdown drain (undocumented upstream).
	DrainTimeoutSecs uint64           `yaml:"drain_timeout_secs" fips:"optional"`
	Limits           LimitsConfig     `yaml:"limits"`
	RateLimit        RateLimitConfig  `yaml:"rate_limit"`
	Retry            RetryConfig      `yaml:"retry"`
	Cache            CacheConfig      `yaml:"cache"`
	Lookup           LookupConfig     `yaml:"lookup"`
	Rendezvous       RendezvousConfig `yaml:"rendezvous"`
	Tree             TreeConfig       `yaml:"tree"`
	Bloom            BloomConfig      `yaml:"bloom"`
	// Routing is node.routing.* (fips-go addition): local routing
	// choices that leave the wire unchanged.
	Routing RoutingConfig `yaml:"routing" fips:"optional"`
	Session SessionConfig `yaml:"session"`
	// Link is node.link.* (fips-go addition): the post-quantum upgrade
	// of links.
	Link       LinkConfig      `yaml:"link" fips:"optional"`
	Buffers    BuffersConfig   `yaml:"buffers"`
	Control    ControlConfig   `yaml:"control"`
	NativeAPI  NativeAPIConfig `yaml:"native_api"`
	MMP        MMPConfig       `yaml:"mmp"`
	SessionMMP MMPConfig       `yaml:"session_mmp"`
	ECN        ECNConfig       `yaml:"ecn"`
	Rekey      RekeyConfig     `yaml:"rekey"`
	// LogLevel is node.log_level as written; "" when absent. Use
	// SlogLevel (or ParseLogLevel) for its meaning.
	LogLevel string `yaml:"log_level" fips:"optional"`
	// LogFormat is node.log_format (fips-go addition): "text" (the
	// default, tracing-subscriber's line layout) or "json" (its json
	// layout). The FIPS_LOG_FORMAT environment variable overrides it.
	LogFormat string `yaml:"log_format" fips:"optional"`
	// DisableRouting is node.disable_routing (upstream next's; master
	// has no such key): the node declares itself NonRouting on v1 links
	// (leaf_only wins: Leaf). v0 links declare no profile.
	DisableRouting bool `yaml:"disable_routing" fips:"optional"`
	// WireFormat is node.wire_format (fips-go addition): the link
	// format(s) the node speaks, WireV0 (upstream master's v0.2, the
	// default), WireV1 (upstream next's) or WireAuto (both, per link);
	// "" when absent (v0).
	WireFormat string `yaml:"wire_format" fips:"optional"`
}

// Wire formats (node.wire_format, peers[].wire_format).
const (
	WireV0   = "v0"
	WireV1   = "v1"
	WireAuto = "auto"
)

// Profile names the node profile declared on v1 links: "leaf" with
// node.leaf_only, "non-routing" with node.disable_routing, else "full"
// (upstream next's derivation; leaf wins).
func (n NodeConfig) Profile() string {
	switch {
	case n.LeafOnly:
		return "leaf"
	case n.DisableRouting:
		return "non-routing"
	}
	return "full"
}

func defaultNodeConfig() NodeConfig {
	return NodeConfig{
		TickIntervalSecs:      1,
		BaseRTTMs:             100,
		HeartbeatIntervalSecs: 10,
		LinkDeadTimeoutSecs:   30,
		DrainTimeoutSecs:      2,
		Limits:                defaultLimitsConfig(),
		RateLimit:             defaultRateLimitConfig(),
		Retry:                 defaultRetryConfig(),
		Cache:                 defaultCacheConfig(),
		Lookup:                defaultLookupConfig(),
		Rendezvous:            defaultRendezvousConfig(),
		Tree:                  defaultTreeConfig(),
		Bloom:                 defaultBloomConfig(),
		Routing:               defaultRoutingConfig(),
		Session:               defaultSessionConfig(),
		Link:                  defaultLinkConfig(),
		Buffers:               defaultBuffersConfig(),
		Control:               defaultControlConfig(),
		NativeAPI:             defaultNativeAPIConfig(),
		MMP:                   defaultMMPConfig(),
		SessionMMP:            defaultMMPConfig(),
		ECN:                   defaultECNConfig(),
		Rekey:                 defaultRekeyConfig(),
	}
}

// SlogLevel is node.log_level as a slog level (see ParseLogLevel).
func (n NodeConfig) SlogLevel() slog.Level { return ParseLogLevel(n.LogLevel) }

// DrainTimeout is node.drain_timeout_secs as a duration.
func (n NodeConfig) DrainTimeout() time.Duration {
	return time.Duration(min(n.DrainTimeoutSecs, uint64(math.MaxInt64/int64(time.Second)))) * time.Second
}

// LevelTrace is the slog level node.log_level "trace" maps to: below Debug,
// as tracing's TRACE is below DEBUG.
const LevelTrace = slog.LevelDebug - 4

// ParseLogLevel applies upstream's node.log_level rule: trace, debug, info,
// warn or warning, error, compared case-insensitively; anything else,
// including the empty string, is info.
func ParseLogLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "trace":
		return LevelTrace
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// IdentityConfig is node.identity.*.
type IdentityConfig struct {
	// Nsec is an explicit secret key (nsec1… or 64 hex); nil when absent.
	// It wins over any key file.
	Nsec *string `yaml:"nsec"`
	// Persistent keeps fips.key across restarts.
	Persistent bool `yaml:"persistent"`
}

// NsecValue is the explicit nsec, or "" when none is configured.
func (i IdentityConfig) NsecValue() string {
	if i.Nsec == nil {
		return ""
	}
	return *i.Nsec
}

// LimitsConfig is node.limits.*.
type LimitsConfig struct {
	MaxConnections    uint `yaml:"max_connections"`
	MaxPeers          uint `yaml:"max_peers"` // 0 = unlimited
	MaxLinks          uint `yaml:"max_links"`
	MaxPendingInbound uint `yaml:"max_pending_inbound"`
}

func defaultLimitsConfig() LimitsConfig {
	return LimitsConfig{MaxConnections: 256, MaxPeers: 128, MaxLinks: 256, MaxPendingInbound: 1000}
}

// RateLimitConfig is node.rate_limit.*.
type RateLimitConfig struct {
	HandshakeBurst            uint32  `yaml:"handshake_burst"`
	HandshakeRate             float64 `yaml:"handshake_rate"`
	HandshakeTimeoutSecs      uint64  `yaml:"handshake_timeout_secs"`
	HandshakeResendIntervalMs uint64  `yaml:"handshake_resend_interval_ms"`
	HandshakeResendBackoff    float64 `yaml:"handshake_resend_backoff"`
	HandshakeMaxResends       uint32  `yaml:"handshake_max_resends"`
	// EstablishedHandshakeBurst and EstablishedHandshakeRate are nil when
	// absent, which means "derive from node.limits.max_peers" (see
	// Config.EstablishedHandshakeBucket); an explicit 0 is a validation
	// error, not "unlimited".
	EstablishedHandshakeBurst *uint32  `yaml:"established_handshake_burst"`
	EstablishedHandshakeRate  *float64 `yaml:"established_handshake_rate"`
	SessionSetupBurst         uint32   `yaml:"session_setup_burst"`
	SessionSetupRate          float64  `yaml:"session_setup_rate"`
}

func defaultRateLimitConfig() RateLimitConfig {
	return RateLimitConfig{
		HandshakeBurst:            100,
		HandshakeRate:             10.0,
		HandshakeTimeoutSecs:      30,
		HandshakeResendIntervalMs: 1000,
		HandshakeResendBackoff:    2.0,
		HandshakeMaxResends:       5,
		SessionSetupBurst:         64,
		SessionSetupRate:          16.0,
	}
}

// EstablishedRateFloor is the lowest derived refill rate (tokens/s) of an
// established-peer bucket.
const EstablishedRateFloor = 1.0

// DeriveEstablishedBucket sizes a bucket for msg1/SessionSetup traffic from
// already-established peers the way upstream does: burst = maxPeers, rate =
// maxPeers/max(rekeyAfterSecs,1) × (1+maxResends), floored at
// EstablishedRateFloor. maxPeers 0 (unlimited) reuses the stranger bucket's
// parameters.
func DeriveEstablishedBucket(maxPeers uint, rekeyAfterSecs uint64, maxResends uint32, strangerBurst uint32, strangerRate float64) (uint32, float64) {
	if maxPeers == 0 {
		return strangerBurst, strangerRate
	}
	burst := uint32(math.MaxUint32)
	if uint64(maxPeers) < math.MaxUint32 {
		burst = uint32(maxPeers)
	}
	period := float64(max(rekeyAfterSecs, 1))
	rate := float64(maxPeers) / period * (1 + float64(maxResends))
	return burst, max(rate, EstablishedRateFloor)
}

// EstablishedHandshakeBucket is the established-link msg1 bucket: the
// configured node.rate_limit.established_handshake_* where set, derived
// from max_peers, rekey.after_secs and handshake_max_resends otherwise.
func (c *Config) EstablishedHandshakeBucket() (burst uint32, rate float64) {
	rl := c.Node.RateLimit
	burst, rate = DeriveEstablishedBucket(c.Node.Limits.MaxPeers, c.Node.Rekey.AfterSecs,
		rl.HandshakeMaxResends, rl.HandshakeBurst, rl.HandshakeRate)
	if rl.EstablishedHandshakeBurst != nil {
		burst = *rl.EstablishedHandshakeBurst
	}
	if rl.EstablishedHandshakeRate != nil {
		rate = *rl.EstablishedHandshakeRate
	}
	return burst, rate
}

// EstablishedSessionSetupBucket is the per-link bucket for SessionSetup
// from already-established peers; always derived (there is no key).
func (c *Config) EstablishedSessionSetupBucket() (burst uint32, rate float64) {
	rl := c.Node.RateLimit
	return DeriveEstablishedBucket(c.Node.Limits.MaxPeers, c.Node.Rekey.AfterSecs,
		rl.HandshakeMaxResends, rl.SessionSetupBurst, rl.SessionSetupRate)
}

// RetryConfig is node.retry.*.
type RetryConfig struct {
	MaxRetries       uint32 `yaml:"max_retries"`
	BaseIntervalSecs uint64 `yaml:"base_interval_secs"`
	MaxBackoffSecs   uint64 `yaml:"max_backoff_secs"`
}

func defaultRetryConfig() RetryConfig {
	return RetryConfig{MaxRetries: 5, BaseIntervalSecs: 5, MaxBackoffSecs: 300}
}

// CacheConfig is node.cache.*.
type CacheConfig struct {
	CoordSize    uint   `yaml:"coord_size"`
	CoordTTLSecs uint64 `yaml:"coord_ttl_secs"`
	IdentitySize uint   `yaml:"identity_size"`
}

func defaultCacheConfig() CacheConfig {
	return CacheConfig{CoordSize: 50000, CoordTTLSecs: 300, IdentitySize: 10000}
}

// LookupConfig is node.lookup.* (formerly part of node.discovery.*).
type LookupConfig struct {
	TTL                    uint8    `yaml:"ttl"`
	AttemptTimeoutsSecs    []uint64 `yaml:"attempt_timeouts_secs"`
	RecentExpirySecs       uint64   `yaml:"recent_expiry_secs"`
	BackoffBaseSecs        uint64   `yaml:"backoff_base_secs"`
	BackoffMaxSecs         uint64   `yaml:"backoff_max_secs"`
	ForwardMinIntervalSecs uint64   `yaml:"forward_min_interval_secs"`
}

func defaultLookupConfig() LookupConfig {
	return LookupConfig{
		TTL:                    64,
		AttemptTimeoutsSecs:    []uint64{1, 2, 4, 8},
		RecentExpirySecs:       10,
		ForwardMinIntervalSecs: 2,
	}
}

// RendezvousConfig is node.rendezvous.*.
type RendezvousConfig struct {
	Nostr NostrConfig `yaml:"nostr"`
	LAN   LANConfig   `yaml:"lan"`
}

func defaultRendezvousConfig() RendezvousConfig {
	return RendezvousConfig{Nostr: defaultNostrConfig(), LAN: defaultLANConfig()}
}

// NostrPolicy is node.rendezvous.nostr.policy.
type NostrPolicy string

// Nostr advert policies.
const (
	NostrPolicyDisabled       NostrPolicy = "disabled"
	NostrPolicyConfiguredOnly NostrPolicy = "configured_only"
	NostrPolicyOpen           NostrPolicy = "open"
)

func (NostrPolicy) enumValues() []string { return []string{"disabled", "configured_only", "open"} }

// NostrConfig is node.rendezvous.nostr.*. Unknown keys here are an error,
// as upstream.
type NostrConfig struct {
	Enabled                      bool        `yaml:"enabled"`
	Advertise                    bool        `yaml:"advertise"`
	AdvertRelays                 []string    `yaml:"advert_relays"`
	DMRelays                     []string    `yaml:"dm_relays"`
	StunServers                  []string    `yaml:"stun_servers"`
	ShareLocalCandidates         bool        `yaml:"share_local_candidates"`
	App                          string      `yaml:"app"`
	SignalTTLSecs                uint64      `yaml:"signal_ttl_secs"`
	Policy                       NostrPolicy `yaml:"policy"`
	OpenDiscoveryMaxPending      uint        `yaml:"open_discovery_max_pending"`
	MaxConcurrentIncomingOffers  uint        `yaml:"max_concurrent_incoming_offers"`
	MaxConcurrentOffersPerNpub   uint        `yaml:"max_concurrent_offers_per_npub"`
	AdvertCacheMaxEntries        uint        `yaml:"advert_cache_max_entries"`
	SeenSessionsMaxEntries       uint        `yaml:"seen_sessions_max_entries"`
	AttemptTimeoutSecs           uint64      `yaml:"attempt_timeout_secs"`
	ReplayWindowSecs             uint64      `yaml:"replay_window_secs"`
	PunchStartDelayMs            uint64      `yaml:"punch_start_delay_ms"`
	PunchIntervalMs              uint64      `yaml:"punch_interval_ms"`
	PunchDurationMs              uint64      `yaml:"punch_duration_ms"`
	AdvertTTLSecs                uint64      `yaml:"advert_ttl_secs"`
	AdvertRefreshSecs            uint64      `yaml:"advert_refresh_secs"`
	StartupSweepDelaySecs        uint64      `yaml:"startup_sweep_delay_secs"`
	StartupSweepMaxAgeSecs       uint64      `yaml:"startup_sweep_max_age_secs"`
	FailureStreakThreshold       uint32      `yaml:"failure_streak_threshold"`
	ExtendedCooldownSecs         uint64      `yaml:"extended_cooldown_secs"`
	WarnLogIntervalSecs          uint64      `yaml:"warn_log_interval_secs"`
	FailureStateMaxEntries       uint        `yaml:"failure_state_max_entries"`
	ProtocolMismatchCooldownSecs uint64      `yaml:"protocol_mismatch_cooldown_secs"`
}

func (*NostrConfig) denyUnknownKeys() {}

// DefaultNostrRelays is upstream's built-in relay list (advert and DM).
func DefaultNostrRelays() []string {
	return []string{"wss://relay.damus.io", "wss://nos.lol", "wss://offchain.pub"}
}

// DefaultStunServers is upstream's built-in STUN list.
func DefaultStunServers() []string {
	return []string{
		"stun:stun.l.google.com:19302",
		"stun:stun.cloudflare.com:3478",
		"stun:global.stun.twilio.com:3478",
	}
}

func defaultNostrConfig() NostrConfig {
	return NostrConfig{
		Advertise:                    true,
		AdvertRelays:                 DefaultNostrRelays(),
		DMRelays:                     DefaultNostrRelays(),
		StunServers:                  DefaultStunServers(),
		App:                          "fips-overlay-v1",
		SignalTTLSecs:                120,
		Policy:                       NostrPolicyConfiguredOnly,
		OpenDiscoveryMaxPending:      64,
		MaxConcurrentIncomingOffers:  16,
		MaxConcurrentOffersPerNpub:   4,
		AdvertCacheMaxEntries:        2048,
		SeenSessionsMaxEntries:       2048,
		AttemptTimeoutSecs:           10,
		ReplayWindowSecs:             300,
		PunchStartDelayMs:            2000,
		PunchIntervalMs:              200,
		PunchDurationMs:              10000,
		AdvertTTLSecs:                3600,
		AdvertRefreshSecs:            1800,
		StartupSweepDelaySecs:        5,
		StartupSweepMaxAgeSecs:       3600,
		FailureStreakThreshold:       5,
		ExtendedCooldownSecs:         1800,
		WarnLogIntervalSecs:          300,
		FailureStateMaxEntries:       4096,
		ProtocolMismatchCooldownSecs: 86400,
	}
}

func (c *NostrConfig) applyDefaults() { *c = defaultNostrConfig() }

// LANConfig is node.rendezvous.lan.* (mDNS peer rendezvous).
type LANConfig struct {
	Enabled     bool   `yaml:"enabled"`
	ServiceType string `yaml:"service_type"`
	// Scope is the optional LAN scope; nil when absent.
	Scope *string `yaml:"scope"`
	// DialBurst and DialRate (fips-go additions) pace handshakes to
	// discovered peers nobody configured: at most DialBurst at once, then
	// DialRate a second (upstream dials every answer).
	DialBurst uint32  `yaml:"dial_burst"`
	DialRate  float64 `yaml:"dial_rate"`
}

// DefaultMDNSServiceType is node.rendezvous.lan.service_type's default.
const DefaultMDNSServiceType = "_fips._udp.local."

func defaultLANConfig() LANConfig {
	return LANConfig{ServiceType: DefaultMDNSServiceType, DialBurst: 4, DialRate: 1.0}
}

func (c *LANConfig) applyDefaults() { *c = defaultLANConfig() }

// TreeConfig is node.tree.*.
type TreeConfig struct {
	AnnounceMinIntervalMs uint64  `yaml:"announce_min_interval_ms"`
	ParentHysteresis      float64 `yaml:"parent_hysteresis"`
	HoldDownSecs          uint64  `yaml:"hold_down_secs"`
	ReevalIntervalSecs    uint64  `yaml:"reeval_interval_secs"`
	FlapThreshold         uint32  `yaml:"flap_threshold"`
	FlapWindowSecs        uint64  `yaml:"flap_window_secs"`
	FlapDampeningSecs     uint64  `yaml:"flap_dampening_secs"`
}

func defaultTreeConfig() TreeConfig {
	return TreeConfig{
		AnnounceMinIntervalMs: 500,
		ParentHysteresis:      0.2,
		HoldDownSecs:          30,
		ReevalIntervalSecs:    60,
		FlapThreshold:         4,
		FlapWindowSecs:        60,
		FlapDampeningSecs:     120,
	}
}

// BloomConfig is node.bloom.*.
type BloomConfig struct {
	UpdateDebounceMs uint64  `yaml:"update_debounce_ms"`
	MaxInboundFPR    float64 `yaml:"max_inbound_fpr"`
}

func defaultBloomConfig() BloomConfig { return BloomConfig{UpdateDebounceMs: 500, MaxInboundFPR: 0.20} }

// node.routing.next_hop values.
const (
	// NextHopDistance: among peers strictly closer to the destination in
	// the tree, the closest (then a bloom hit, link cost, address).
	NextHopDistance = "distance"
	// NextHopUpstream: upstream's order, bloom candidates by link cost
	// first, then greedy tree routing.
	NextHopUpstream = "upstream"
)

// node.routing.filter_schedule values.
const (
	// FilterScheduleChange: a changed filter is sent as soon as the
	// peer's debounce (node.bloom.update_debounce_ms) allows.
	FilterScheduleChange = "change"
	// FilterScheduleTick: upstream's, filters are sent on the node tick
	// only, so they cross one hop per tick.
	FilterScheduleTick = "tick"
)

// node.routing.full_filter_lookups values.
const (
	// FullFilterLookupsTree: a lookup also goes to a tree peer whose
	// latest filter was refused over node.bloom.max_inbound_fpr.
	FullFilterLookupsTree = "tree"
	// FullFilterLookupsUpstream: upstream's, lookups go only where an
	// accepted filter holds the target.
	FullFilterLookupsUpstream = "upstream"
)

// RoutingConfig is node.routing.* (fips-go addition). Both choices are
// local: a mesh mixing either value with upstream nodes stays loop-free
// (docs/routing.md), and nothing on the wire changes. The defaults are
// the ones testing/sim measured better (docs/scale.md).
type RoutingConfig struct {
	// NextHop is distance or upstream.
	NextHop string `yaml:"next_hop" fips:"optional"`
	// FilterSchedule is change or tick.
	FilterSchedule string `yaml:"filter_schedule" fips:"optional"`
	// FullFilterLookups is tree or upstream.
	FullFilterLookups string `yaml:"full_filter_lookups" fips:"optional"`
}

func defaultRoutingConfig() RoutingConfig {
	return RoutingConfig{NextHop: NextHopDistance, FilterSchedule: FilterScheduleChange, FullFilterLookups: FullFilterLookupsTree}
}

// SessionConfig is node.session.*.
type SessionConfig struct {
	DefaultTTL               uint8  `yaml:"default_ttl"`
	PendingPacketsPerDest    uint   `yaml:"pending_packets_per_dest"`
	PendingMaxDestinations   uint   `yaml:"pending_max_destinations"`
	IdleTimeoutSecs          uint64 `yaml:"idle_timeout_secs"`
	CoordsWarmupPackets      uint8  `yaml:"coords_warmup_packets"`
	CoordsResponseIntervalMs uint64 `yaml:"coords_response_interval_ms"`
	// MaxSessions (fips-go addition) bounds the end-to-end session
	// table, handshakes included (upstream has no bound).
	MaxSessions uint `yaml:"max_sessions"`
	// PQ (fips-go addition) is the post-quantum upgrade policy of
	// end-to-end sessions: off, preferred or required (PQOff...).
	PQ string `yaml:"pq" fips:"optional"`
	// PQTimeoutMs (fips-go addition) is how long a classical session
	// epoch waits for its post-quantum upgrade.
	PQTimeoutMs uint64 `yaml:"pq_timeout_ms"`
}

// LinkConfig is node.link.* (fips-go addition).
type LinkConfig struct {
	// PQ is the post-quantum upgrade policy of links (hop by hop, below
	// sessions): off, preferred or required (PQOff...).
	PQ string `yaml:"pq" fips:"optional"`
	// PQTimeoutMs is how long a classical link session waits for its
	// post-quantum upgrade.
	PQTimeoutMs uint64 `yaml:"pq_timeout_ms"`
}

func defaultLinkConfig() LinkConfig { return LinkConfig{PQ: PQOff, PQTimeoutMs: 10_000} }

// Post-quantum policies (node.session.pq, peers[].pq, node.link.pq,
// peers[].link_pq).
const (
	PQOff       = "off"
	PQPreferred = "preferred"
	PQRequired  = "required"
)

func defaultSessionConfig() SessionConfig {
	return SessionConfig{
		DefaultTTL:               64,
		PendingPacketsPerDest:    16,
		PendingMaxDestinations:   256,
		IdleTimeoutSecs:          90,
		CoordsWarmupPackets:      5,
		CoordsResponseIntervalMs: 2000,
		MaxSessions:              4096,
		PQ:                       PQOff,
		PQTimeoutMs:              10_000,
	}
}

// BuffersConfig is node.buffers.*.
type BuffersConfig struct {
	PacketChannel uint `yaml:"packet_channel"`
	TUNChannel    uint `yaml:"tun_channel"`
	DNSChannel    uint `yaml:"dns_channel"`
}

func defaultBuffersConfig() BuffersConfig {
	return BuffersConfig{PacketChannel: 1024, TUNChannel: 1024, DNSChannel: 64}
}

// ControlConfig is node.control.*.
type ControlConfig struct {
	Enabled bool `yaml:"enabled"`
	// SocketPath is the control socket (a TCP port number on Windows). ""
	// means the platform default, resolved by Path at the time of use.
	SocketPath string `yaml:"socket_path"`
}

func defaultControlConfig() ControlConfig { return ControlConfig{Enabled: true} }

// Path is SocketPath, or DefaultControlSocketPath() when unset.
func (c ControlConfig) Path() string {
	if c.SocketPath != "" {
		return c.SocketPath
	}
	return DefaultControlSocketPath()
}

// MaxPendingPerFlow is the largest node.native_api.pending_per_flow.
const MaxPendingPerFlow = 64

// NativeAPIConfig is node.native_api.* (experimental datagram API).
type NativeAPIConfig struct {
	Enabled bool `yaml:"enabled"`
	// SocketPath "" means the platform default (api.sock beside the
	// control socket), resolved by Path.
	SocketPath     string `yaml:"socket_path"`
	PendingPerFlow uint   `yaml:"pending_per_flow"`
	Backlog        uint   `yaml:"backlog"`
	MaxFlows       uint   `yaml:"max_flows"`
	DebugCommands  bool   `yaml:"debug_commands"`
	// MaxFlowsPerClient (fips-go's, not upstream's) bounds the flows and
	// listeners one client process holds; 0 means a quarter of max_flows
	// (at least 1); max_flows means no per-client bound, as upstream.
	MaxFlowsPerClient uint `yaml:"max_flows_per_client"`
}

func defaultNativeAPIConfig() NativeAPIConfig {
	return NativeAPIConfig{PendingPerFlow: 16, Backlog: 16, MaxFlows: 256}
}

// Path is SocketPath, or DefaultAPISocketPath() when unset.
func (c NativeAPIConfig) Path() string {
	if c.SocketPath != "" {
		return c.SocketPath
	}
	return DefaultAPISocketPath()
}

// MMPMode is node.mmp.mode / node.session_mmp.mode.
type MMPMode string

// MMP operating modes.
const (
	MMPFull        MMPMode = "full"
	MMPLightweight MMPMode = "lightweight"
	MMPMinimal     MMPMode = "minimal"
)

func (MMPMode) enumValues() []string { return []string{"full", "lightweight", "minimal"} }

// MMPConfig is node.mmp.* and node.session_mmp.*.
type MMPConfig struct {
	Mode            MMPMode `yaml:"mode"`
	LogIntervalSecs uint64  `yaml:"log_interval_secs"`
	OWDWindowSize   uint    `yaml:"owd_window_size"`
}

func defaultMMPConfig() MMPConfig {
	return MMPConfig{Mode: MMPFull, LogIntervalSecs: 30, OWDWindowSize: 32}
}

// ECNConfig is node.ecn.*.
type ECNConfig struct {
	Enabled       bool    `yaml:"enabled"`
	LossThreshold float64 `yaml:"loss_threshold"`
	ETXThreshold  float64 `yaml:"etx_threshold"`
}

func defaultECNConfig() ECNConfig {
	return ECNConfig{Enabled: true, LossThreshold: 0.05, ETXThreshold: 3.0}
}

// RekeyJitterSecs is upstream's per-session rekey timer jitter (±).
const RekeyJitterSecs = 15

// RekeyConfig is node.rekey.*.
type RekeyConfig struct {
	Enabled       bool   `yaml:"enabled"`
	AfterSecs     uint64 `yaml:"after_secs"`
	AfterMessages uint64 `yaml:"after_messages"`
}

func defaultRekeyConfig() RekeyConfig {
	return RekeyConfig{Enabled: true, AfterSecs: 120, AfterMessages: 1 << 16}
}

// TUNConfig is tun.*.
type TUNConfig struct {
	Enabled bool   `yaml:"enabled"`
	Name    string `yaml:"name" fips:"optional"` // macOS/FreeBSD: the kernel picks utunN/tunN
	MTU     uint16 `yaml:"mtu" fips:"optional"`
}

func defaultTUNConfig() TUNConfig { return TUNConfig{Name: "fips0", MTU: 1280} }

// DNSConfig is dns.*.
type DNSConfig struct {
	Enabled  bool   `yaml:"enabled"`
	BindAddr string `yaml:"bind_addr" fips:"optional"`
	Port     uint16 `yaml:"port" fips:"optional"`
	TTL      uint32 `yaml:"ttl" fips:"optional"`
}

func defaultDNSConfig() DNSConfig {
	return DNSConfig{Enabled: true, BindAddr: "::1", Port: 5354, TTL: 300}
}

// MetricsConfig is metrics.* (fips-go addition; upstream has no metrics
// endpoint).
type MetricsConfig struct {
	// Listen is the ip:port of the HTTP server answering GET /metrics in
	// Prometheus text format; "" (the default) serves nothing.
	Listen string `yaml:"listen" fips:"optional"`
	// MaxPeerLabels caps the peers that get their own per-peer series
	// (label peer=<node_addr>); the rest are summed under peer="_other"
	// and counted.
	MaxPeerLabels uint `yaml:"max_peer_labels" fips:"optional"`
	// HistoryMaxPeers bounds the peers the stats history (show_stats_*)
	// keeps rings for, about 280 KiB each; new peers beyond it take the
	// place of departed ones or are refused and counted.
	HistoryMaxPeers uint `yaml:"history_max_peers" fips:"optional"`
}

// DefaultHistoryMaxPeers is metrics.history_max_peers's default.
const DefaultHistoryMaxPeers = 256

// HistoryMaxPeersLimit is metrics.history_max_peers's ceiling.
const HistoryMaxPeersLimit = 4096

// DefaultMaxPeerLabels is metrics.max_peer_labels's default.
const DefaultMaxPeerLabels = 64

// MaxPeerLabelsLimit is metrics.max_peer_labels's ceiling.
const MaxPeerLabelsLimit = 4096

func defaultMetricsConfig() MetricsConfig {
	return MetricsConfig{MaxPeerLabels: DefaultMaxPeerLabels, HistoryMaxPeers: DefaultHistoryMaxPeers}
}

// Dataplane modes (dataplane.mode).
const (
	DataplaneAuto      = "auto"      // native XDP, else generic XDP, else userspace
	DataplaneXDP       = "xdp"       // XDP or fail the start
	DataplaneUserspace = "userspace" // never load BPF
)

// MaxXDPInterfaces bounds dataplane.xdp_interfaces.
const MaxXDPInterfaces = 64

// DataplaneConfig is dataplane.* (fips-go addition; upstream has no kernel
// fast path).
type DataplaneConfig struct {
	// Mode is auto, xdp or userspace.
	Mode string `yaml:"mode" fips:"optional"`
	// XDPInterfaces names the interfaces the XDP program is attached to;
	// empty: every interface carrying a UDP transport's bound address (for
	// an unspecified address, every up non-loopback interface with one).
	XDPInterfaces []string `yaml:"xdp_interfaces" fips:"optional"`
	// Engine runs established traffic on the dataplane workers (the
	// transports' reader goroutines) instead of the event loop; false
	// keeps every packet on the loop (for comparison and diagnosis).
	Engine *bool `yaml:"engine" fips:"optional"`
	// Workers is how many dataplane workers (SO_REUSEPORT sockets, each
	// with its reader) serve each UDP transport's port: 0 is one per
	// core, at most DefaultMaxWorkers; 1..MaxWorkers as given. Linux only;
	// elsewhere one.
	Workers int `yaml:"workers" fips:"optional"`
	// ECN attaches the tc programs (bpf/tc_fips.c) wherever the XDP
	// program runs: outgoing FIPS UDP marked ECT(0), outer ECN counted.
	// Default true; nothing is attached in userspace mode.
	ECN *bool `yaml:"ecn" fips:"optional"`
	// AFXDP redirects established frames of known links into AF_XDP
	// sockets (one per RX queue) read by dataplane workers, wherever the
	// XDP program runs. Default false.
	AFXDP bool `yaml:"afxdp" fips:"optional"`
	// AFXDPTransmit is how the AF_XDP workers send what they forward:
	// "socket" (the UDP transports' sockets, the default) or "xsk" (the
	// AF_XDP sockets' TX rings, headers built from the kernel's route and
	// neighbour tables).
	AFXDPTransmit string `yaml:"afxdp_transmit" fips:"optional"`
	// AFXDPBusyPollUS is how long, in microseconds, an AF_XDP reader
	// keeps polling its RX ring after it emptied before it parks (and
	// the socket's SO_BUSY_POLL, with SO_PREFER_BUSY_POLL): 0 (the
	// default) parks at once; at most MaxAFXDPBusyPollUS.
	AFXDPBusyPollUS uint32 `yaml:"afxdp_busy_poll_us" fips:"optional"`
	// XDPAttach is how the XDP program is attached: "auto" (native, else
	// generic; the default), "native" (driver mode or fail) or "generic"
	// (skb mode).
	XDPAttach string `yaml:"xdp_attach" fips:"optional"`
}

// MaxAFXDPBusyPollUS bounds dataplane.afxdp_busy_poll_us: a millisecond
// of spinning per empty ring is already a core's worth at low rates.
const MaxAFXDPBusyPollUS = 1000

// dataplane.afxdp_transmit values.
const (
	AFXDPTransmitSocket = "socket"
	AFXDPTransmitXSK    = "xsk"
)

// ECNEnabled is dataplane.ecn with its default (true).
func (d DataplaneConfig) ECNEnabled() bool { return d.ECN == nil || *d.ECN }

// Worker bounds (dataplane.workers).
const (
	MaxWorkers        = 64
	DefaultMaxWorkers = 8
)

// WorkerCount is dataplane.workers with 0 resolved for a machine of
// cpus cores.
func (d DataplaneConfig) WorkerCount(cpus int) int {
	if d.Workers > 0 {
		return d.Workers
	}
	return max(1, min(cpus, DefaultMaxWorkers))
}

// EngineEnabled is dataplane.engine with its default (true).
func (d DataplaneConfig) EngineEnabled() bool { return d.Engine == nil || *d.Engine }

// defaultDataplaneConfig runs in userspace: until AF_XDP makes the XDP
// program the fast path, it only filters, and on veth it costs throughput
// (make bench: about 0.8× and 1.5× the relay's CPU per GB, as GSO runs are
// split before the program sees them). auto and xdp are for nodes that
// want junk and handshake floods dropped before the socket.
func defaultDataplaneConfig() DataplaneConfig {
	return DataplaneConfig{Mode: DataplaneUserspace}
}

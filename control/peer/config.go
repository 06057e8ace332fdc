package peer

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/pq"
	"github.com/fips-go/fips/control/wire"
)

// Config holds the node.* settings the link layer uses. Zero values are not
// defaults: start from DefaultConfig.
type Config struct {
	HeartbeatInterval time.Duration // node.heartbeat_interval_secs
	LinkDeadTimeout   time.Duration // node.link_dead_timeout_secs

	HandshakeTimeout        time.Duration // node.rate_limit.handshake_timeout_secs
	HandshakeResendInterval time.Duration // node.rate_limit.handshake_resend_interval_ms
	HandshakeResendBackoff  float64       // node.rate_limit.handshake_resend_backoff
	HandshakeMaxResends     int           // node.rate_limit.handshake_max_resends
	// HandshakeBurst and HandshakeRate (node.rate_limit.handshake_burst,
	// handshake_rate per second) size each stranger source's msg1 bucket
	// (one per source IP; upstream has one bucket for all strangers).
	HandshakeBurst float64
	HandshakeRate  float64
	// StrangerBurst and StrangerRate size the bucket all strangers'
	// msg1s share after their source's: the bound on handshake work.
	StrangerBurst float64
	StrangerRate  float64
	// StrangerSources bounds the table of per-source buckets (least
	// recently used evicted).
	StrangerSources int
	// EstablishedBurst and EstablishedRate
	// (node.rate_limit.established_handshake_*) size the bucket msg1s from
	// active peers' addresses share after their peer's own.
	EstablishedBurst float64
	EstablishedRate  float64
	// PeerMsg1Burst and PeerMsg1Rate size each active peer's own msg1
	// bucket (rekeys and restarts from its address).
	PeerMsg1Burst float64
	PeerMsg1Rate  float64

	MaxConnections int // node.limits.max_connections: handshakes in flight
	// MaxDiscovered and MaxDiscoveredPerHost bound the handshakes in
	// flight to mDNS-discovered (unconfigured) peers, in all and to one
	// host address (fips-go's; upstream has no such bound).
	MaxDiscovered        int
	MaxDiscoveredPerHost int
	// MaxAnonymous bounds the anonymous (address-only) v1 dials in
	// flight, to neighbours heard by upstream next's keyless Ethernet
	// beacons (fips-go's; upstream dials every such neighbour). They also
	// count as discovered dials.
	MaxAnonymous       int
	MaxPeers           int // node.limits.max_peers (0 = unlimited)
	MaxPendingInbound  int // node.limits.max_pending_inbound
	RetryBase          time.Duration
	RetryMax           time.Duration
	RetryMaxRetries    int // limits non-auto-reconnect entries only
	RekeyEnabled       bool
	RekeyAfter         time.Duration // node.rekey.after_secs
	RekeyAfterMessages uint64        // node.rekey.after_messages
	// RekeyJitter is the half-width of the uniform jitter added to RekeyAfter,
	// redrawn per session.
	RekeyJitter time.Duration

	// RekeyMinAge: a peer's msg1 for an established session younger than
	// this is a duplicate, not a rekey.
	RekeyMinAge time.Duration
	// RekeyDampening suppresses our own rekey after a peer-initiated one.
	RekeyDampening time.Duration
	// DrainWindow keeps the previous session decrypting after a cutover.
	DrainWindow time.Duration
	// RetryDialsPerTick bounds reconnect dials started in one tick.
	RetryDialsPerTick int
	// MMP is node.mmp.* (link metrics).
	MMP mmp.Config

	// PQ is node.link.pq, the post-quantum upgrade policy of links
	// (fips-go addition, pq.go); PQPeers are peers[].link_pq overrides
	// (read only). PQTimeout is node.link.pq_timeout_ms.
	PQ        pq.Mode
	PQPeers   *PQPeerModes // a pointer keeps Config comparable
	PQTimeout time.Duration
	// WireFormat is node.wire_format (fips-go's): the link format(s) the
	// node speaks; the zero value is v0, upstream master's, exactly as
	// before the option existed.
	WireFormat WireFormat
	// Profile is the node profile declared on v1 links
	// (node.leaf_only → Leaf, node.disable_routing → NonRouting, else
	// Full); v0 links declare none.
	Profile wire.NodeProfile
}

// PQPeerModes are per-peer link policies (peers[].link_pq).
type PQPeerModes map[identity.NodeAddr]pq.Mode

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	c := Config{
		HeartbeatInterval:       10 * time.Second,
		LinkDeadTimeout:         30 * time.Second,
		HandshakeTimeout:        30 * time.Second,
		HandshakeResendInterval: time.Second,
		HandshakeResendBackoff:  2.0,
		HandshakeMaxResends:     5,
		HandshakeBurst:          100,
		HandshakeRate:           10,
		StrangerBurst:           1000,
		StrangerRate:            100,
		StrangerSources:         4096,
		PeerMsg1Burst:           12,
		PeerMsg1Rate:            1,
		MaxConnections:          256,
		MaxDiscovered:           16,
		MaxDiscoveredPerHost:    2,
		MaxAnonymous:            8,
		MaxPeers:                128,
		MaxPendingInbound:       1000,
		RetryBase:               5 * time.Second,
		RetryMax:                300 * time.Second,
		RetryMaxRetries:         5,
		RekeyEnabled:            true,
		RekeyAfter:              120 * time.Second,
		RekeyAfterMessages:      65536,
		RekeyJitter:             15 * time.Second,
		RekeyMinAge:             30 * time.Second,
		RekeyDampening:          30 * time.Second,
		DrainWindow:             10 * time.Second,
		RetryDialsPerTick:       16,
		MMP:                     mmp.DefaultConfig(),
		PQTimeout:               10 * time.Second,
	}
	c.EstablishedBurst, c.EstablishedRate = DerivedEstablishedBucket(c)
	return c
}

// DerivedEstablishedBucket is upstream's default for the bucket that admits
// msg1 from addresses of established links (rekeys and restarts): burst =
// max_peers, rate = max(1, max_peers / rekey_after_secs * (1 + max_resends)).
func DerivedEstablishedBucket(c Config) (burst, rate float64) {
	burst = float64(c.MaxPeers)
	if burst < 1 {
		burst = 1
	}
	rate = 1
	if secs := c.RekeyAfter.Seconds(); secs > 0 {
		if r := float64(c.MaxPeers) / secs * float64(1+c.HandshakeMaxResends); r > rate {
			rate = r
		}
	}
	return burst, rate
}

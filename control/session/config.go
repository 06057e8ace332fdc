package session

import (
	"errors"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Config holds the session-layer knobs, named after upstream's
// node.session.*, node.rekey.* and node.rate_limit.* settings.
type Config struct {
	IdleTimeout            time.Duration // node.session.idle_timeout_secs (0 disables the purge)
	CoordsWarmupPackets    uint8         // node.session.coords_warmup_packets
	CoordsResponseInterval time.Duration // node.session.coords_response_interval_ms
	PendingPerDest         int           // node.session.pending_packets_per_dest
	PendingMaxDests        int           // node.session.pending_max_destinations
	// MaxPendingResponders bounds the answered handshakes awaiting their
	// msg3 (ours; upstream's bound is only the setup rate); ≤ 0: none.
	MaxPendingResponders int
	// MaxSessions bounds the session table, handshakes included
	// (node.session.max_sessions, ours: upstream has no bound); ≤ 0:
	// none. When full, a session we initiate evicts the least proven
	// one; a stranger's SessionSetup evicts only an unproven inbound one
	// (an answered handshake, or an inbound session that has not carried
	// data both ways and has been idle UnprovenIdle), else it is refused.
	MaxSessions int

	SetupBurst            int     // node.rate_limit.session_setup_burst (stranger bucket)
	SetupRate             float64 // node.rate_limit.session_setup_rate, tokens per second
	EstablishedSetupBurst int     // established bucket, derived upstream from max_peers
	EstablishedSetupRate  float64 // established bucket rate, derived upstream
	SetupBucketIdle       time.Duration

	HandshakeResendInterval time.Duration // node.rate_limit.handshake_resend_interval_ms
	HandshakeResendBackoff  float64       // node.rate_limit.handshake_resend_backoff
	HandshakeMaxResends     int           // node.rate_limit.handshake_max_resends
	HandshakeTimeout        time.Duration // node.rate_limit.handshake_timeout_secs

	RekeyEnabled  bool          // node.rekey.enabled
	RekeyAfter    time.Duration // node.rekey.after_secs
	RekeyMessages uint64        // node.rekey.after_messages
	RekeyJitter   time.Duration // REKEY_JITTER_SECS, drawn uniformly in whole seconds in [-j, +j]
	CutoverDelay  time.Duration // FSP_CUTOVER_DELAY_MS
	DrainWindow   time.Duration // DRAIN_WINDOW_SECS
	Dampening     time.Duration // REKEY_DAMPENING_SECS

	// PQ is the post-quantum policy (node.session.pq, ours), PQPeers the
	// per-peer ones (peers[].pq) by NodeAddr, PQTimeout how long a
	// classical epoch waits for its upgrade (node.session.pq_timeout_ms)
	// before the peer is recorded classical (preferred) or the session
	// is torn down (required).
	PQ        PQMode
	PQPeers   *PQPeerModes
	PQTimeout time.Duration
	// Patterns choose the Noise pattern of a new session with a remote,
	// as initiator and as responder (nil: XK, upstream master's, for
	// all). A session keeps its pattern through its rekeys.
	Patterns *Patterns
}

// PQPeerModes are per-peer post-quantum policies by NodeAddr (Config holds
// a pointer so that it stays comparable).
type PQPeerModes map[identity.NodeAddr]PQMode

// DefaultConfig returns upstream's defaults. The established-peer setup
// bucket is what upstream derives from its defaults: burst max_peers (128),
// rate max(1, 128/120·(1+5)) = 6.4 per second.
func DefaultConfig() Config {
	return Config{
		IdleTimeout:             90 * time.Second,
		CoordsWarmupPackets:     5,
		CoordsResponseInterval:  2000 * time.Millisecond,
		PendingPerDest:          16,
		PendingMaxDests:         256,
		MaxPendingResponders:    4096,
		MaxSessions:             4096,
		SetupBurst:              64,
		SetupRate:               16,
		EstablishedSetupBurst:   128,
		EstablishedSetupRate:    128.0 / 120.0 * 6,
		SetupBucketIdle:         300 * time.Second,
		HandshakeResendInterval: 1000 * time.Millisecond,
		HandshakeResendBackoff:  2,
		HandshakeMaxResends:     5,
		HandshakeTimeout:        30 * time.Second,
		RekeyEnabled:            true,
		RekeyAfter:              120 * time.Second,
		RekeyMessages:           65536,
		RekeyJitter:             15 * time.Second,
		CutoverDelay:            2000 * time.Millisecond,
		DrainWindow:             10 * time.Second,
		Dampening:               30 * time.Second,
		PQTimeout:               10 * time.Second,
	}
}

// Constants shared with the rest of the node.
const (
	// FIPSOverhead is upstream's FIPS_OVERHEAD (upper/icmp.rs): every byte a
	// session payload costs on a link, DataPacket ports excluded.
	FIPSOverhead = 106
	// MinActionablePathMTU is upstream's MIN_ACTIONABLE_PATH_MTU: remote
	// MTU claims below it are ignored, not clamped.
	MinActionablePathMTU = 256
	// ClampLifetime is how long a path-MTU clamp learned from MtuExceeded
	// holds before it is released and the path is tried at full size
	// again (ours: upstream holds it for the session's life). RFC 1981
	// §5.3 ages a learned PMTU after 10 minutes for the same reason: a
	// clamp that never rises lets one bad report pin a session low. A
	// genuine bottleneck is reported again by the relay at the next
	// packet that does not fit.
	ClampLifetime = 10 * time.Minute
	// UnprovenIdle is how long an inbound session that has not carried
	// data both ways must have been quiet before a new inbound setup may
	// evict it from a full table.
	UnprovenIdle = 10 * time.Second
)

// Errors returned by Send and SendMessage.
var (
	// ErrUnknownDestination: no session and no cached identity for the
	// destination, so no handshake can start (upstream answers the TUN
	// packet with ICMPv6 unreachable).
	ErrUnknownDestination = errors.New("session: destination identity unknown")
	// ErrNotEstablished: SendMessage on a session that is not established.
	ErrNotEstablished = errors.New("session: not established")
	// ErrTableFull: MaxSessions are held and none may be evicted.
	ErrTableFull = errors.New("session: table full")
)

// Env is what the table needs from the node: the router, our coordinates
// and the node-wide caches.
type Env interface {
	// SendDatagram wraps fsp in a SessionDatagram from us to dest and
	// routes it. fsp is valid only during the call. pathMTU is the MTU
	// seeded into the datagram (the first hop's), 0 if unknown.
	SendDatagram(now time.Time, dest identity.NodeAddr, fsp []byte) (pathMTU uint16, err error)
	// Coords returns our coordinates, self first, root last.
	Coords() []identity.NodeAddr
	// CachedCoords returns dest's cached coordinates.
	CachedCoords(dest identity.NodeAddr) ([]identity.NodeAddr, bool)
	// CacheCoords records coordinates learned from a SessionAck or CP message.
	CacheCoords(now time.Time, addr identity.NodeAddr, coords []identity.NodeAddr)
	// InvalidateCoords forgets addr's cached coordinates (PathBroken).
	InvalidateCoords(addr identity.NodeAddr)
	// TransportMTU is the smallest MTU of the operational transports.
	TransportMTU() int
	// Identity looks dest up in the identity cache.
	Identity(dest identity.NodeAddr) (identity.PublicKey, bool)
	// LearnIdentity records an authenticated key (msg3, or a key we
	// initiated towards).
	LearnIdentity(addr identity.NodeAddr, pk identity.PublicKey)
	// StartLookup asks for a coordinate lookup of dest.
	StartLookup(now time.Time, dest identity.NodeAddr)
	// NextHop is the link peer our datagrams to dest go to now (dest
	// itself when it is a link peer); false: no route.
	NextHop(now time.Time, dest identity.NodeAddr) (identity.NodeAddr, bool)
	// NotifiedPathMTU is the path MTU dest last reported in an
	// authenticated PathMtuNotification (session MMP); false: none yet.
	NotifiedPathMTU(dest identity.NodeAddr) (uint16, bool)
}

// Frame describes one authenticated encrypted message, for MMP.
type Frame struct {
	Counter   uint64
	Timestamp uint32 // sender's ms since its session start
	Type      wire.SessionMessageType
	Spin      bool
	Size      int  // inner plaintext length
	CE        bool // the carrying FMP frame had CE
	// Body is the message body after the 6-byte inner header, valid only
	// during the call (SenderReport, ReceiverReport, PathMtuNotification
	// bodies are for MMP to parse).
	Body []byte
	// Recorded: a dataplane worker already fed this frame to the
	// session's MMP receiver.
	Recorded bool
}

// EventKind says what happened to a session.
type EventKind uint8

// Session events.
const (
	EventUp      EventKind = iota + 1 // established (either role)
	EventDown                         // removed: Reason says why
	EventRekeyed                      // cut over to a new key epoch (MMP resets)
	EventPathMTU                      // the per-destination path-MTU clamp changed (0 = released)
)

// Event is a session state change reported to Upper.
type Event struct {
	Kind      EventKind
	Remote    identity.NodeAddr
	Initiator bool   // EventUp
	Reason    string // EventDown: "idle", "handshake_timeout", "removed"
	MTU       uint16 // EventPathMTU
}

// Upper receives what sessions deliver.
type Upper interface {
	// Deliver hands a DataPacket's service payload up; payload is valid
	// only during the call. dstPort 256 is the IPv6 shim.
	Deliver(now time.Time, src identity.NodeAddr, srcPort, dstPort uint16, payload []byte, ce bool)
	// Frame reports every authenticated encrypted message (MMP input).
	Frame(now time.Time, src identity.NodeAddr, f Frame)
	// Sent reports every encrypted message handed to the network (MMP's
	// sender side): its AEAD counter, inner timestamp and ciphertext size.
	Sent(now time.Time, dest identity.NodeAddr, counter uint64, ts uint32, size int)
	// Event reports session state changes.
	Event(now time.Time, ev Event)
}

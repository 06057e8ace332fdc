package session

import (
	"encoding/binary"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/wire"
)

// State is a session's handshake state.
type State uint8

// Session states, as upstream's EndToEndState.
const (
	StateNone         State = iota // no session
	StateInitiating                // we sent SessionSetup, awaiting SessionAck
	StateAwaitingMsg3              // we sent SessionAck, awaiting SessionMsg3
	StateEstablished
)

// String is the show_sessions spelling.
func (s State) String() string {
	switch s {
	case StateInitiating:
		return "initiating"
	case StateAwaitingMsg3:
		return "awaiting_msg3"
	case StateEstablished:
		return "established"
	}
	return "unknown"
}

type pendingPkt struct {
	srcPort, dstPort uint16
	payload          []byte
}

// entry is one remote's session (upstream SessionEntry).
type entry struct {
	addr      identity.NodeAddr
	remote    identity.PublicKey // responder before msg3: our own key (upstream's placeholder)
	state     State
	hsI       *initiatorHS
	hsR       *responderHS
	pattern   Pattern // the session's handshake pattern, kept by its rekeys
	cur       *noise.Session
	initiator bool

	created, sessionStart time.Time
	warmup                uint8
	// hot are the per-packet counters and the idle clock, which
	// dataplane workers update too.
	hot sessHot

	hsPayload []byte
	// hsPayloadAlt is a dual responder's second SessionAck (XX's).
	hsPayloadAlt []byte
	resendCount  int
	nextResend   time.Time
	// setupMsg1 is the msg1 of the SessionSetup a responder entry
	// answered: a setup with another one is another attempt.
	setupMsg1 []byte

	k                          bool
	prev                       *noise.Session
	drainStarted, prevLastUsed time.Time
	rekeyI                     *initiatorHS
	rekeyR                     *responderHS
	rekeyMsg1                  []byte // the msg1 rekeyR answered
	rekeyStarted               time.Time
	rekeyInitiator             bool
	pending                    *noise.Session
	lastPeerRekey              time.Time
	rekeyCompleted             time.Time
	msg3Payload                []byte
	msg3NextResend             time.Time
	msg3ResendCount            int
	jitter                     time.Duration

	pathMTU uint16
	pq      pqState
}

func (e *entry) rekeyInProgress() bool { return e.rekeyI != nil || e.rekeyR != nil }

// Table is the session table. See the package documentation.
type Table struct {
	namer func(identity.NodeAddr) string
	id    *identity.Identity
	self  identity.NodeAddr
	epoch noise.Epoch
	cfg   Config
	env   Env
	up    Upper
	log   *slog.Logger
	rnd   io.Reader

	sessions map[identity.NodeAddr]*entry
	pending  map[identity.NodeAddr][]pendingPkt
	clamp    map[identity.NodeAddr]clampEntry
	coordsTx *ratelimit.Keyed[identity.NodeAddr] // one CoordsRequired answer per destination per CoordsResponseInterval
	limiter  setupLimiter
	// responders are the answered handshakes in the order answered, for
	// MaxPendingResponders; entries no longer awaiting msg3 are skipped.
	responders []responderRef
	stats      Stats
	buf        []byte
	// openBuf receives decrypted session messages; what the table hands
	// up from it is valid until the next one (the table is loop-owned).
	openBuf []byte
	// tickBuf holds the addresses Tick visits, reused tick to tick.
	tickBuf []identity.NodeAddr
	// published is the session table for dataplane workers (Publish).
	published atomic.Pointer[Sessions]
}

// New makes an empty table. rnd feeds the handshake ephemerals and the
// rekey jitter (crypto/rand in production).
func New(id *identity.Identity, epoch noise.Epoch, cfg Config, env Env, up Upper, log *slog.Logger, rnd io.Reader) *Table {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = logging.WithTarget(log, "fips::node::handlers::session")
	t := &Table{
		id: id, self: id.NodeAddr(), epoch: epoch, cfg: cfg, env: env, up: up, log: log, rnd: rnd,
		sessions: make(map[identity.NodeAddr]*entry),
		pending:  make(map[identity.NodeAddr][]pendingPkt),
		clamp:    make(map[identity.NodeAddr]clampEntry),
	}
	t.limiter = newSetupLimiter(t.cfg)
	t.coordsTx = ratelimit.NewKeyed[identity.NodeAddr](ratelimit.KeyedConfig{
		Rates:  []ratelimit.Rate{ratelimit.Every(1, t.cfg.CoordsResponseInterval)},
		Forget: ratelimit.Refilled,
	})
	return t
}

func (t *Table) drawJitter() time.Duration {
	j := int64(t.cfg.RekeyJitter / time.Second)
	if j <= 0 {
		return 0
	}
	var b [8]byte
	if _, err := io.ReadFull(t.rnd, b[:]); err != nil {
		return 0
	}
	return time.Duration(int64(binary.LittleEndian.Uint64(b[:])%uint64(2*j+1))-j) * time.Second
}

func (t *Table) newEntry(addr identity.NodeAddr, remote identity.PublicKey, st State, now time.Time, initiator bool) *entry {
	e := &entry{addr: addr, remote: remote, state: st, created: now, initiator: initiator, jitter: t.drawJitter()}
	e.hot.touch(now)
	return e
}

func msSince(now, start time.Time) uint32 { return uint32(now.Sub(start).Milliseconds()) }

func coordsOf(a []identity.NodeAddr) wire.Coords { return wire.CoordsOf(a...) }

func (t *Table) destCoords(dest identity.NodeAddr) []identity.NodeAddr {
	if c, ok := t.env.CachedCoords(dest); ok && len(c) > 0 {
		return c
	}
	return t.env.Coords()
}

func (t *Table) send(now time.Time, e *entry, dest identity.NodeAddr, fsp []byte) error {
	mtu, err := t.env.SendDatagram(now, dest, fsp)
	if err == nil && e != nil && mtu != 0 && (e.pathMTU == 0 || mtu < e.pathMTU) {
		e.pathMTU = mtu
	}
	return err
}

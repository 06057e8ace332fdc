package session

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"

	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
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
	hsI       *noise.XKInitiator
	hsR       *noise.XKResponder
	cur       *noise.Session
	initiator bool

	created, sessionStart time.Time
	warmup                uint8
	// hot are the per-packet counters and the idle clock, which
	// dataplane workers update too.
	hot sessHot

	hsPayload   []byte
	resendCount int
	nextResend  time.Time
	// setupMsg1 is the msg1 of the SessionSetup a responder entry
	// answered: a setup with another one is another attempt.
	setupMsg1 []byte

	k                          bool
	prev                       *noise.Session
	drainStarted, prevLastUsed time.Time
	rekeyI                     *noise.XKInitiator
	rekeyR                     *noise.XKResponder
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

// ---------------------------------------------------------------------------
// Sending

// Send sends a DataPacket to dest. With no session it starts the XK
// handshake and queues the payload (bounded; the oldest is dropped); with a
// handshake in flight it queues. ErrUnknownDestination: neither a session
// nor a cached identity.
func (t *Table) Send(now time.Time, dest identity.NodeAddr, srcPort, dstPort uint16, payload []byte) error {
	if e := t.sessions[dest]; e != nil {
		if e.state == StateEstablished {
			return t.sendData(now, e, srcPort, dstPort, payload)
		}
		t.queue(dest, srcPort, dstPort, payload)
		t.supersedeResponder(now, dest, e)
		return nil
	}
	pk, ok := t.env.Identity(dest)
	if !ok {
		return ErrUnknownDestination
	}
	err := t.initiate(now, dest, pk)
	// Queued before the lookup starts: a lookup that cannot even go out
	// fails at once, and the environment may then drop what is queued.
	t.queue(dest, srcPort, dstPort, payload)
	if err != nil {
		t.log.Debug("Failed to initiate session, trying discovery", "dest", t.name(dest), "error", err)
		t.env.StartLookup(now, dest)
	}
	return nil
}

// RetryAfterDiscovery starts a handshake to dest after a lookup answered,
// unless one is established or initiating (upstream
// retry_session_after_discovery).
func (t *Table) RetryAfterDiscovery(now time.Time, dest identity.NodeAddr) error {
	if e := t.sessions[dest]; e != nil && (e.state == StateEstablished || e.state == StateInitiating) {
		return nil
	}
	pk, ok := t.env.Identity(dest)
	if !ok {
		return ErrUnknownDestination
	}
	return t.initiate(now, dest, pk)
}

type responderRef struct {
	addr identity.NodeAddr
	e    *entry
}

func (t *Table) awaitingMsg3(r responderRef) bool {
	return t.sessions[r.addr] == r.e && r.e.state == StateAwaitingMsg3
}

// holdResponder records an answered handshake, first dropping the oldest
// still awaiting msg3 when MaxPendingResponders are. A forged source's
// handshake never completes, and the setup bucket is per link peer: each
// peer carrying a forger's setups added its own share.
func (t *Table) holdResponder(now time.Time, addr identity.NodeAddr, e *entry) {
	limit := t.cfg.MaxPendingResponders
	if limit <= 0 {
		return
	}
	if len(t.responders) >= limit {
		live := t.responders[:0]
		for _, r := range t.responders {
			if t.awaitingMsg3(r) {
				live = append(live, r)
			}
		}
		clear(t.responders[len(live):])
		t.responders = live
	}
	for len(t.responders) >= limit {
		old := t.responders[0]
		t.responders = t.responders[1:]
		if t.awaitingMsg3(old) {
			t.stats.RespondersEvicted++
			t.log.Debug("too many answered handshakes awaiting msg3: dropping the oldest", "src", t.name(old.addr))
			t.drop(now, old.addr, "handshake_evicted")
		}
	}
	t.responders = append(t.responders, responderRef{addr, e})
}

// Eviction classes, least proven first.
const (
	classAnswered      = iota // a stranger's handshake we answered, before its msg3
	classInbound              // inbound, established, not yet data both ways
	classInboundProven        // inbound, data both ways
	classOurs                 // we initiated it
)

func (e *entry) class() int {
	switch {
	case e.initiator:
		return classOurs
	case e.state != StateEstablished:
		return classAnswered
	case e.hot.pktsSent.Load() > 0 && e.hot.pktsRecv.Load() > 0:
		return classInboundProven
	}
	return classInbound
}

// makeRoom makes room for one more session when MaxSessions are held,
// evicting the least proven, then the longest idle (then the smallest
// address). ours: a session we initiate, which may evict any other;
// otherwise an inbound setup, which may evict only an answered handshake
// or an inbound session without data both ways idle for UnprovenIdle,
// so that strangers' fresh sessions never displace proven ones. False:
// no room.
func (t *Table) makeRoom(now time.Time, ours bool) bool {
	limit := t.cfg.MaxSessions
	if limit <= 0 || len(t.sessions) < limit {
		return true
	}
	var victim *entry
	vc := 0
	for _, e := range t.sessions {
		c := e.class()
		if !ours && (c > classInbound || c == classInbound && now.Sub(e.hot.last()) < UnprovenIdle) {
			continue
		}
		if victim == nil || c < vc || c == vc && (e.hot.last().Before(victim.hot.last()) ||
			e.hot.last().Equal(victim.hot.last()) && e.addr.Less(victim.addr)) {
			victim, vc = e, c
		}
	}
	if victim == nil {
		return false
	}
	t.stats.SessionsEvicted++
	t.log.Debug("session table full: evicting the least proven session", "dest", t.name(victim.addr), "class", vc)
	t.drop(now, victim.addr, "evicted")
	return true
}

// supersedeResponder replaces an answered handshake with one of our own
// when traffic for its claimed source waits and no msg3 came within a
// resend interval. A genuine initiator's msg3 follows our ack within a
// round trip; a SessionSetup whose source was spoofed gets none, and
// until it timed out (renewable by the next spoofed setup) it held our
// traffic to that source queued with no handshake of ours.
func (t *Table) supersedeResponder(now time.Time, dest identity.NodeAddr, e *entry) {
	if e.state != StateAwaitingMsg3 || e.initiator || len(t.pending[dest]) == 0 ||
		now.Sub(e.created) < t.cfg.HandshakeResendInterval {
		return
	}
	pk, ok := t.env.Identity(dest)
	if !ok {
		return
	}
	if err := t.initiate(now, dest, pk); err != nil {
		t.log.Debug("cannot replace an unanswered responder handshake", "dest", t.name(dest), "error", err)
		return
	}
	t.stats.ResponderSuperseded++
	t.log.Debug("no msg3 for our SessionAck and traffic waiting: initiating our own session", "dest", t.name(dest))
}

func (t *Table) queue(dest identity.NodeAddr, srcPort, dstPort uint16, payload []byte) {
	q, ok := t.pending[dest]
	if !ok && len(t.pending) >= t.cfg.PendingMaxDests {
		t.stats.PendingDestRefused++
		return
	}
	if len(q) >= t.cfg.PendingPerDest {
		q = q[1:]
		t.stats.PendingDropped++
	}
	t.pending[dest] = append(q, pendingPkt{srcPort, dstPort, bytes.Clone(payload)})
}

func (t *Table) flush(now time.Time, dest identity.NodeAddr) {
	q, ok := t.pending[dest]
	if !ok {
		return
	}
	delete(t.pending, dest)
	e := t.sessions[dest]
	for _, p := range q {
		if e == nil || e.state != StateEstablished {
			return
		}
		if err := t.sendData(now, e, p.srcPort, p.dstPort, p.payload); err != nil {
			return
		}
	}
}

func (t *Table) initiate(now time.Time, dest identity.NodeAddr, pk identity.PublicKey) error {
	if e := t.sessions[dest]; e != nil && (e.state == StateEstablished || e.state == StateInitiating) {
		return nil
	}
	rs, err := pk.Point()
	if err != nil {
		return err
	}
	hs, err := noise.NewXKInitiator(t.id.Secret().Private(), rs, t.epoch, noise.WithRand(t.rnd))
	if err != nil {
		return err
	}
	msg1, err := hs.WriteMessage1(nil)
	if err != nil {
		return err
	}
	setup := wire.SessionSetup{SrcCoords: coordsOf(t.env.Coords()), DestCoords: coordsOf(t.destCoords(dest)), Handshake: msg1}
	payload := make([]byte, setup.Len())
	if _, err := setup.MarshalTo(payload); err != nil {
		return err
	}
	if t.sessions[dest] == nil && !t.makeRoom(now, true) {
		return ErrTableFull
	}
	if err := t.send(now, nil, dest, payload); err != nil {
		return err
	}
	t.env.LearnIdentity(dest, pk)
	e := t.newEntry(dest, pk, StateInitiating, now, true)
	e.hsI = hs
	e.hsPayload, e.resendCount, e.nextResend = payload, 0, now.Add(t.cfg.HandshakeResendInterval)
	t.sessions[dest] = e
	t.stats.Initiated++
	return nil
}

func coordsWireSize(c []identity.NodeAddr) int { return 2 + identity.NodeAddrSize*len(c) }

func (t *Table) sendData(now time.Time, e *entry, srcPort, dstPort uint16, payload []byte) error {
	var src, dst []identity.NodeAddr
	cp := false
	if e.warmup > 0 {
		src, dst = t.env.Coords(), t.destCoords(e.addr)
		if FIPSOverhead+wire.FSPPortHeaderSize+coordsWireSize(src)+coordsWireSize(dst)+len(payload) <= t.env.TransportMTU() {
			cp = true
		} else if err := t.sendCoordsWarmup(now, e); err != nil {
			t.log.Debug("standalone CoordsWarmup failed", "dest", e.addr, "err", err)
		}
		e.warmup--
	}
	var flags wire.FSPFlags
	if cp {
		flags |= wire.FSPFlagCP
	}
	if e.k {
		flags |= wire.FSPFlagK
	}
	if !cp {
		// The dataplane workers' step, on the loop: no coordinates.
		total := DataOverhead + len(payload)
		if cap(t.buf) < total {
			t.buf = make([]byte, total+256)
		}
		b := t.buf[:total]
		copy(b[DataPayloadOffset:], payload)
		fsp, counter, ts, err := sealData(now, e.cur, e.k, e.sessionStart, b, len(payload), srcPort, dstPort)
		if err != nil {
			return err
		}
		if err := t.send(now, e, e.addr, fsp); err != nil {
			return err
		}
		t.up.Sent(now, e.addr, counter, ts, len(fsp)-wire.FSPHeaderSize)
		e.hot.sent(now, len(payload))
		return nil
	}
	var ports [wire.FSPPortHeaderSize]byte
	binary.LittleEndian.PutUint16(ports[0:], srcPort)
	binary.LittleEndian.PutUint16(ports[2:], dstPort)
	if err := t.seal(now, e, flags, src, dst, wire.SessionMsgDataPacket, ports[:], payload); err != nil {
		return err
	}
	e.hot.sent(now, len(payload))
	return nil
}

func (t *Table) sendCoordsWarmup(now time.Time, e *entry) error {
	// Upstream builds this header with CP alone: the K bit is never set on
	// a standalone CoordsWarmup, whatever the current key epoch.
	return t.seal(now, e, wire.FSPFlagCP, t.env.Coords(), t.destCoords(e.addr), wire.SessionMsgCoordsWarmup, nil, nil)
}

// SendMessage seals a non-data session message (SenderReport,
// ReceiverReport, PathMtuNotification) for MMP. It does not touch the
// idle timer.
func (t *Table) SendMessage(now time.Time, dest identity.NodeAddr, typ wire.SessionMessageType, body []byte) error {
	e := t.sessions[dest]
	if e == nil || e.state != StateEstablished {
		return ErrNotEstablished
	}
	var flags wire.FSPFlags
	if e.k {
		flags = wire.FSPFlagK
	}
	return t.seal(now, e, flags, nil, nil, typ, body, nil)
}

// seal builds header ‖ [coords] ‖ AEAD(inner header ‖ body1 ‖ body2) in
// t.buf and sends it.
func (t *Table) seal(now time.Time, e *entry, flags wire.FSPFlags, src, dst []identity.NodeAddr, typ wire.SessionMessageType, body1, body2 []byte) error {
	innerLen := wire.FSPInnerHeaderSize + len(body1) + len(body2)
	if innerLen > math.MaxUint16 {
		return noise.ErrMessageTooLarge
	}
	hdr := wire.FSPEncrypted{Header: wire.FSPHeader{Flags: flags, PayloadLen: uint16(innerLen)}}
	if flags.CoordsPresent() {
		hdr.SrcCoords, hdr.DestCoords = coordsOf(src), coordsOf(dst)
	}
	hl := hdr.HeaderLen()
	total := hl + innerLen + wire.FSPTagSize
	if cap(t.buf) < total {
		t.buf = make([]byte, total+256)
	}
	b := t.buf[:total]
	ts := msSince(now, e.sessionStart)
	binary.LittleEndian.PutUint32(b[hl:], ts)
	b[hl+4] = byte(typ)
	b[hl+5] = 0 // inner flags: the spin bit belongs to MMP, not driven here
	n := copy(b[hl+wire.FSPInnerHeaderSize:], body1)
	copy(b[hl+wire.FSPInnerHeaderSize+n:], body2)
	counter, err := e.cur.NextSendCounter()
	if err != nil {
		return err
	}
	hdr.Header.Counter = counter
	if _, err := hdr.MarshalHeaderTo(b); err != nil {
		return err
	}
	if _, err := e.cur.Seal(b[hl:hl], counter, b[:wire.FSPHeaderSize], b[hl:hl+innerLen]); err != nil {
		return err
	}
	if err := t.send(now, e, e.addr, b); err != nil {
		return err
	}
	t.up.Sent(now, e.addr, counter, ts, innerLen+wire.FSPTagSize)
	return nil
}

// ---------------------------------------------------------------------------
// Receiving

// HandleFSP processes one FSP payload whose SessionDatagram came from src
// (its src_addr) and reached us through the link peer fromPeer. ce is the
// carrying FMP frame's CE flag. fsp is not retained.
func (t *Table) HandleFSP(now time.Time, src, fromPeer identity.NodeAddr, ce bool, fsp []byte) {
	kind, err := wire.ClassifyFSP(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	if src == t.self {
		t.stats.Malformed++
		return
	}
	switch kind {
	case wire.FSPKindSetup:
		t.handleSetup(now, src, fromPeer, fsp)
	case wire.FSPKindAck:
		t.handleAck(now, src, fsp)
	case wire.FSPKindMsg3:
		t.handleMsg3(now, src, fsp)
	case wire.FSPKindSignal:
		t.handleSignal(now, src, fromPeer, fsp)
	case wire.FSPKindEncrypted:
		t.handleEncrypted(now, src, ce, fsp)
	}
}

// SetNamer sets the display names of the log lines (upstream's
// peer_display_name); without one a node is named by its short hex.
func (t *Table) SetNamer(f func(identity.NodeAddr) string) { t.namer = f }

func (t *Table) name(a identity.NodeAddr) slog.LogValuer { return logging.Named(t.namer, a) }

func (t *Table) reject(r *uint64, what string, src identity.NodeAddr) {
	*r++
	t.log.Debug("FSP message rejected", "why", what, "src", src)
}

func (t *Table) handleSetup(now time.Time, src, fromPeer identity.NodeAddr, fsp []byte) {
	setup, err := wire.ParseSessionSetup(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	e := t.sessions[src]
	if !t.limiter.admit(now, fromPeer, e != nil && e.state == StateEstablished) {
		t.reject(&t.stats.SetupRateLimited, "setup rate limited", src)
		return
	}
	if e != nil {
		switch e.state {
		case StateInitiating:
			if t.self.Less(src) {
				// Crossing setups: the smaller NodeAddr stays initiator.
				t.reject(&t.stats.CrossingDropped, "crossing setup: we stay initiator", src)
				return
			}
			// We lose: answer as responder (the entry is replaced below).
		case StateAwaitingMsg3:
			// The same msg1 again: our ack was lost. Another msg1 is
			// another attempt, answered afresh: the source address is
			// anyone's to claim, so the first setup naming it must not
			// hold the genuine initiator off until it times out.
			if !bytes.Equal(e.setupMsg1, setup.Handshake) {
				t.stats.SetupSuperseded++
				t.log.Debug("SessionSetup with a new msg1 replaces the unanswered one", "src", t.name(src))
				break
			}
			if e.hsPayload != nil {
				if err := t.send(now, e, src, e.hsPayload); err != nil {
					t.log.Debug("ack resend failed", "src", src, "err", err)
				}
			}
			return
		case StateEstablished:
			t.handleRekeySetup(now, src, e, setup)
			return
		}
	}
	if e == nil && !t.makeRoom(now, false) {
		t.stats.SessionsRefused++
		t.log.Debug("session table full of proven sessions: SessionSetup refused", "src", t.name(src))
		return
	}
	hs, ack, err := t.respond(setup)
	if err != nil {
		t.stats.Malformed++
		return
	}
	if err := t.send(now, nil, src, ack); err != nil {
		t.log.Debug("ack send failed", "src", src, "err", err)
		return
	}
	ne := t.newEntry(src, t.id.PublicKey(), StateAwaitingMsg3, now, false)
	ne.hsR = hs
	ne.setupMsg1 = bytes.Clone(setup.Handshake)
	t.holdResponder(now, src, ne)
	ne.hsPayload, ne.resendCount, ne.nextResend = ack, 0, now.Add(t.cfg.HandshakeResendInterval)
	t.sessions[src] = ne
}

// respond runs the responder's msg1/msg2 and encodes the SessionAck.
func (t *Table) respond(setup wire.SessionSetup) (*noise.XKResponder, []byte, error) {
	hs, err := noise.NewXKResponder(t.id.Secret().Private(), t.epoch, noise.WithRand(t.rnd))
	if err != nil {
		return nil, nil, err
	}
	if err := hs.ReadMessage1(setup.Handshake); err != nil {
		return nil, nil, err
	}
	msg2, err := hs.WriteMessage2(nil)
	if err != nil {
		return nil, nil, err
	}
	ack := wire.SessionAck{SrcCoords: coordsOf(t.env.Coords()), DestCoords: bytes.Clone(setup.SrcCoords), Handshake: msg2}
	b := make([]byte, ack.Len())
	if _, err := ack.MarshalTo(b); err != nil {
		return nil, nil, err
	}
	return hs, b, nil
}

func (e *entry) pendingStale(now time.Time, idle time.Duration) bool {
	return e.pending != nil && !e.rekeyCompleted.IsZero() && now.Sub(e.rekeyCompleted) > idle
}

// handleRekeySetup answers a SessionSetup naming an established session:
// a rekey, or a restarted peer re-establishing.
func (t *Table) handleRekeySetup(now time.Time, src identity.NodeAddr, e *entry, setup wire.SessionSetup) {
	switch {
	case e.rekeyR != nil && !e.rekeyInitiator && !bytes.Equal(e.rekeyMsg1, setup.Handshake):
		// A responder we armed for another msg1 is no rekey of ours: it
		// may be a forger's (the setup's source is anyone's to claim), so
		// it must not win the tie-break against this one. Answered afresh.
		t.stats.SetupSuperseded++
		t.log.Debug("rekey SessionSetup with a new msg1 replaces the armed responder", "src", t.name(src))
		e.rekeyR = nil
	case e.rekeyInProgress():
		if t.self.Less(src) {
			t.reject(&t.stats.RekeyTiebreak, "dual rekey: we stay initiator", src)
			return
		}
		e.rekeyI, e.rekeyR = nil, nil // we yield
		t.stats.RekeyYielded++
	case e.pending != nil && !e.pendingStale(now, t.cfg.IdleTimeout):
		t.reject(&t.stats.RekeyPending, "rekey setup while a pending session awaits cutover", src)
		return
	}
	hs, ack, err := t.respond(setup)
	if err != nil {
		t.stats.Malformed++
		return
	}
	if err := t.send(now, e, src, ack); err != nil {
		return
	}
	e.rekeyR, e.rekeyI, e.rekeyInitiator = hs, nil, false
	e.rekeyMsg1 = bytes.Clone(setup.Handshake)
	e.lastPeerRekey = now
	t.stats.RekeyArmed++
}

func (t *Table) handleAck(now time.Time, src identity.NodeAddr, fsp []byte) {
	ack, err := wire.ParseSessionAck(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	e := t.sessions[src]
	if e == nil {
		t.reject(&t.stats.UnknownSession, "ack for unknown session", src)
		return
	}
	if e.state == StateEstablished && e.rekeyI != nil && e.rekeyInitiator {
		hs := e.rekeyI
		e.rekeyI = nil
		if _, err := hs.ReadMessage2(ack.Handshake); err != nil {
			t.abandonRekey(e)
			return
		}
		msg3, err := t.msg3(hs)
		if err != nil {
			t.abandonRekey(e)
			return
		}
		if err := t.send(now, e, src, msg3); err != nil {
			t.abandonRekey(e)
			return
		}
		s, err := hs.Session()
		if err != nil {
			t.abandonRekey(e)
			return
		}
		e.pending = s
		e.rekeyCompleted = now
		e.msg3Payload, e.msg3NextResend, e.msg3ResendCount = msg3, now.Add(t.cfg.HandshakeResendInterval), 0
		return
	}
	if e.state != StateInitiating {
		t.reject(&t.stats.BadState, "ack in wrong state", src)
		return
	}
	if _, err := e.hsI.ReadMessage2(ack.Handshake); err != nil {
		t.reject(&t.stats.AckHandshakeFailed, "ack handshake failed", src)
		return
	}
	msg3, err := t.msg3(e.hsI)
	if err != nil {
		return
	}
	if err := t.send(now, e, src, msg3); err != nil {
		return
	}
	s, err := e.hsI.Session()
	if err != nil {
		return
	}
	e.hsI, e.cur, e.state = nil, s, StateEstablished
	e.warmup = t.cfg.CoordsWarmupPackets
	e.sessionStart = now
	e.hsPayload, e.nextResend = nil, time.Time{}
	e.hot.touch(now)
	t.stats.Established++
	t.log.Info("Session established (initiator, XK)", "src", t.name(src))
	t.env.CacheCoords(now, src, ack.SrcCoords.Addrs())
	t.up.Event(now, Event{Kind: EventUp, Remote: src, Initiator: true})
	t.flush(now, src)
}

func (t *Table) msg3(hs *noise.XKInitiator) ([]byte, error) {
	m, err := hs.WriteMessage3(nil)
	if err != nil {
		return nil, err
	}
	w := wire.SessionMsg3{Handshake: m}
	b := make([]byte, w.Len())
	_, err = w.MarshalTo(b)
	return b, err
}

func (t *Table) handleMsg3(now time.Time, src identity.NodeAddr, fsp []byte) {
	m, err := wire.ParseSessionMsg3(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	e := t.sessions[src]
	if e == nil {
		t.reject(&t.stats.UnknownSession, "msg3 for unknown session", src)
		return
	}
	if e.state == StateEstablished && e.rekeyR != nil && !e.rekeyInitiator {
		hs := e.rekeyR
		static, _, err := hs.ReadMessage3(m.Handshake)
		if err != nil {
			// A failed read leaves the handshake as it was: a forged msg3
			// (no cryptography to make) must not end the genuine rekey.
			t.reject(&t.stats.Msg3Failed, "rekey msg3 failed", src)
			return
		}
		if identity.XOnly(static) != e.remote {
			e.rekeyR = nil
			t.stats.RekeyKeyMismatch++
			t.log.Warn("FSP rekey: initiator static key differs from the established peer key", "src", t.name(src))
			return
		}
		s, err := hs.Session()
		if err != nil {
			e.rekeyR = nil
			return
		}
		superseded := e.pending != nil
		e.pending, e.rekeyR = s, nil
		e.rekeyCompleted = now
		if superseded {
			t.stats.PendingReplaced++
			t.log.Warn("FSP rekey: newly completed session replaced one still awaiting cutover", "src", t.name(src))
		}
		return
	}
	if e.state != StateAwaitingMsg3 {
		t.reject(&t.stats.BadState, "msg3 in wrong state", src)
		return
	}
	// Upstream takes the entry out before reading msg3 and does not put it
	// back on failure: then one forged msg3 (no cryptography to make)
	// claiming the source ends a genuine handshake. A failed read leaves
	// the handshake unchanged, so here the entry stays for the real msg3.
	static, _, err := e.hsR.ReadMessage3(m.Handshake)
	if err != nil {
		t.reject(&t.stats.Msg3Failed, "msg3 failed", src)
		return
	}
	delete(t.sessions, src)
	pk := identity.XOnly(static)
	if pk.NodeAddr() != src {
		t.stats.AddrMismatch++
		t.log.Warn("SessionMsg3 source address does not match the authenticated static key", "src", t.name(src),
			"derived", pk.NodeAddr().String())
		return
	}
	t.env.LearnIdentity(src, pk)
	s, err := e.hsR.Session()
	if err != nil {
		return
	}
	ne := t.newEntry(src, pk, StateEstablished, now, false)
	ne.cur = s
	ne.warmup = t.cfg.CoordsWarmupPackets
	ne.sessionStart = now
	ne.pathMTU = e.pathMTU
	t.sessions[src] = ne
	t.stats.Established++
	t.log.Info("Session established (responder, XK)", "src", t.name(src))
	t.up.Event(now, Event{Kind: EventUp, Remote: src, Initiator: false})
	t.flush(now, src)
}

type slot uint8

const (
	slotCurrent slot = iota
	slotPending
	slotPrevious
)

func (t *Table) handleEncrypted(now time.Time, src identity.NodeAddr, ce bool, fsp []byte) {
	m, err := wire.ParseFSPEncrypted(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	if m.Header.Flags.CoordsPresent() && m.SrcCoords.Len() > 0 {
		t.env.CacheCoords(now, src, m.SrcCoords.Addrs())
	}
	e := t.sessions[src]
	if e == nil {
		t.reject(&t.stats.UnknownSession, "encrypted message for unknown session", src)
		return
	}
	if e.state != StateEstablished {
		t.reject(&t.stats.BadState, "encrypted message before establishment", src)
		return
	}
	order := [3]slot{slotCurrent, slotPending, slotPrevious}
	if m.Header.Flags.KeyEpoch() != e.k && e.pending != nil {
		order = [3]slot{slotPending, slotCurrent, slotPrevious}
	}
	var pt []byte
	hit := slot(255)
	for _, sl := range order {
		var s *noise.Session
		switch sl {
		case slotCurrent:
			s = e.cur
		case slotPending:
			s = e.pending
		case slotPrevious:
			s = e.prev
		}
		if s == nil {
			continue
		}
		if cap(t.openBuf) < len(m.Ciphertext) {
			t.openBuf = make([]byte, 0, max(len(m.Ciphertext), 2048))
		}
		if p, err := s.Open(t.openBuf[:0], m.Header.Counter, m.AAD(), m.Ciphertext); err == nil {
			pt, hit = p, sl
			break
		}
	}
	if hit == 255 {
		t.stats.DecryptFailed++
		t.log.Debug("Session AEAD decryption failed (all epochs)", "src", t.name(src), "counter", m.Header.Counter)
		return
	}
	t.afterOpen(now, src, e, hit, m.Header.Counter, pt, ce, false)
}

// afterOpen is everything after a successful decryption under slot hit:
// epoch bookkeeping, the MMP frame (unless a dataplane worker recorded
// it already), the message. pt is the inner plaintext.
func (t *Table) afterOpen(now time.Time, src identity.NodeAddr, e *entry, hit slot, counter uint64, pt []byte, ce, recorded bool) {
	switch hit {
	case slotPrevious:
		if !e.drainStarted.IsZero() {
			e.prevLastUsed = now
		}
	case slotPending:
		if e.msg3Payload != nil {
			e.clearMsg3()
		}
		t.log.Info("Peer FSP new-epoch frame authenticated, FSP rekey cutover complete, promoting new session",
			"peer", t.name(src))
		t.promote(now, e)
	case slotCurrent:
		if e.msg3Payload != nil && e.pending == nil {
			e.clearMsg3() // the responder is on the new epoch
		}
	}
	in, err := wire.ParseFSPInner(pt)
	if err != nil {
		t.stats.Malformed++
		return
	}
	t.up.Frame(now, src, Frame{Counter: counter, Timestamp: in.Timestamp, Type: in.MsgType,
		Spin: in.Flags.SpinBit(), Size: len(pt), CE: ce, Body: in.Body, Recorded: recorded})
	switch in.MsgType {
	case wire.SessionMsgDataPacket:
		d, err := wire.ParseDataPacket(in.Body)
		if err != nil {
			t.stats.Malformed++
			return
		}
		t.up.Deliver(now, src, d.SrcPort, d.DstPort, d.Payload, ce)
		if e := t.sessions[src]; e != nil {
			e.hot.received(now, len(in.Body))
		}
	case wire.SessionMsgPathMtuNotification:
		n, err := wire.ParsePathMtuNotification(in.Body)
		if err != nil {
			t.stats.Malformed++
			return
		}
		if n.PathMTU < MinActionablePathMTU {
			t.stats.PathMtuNotifBelowFloor++
		}
	case wire.SessionMsgSenderReport, wire.SessionMsgReceiverReport, wire.SessionMsgCoordsWarmup:
	default:
		t.stats.UnknownMessageType++
	}
	t.flush(now, src)
}

func (e *entry) clearMsg3() {
	e.msg3Payload, e.msg3NextResend, e.msg3ResendCount = nil, time.Time{}, 0
}

// promote makes pending current (upstream promote_pending): current
// drains as previous, K toggles, the timestamp base resets.
func (t *Table) promote(now time.Time, e *entry) {
	if e.pending == nil {
		return
	}
	e.prev = e.cur
	e.drainStarted, e.prevLastUsed = now, time.Time{}
	e.cur, e.pending = e.pending, nil
	e.k = !e.k
	e.sessionStart = now
	e.rekeyI, e.rekeyR, e.rekeyInitiator = nil, nil, false
	e.rekeyCompleted = time.Time{}
	e.jitter = t.drawJitter()
	t.stats.Cutovers++
	t.up.Event(now, Event{Kind: EventRekeyed, Remote: e.addr})
}

func (t *Table) abandonRekey(e *entry) {
	e.rekeyI, e.rekeyR, e.pending = nil, nil, nil
	e.rekeyInitiator = false
	e.rekeyCompleted = time.Time{}
	e.clearMsg3()
}

// ---------------------------------------------------------------------------
// Routing signals

type verdict uint8

const (
	admit verdict = iota
	forged
	unbound
)

func (t *Table) signalVerdict(src, dest identity.NodeAddr) verdict {
	if dest == t.self || src == dest {
		return forged
	}
	if e := t.sessions[dest]; e != nil && (e.state == StateEstablished || e.initiator) {
		return admit
	}
	return unbound
}

func (t *Table) coordsResponseAllowed(now time.Time, dest identity.NodeAddr) bool {
	return t.coordsTx.Take(now, dest) == ratelimit.Admitted
}

func (t *Table) handleSignal(now time.Time, src, fromPeer identity.NodeAddr, fsp []byte) {
	typ, err := wire.ParseRoutingSignalType(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	var dest identity.NodeAddr
	var mtu uint16
	var reporter identity.NodeAddr
	switch typ {
	case wire.SignalCoordsRequired:
		t.stats.CoordsRequired++
		m, err := wire.ParseCoordsRequired(fsp)
		if err != nil {
			t.stats.Malformed++
			return
		}
		dest, reporter = m.DestAddr, m.Reporter
	case wire.SignalPathBroken:
		t.stats.PathBroken++
		m, err := wire.ParsePathBroken(fsp)
		if err != nil {
			t.stats.Malformed++
			return
		}
		dest, reporter = m.DestAddr, m.Reporter
	case wire.SignalMtuExceeded:
		t.stats.MtuExceeded++
		m, err := wire.ParseMtuExceeded(fsp)
		if err != nil {
			t.stats.Malformed++
			return
		}
		dest, mtu, reporter = m.DestAddr, m.MTU, m.Reporter
	}
	switch v := t.signalVerdict(src, dest); v {
	case forged, unbound:
		if v == forged {
			t.stats.SignalsForged++
		}
		t.stats.SignalsUnbound++
		t.stats.UnknownSession++
		switch typ { // upstream's error_signals.unbound_*, forged ones included
		case wire.SignalCoordsRequired:
			t.stats.UnboundCoords++
		case wire.SignalPathBroken:
			t.stats.UnboundBroken++
		case wire.SignalMtuExceeded:
			t.stats.UnboundMTU++
		}
		return
	}
	e := t.sessions[dest]
	// A signal's source and reporter are anyone's to claim: only one
	// from a node our datagrams to dest pass through may act on the path.
	// A genuine report names its sender as reporter (upstream and we
	// send both as the relay's own address).
	onPath := reporter == src && t.onPath(now, dest, reporter, fromPeer)
	switch typ {
	case wire.SignalCoordsRequired, wire.SignalPathBroken:
		if t.coordsResponseAllowed(now, dest) && e.state == StateEstablished {
			if err := t.sendCoordsWarmup(now, e); err != nil {
				t.log.Debug("CoordsWarmup response failed", "dest", dest, "err", err)
			} else {
				t.stats.CoordsWarmupResponses++
			}
		}
		// Off the path, a PathBroken is unverifiable: the coordinates and
		// the clamp stay, and the lookup below replaces the coordinates
		// if the path really broke (a relay off the tree path, reached
		// through a peer's bloom filter, is not recognised as on it).
		broken := typ == wire.SignalPathBroken && onPath
		if typ == wire.SignalPathBroken && !onPath {
			t.stats.PathBrokenOffPath++
		}
		if broken {
			t.env.InvalidateCoords(dest)
		}
		if _, ok := t.env.Identity(dest); ok {
			t.env.StartLookup(now, dest)
		}
		if broken {
			t.releaseClamp(now, dest)
		}
		e.warmup = t.cfg.CoordsWarmupPackets
	case wire.SignalMtuExceeded:
		if !onPath {
			// Ignored, not clamped: a relay off the tree path that
			// really dropped a packet is heard anyway, through the
			// remote's authenticated PathMtuNotification (session MMP)
			// on the next datagram it receives.
			t.stats.MtuExceededOffPath++
			t.log.Debug("MtuExceeded from a node not on the path; ignoring", "dest", t.name(dest),
				"src", src.String(), "reporter", reporter.String(), "bottleneck_mtu", mtu)
			return
		}
		if n, ok := t.env.NotifiedPathMTU(dest); ok && mtu < n {
			// Every relay folds its outgoing link MTU into the
			// path_mtu of the datagrams it forwards, and dest reported
			// the result in an authenticated PathMtuNotification: a
			// hop narrower than that is contradicted. Were the path to
			// have narrowed since, dest's next notification (at once, or
			// within its interval) lowers the session's MTU itself.
			t.stats.MtuExceededContradicted++
			t.log.Debug("MtuExceeded below the path MTU the destination reported; ignoring", "dest", t.name(dest),
				"reporter", reporter.String(), "bottleneck_mtu", mtu, "notified_mtu", n)
			return
		}
		if mtu < MinActionablePathMTU {
			t.stats.MtuExceededBelowFloor++
			t.log.Warn("MtuExceeded reports a path MTU below the actionable floor; ignoring", "dest", t.name(dest),
				"reporter", reporter.String(), "bottleneck_mtu", mtu, "floor", MinActionablePathMTU)
			return
		}
		if old := e.pathMTU; old == 0 || mtu < old {
			e.pathMTU = mtu
			// old_mtu 0: no path MTU was known for the session yet.
			t.log.Info("Path MTU decreased via reactive MtuExceeded signal", "dest", t.name(dest),
				"old_mtu", old, "new_mtu", mtu, "reporter", reporter.String())
		}
		if old, ok := t.clamp[dest]; !ok || mtu < old.mtu {
			t.clamp[dest] = clampEntry{mtu, now}
			t.up.Event(now, Event{Kind: EventPathMTU, Remote: dest, MTU: mtu})
		} else if mtu == old.mtu {
			t.clamp[dest] = clampEntry{mtu, now} // confirmed: its lifetime restarts
		}
	}
}

// clampEntry is a path-MTU clamp and when it was last set or confirmed.
type clampEntry struct {
	mtu uint16
	at  time.Time
}

// onPath reports whether reporter is plausibly on the path of our
// datagrams to dest: our next hop towards dest, its signal arriving
// over that very link (a relay that is our link peer sends to us
// directly), or on the tree path between us and dest (our ancestors and
// dest's, from its cached coordinates), which greedy tree routing
// follows.
func (t *Table) onPath(now time.Time, dest, reporter, fromPeer identity.NodeAddr) bool {
	if hop, ok := t.env.NextHop(now, dest); ok && hop == reporter {
		return fromPeer == reporter
	}
	if slices.Contains(t.env.Coords(), reporter) {
		return true
	}
	c, ok := t.env.CachedCoords(dest)
	return ok && slices.Contains(c, reporter)
}

// expireClamps releases the clamps not set or confirmed for
// ClampLifetime, so that the path is tried at full size again.
func (t *Table) expireClamps(now time.Time) {
	for dest, c := range t.clamp {
		if now.Sub(c.at) < ClampLifetime {
			continue
		}
		t.stats.ClampsExpired++
		if e := t.sessions[dest]; e != nil && e.pathMTU == c.mtu {
			e.pathMTU = 0 // the next datagram seeds it from the first hop
		}
		t.releaseClamp(now, dest)
	}
}

func (t *Table) releaseClamp(now time.Time, dest identity.NodeAddr) {
	if _, ok := t.clamp[dest]; ok {
		delete(t.clamp, dest)
		t.up.Event(now, Event{Kind: EventPathMTU, Remote: dest})
	}
}

// ---------------------------------------------------------------------------
// Timers

func (t *Table) sortedAddrs() []identity.NodeAddr {
	out := make([]identity.NodeAddr, 0, len(t.sessions))
	for a := range t.sessions {
		out = append(out, a)
	}
	slices.SortFunc(out, identity.NodeAddr.Compare)
	return out
}

func (t *Table) drop(now time.Time, addr identity.NodeAddr, reason string) {
	delete(t.sessions, addr)
	delete(t.pending, addr)
	t.releaseClamp(now, addr)
	t.up.Event(now, Event{Kind: EventDown, Remote: addr, Reason: reason})
}

func (t *Table) backoff(count int) time.Duration {
	return time.Duration(float64(t.cfg.HandshakeResendInterval) * math.Pow(t.cfg.HandshakeResendBackoff, float64(count)))
}

// Tick runs the timers: handshake timeouts and resends, the idle purge,
// rekey msg3 resends, and the rekey trigger / cutover / drain.
func (t *Table) Tick(now time.Time) {
	// An answer limit past its interval decides nothing: forgotten, so
	// the table holds at most the destinations answered in the last
	// CoordsResponseInterval.
	t.coordsTx.Sweep(now)
	t.expireClamps(now)
	// Only the sessions with a timer that may be due are visited, in
	// address order; the rest (established, quiet, not rekeying) cost one
	// check each.
	due := t.tickBuf[:0]
	for a, e := range t.sessions {
		if t.tickDue(now, e) {
			due = append(due, a)
		}
	}
	slices.SortFunc(due, identity.NodeAddr.Compare)
	t.tickBuf = due
	for _, a := range due {
		e := t.sessions[a]
		if e != nil && e.state != StateEstablished && now.Sub(e.hot.last()) > t.cfg.HandshakeTimeout {
			t.stats.HandshakeTimeouts++
			t.log.Info("Session handshake timed out, removing", "dest", t.name(a))
			t.drop(now, a, "handshake_timeout")
		}
	}
	for _, a := range due {
		if e := t.sessions[a]; e != nil {
			t.supersedeResponder(now, a, e)
		}
	}
	for _, a := range due {
		e := t.sessions[a]
		// Only an initiator resends on its timer. A responder's ack goes
		// again when the initiator's setup does (the duplicate path): a
		// timer of its own would only multiply what a setup from a
		// spoofed source reflects at that source (upstream resends both).
		if e != nil && e.state == StateInitiating && e.hsPayload != nil && e.resendCount < t.cfg.HandshakeMaxResends &&
			!e.nextResend.IsZero() && !now.Before(e.nextResend) {
			if err := t.send(now, e, a, e.hsPayload); err == nil {
				e.resendCount++
				e.nextResend = now.Add(t.backoff(e.resendCount))
				t.stats.HandshakeResends++
			}
		}
	}
	if t.cfg.IdleTimeout > 0 {
		for _, a := range due {
			e := t.sessions[a]
			if e != nil && e.state == StateEstablished && now.Sub(e.hot.last()) > t.cfg.IdleTimeout {
				t.stats.IdlePurged++
				t.drop(now, a, "idle")
			}
		}
	}
	if t.cfg.RekeyEnabled {
		for _, a := range due {
			e := t.sessions[a]
			if e == nil || e.msg3Payload == nil || e.msg3NextResend.IsZero() || now.Before(e.msg3NextResend) {
				continue
			}
			if e.msg3ResendCount >= t.cfg.HandshakeMaxResends {
				t.abandonRekey(e)
				continue
			}
			if err := t.send(now, e, a, e.msg3Payload); err == nil {
				e.msg3ResendCount++
				e.msg3NextResend = now.Add(t.backoff(e.msg3ResendCount))
			}
		}
	}
	for _, a := range due {
		if e := t.sessions[a]; e != nil && e.state == StateEstablished {
			t.rekeyTick(now, e)
		}
	}
}

// tickDue reports whether any of Tick's timers may act on e: a superset
// of the conditions Tick and rekeyTick check, so that a session it
// passes over has nothing due.
func (t *Table) tickDue(now time.Time, e *entry) bool {
	if e.state != StateEstablished {
		return true
	}
	if t.cfg.IdleTimeout > 0 && now.Sub(e.hot.last()) > t.cfg.IdleTimeout {
		return true
	}
	if e.msg3Payload != nil || e.pending != nil || !e.drainStarted.IsZero() || e.rekeyInProgress() {
		return true
	}
	return t.cfg.RekeyEnabled && (now.Sub(e.sessionStart) >= t.cfg.RekeyAfter+e.jitter ||
		e.cur.Send().Nonce() >= t.cfg.RekeyMessages)
}

func (t *Table) rekeyTick(now time.Time, e *entry) {
	if e.pending != nil && !e.rekeyInProgress() && e.rekeyInitiator && now.Sub(e.rekeyCompleted) >= t.cfg.CutoverDelay {
		t.log.Debug("FSP rekey cutover complete (initiator), K-bit flipped", "peer", t.name(e.addr))
		t.promote(now, e)
		return
	}
	if !e.drainStarted.IsZero() {
		anchor := e.drainStarted
		if e.prevLastUsed.After(anchor) {
			anchor = e.prevLastUsed
		}
		if now.Sub(anchor) >= t.cfg.DrainWindow {
			e.prev, e.drainStarted, e.prevLastUsed = nil, time.Time{}, time.Time{}
		}
	}
	if !e.rekeyInitiator && e.rekeyR != nil && !e.lastPeerRekey.IsZero() && now.Sub(e.lastPeerRekey) > t.cfg.HandshakeTimeout {
		e.rekeyR = nil
		t.stats.RekeyExpired++
		t.log.Info("FSP rekey armed by peer expired without msg3, session retained", "peer", t.name(e.addr),
			"age_ms", now.Sub(e.lastPeerRekey).Milliseconds())
		return
	}
	// Deviation: upstream never expires a rekey handshake this side
	// started, so a lost rekey SessionSetup or SessionAck would stop rekeying
	// for the session's lifetime. Abandon it after the handshake timeout so
	// a later tick retries.
	if e.rekeyInitiator && e.rekeyI != nil && now.Sub(e.rekeyStarted) > t.cfg.HandshakeTimeout {
		e.rekeyI, e.rekeyInitiator = nil, false
		t.stats.RekeyExpired++
		return
	}
	if !t.cfg.RekeyEnabled {
		return
	}
	if e.rekeyInProgress() || e.pending != nil || e.msg3Payload != nil ||
		(!e.lastPeerRekey.IsZero() && now.Sub(e.lastPeerRekey) < t.cfg.Dampening) {
		return
	}
	after := t.cfg.RekeyAfter + e.jitter
	if now.Sub(e.sessionStart) >= after || e.cur.Send().Nonce() >= t.cfg.RekeyMessages {
		t.initiateRekey(now, e)
	}
}

func (t *Table) initiateRekey(now time.Time, e *entry) {
	rs, err := e.remote.Point()
	if err != nil {
		return
	}
	hs, err := noise.NewXKInitiator(t.id.Secret().Private(), rs, t.epoch, noise.WithRand(t.rnd))
	if err != nil {
		return
	}
	msg1, err := hs.WriteMessage1(nil)
	if err != nil {
		return
	}
	setup := wire.SessionSetup{SrcCoords: coordsOf(t.env.Coords()), DestCoords: coordsOf(t.destCoords(e.addr)), Handshake: msg1}
	b := make([]byte, setup.Len())
	if _, err := setup.MarshalTo(b); err != nil {
		return
	}
	if err := t.send(now, e, e.addr, b); err != nil {
		return
	}
	e.rekeyI, e.rekeyInitiator, e.rekeyStarted = hs, true, now
	t.stats.RekeysInitiated++
}

// ---------------------------------------------------------------------------
// Control

// Remove drops dest's session and pending queue.
func (t *Table) Remove(now time.Time, dest identity.NodeAddr) {
	if _, ok := t.sessions[dest]; ok {
		t.drop(now, dest, "removed")
	}
}

// ResetWarmup re-arms the coordinate warmup of an established session
// (upstream does this on a LookupResponse for it).
func (t *Table) ResetWarmup(dest identity.NodeAddr) {
	if e := t.sessions[dest]; e != nil && e.state == StateEstablished {
		e.warmup = t.cfg.CoordsWarmupPackets
	}
}

// PathMTU returns the per-destination clamp learned from MtuExceeded.
func (t *Table) PathMTU(dest identity.NodeAddr) (uint16, bool) {
	m, ok := t.clamp[dest]
	return m.mtu, ok
}

// Info is one session's state, as show_sessions reports it.
type Info struct {
	RemoteAddr            identity.NodeAddr
	Remote                identity.PublicKey // responder awaiting msg3: our own key (upstream placeholder)
	State                 State
	Initiator             bool
	LastActivity          time.Time
	PacketsSent           uint64
	PacketsRecv           uint64
	BytesSent             uint64
	BytesRecv             uint64
	ResendCount           int
	SessionStart          time.Time
	KBit                  bool
	CoordsWarmupRemaining uint8
	Draining              bool
	RekeyInProgress       bool
	HasPending            bool
	PathMTU               uint16
	PendingPackets        int
}

func (t *Table) info(e *entry) Info {
	return Info{
		RemoteAddr: e.addr, Remote: e.remote, State: e.state, Initiator: e.initiator,
		LastActivity: e.hot.last(), PacketsSent: e.hot.pktsSent.Load(), PacketsRecv: e.hot.pktsRecv.Load(),
		BytesSent: e.hot.bytesSent.Load(), BytesRecv: e.hot.bytesRecv.Load(), ResendCount: e.resendCount,
		SessionStart: e.sessionStart, KBit: e.k, CoordsWarmupRemaining: e.warmup,
		Draining: !e.drainStarted.IsZero(), RekeyInProgress: e.rekeyInProgress(),
		HasPending: e.pending != nil, PathMTU: e.pathMTU, PendingPackets: len(t.pending[e.addr]),
	}
}

// RemoteKey is the key of dest's session remote, known once the session
// has authenticated it (not for a responder before msg3).
func (t *Table) RemoteKey(dest identity.NodeAddr) (identity.PublicKey, bool) {
	e := t.sessions[dest]
	if e == nil || e.remote.NodeAddr() != dest {
		return identity.PublicKey{}, false
	}
	return e.remote, true
}

// Session returns dest's session state.
func (t *Table) Session(dest identity.NodeAddr) (Info, bool) {
	e := t.sessions[dest]
	if e == nil {
		return Info{}, false
	}
	return t.info(e), true
}

// DropPending removes dest's queued packets unless a session to dest is
// established, calling fn for each in order (the node answers IPv6
// packets with Destination Unreachable when the lookup for dest failed). It returns how many it dropped.
func (t *Table) DropPending(dest identity.NodeAddr, fn func(srcPort, dstPort uint16, payload []byte)) int {
	if t.Established(dest) {
		return 0
	}
	q := t.pending[dest]
	delete(t.pending, dest)
	for _, p := range q {
		t.stats.PendingDropped++
		if fn != nil {
			fn(p.srcPort, p.dstPort, p.payload)
		}
	}
	return len(q)
}

// Established reports whether a session to dest is established.
func (t *Table) Established(dest identity.NodeAddr) bool {
	e := t.sessions[dest]
	return e != nil && e.state == StateEstablished
}

// Len is the number of sessions.
func (t *Table) Len() int { return len(t.sessions) }

// PendingDestinations is the number of destinations with queued packets.
func (t *Table) PendingDestinations() int { return len(t.pending) }

// SnapshotStats is one show_sessions entry's "stats" object.
type SnapshotStats struct {
	PacketsSent uint64 `json:"packets_sent"`
	PacketsRecv uint64 `json:"packets_recv"`
	BytesSent   uint64 `json:"bytes_sent"`
	BytesRecv   uint64 `json:"bytes_recv"`
}

// SnapshotEntry is one element of show_sessions' "sessions" array, field
// for field as upstream's show_sessions except display_name (the node's
// naming) and the "mmp" object (MMP's); the node adds both.
type SnapshotEntry struct {
	RemoteAddr            string        `json:"remote_addr"`
	State                 string        `json:"state"`
	IsInitiator           bool          `json:"is_initiator"`
	LastActivityMs        int64         `json:"last_activity_ms"`
	Npub                  string        `json:"npub"`
	Stats                 SnapshotStats `json:"stats"`
	ResendCount           *int          `json:"resend_count,omitempty"`
	SessionStartMs        *int64        `json:"session_start_ms,omitempty"`
	CurrentKBit           *bool         `json:"current_k_bit,omitempty"`
	CoordsWarmupRemaining *uint8        `json:"coords_warmup_remaining,omitempty"`
	IsDraining            *bool         `json:"is_draining,omitempty"`
}

// Snapshot lists the sessions in NodeAddr order for show_sessions.
// Timestamps are Unix milliseconds, as upstream's now_ms().
func (t *Table) Snapshot() []SnapshotEntry {
	out := make([]SnapshotEntry, 0, len(t.sessions))
	for _, a := range t.sortedAddrs() {
		in := t.info(t.sessions[a])
		s := SnapshotEntry{
			RemoteAddr: fmt.Sprintf("%x", a[:]), State: in.State.String(), IsInitiator: in.Initiator,
			LastActivityMs: in.LastActivity.UnixMilli(), Npub: in.Remote.Npub(),
			Stats: SnapshotStats{in.PacketsSent, in.PacketsRecv, in.BytesSent, in.BytesRecv},
		}
		if in.State != StateEstablished {
			rc := in.ResendCount
			s.ResendCount = &rc
		} else {
			ms, k, w, d := in.SessionStart.UnixMilli(), in.KBit, in.CoordsWarmupRemaining, in.Draining
			s.SessionStartMs, s.CurrentKBit, s.CoordsWarmupRemaining, s.IsDraining = &ms, &k, &w, &d
		}
		out = append(out, s)
	}
	return out
}

// Stats are the table's counters.
type Stats struct {
	Initiated, Established                uint64
	HandshakeResends, HandshakeTimeouts   uint64
	IdlePurged                            uint64
	Malformed                             uint64
	UnknownSession, BadState              uint64
	SetupRateLimited, CrossingDropped     uint64
	AckHandshakeFailed, Msg3Failed        uint64
	AddrMismatch                          uint64
	DecryptFailed, UnknownMessageType     uint64
	RekeysInitiated, RekeyArmed, Cutovers uint64
	RekeyTiebreak, RekeyYielded           uint64
	RekeyPending, RekeyKeyMismatch        uint64
	RekeyExpired, PendingReplaced         uint64
	PendingDropped, PendingDestRefused    uint64
	CoordsRequired, PathBroken            uint64
	MtuExceeded, MtuExceededBelowFloor    uint64
	// MtuExceededOffPath and PathBrokenOffPath (ours): signals for a
	// bound session whose reporter is not its sender or not on the path
	// (next hop, our or the destination's tree ancestors). An off-path
	// MtuExceeded is ignored; an off-path PathBroken starts a lookup but
	// neither invalidates coordinates nor releases the clamp.
	MtuExceededOffPath, PathBrokenOffPath uint64
	// MtuExceededContradicted (ours): on-path MtuExceeded ignored for
	// reporting less than the path MTU the destination last reported
	// in an authenticated PathMtuNotification.
	MtuExceededContradicted uint64
	// ClampsExpired (ours): MtuExceeded clamps released after
	// ClampLifetime without confirmation.
	ClampsExpired                 uint64
	SignalsForged, SignalsUnbound uint64
	// UnboundCoords, UnboundBroken and UnboundMTU split SignalsUnbound by
	// signal type (CoordsRequired, PathBroken, MtuExceeded).
	UnboundCoords, UnboundBroken, UnboundMTU uint64
	CoordsWarmupResponses                    uint64
	PathMtuNotifBelowFloor                   uint64
	// OpenedForGone: messages a dataplane worker decrypted for a session
	// the loop no longer had established when it saw them.
	OpenedForGone uint64
	// SetupSuperseded (ours): answered handshakes replaced by a
	// SessionSetup with another msg1 from the same claimed source, before
	// their msg3. ResponderSuperseded (ours): answered handshakes
	// replaced by our own SessionSetup because traffic waited past a
	// resend interval with no msg3. A spoofed setup cannot hold a source's
	// sessions off either way.
	SetupSuperseded, ResponderSuperseded uint64
	// RespondersEvicted (ours): answered handshakes dropped, oldest
	// first, to hold at most MaxPendingResponders.
	RespondersEvicted uint64
	// SessionsEvicted (ours): sessions dropped, least proven first, to
	// hold at most MaxSessions. SessionsRefused (ours): SessionSetups
	// refused because the table held only proven sessions.
	SessionsEvicted, SessionsRefused uint64
}

// Stats returns a copy of the counters.
func (t *Table) Stats() Stats { return t.stats }

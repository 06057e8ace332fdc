package session

import (
	"bytes"
	"errors"
	"log/slog"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// The receiving half of the Table: setups, acks, msg3 and encrypted messages in.

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
			for _, ack := range [][]byte{e.hsPayload, e.hsPayloadAlt} {
				if ack == nil {
					continue
				}
				if err := t.send(now, e, src, ack); err != nil {
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
	hs, ack, alt, err := t.respond(setup, t.patternFor(src), false)
	if err != nil {
		t.stats.Malformed++
		return
	}
	if err := t.send(now, nil, src, ack); err != nil {
		t.log.Debug("ack send failed", "src", src, "err", err)
		return
	}
	if alt != nil {
		// A dual responder's second ack (XX's): the initiator's line
		// reads the one of its size and drops the other.
		if err := t.send(now, nil, src, alt); err != nil {
			t.log.Debug("ack send failed", "src", src, "err", err)
		}
		t.stats.DualAcks++
	}
	ne := t.newEntry(src, t.id.PublicKey(), StateAwaitingMsg3, now, false)
	ne.hsR, ne.pattern = hs, hs.pattern()
	ne.setupMsg1 = bytes.Clone(setup.Handshake)
	t.holdResponder(now, src, ne)
	ne.hsPayload, ne.hsPayloadAlt, ne.resendCount, ne.nextResend = ack, alt, 0, now.Add(t.cfg.HandshakeResendInterval)
	t.sessions[src] = ne
}

// respond runs the responder's msg1/msg2 in pattern p and encodes the
// SessionAck; a dual responder (PatternAuto) also the XX one as alt.
func (t *Table) respond(setup wire.SessionSetup, p Pattern, rekey bool) (hs *responderHS, ack, alt []byte, err error) {
	if hs, err = t.newResponder(p, rekey); err != nil {
		return nil, nil, nil, err
	}
	msg2, msg2Alt, err := hs.answer(setup.Handshake)
	if err != nil {
		return nil, nil, nil, err
	}
	encode := func(m []byte) ([]byte, error) {
		a := wire.SessionAck{SrcCoords: coordsOf(t.env.Coords()), DestCoords: bytes.Clone(setup.SrcCoords), Handshake: m}
		b := make([]byte, a.Len())
		_, err := a.MarshalTo(b)
		return b, err
	}
	if ack, err = encode(msg2); err != nil {
		return nil, nil, nil, err
	}
	if msg2Alt != nil {
		if alt, err = encode(msg2Alt); err != nil {
			return nil, nil, nil, err
		}
	}
	return hs, ack, alt, nil
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
	hs, ack, _, err := t.respond(setup, e.pattern, true)
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
	e := t.sessions[src]
	// The ack is read in the pattern of the handshake it answers (XK's is
	// exactly 57 bytes, XX's 106 or more); with none, in XK's.
	parse := wire.ParseSessionAck
	switch {
	case e != nil && e.state == StateEstablished && e.rekeyI != nil && e.rekeyInitiator:
		parse = e.rekeyI.parseAck
	case e != nil && e.hsI != nil:
		parse = e.hsI.parseAck
	}
	ack, err := parse(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	if e == nil {
		t.reject(&t.stats.UnknownSession, "ack for unknown session", src)
		return
	}
	if e.state == StateEstablished && e.rekeyI != nil && e.rekeyInitiator {
		hs := e.rekeyI
		if err := hs.readAck(ack.Handshake); err != nil {
			if errors.Is(err, noise.ErrIdentityMismatch) {
				// Another key answered (anyone may claim the source): the
				// rekey waits for the real ack, as an XX initiation does.
				t.reject(&t.stats.AckIdentityMismatch, "rekey ack from another key", src)
				return
			}
			e.rekeyI = nil
			t.abandonRekey(e)
			return
		}
		e.rekeyI = nil
		msg3, err := hs.msg3()
		if err != nil {
			t.abandonRekey(e)
			return
		}
		if err := t.send(now, e, src, msg3); err != nil {
			t.abandonRekey(e)
			return
		}
		s, err := hs.session()
		if err != nil {
			t.abandonRekey(e)
			return
		}
		e.pending, e.pq.pend = s, false
		e.rekeyCompleted = now
		e.msg3Payload, e.msg3NextResend, e.msg3ResendCount = msg3, now.Add(t.cfg.HandshakeResendInterval), 0
		return
	}
	if e.state != StateInitiating {
		t.reject(&t.stats.BadState, "ack in wrong state", src)
		return
	}
	if err := e.hsI.readAck(ack.Handshake); err != nil {
		// XX: a msg2 under another key than the one dialled is counted
		// apart (a stale npub mapping, or someone answering under its
		// own identity) and, like any failed read, keeps the initiation.
		if errors.Is(err, noise.ErrIdentityMismatch) {
			t.reject(&t.stats.AckIdentityMismatch, "ack from another key than the one dialled", src)
			return
		}
		t.reject(&t.stats.AckHandshakeFailed, "ack handshake failed", src)
		return
	}
	msg3, err := e.hsI.msg3()
	if err != nil {
		return
	}
	if err := t.send(now, e, src, msg3); err != nil {
		return
	}
	s, err := e.hsI.session()
	if err != nil {
		return
	}
	e.pattern = e.hsI.pattern() // a dual initiator's is decided by the ack
	e.hsI, e.cur, e.state = nil, s, StateEstablished
	e.warmup = t.cfg.CoordsWarmupPackets
	e.sessionStart = now
	e.hsPayload, e.nextResend = nil, time.Time{}
	e.hot.touch(now)
	t.stats.Established++
	t.log.Info("Session established (initiator, "+e.pattern.String()+")", "src", t.name(src))
	t.env.CacheCoords(now, src, ack.SrcCoords.Addrs())
	t.up.Event(now, Event{Kind: EventUp, Remote: src, Initiator: true})
	t.pqEpochStart(now, e)
	t.flush(now, src)
}

func (t *Table) handleMsg3(now time.Time, src identity.NodeAddr, fsp []byte) {
	e := t.sessions[src]
	parse := wire.ParseSessionMsg3
	switch {
	case e != nil && e.state == StateEstablished && e.rekeyR != nil && !e.rekeyInitiator:
		parse = e.rekeyR.parseMsg3
	case e != nil && e.hsR != nil:
		parse = e.hsR.parseMsg3
	}
	m, err := parse(fsp)
	if err != nil {
		t.stats.Malformed++
		return
	}
	if e == nil {
		t.reject(&t.stats.UnknownSession, "msg3 for unknown session", src)
		return
	}
	if e.state == StateEstablished && e.rekeyR != nil && !e.rekeyInitiator {
		hs := e.rekeyR
		static, err := hs.readMsg3(m.Handshake)
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
		s, err := hs.session()
		if err != nil {
			e.rekeyR = nil
			return
		}
		superseded := e.pending != nil
		e.pending, e.rekeyR, e.pq.pend = s, nil, false
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
	static, err := e.hsR.readMsg3(m.Handshake)
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
	s, err := e.hsR.session()
	if err != nil {
		return
	}
	ne := t.newEntry(src, pk, StateEstablished, now, false)
	ne.cur, ne.pattern = s, e.hsR.pattern() // a dual responder's is decided by the msg3
	ne.warmup = t.cfg.CoordsWarmupPackets
	ne.sessionStart = now
	ne.pathMTU = e.pathMTU
	t.sessions[src] = ne
	t.stats.Established++
	t.log.Info("Session established (responder, "+ne.pattern.String()+")", "src", t.name(src))
	t.up.Event(now, Event{Kind: EventUp, Remote: src, Initiator: false})
	t.pqEpochStart(now, ne)
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
		if t.pqRefuseData(e, hit) {
			// pq required: nothing classical is delivered (counted;
			// the session goes when its upgrade deadline passes).
			t.stats.PQClassicDropped++
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
	case wire.SessionMsgPQ:
		t.handlePQ(now, e, hit, in.Body)
	default:
		t.stats.UnknownMessageType++
	}
	t.flush(now, src)
}

func (e *entry) clearMsg3() {
	e.msg3Payload, e.msg3NextResend, e.msg3ResendCount = nil, time.Time{}, 0
	e.pq.confirming = false
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
	t.pqPromoted(now, e)
}

func (t *Table) abandonRekey(e *entry) {
	e.rekeyI, e.rekeyR, e.pending = nil, nil, nil
	e.pq.pend = false
	e.rekeyInitiator = false
	e.rekeyCompleted = time.Time{}
	e.clearMsg3()
}

package session

import (
	"math"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Timers: the Table's tick (handshake resends, idle purge, rekeys).

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
			var err error
			if e.pq.confirming {
				_, err = t.pqConfirm(now, e)
			} else {
				err = t.send(now, e, a, e.msg3Payload)
			}
			if err == nil {
				e.msg3ResendCount++
				e.msg3NextResend = now.Add(t.backoff(e.msg3ResendCount))
			}
		}
	}
	for _, a := range due {
		if e := t.sessions[a]; e != nil && e.state == StateEstablished {
			t.pqTick(now, e)
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
	if e.msg3Payload != nil || e.pending != nil || !e.drainStarted.IsZero() || e.rekeyInProgress() || !e.pq.deadline.IsZero() {
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
	if e.rekeyInProgress() || e.pending != nil || e.msg3Payload != nil || e.pq.offering ||
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
	hs, err := t.newInitiator(e.pattern, rs, true)
	if err != nil {
		return
	}
	msg1, err := hs.msg1()
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

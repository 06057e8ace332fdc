package session

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// The sending half of the Table: data, setup and encrypted messages out.

// Send sends a DataPacket to dest. With no session it starts the XK
// handshake and queues the payload (bounded; the oldest is dropped); with a
// handshake in flight it queues. ErrUnknownDestination: neither a session
// nor a cached identity.
func (t *Table) Send(now time.Time, dest identity.NodeAddr, srcPort, dstPort uint16, payload []byte) error {
	if e := t.sessions[dest]; e != nil {
		if e.state == StateEstablished && !t.pqHold(e) {
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
	e := t.sessions[dest]
	if e != nil && e.state == StateEstablished && t.pqHold(e) {
		return // held for the post-quantum upgrade
	}
	delete(t.pending, dest)
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
	hs, err := t.newInitiator(t.patternFor(dest), rs, false)
	if err != nil {
		return err
	}
	msg1, err := hs.msg1()
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
	e.hsI, e.pattern = hs, hs.pattern()
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

package session

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// The session layer's half of the dataplane seam: the published table of
// sessions a dataplane worker may open and seal data packets for without
// the loop, and the per-packet steps it uses. A session is published only
// while nothing about it needs the loop: established, no rekey pending,
// no msg3 being resent, nothing queued. Everything else about it — epochs,
// coordinates, reports — stays on the loop, which the worker hands frames
// to (Table.HandleOpened).

// sessHot are a session's per-packet counters and idle clock.
type sessHot struct {
	lastActivity                             atomic.Int64 // Unix ns
	pktsSent, pktsRecv, bytesSent, bytesRecv atomic.Uint64
}

func (h *sessHot) touch(now time.Time) { h.lastActivity.Store(now.UnixNano()) }

func (h *sessHot) last() time.Time { return time.Unix(0, h.lastActivity.Load()) }

func (h *sessHot) received(now time.Time, n int) {
	h.pktsRecv.Add(1)
	h.bytesRecv.Add(uint64(n))
	h.touch(now)
}

func (h *sessHot) sent(now time.Time, n int) {
	h.pktsSent.Add(1)
	h.bytesSent.Add(uint64(n))
	h.touch(now)
}

// FastSession is one published session: immutable once published.
type FastSession struct {
	addr    identity.NodeAddr
	cur     *noise.Session
	pending *noise.Session // a rekey's new epoch, not yet promoted
	k       bool
	start   time.Time // timestamp base of cur
	// send: no coordinate warmup is due, so a worker may seal data
	// packets (a packet that must carry coordinates is the loop's).
	send bool
	hot  *sessHot
	key  fastKey
}

// fastKey is what a publication depends on; a change republishes.
type fastKey struct {
	cur     *noise.Session
	pending *noise.Session
	k       bool
	start   time.Time
	send    bool
}

// Addr is the remote node.
func (s *FastSession) Addr() identity.NodeAddr { return s.addr }

// CanSend reports whether a worker may send data packets on it.
func (s *FastSession) CanSend() bool { return s.send }

// Sessions is the published session table.
type Sessions struct {
	byAddr map[identity.NodeAddr]*FastSession
	byIPv6 map[netip.Addr]*FastSession
}

// Lookup is the published session with addr, nil without one.
func (s *Sessions) Lookup(addr identity.NodeAddr) *FastSession {
	if s == nil {
		return nil
	}
	return s.byAddr[addr]
}

// LookupIPv6 is the published session whose remote has this fd00::/8
// address, nil without one.
func (s *Sessions) LookupIPv6(a netip.Addr) *FastSession {
	if s == nil {
		return nil
	}
	return s.byIPv6[a]
}

// Len is the number of sessions published.
func (s *Sessions) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byAddr)
}

// Range calls f for every published session.
func (s *Sessions) Range(f func(*FastSession)) {
	if s == nil {
		return
	}
	for _, fs := range s.byAddr {
		f(fs)
	}
}

// Published is the session table workers read.
func (t *Table) Published() *Sessions { return t.published.Load() }

// Publish replaces the published table when any session's publishable
// state changed since the last call; it reports whether it did. The loop
// calls it at the end of each burst of work.
func (t *Table) Publish() bool {
	old := t.published.Load()
	n := 0
	same := old != nil
	for a, e := range t.sessions {
		k, ok := t.fastKeyOf(e)
		if !ok {
			continue
		}
		n++
		if same {
			if fs := old.byAddr[a]; fs == nil || fs.key != k {
				same = false
			}
		}
	}
	if same && n == old.Len() {
		return false
	}
	s := &Sessions{byAddr: make(map[identity.NodeAddr]*FastSession, n), byIPv6: make(map[netip.Addr]*FastSession, n)}
	for a, e := range t.sessions {
		k, ok := t.fastKeyOf(e)
		if !ok {
			continue
		}
		fs := &FastSession{addr: a, cur: k.cur, pending: k.pending, k: k.k, start: k.start, send: k.send, hot: &e.hot, key: k}
		s.byAddr[a] = fs
		s.byIPv6[a.IPv6()] = fs
	}
	t.published.Store(s)
	return true
}

func (t *Table) fastKeyOf(e *entry) (fastKey, bool) {
	// A msg3 still resent with no rekey pending is cleared by the next
	// message on the current epoch: the loop's. Queued packets must leave
	// before new ones.
	if e.state != StateEstablished || e.cur == nil || (e.msg3Payload != nil && e.pending == nil) || len(t.pending[e.addr]) > 0 || t.pqHold(e) {
		return fastKey{}, false
	}
	return fastKey{cur: e.cur, pending: e.pending, k: e.k, start: e.sessionStart, send: e.warmup == 0}, true
}

// Opened is a data packet a worker decrypted.
type Opened struct {
	// Pending: the message authenticated under the rekey's pending
	// epoch, which the loop must now promote (Worker upcall with
	// Epoch()).
	Pending bool
	Counter uint64
	Inner   wire.FSPInner
	Size    int // inner plaintext length (MMP's frame size)
}

// Open decrypts an encrypted FSP message on the session's current epoch,
// or on a rekey's pending one when the K bit says so, into dst (not in
// place: on any failure fsp is left as it came, for the loop to try
// every epoch). It refuses — false, nothing done — messages carrying
// coordinates (the loop caches them), of the previous epoch, or that do
// not authenticate.
func (s *FastSession) Open(fsp, dst []byte) (Opened, bool) {
	if len(fsp) < wire.FSPEncryptedMinSize || fsp[0] != wire.FSPVersion<<4|wire.FSPPhaseEstablished {
		return Opened{}, false
	}
	flags := wire.FSPFlagsFromByte(fsp[1])
	if flags.CoordsPresent() || flags.Unencrypted() {
		return Opened{}, false
	}
	sess, pending := s.cur, false
	if flags.KeyEpoch() != s.k {
		if s.pending == nil {
			return Opened{}, false // the previous epoch, draining: the loop's
		}
		sess, pending = s.pending, true
	}
	ct := fsp[wire.FSPHeaderSize:]
	if int(binary.LittleEndian.Uint16(fsp[2:])) != len(ct)-wire.FSPTagSize {
		return Opened{}, false
	}
	counter := binary.LittleEndian.Uint64(fsp[4:])
	pt, err := sess.Open(dst[:0], counter, fsp[:wire.FSPHeaderSize], ct)
	if err != nil {
		return Opened{}, false
	}
	in, err := wire.ParseFSPInner(pt)
	if err != nil {
		// Authenticated but malformed: the counter is spent; the loop
		// counts it (HandleOpened with the same plaintext).
		return Opened{Pending: pending, Counter: counter, Size: len(pt), Inner: wire.FSPInner{MsgType: 0xff, Body: pt}}, true
	}
	return Opened{Pending: pending, Counter: counter, Inner: in, Size: len(pt)}, true
}

// Epoch names a session's pending epoch to the loop (opaque to workers).
type Epoch struct{ s *noise.Session }

// Epoch is the pending epoch, for PromoteFast.
func (s *FastSession) Epoch() Epoch { return Epoch{s.pending} }

// PromoteFast is the loop's half of a message a worker authenticated
// under src's pending epoch: the rekey completes as when the loop opens
// that message itself.
func (t *Table) PromoteFast(now time.Time, src identity.NodeAddr, epoch Epoch) {
	e := t.sessions[src]
	if e == nil || e.pending == nil || e.pending != epoch.s {
		return // promoted already, or abandoned
	}
	if e.msg3Payload != nil {
		e.clearMsg3()
	}
	t.promote(now, e)
}

// Received accounts a data packet a worker delivered: body is the
// DataPacket body length (ports included), as the loop counts it.
func (s *FastSession) Received(now time.Time, body int) { s.hot.received(now, body) }

// HandleOpened finishes, on the loop, a message a worker decrypted on
// the current epoch of src's session but did not deliver itself (not a
// data packet, or not for a port it serves). recorded says the worker fed
// it to session MMP already. pt is the inner plaintext.
func (t *Table) HandleOpened(now time.Time, src identity.NodeAddr, counter uint64, pt []byte, ce, recorded bool) {
	e := t.sessions[src]
	if e == nil || e.state != StateEstablished {
		t.stats.OpenedForGone++
		return
	}
	t.afterOpen(now, src, e, slotCurrent, counter, pt, ce, recorded)
}

// DataOverhead is what SealData adds around a payload: the FSP header,
// the inner header, the ports and the tag.
const DataOverhead = wire.FSPHeaderSize + wire.FSPInnerHeaderSize + wire.FSPPortHeaderSize + wire.FSPTagSize

// DataPayloadOffset is where a DataPacket's payload starts in the
// encrypted FSP message SealData builds.
const DataPayloadOffset = wire.FSPHeaderSize + wire.FSPInnerHeaderSize + wire.FSPPortHeaderSize

// SealData seals, in place, a DataPacket whose payload the caller has
// already written at b[DataPayloadOffset:DataPayloadOffset+n]; b must
// hold n+DataOverhead bytes. It returns the encrypted FSP message (b's
// first n+DataOverhead bytes) and accounts the send.
//
// It also returns the counter and timestamp the message carries, for
// session MMP's sender (RecordSent with the ciphertext size,
// len(out) - FSPHeaderSize).
func (s *FastSession) SealData(now time.Time, b []byte, n int, srcPort, dstPort uint16) (out []byte, counter uint64, ts uint32, err error) {
	out, counter, ts, err = sealData(now, s.cur, s.k, s.start, b, n, srcPort, dstPort)
	if err == nil {
		s.hot.sent(now, n)
	}
	return out, counter, ts, err
}

// sealData is the one implementation of sealing a DataPacket without
// coordinates, for the loop (Table.sendData) and the workers: the
// payload is at b[DataPayloadOffset:DataPayloadOffset+n].
func sealData(now time.Time, cur *noise.Session, k bool, start time.Time, b []byte, n int, srcPort, dstPort uint16) ([]byte, uint64, uint32, error) {
	innerLen := wire.FSPInnerHeaderSize + wire.FSPPortHeaderSize + n
	total := wire.FSPHeaderSize + innerLen + wire.FSPTagSize
	if len(b) < total || innerLen > noise.MaxPlaintextSize {
		return nil, 0, 0, noise.ErrMessageTooLarge
	}
	counter, err := cur.NextSendCounter()
	if err != nil {
		return nil, 0, 0, err
	}
	var flags wire.FSPFlags
	if k {
		flags = wire.FSPFlagK
	}
	if _, err := (wire.FSPHeader{Flags: flags, PayloadLen: uint16(innerLen), Counter: counter}).MarshalTo(b); err != nil {
		return nil, 0, 0, err
	}
	in := b[wire.FSPHeaderSize : wire.FSPHeaderSize+innerLen]
	ts := msSince(now, start)
	binary.LittleEndian.PutUint32(in, ts)
	in[4] = byte(wire.SessionMsgDataPacket)
	in[5] = 0
	binary.LittleEndian.PutUint16(in[6:], srcPort)
	binary.LittleEndian.PutUint16(in[8:], dstPort)
	if _, err := cur.Seal(in[:0], counter, b[:wire.FSPHeaderSize], in); err != nil {
		return nil, 0, 0, err
	}
	return b[:total], counter, ts, nil
}

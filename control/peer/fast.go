package peer

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// This file is the link layer's half of the dataplane seam: what a
// dataplane worker may read without the control loop (the published
// Links table), and the per-packet steps — open an established frame,
// seal one — that the workers and the loop's slow path share, so both
// run the same code.
//
// The loop owns every Peer field except the hot counters below, which
// are atomics; a worker reaches a peer only through a published FastLink
// or FastTx, which are immutable once published. The noise session's
// replay window and the MMP sender and receiver halves are safe for
// concurrent use (a small lock each), so a frame of a session may be
// opened by a worker and by the loop alike.

// hotCounters are the per-packet peer counters, written by whichever
// goroutine handles the packet.
type hotCounters struct {
	lastRecv, lastSent       atomic.Int64 // Unix nanoseconds; 0: never
	packetsRecv, bytesRecv   atomic.Uint64
	packetsSent, bytesSent   atomic.Uint64
	replays, decryptFailures atomic.Uint64
	// failRun counts decrypt failures from the peer's own address since
	// its last good frame.
	failRun atomic.Int64
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// LastRecv is when the last authenticated frame arrived (promotion time
// before any).
func (p *Peer) LastRecv() time.Time { return fromUnixNano(p.hot.lastRecv.Load()) }

// LastSent is when the last frame was sent to the peer.
func (p *Peer) LastSent() time.Time { return fromUnixNano(p.hot.lastSent.Load()) }

// Stats are the peer's counters.
func (p *Peer) Stats() PeerStats {
	s := p.stats
	s.PacketsSent, s.PacketsRecv = p.hot.packetsSent.Load(), p.hot.packetsRecv.Load()
	s.BytesSent, s.BytesRecv = p.hot.bytesSent.Load(), p.hot.bytesRecv.Load()
	s.Replays, s.DecryptFailures = p.hot.replays.Load(), p.hot.decryptFailures.Load()
	return s
}

// ConsecutiveDecryptFailures counts failures since the last good frame.
func (p *Peer) ConsecutiveDecryptFailures() int { return int(p.hot.failRun.Load()) }

func (p *Peer) received(now time.Time, n int) {
	p.hot.failRun.Store(0)
	p.hot.lastRecv.Store(unixNano(now))
	p.hot.packetsRecv.Add(1)
	p.hot.bytesRecv.Add(uint64(n))
}

func (p *Peer) sent(now time.Time, n int) {
	p.hot.lastSent.Store(unixNano(now))
	p.hot.packetsSent.Add(1)
	p.hot.bytesSent.Add(uint64(n))
}

// FastLink is one receiver index a worker may open frames for: an
// established session of an active peer, as of the last publication.
type FastLink struct {
	m        *Manager // only its atomic drop counters
	peer     *Peer
	sess     *linkSession
	mmp      *mmp.Link
	draining bool // sess is the previous session, kept for the drain window
	addr     transport.Addr
	t        transport.ID
	idx      uint32
	// cand is the rekey handshake we answered whose session this is,
	// until its first frame proves it (the worker tells the loop, which
	// cuts over; frames are handled as the peer's all the same).
	cand *unproven
}

// Proving reports whether the link's session is an answered rekey whose
// first frame the loop has not seen yet: a worker that opens one upcalls
// a proof (Manager.ProveFast) before handling the frame.
func (l *FastLink) Proving() bool { return l.cand != nil }

// Peer is the link's peer.
func (l *FastLink) Peer() *Peer { return l.peer }

// V1 reports whether the link's frames carry FMP version 1 (upstream
// next's format); a frame of the other version is never opened on it.
func (l *FastLink) V1() bool { return l.sess.v1 }

// FastTx is how a worker sends to a peer: its current session, where it
// is, and its link metrics, as of the last publication.
type FastTx struct {
	peer *Peer
	sess *linkSession
	mmp  *mmp.Link
	kbit bool
	t    transport.ID
	addr transport.Addr
}

// Peer is the peer sent to.
func (x *FastTx) Peer() *Peer { return x.peer }

// Transport and Addr are where the peer is.
func (x *FastTx) Transport() transport.ID { return x.t }
func (x *FastTx) Addr() transport.Addr    { return x.addr }

// Links is the published link table: immutable, replaced whole by the
// loop (Manager.Publish) after any change to the peers' sessions,
// addresses or metrics objects.
type Links struct {
	byIndex map[linkKey]*FastLink
	byPeer  map[identity.NodeAddr]*FastTx
}

// Lookup finds the link a frame's receiver index names on transport t;
// nil for an index that is not an established session (unknown,
// or a handshake awaiting its first frame: the loop's).
func (l *Links) Lookup(t transport.ID, idx uint32) *FastLink {
	if l == nil {
		return nil
	}
	return l.byIndex[linkKey{t, idx}]
}

// Tx finds how to send to an active peer; nil when it is not one.
func (l *Links) Tx(a identity.NodeAddr) *FastTx {
	if l == nil {
		return nil
	}
	return l.byPeer[a]
}

// Len is the number of receiver indices published.
func (l *Links) Len() int {
	if l == nil {
		return 0
	}
	return len(l.byIndex)
}

// fastDrops are the Manager's drop counters that workers add to.
type fastDrops struct {
	packetsIn, replay, decrypt, malformed, versionMismatch atomic.Uint64
}

// Published is the link table workers read.
func (m *Manager) Published() *Links { return m.published.Load() }

// Publish replaces the published link table if anything it holds has
// changed since the last call. The loop calls it at the end of each
// burst of work; between a change and its publication workers may still
// open frames of a just-removed session, which is harmless (the keys are
// the same keys), and what they upcall for a removed peer is dropped.
func (m *Manager) Publish() {
	if !m.pubDirty && m.published.Load() != nil {
		return
	}
	m.pubDirty = false
	l := &Links{byIndex: make(map[linkKey]*FastLink, len(m.byIndex)), byPeer: make(map[identity.NodeAddr]*FastTx, len(m.peers))}
	for k, e := range m.byIndex {
		if u := e.cand; u != nil {
			// A rekey we answered, of a peer still active in the same
			// epoch: its frames are the peer's once the first proves it.
			// Other handshakes (new links, restarts) are the loop's.
			if p := u.rekeyOf; p != nil && m.peers[p.NodeAddr] == p && p.Epoch == u.epoch && u.t == p.Transport {
				l.byIndex[k] = &FastLink{m: m, peer: p, sess: e.sess, mmp: p.mmp, addr: p.Addr, t: k.t, idx: k.idx, cand: u}
			}
			continue
		}
		if e.peer == nil {
			continue
		}
		p := e.peer
		l.byIndex[k] = &FastLink{m: m, peer: p, sess: e.sess, mmp: p.mmp, draining: e.sess == p.prev, addr: p.Addr, t: k.t, idx: k.idx}
	}
	for a, p := range m.peers {
		l.byPeer[a] = &FastTx{peer: p, sess: p.cur, mmp: p.mmp, kbit: p.kbit, t: p.Transport, addr: p.Addr}
	}
	m.published.Store(l)
}

// ProveFast is the loop's half of the first frame a worker opened on an
// answered rekey's session (FastLink.Proving): the handshake is proven
// and the peer cuts over, as when the loop opens that frame itself.
func (m *Manager) ProveFast(now time.Time, l *FastLink) {
	e := m.byIndex[linkKey{l.t, l.idx}]
	if e == nil || e.cand != l.cand {
		return // proven already (a later frame's proof), or dropped
	}
	m.prove(now, l.cand, l.t, l.addr)
}

// Verdict is what FastLink.Open did with a frame.
type Verdict uint8

// Open verdicts.
const (
	// Opened: the frame authenticated; the peer's counters and link
	// metrics have counted it.
	Opened Verdict = iota
	// Dropped: a replay or a decryption failure, counted.
	Dropped
	// Upcall: the frame needs the loop (roaming); nothing was done.
	Upcall
)

// ErrMalformedInner is returned for an authenticated frame whose inner
// header does not parse.
var ErrMalformedInner = errors.New("peer: malformed inner header")

// Open authenticates an established frame of this link, received from
// `from`, decrypting into dst (which may be f.Sealed[:0]: in place). On
// Opened it returns the inner header and message. A frame from another
// address than the peer's is left to the loop (roaming moves the peer).
func (l *FastLink) Open(now time.Time, from transport.Addr, f wire.FMPFrame, size int, dst []byte) (wire.FMPInner, Verdict) {
	if (f.Version() == wire.FMPVersionNext) != l.sess.v1 {
		// Not this link's format: never decrypted (docs/next.md §15.2).
		l.m.fast.versionMismatch.Add(1)
		return wire.FMPInner{}, Dropped
	}
	if from != l.addr {
		return wire.FMPInner{}, Upcall
	}
	l.m.fast.packetsIn.Add(1)
	pt, err := l.sess.s.Open(dst, f.Counter, f.Header, f.Sealed)
	if err == nil && !l.sess.heard.Load() {
		l.sess.heard.Store(true)
	}
	if err != nil {
		if errors.Is(err, noise.ErrReplay) {
			l.m.fast.replay.Add(1)
		} else {
			l.m.fast.decrypt.Add(1)
		}
		countOpenError(l.peer, err, true)
		return wire.FMPInner{}, Dropped
	}
	in, err := accept(now, l.peer, l.mmp, l.draining, f, size, pt)
	if err != nil {
		l.m.fast.malformed.Add(1)
		return wire.FMPInner{}, Dropped
	}
	return in, Opened
}

// accept is the one implementation of what follows a frame's successful
// decryption, for the loop and the workers: the peer's counters, the
// inner header, the MMP receiver (not for a draining session's frames:
// they belong to the old counters and timestamps — fed to MMP, a counter
// would set the new session's receiver state and a report in it the new
// baseline, so that every later report would count as regressed).
func accept(now time.Time, p *Peer, mm *mmp.Link, draining bool, f wire.FMPFrame, size int, pt []byte) (wire.FMPInner, error) {
	p.received(now, size)
	in, err := wire.ParseFMPInner(pt)
	if err != nil {
		return wire.FMPInner{}, err
	}
	if !draining {
		mm.RecordRecv(now, f.Counter, in.Timestamp, size, f.Flags&wire.FMPFlagCE != 0)
	}
	return in, nil
}

// Draining reports whether the frame's session is the one cut over from
// (its reports belong to the old counters).
func (l *FastLink) Draining() bool { return l.draining }

// countOpenError counts a failed open on the peer's counters; atPeer says
// the frame came from the peer's own address.
func countOpenError(p *Peer, err error, atPeer bool) {
	if errors.Is(err, noise.ErrReplay) {
		p.hot.replays.Add(1)
		return
	}
	p.hot.decryptFailures.Add(1)
	if atPeer {
		p.hot.failRun.Add(1)
	}
}

// FrameSize is the size of the link frame carrying msg.
func FrameSize(msg []byte) int { return wire.FMPHeaderSize + 4 + len(msg) + wire.FMPTagSize }

// Seal builds and seals the frame carrying msg (msg_type first) to the
// peer into a slot from r: header, timestamp, msg copied once, sealed in
// place. flags may carry CE and SP; K is the session's. r is a send
// queue on the peer's transport.
func (x *FastTx) Seal(now time.Time, r transport.Reserver, flags uint8, msg []byte) error {
	b, err := r.Reserve(x.addr, FrameSize(msg))
	if err != nil {
		return err
	}
	if b == nil {
		return errors.New("peer: no send slot")
	}
	return sealFrame(now, x.peer, x.sess, x.mmp, x.kbit, b, flags, msg)
}

// Reserve takes a slot for a frame of n bytes to the peer from r; the
// caller builds the message in place at FrameMessage(slot) and calls
// SealReserved.
func (x *FastTx) Reserve(r transport.Reserver, n int) ([]byte, error) {
	b, err := r.Reserve(x.addr, n)
	if err == nil && b == nil {
		err = errors.New("peer: no send slot")
	}
	return b, err
}

// FrameMessage is where a frame slot's message (msg_type first) goes.
func FrameMessage(slot []byte) []byte {
	return slot[wire.FMPHeaderSize+4 : len(slot)-wire.FMPTagSize]
}

// SealReserved seals a slot from Reserve whose message is in place.
func (x *FastTx) SealReserved(now time.Time, slot []byte, flags uint8) error {
	return sealFrame(now, x.peer, x.sess, x.mmp, x.kbit, slot, flags, FrameMessage(slot))
}

// sealFrame writes the frame for msg into pkt (exactly FrameSize(msg)
// bytes) on session s and accounts it: the one implementation of a link
// send, for the loop and the workers.
func sealFrame(now time.Time, p *Peer, s *linkSession, mm *mmp.Link, kbit bool, pkt []byte, flags uint8, msg []byte) error {
	if 4+len(msg) > noise.MaxPlaintextSize {
		return noise.ErrMessageTooLarge
	}
	ctr, err := s.s.NextSendCounter()
	if err != nil {
		return err
	}
	flags &^= wire.FMPFlagK
	if kbit {
		flags |= wire.FMPFlagK
	}
	put := wire.PutFMPFrameHeader
	if s.v1 {
		flags &^= wire.FMPFlagSP // reserved in version 1
		put = wire.PutFMPv1FrameHeader
	}
	if _, err := put(pkt, flags, s.theirIndex, ctr, 4+len(msg)); err != nil {
		return err
	}
	ts := uint32(now.Sub(s.start).Milliseconds())
	inner := pkt[wire.FMPHeaderSize : wire.FMPHeaderSize+4+len(msg)]
	binary.LittleEndian.PutUint32(inner, ts)
	if len(msg) > 0 && &inner[4] != &msg[0] { // not built in place already
		copy(inner[4:], msg)
	}
	if _, err := s.s.Seal(inner[:0], ctr, pkt[:wire.FMPHeaderSize], inner); err != nil {
		return err
	}
	mm.RecordSent(now, ctr, ts, len(pkt))
	p.sent(now, len(pkt))
	return nil
}

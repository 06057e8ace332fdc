package dataplane

import (
	"math"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ipv6"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane/tun"
)

// The IPv6 adapter on the workers: datagrams for this node on port 256
// are decrypted, rebuilt and written to the TUN device by the worker that
// received them; packets read from the TUN device for a published
// session are compressed, sealed twice and queued on the reader's own
// send queue. Whatever the published tables do not cover (coordinates,
// rekeys, Packet Too Big, new path MTUs, other ports) goes to the loop
// exactly as before.

// LocalSession is one published session with what the adapter needs.
type LocalSession struct {
	Session *session.FastSession
	MMP     *mmp.Link // session MMP (receiver half, path MTU)
	IPv6MTU int       // the largest IPv6 packet for this destination
}

// Local is the published adapter table: immutable once published,
// replaced whole by the loop (Engine.PublishLocal).
type Local struct {
	byAddr map[identity.NodeAddr]*LocalSession
	byIPv6 map[netip.Addr]*LocalSession
	// transportMTU is upstream's transport_mtu() at publication (MSS
	// clamping).
	transportMTU int
}

// NewLocal makes a table for about n sessions.
func NewLocal(transportMTU, n int) *Local {
	return &Local{byAddr: make(map[identity.NodeAddr]*LocalSession, n),
		byIPv6: make(map[netip.Addr]*LocalSession, n), transportMTU: transportMTU}
}

// Add puts s in the table (before it is published).
func (l *Local) Add(s *LocalSession) {
	a := s.Session.Addr()
	l.byAddr[a] = s
	l.byIPv6[a.IPv6()] = s
}

// Len is the number of sessions.
func (l *Local) Len() int {
	if l == nil {
		return 0
	}
	return len(l.byAddr)
}

// PublishLocal replaces the adapter table.
func (e *Engine) PublishLocal(l *Local) { e.local.Store(l) }

// PublishedLocal is the published adapter table (nil before the first).
func (e *Engine) PublishedLocal() *Local { return e.local.Load() }

// IPv6Counters are the adapter's counts on the workers.
type IPv6Counters struct {
	Sent, Received, CEMarked, MSSClamped, Dropped, WriteErrors atomic.Uint64
	Originated, OriginatedBytes                                atomic.Uint64
	// Why TUN packets went to the loop instead.
	MissNoSession, MissWarmup, MissTooBig, MissNoRoute, MissFrameMTU atomic.Uint64
}

// IPv6 are the adapter's counters.
func (e *Engine) IPv6() *IPv6Counters { return &e.ipv6 }

// deliver takes a SessionDatagram for this node (msg, type byte first,
// writable): true when the worker finished it, false to leave it,
// unchanged, to the loop.
func (w *Worker) deliver(now time.Time, ce bool, msg []byte) bool {
	e := w.e
	lt := e.local.Load()
	dev := e.tun.Load()
	if lt == nil || dev == nil {
		return false
	}
	src := wire.SessionDatagramSrc(msg)
	le := lt.byAddr[src]
	if le == nil {
		return false
	}
	// A path MTU the loop has not seen is news for session MMP.
	if pm := wire.SessionDatagramPathMTU(msg); pm != 0 && le.MMP.PathMTU().LastObserved() != pm {
		return false
	}
	if w.plain == nil {
		w.plain = make([]byte, 65535)
	}
	op, ok := le.Session.Open(msg[wire.SessionDatagramHeaderSize:], w.plain)
	if !ok {
		return false
	}
	if op.Pending {
		w.upcallPromote(src, le.Session.Epoch())
	}
	in := op.Inner
	le.MMP.RecordRecv(now, op.Counter, in.Timestamp, op.Size, ce)
	if in.MsgType != wire.SessionMsgDataPacket || len(in.Body) < wire.FSPPortHeaderSize ||
		wire.DataPacketDstPort(in.Body) != wire.FSPPortIPv6Shim {
		// Reports, other ports, the malformed: the loop finishes them.
		w.upcallFSP(src, op.Counter, ce, w.plain[:op.Size])
		return true
	}
	le.Session.Received(now, len(in.Body))
	shim := in.Body[wire.FSPPortHeaderSize:]
	tb := w.tunBatch(dev)
	buf := tb.Reserve()
	c := &e.ipv6
	k, err := wire.DecompressIPv6(buf, shim, src.IPv6().As16(), e.cfg.Self.IPv6().As16())
	if err != nil {
		c.Dropped.Add(1)
		return true
	}
	pkt := buf[:k]
	if ce && wire.MarkIPv6ECNCE(pkt) {
		c.CEMarked.Add(1)
	}
	if ce {
		e.stats.CEDelivered.Add(1)
	}
	if ipv6.ClampMSS(pkt, ipv6.MaxMSS(lt.transportMTU)) {
		c.MSSClamped.Add(1)
	}
	if !tb.Commit(k) {
		c.WriteErrors.Add(1)
	}
	c.Received.Add(1)
	return true
}

// tunBatch is the worker's write batch on dev, made on first use.
func (w *Worker) tunBatch(dev *TUN) *tun.Batch {
	if w.tunb == nil {
		w.tunb = tun.NewBatch(dev.dev.Dev, TUNWriteBatch/2)
	}
	return w.tunb
}

// flushTUN writes the worker's TUN batch.
func (w *Worker) flushTUN() {
	if w.tunb != nil {
		if err := w.tunb.Flush(); err != nil {
			w.e.ipv6.WriteErrors.Add(1)
		}
	}
}

// SendTUN takes one packet read from the TUN device (writable, valid
// during the call) for a published session with a published route and
// queues its frame on the worker's send queue; false leaves it to the
// loop.
func (w *Worker) SendTUN(pkt []byte) bool {
	e := w.e
	c := &e.ipv6
	lt := e.local.Load()
	if lt == nil || !wire.IsIPv6(pkt) {
		return false
	}
	le := lt.byIPv6[wire.IPv6Dst(pkt)]
	switch {
	case le == nil:
		c.MissNoSession.Add(1)
		return false
	case !le.Session.CanSend():
		c.MissWarmup.Add(1)
		return false
	case len(pkt) > le.IPv6MTU:
		c.MissTooBig.Add(1)
		return false
	}
	dest := le.Session.Addr()
	rt := e.fwd.Load().Lookup(dest)
	if rt == nil {
		c.MissNoRoute.Add(1)
		return false
	}
	r := w.Sender(rt.Tx.Transport())
	if r == nil {
		return false
	}
	now := w.clock()
	shimLen := len(pkt) - wire.IPv6ShimSavings
	msgLen := wire.SessionDatagramHeaderSize + session.DataOverhead + shimLen
	frame := wire.FMPHeaderSize + 4 + msgLen + wire.FMPTagSize
	if rt.MTU > 0 && frame > rt.MTU {
		c.MissFrameMTU.Add(1)
		return false // the loop refuses it as it would (MtuExceeded at the first hop)
	}
	if ipv6.ClampMSS(pkt, ipv6.MaxMSS(lt.transportMTU)) {
		c.MSSClamped.Add(1)
	}
	slot, err := rt.Tx.Reserve(r, frame)
	if err != nil {
		c.Dropped.Add(1)
		return true
	}
	msg := peer.FrameMessage(slot)
	pathMTU := uint16(math.MaxUint16)
	if rt.MTU > 0 && rt.MTU < int(pathMTU) {
		pathMTU = uint16(rt.MTU)
	}
	wire.PutSessionDatagramHeader(msg, e.cfg.SessionTTL, pathMTU, e.cfg.Self, dest)
	fsp := msg[wire.SessionDatagramHeaderSize:]
	if _, err := wire.CompressIPv6(fsp[session.DataPayloadOffset:], pkt); err != nil {
		clear(slot) // already queued: an all-zero datagram, dropped by the peer as malformed
		c.Dropped.Add(1)
		return true
	}
	sealed, counter, ts, err := le.Session.SealData(now, fsp, shimLen, wire.FSPPortIPv6Shim, wire.FSPPortIPv6Shim)
	if err != nil {
		clear(slot)
		c.Dropped.Add(1)
		return true
	}
	if err := rt.Tx.SealReserved(now, slot, 0); err != nil {
		clear(slot)
		c.Dropped.Add(1)
		return true
	}
	le.MMP.RecordSent(now, counter, ts, len(sealed)-wire.FSPHeaderSize)
	c.Sent.Add(1)
	c.Originated.Add(1)
	c.OriginatedBytes.Add(uint64(msgLen))
	rt.MarkUsed()
	return true
}

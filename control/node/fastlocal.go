package node

import (
	"encoding/binary"
	"math"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ipv6"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane"
	"github.com/fips-go/fips/dataplane/tun"
)

// The IPv6 adapter on the dataplane workers: datagrams for us on port
// 256 are decrypted, rebuilt and written to the TUN device by the
// worker that received them; packets read from the TUN device for a
// published session are compressed, sealed twice and queued on the
// reader's own send queue. Whatever the published tables do not cover
// (coordinates, rekeys, Packet Too Big, new path MTUs, other ports) goes
// to the loop exactly as before.

// localEntry is one published session with what the adapter needs.
type localEntry struct {
	fs      *session.FastSession
	mmp     *mmp.Link // session MMP (receiver half, path MTU)
	ipv6MTU int       // the largest IPv6 packet for this destination
}

// localTable is the published adapter table.
type localTable struct {
	byAddr map[identity.NodeAddr]*localEntry
	byIPv6 map[netip.Addr]*localEntry
	// transportMTU is upstream's transport_mtu() at publication (MSS
	// clamping).
	transportMTU int
}

// fastIPv6 are the adapter's counters on the workers (added to
// IPv6Stats).
type fastIPv6 struct {
	sent, received, ceMarked, mssClamped, dropped, writeErrors atomic.Uint64
	originated, originatedBytes                                atomic.Uint64
	// Why TUN packets went to the loop instead (EngineView.EgressToLoop).
	missNoSession, missWarmup, missTooBig, missNoRoute, missFrameMTU atomic.Uint64
}

// localWorker is one worker's adapter state.
type localWorker struct {
	tun   *tun.Batch // nil without a device
	plain []byte     // decrypted FSP
}

// publishLocal republishes the adapter table when the sessions changed,
// and on ticks (path MTUs move).
func (n *Node) publishLocal(tick bool) {
	c := n.core
	if n.eng == nil || c.v6 == nil {
		return
	}
	if !c.sess.Publish() && !tick && n.local.Load() != nil {
		return
	}
	ps := c.sess.Published()
	lt := &localTable{byAddr: make(map[identity.NodeAddr]*localEntry, ps.Len()),
		byIPv6: make(map[netip.Addr]*localEntry, ps.Len()), transportMTU: n.transportMTU()}
	ps.Range(func(fs *session.FastSession) {
		sm := c.smmp[fs.Addr()]
		if sm == nil {
			return // no session MMP: the loop's
		}
		le := &localEntry{fs: fs, mmp: sm.link, ipv6MTU: c.ipv6MTU(fs.Addr())}
		lt.byAddr[fs.Addr()] = le
		lt.byIPv6[fs.Addr().IPv6()] = le
	})
	n.local.Store(lt)
}

func (n *Node) localState(w *dataplane.Worker) *localWorker {
	if lw, ok := w.Local.(*localWorker); ok {
		return lw
	}
	lw := &localWorker{plain: make([]byte, 65535)}
	if n.tun != nil {
		lw.tun = tun.NewBatch(n.tun.Dev, tunWriteBatch/2)
	}
	w.Local = lw
	return lw
}

// fastDeliver is dataplane.Config.Local: a SessionDatagram for us.
func (n *Node) fastDeliver(w *dataplane.Worker, now time.Time, ce bool, msg []byte) bool {
	lt := n.local.Load()
	if lt == nil || n.tun == nil {
		return false
	}
	var src identity.NodeAddr
	copy(src[:], msg[4:20])
	le := lt.byAddr[src]
	if le == nil {
		return false
	}
	// A path MTU the loop has not seen is news for session MMP.
	if pm := binary.LittleEndian.Uint16(msg[2:]); pm != 0 && le.mmp.PathMTU().LastObserved() != pm {
		return false
	}
	lw := n.localState(w)
	op, ok := le.fs.Open(msg[wire.SessionDatagramHeaderSize:], lw.plain)
	if !ok {
		return false
	}
	if op.Pending {
		w.UpcallPromote(src, le.fs.Epoch())
	}
	in := op.Inner
	if op.Inner.MsgType != wire.SessionMsgDataPacket || len(in.Body) < wire.FSPPortHeaderSize ||
		binary.LittleEndian.Uint16(in.Body[2:]) != wire.FSPPortIPv6Shim || lw.tun == nil {
		// Reports, other ports, the malformed: the loop finishes them.
		le.mmp.RecordRecv(now, op.Counter, in.Timestamp, op.Size, ce)
		w.UpcallFSP(src, op.Counter, ce, lw.plain[:op.Size])
		return true
	}
	le.mmp.RecordRecv(now, op.Counter, in.Timestamp, op.Size, ce)
	le.fs.Received(now, len(in.Body))
	shim := in.Body[wire.FSPPortHeaderSize:]
	buf := lw.tun.Reserve()
	k, err := wire.DecompressIPv6(buf, shim, src.IPv6().As16(), n.id.IPv6().As16())
	if err != nil {
		n.v6fast.dropped.Add(1)
		return true
	}
	pkt := buf[:k]
	if ce && wire.MarkIPv6ECNCE(pkt) {
		n.v6fast.ceMarked.Add(1)
	}
	if ce {
		n.ceFast.Add(1)
	}
	if ipv6.ClampMSS(pkt, ipv6.MaxMSS(lt.transportMTU)) {
		n.v6fast.mssClamped.Add(1)
	}
	if !lw.tun.Commit(k) {
		n.v6fast.writeErrors.Add(1)
	}
	n.v6fast.received.Add(1)
	return true
}

// fastFlush is dataplane.Config.LocalFlush.
func (n *Node) fastFlush(w *dataplane.Worker) {
	if lw, ok := w.Local.(*localWorker); ok && lw.tun != nil {
		if err := lw.tun.Flush(); err != nil {
			n.v6fast.writeErrors.Add(1)
		}
	}
}

// fastSend takes one packet read from the TUN device (writable, valid
// during the call) for a published session with a published route and
// queues its frame on w's send queue; false leaves it to the loop.
func (n *Node) fastSend(w *dataplane.Worker, now time.Time, pkt []byte) bool {
	lt := n.local.Load()
	if lt == nil || len(pkt) < wire.IPv6HeaderSize || pkt[0]>>4 != 6 {
		return false
	}
	le := lt.byIPv6[netip.AddrFrom16([16]byte(pkt[24:40]))]
	switch {
	case le == nil:
		n.v6fast.missNoSession.Add(1)
		return false
	case !le.fs.CanSend():
		n.v6fast.missWarmup.Add(1)
		return false
	case len(pkt) > le.ipv6MTU:
		n.v6fast.missTooBig.Add(1)
		return false
	}
	dest := le.fs.Addr()
	rt := n.eng.Forwarding().Lookup(dest)
	if rt == nil {
		n.v6fast.missNoRoute.Add(1)
		return false
	}
	r := w.Sender(rt.Tx.Transport())
	if r == nil {
		return false
	}
	shimLen := len(pkt) - wire.IPv6ShimSavings
	msgLen := wire.SessionDatagramHeaderSize + session.DataOverhead + shimLen
	frame := wire.FMPHeaderSize + 4 + msgLen + wire.FMPTagSize
	if rt.MTU > 0 && frame > rt.MTU {
		n.v6fast.missFrameMTU.Add(1)
		return false // the loop refuses it as it would (MtuExceeded at the first hop)
	}
	if ipv6.ClampMSS(pkt, ipv6.MaxMSS(lt.transportMTU)) {
		n.v6fast.mssClamped.Add(1)
	}
	slot, err := rt.Tx.Reserve(r, frame)
	if err != nil {
		n.v6fast.dropped.Add(1)
		return true
	}
	msg := peer.FrameMessage(slot)
	pathMTU := uint16(math.MaxUint16)
	if rt.MTU > 0 && rt.MTU < int(pathMTU) {
		pathMTU = uint16(rt.MTU)
	}
	msg[0] = byte(wire.MsgSessionDatagram)
	msg[1] = n.sessionTTL
	binary.LittleEndian.PutUint16(msg[2:], pathMTU)
	copy(msg[4:20], n.selfAddr[:])
	copy(msg[20:36], dest[:])
	fsp := msg[wire.SessionDatagramHeaderSize:]
	if _, err := wire.CompressIPv6(fsp[session.DataPayloadOffset:], pkt); err != nil {
		clear(slot) // already queued: an all-zero datagram, dropped by the peer as malformed
		n.v6fast.dropped.Add(1)
		return true
	}
	sealed, counter, ts, err := le.fs.SealData(now, fsp, shimLen, wire.FSPPortIPv6Shim, wire.FSPPortIPv6Shim)
	if err != nil {
		clear(slot)
		n.v6fast.dropped.Add(1)
		return true
	}
	if err := rt.Tx.SealReserved(now, slot, 0); err != nil {
		clear(slot)
		n.v6fast.dropped.Add(1)
		return true
	}
	le.mmp.RecordSent(now, counter, ts, len(sealed)-wire.FSPHeaderSize)
	n.v6fast.sent.Add(1)
	n.v6fast.originated.Add(1)
	n.v6fast.originatedBytes.Add(uint64(msgLen))
	rt.MarkUsed()
	return true
}

// addFastIPv6 folds the workers' adapter counters into the loop's.
func (n *Node) addFastIPv6(s *ctl.IPv6Stats) {
	f := &n.v6fast
	s.Sent += f.sent.Load()
	s.Received += f.received.Load()
	s.CEMarked += f.ceMarked.Load()
	s.MSSClamped += f.mssClamped.Load()
	s.Dropped += f.dropped.Load()
	s.WriteErrors += f.writeErrors.Load()
}

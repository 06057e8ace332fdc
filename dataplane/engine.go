package dataplane

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane/tun"
)

// Route is one published forwarding entry: where datagrams for a
// destination go, as the loop last computed it.
type Route struct {
	Tx        *peer.FastTx
	MTU       int  // the next hop's link MTU; 0 unknown
	Congested bool // the next hop is congested (CE on every forward)
	Class     route.RouteClass
	// used is set by workers on each forward; the loop reads and clears
	// it every tick to expire idle entries and keep used ones' cache
	// entries alive.
	used atomic.Bool
	// Idle counts the loop's ticks without a use (loop only).
	Idle int
}

// Used reports whether the route was used since the last TakeUsed,
// leaving the mark.
func (r *Route) Used() bool { return r.used.Load() }

// MarkUsed records a use (workers; cheap when already marked).
func (r *Route) MarkUsed() {
	if !r.used.Load() {
		r.used.Store(true)
	}
}

// TakeUsed reports whether the route was used since the last call.
func (r *Route) TakeUsed() bool { return r.used.Swap(false) }

// Forwarding is the published forwarding table: immutable, replaced
// whole by the loop.
type Forwarding struct {
	m map[identity.NodeAddr]*Route
}

// NewForwarding makes a table of routes (the map is owned from then on).
func NewForwarding(m map[identity.NodeAddr]*Route) *Forwarding { return &Forwarding{m: m} }

// Lookup is the route to dest, nil without one.
func (f *Forwarding) Lookup(dest identity.NodeAddr) *Route {
	if f == nil {
		return nil
	}
	return f.m[dest]
}

// Len is the number of routes.
func (f *Forwarding) Len() int {
	if f == nil {
		return 0
	}
	return len(f.m)
}

// Range calls fn for every route.
func (f *Forwarding) Range(fn func(identity.NodeAddr, *Route)) {
	if f == nil {
		return
	}
	for a, r := range f.m {
		fn(a, r)
	}
}

// LinkSource is the link layer's published table (peer.Manager).
type LinkSource interface {
	Published() *peer.Links
}

// Clock is where the workers read the time, once per batch.
type Clock interface {
	Now() time.Time
}

// systemClock is the wall clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Config is what an Engine needs from the node.
type Config struct {
	// Self is this node's address (datagrams for it are delivered
	// locally or go to the loop).
	Self identity.NodeAddr
	// Links is the link layer whose published table workers open
	// frames with.
	Links LinkSource
	// Loop takes what the workers hand over (see Loop).
	Loop Loop
	// UpcallBufs holds the copies upcalls carry.
	UpcallBufs *transport.BufferPool
	// Transports are the node's transports by ID: a worker sends on
	// those that give it a sender of its own (transport.Batched).
	Transports map[transport.ID]transport.Transport
	// SessionTTL is the TTL of the datagrams workers originate
	// (node.session.ttl).
	SessionTTL uint8
	// Clock is the time source (nil: the wall clock).
	Clock Clock
}

// Engine runs established traffic on the transports' reader goroutines
// (its workers) without the control loop: transit datagrams are opened,
// rewritten in place (TTL, path MTU, CE) and sealed to the next hop in
// the worker's own send batch. It implements transport.DataPath.
type Engine struct {
	cfg   Config
	fwd   atomic.Pointer[Forwarding]
	stats Counters
	// workers counts live workers (for tests and show_status).
	workers atomic.Int64
	// aqms are the live workers' CoDel states; aqmEnded what ended
	// workers' dropped. aqmMu guards both: taken when a worker starts or
	// ends and when show_status reads, never per packet.
	aqmMu    sync.Mutex
	aqms     map[*CoDel]struct{}
	aqmEnded uint64
	// local is the published table of sessions the workers deliver and
	// originate for; tun the IPv6 adapter's device they write (nil:
	// none); ipv6 what they counted doing so.
	local atomic.Pointer[Local]
	tun   atomic.Pointer[TUN]
	ipv6  IPv6Counters
}

// Counters are the engine's own counts; the node folds the forwarding
// ones into show_routing's.
type Counters struct {
	FramesOpened    atomic.Uint64 // authenticated on a worker
	FramesDropped   atomic.Uint64 // replays and decryption failures on a worker
	Upcalls         atomic.Uint64 // opened frames handed to the loop
	UpcallsRefused  atomic.Uint64 // the loop had stopped
	ForwardMisses   atomic.Uint64 // transit datagrams without a published route (upcalled)
	Forwarded       atomic.Uint64 // datagrams forwarded by workers
	ForwardedBytes  atomic.Uint64 // their encoded messages, type byte included
	ReceivedBytes   atomic.Uint64 // their messages without the type byte (upstream's received_bytes)
	ForwardErrors   atomic.Uint64 // forwards the next hop's transport refused
	Delivered       atomic.Uint64 // datagrams for us finished by the workers' local delivery
	DeliveredBytes  atomic.Uint64 // their messages without the type byte
	CEForwarded     atomic.Uint64
	OuterCE         atomic.Uint64 // frames of published links whose outer IP header had CE
	CongestionSeen  atomic.Uint64
	ClassCounts     [8]atomic.Uint64 // by route.RouteClass
	SendErrors      atomic.Uint64    // batches (datagrams) a worker's transport failed to send
	WorkerSendSlots atomic.Uint64    // frames sealed into worker send queues
	CEDelivered     atomic.Uint64    // datagrams delivered locally with CE
}

// New makes an Engine.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	return &Engine{cfg: cfg}
}

// Stats are the engine's counters.
func (e *Engine) Stats() *Counters { return &e.stats }

// Workers is the number of workers running.
func (e *Engine) Workers() int { return int(e.workers.Load()) }

// PublishForwarding replaces the forwarding table.
func (e *Engine) PublishForwarding(f *Forwarding) { e.fwd.Store(f) }

// Forwarding is the published forwarding table.
func (e *Engine) Forwarding() *Forwarding { return e.fwd.Load() }

// NewWorker implements transport.DataPath: one per reader goroutine.
func (e *Engine) NewWorker() transport.DataWorker { return e.NewReaderWorker() }

// NewReaderWorker is a worker for one of the dataplane's own readers (the
// TUN device's, an AF_XDP socket's): it ends each batch with Flush.
func (e *Engine) NewReaderWorker() *Worker {
	e.workers.Add(1)
	w := &Worker{e: e, aqm: NewCoDel()}
	e.aqmMu.Lock()
	if e.aqms == nil {
		e.aqms = map[*CoDel]struct{}{}
	}
	e.aqms[w.aqm] = struct{}{}
	e.aqmMu.Unlock()
	return w
}

// AQMDrops is what the workers' CoDel dropped, live workers and ended
// ones alike.
func (e *Engine) AQMDrops() uint64 {
	e.aqmMu.Lock()
	defer e.aqmMu.Unlock()
	n := e.aqmEnded
	for q := range e.aqms {
		n += q.Drops.Load()
	}
	return n
}

// Worker runs packets to completion on one reader goroutine. Not safe
// for concurrent use: it is its goroutine's.
type Worker struct {
	e       *Engine
	aqm     *CoDel    // the receive path's queueing delay (this worker's socket)
	now     time.Time // per batch
	senders []senderSlot
	closed  bool
	// The IPv6 adapter's per-worker state (local.go): the TUN write
	// batch, made on first use, and the buffer FSP is opened into.
	tunb  *tun.Batch
	plain []byte
	// fences order the worker's flows: while a datagram it handed the
	// loop is in flight the worker hands the loop every datagram of the
	// same flow slot, so none overtakes it: a flow switching from the
	// loop's path to the workers' (a route or session just published)
	// stays in order. A slot is a share of the remote node addresses
	// (flowSlot): a handshake of one session on the loop holds back only
	// the flows that share its slot, not every flow of the worker.
	fences [fenceSlots]Fence
}

// fenceSlots is how many flow fences a worker keeps (a power of two).
const fenceSlots = 16

// flowSlot is the fence slot of the flow with the remote node a (the
// destination of a transit or sent datagram, the source of one
// delivered here). Node addresses are hashes: their first byte spreads.
func flowSlot(a identity.NodeAddr) int { return int(a[0]) & (fenceSlots - 1) }

// flowSlotIPv6 is flowSlot of the node an overlay IPv6 address (fd00::/8
// then the node address's first 15 bytes) names; another packet gets
// slot 0.
func flowSlotIPv6(pkt []byte) int {
	if !wire.IsIPv6(pkt) {
		return 0
	}
	return int(wire.IPv6Dst(pkt).As16()[1]) & (fenceSlots - 1)
}

// datagramSlot is the flow slot of a SessionDatagram message: its source
// when addressed to self, its destination otherwise.
func (w *Worker) datagramSlot(msg []byte) int {
	if len(msg) < wire.SessionDatagramHeaderSize {
		return 0
	}
	if d := wire.SessionDatagramDest(msg); d != w.e.cfg.Self {
		return flowSlot(d)
	}
	return flowSlot(wire.SessionDatagramSrc(msg))
}

// handOff counts one more datagram handed to the loop and returns the
// fence the loop marks once it has handled it. What the worker has
// queued so far (sends, TUN writes) goes out first: the loop's sends of
// the handed-off datagram must not overtake it either.
func (w *Worker) handOff(slot int) *Fence {
	f := &w.fences[slot&(fenceSlots-1)]
	if !f.inFlight() {
		w.flushQueues()
	}
	f.handedOff++
	return f
}

// fenced reports whether a datagram of flow slot this worker handed the
// loop is still in flight: the next ones of that slot must follow it
// there.
func (w *Worker) fenced(slot int) bool { return w.fences[slot&(fenceSlots-1)].inFlight() }

// Fenced reports whether any datagram this worker handed the loop is
// still in flight.
func (w *Worker) Fenced() bool {
	for i := range w.fences {
		if w.fences[i].inFlight() {
			return true
		}
	}
	return false
}

type senderSlot struct {
	id    transport.ID
	s     transport.Sender // nil: the transport has no worker sender
	dirty bool
}

var _ transport.DataWorker = (*Worker)(nil)

func (w *Worker) clock() time.Time {
	if w.now.IsZero() {
		w.now = w.e.cfg.Clock.Now()
	}
	return w.now
}

// Receive implements transport.DataWorker: it takes an established frame
// of a published link, and after opening it finishes it here (a transit
// datagram) or upcalls it. Anything else — handshakes, unknown indices,
// frames from a new address — it leaves to the transport's normal
// delivery, untouched.
//
// Outer CE (ce) is treated as the frame's FMP CE flag once the frame is
// parsed: the flag cannot be set in the packet, whose header is the
// AEAD's associated data, but the opened frame's flags carry it on to
// MMP, the relayed frame and the delivered packet.
func (w *Worker) Receive(t transport.ID, from transport.Addr, b []byte, arrived int64, ce bool) bool {
	// Both link formats: a v1 (upstream next) frame differs only in its
	// version nibble; FastLink.Open drops a frame whose version is not
	// its link's before decrypting it.
	if len(b) < wire.FMPFrameMinSize || !wire.IsEstablishedFrameAny(b) {
		return false
	}
	f, err := wire.ParseFMPFrameAny(b)
	if err != nil {
		return false
	}
	l := w.e.cfg.Links.Published().Lookup(t, f.ReceiverIndex)
	if l == nil || l.V1() != (f.Version() == wire.FMPVersionNext) {
		// Not this link's format: the loop drops and counts it as a node
		// configured for that format does (another version, or a
		// version mismatch), never decrypting it.
		return false
	}
	if ce {
		f.Flags |= wire.FMPFlagCE
	}
	now := w.clock()
	// Queue management on what waited in the socket buffer: established
	// frames only (data and link control alike, as a router drops), never
	// handshakes. TCP in the mesh backs off on the gap.
	if arrived != 0 && w.aqm.Drop(now, now.Sub(time.Unix(0, arrived))) {
		return true
	}
	in, v := l.Open(now, from, f, len(b), f.Sealed[:0])
	switch v {
	case peer.Upcall:
		return false
	case peer.Dropped:
		w.e.stats.FramesDropped.Add(1)
		return true
	}
	w.e.stats.FramesOpened.Add(1)
	if ce {
		w.e.stats.OuterCE.Add(1) // counted once: a frame left to the loop is the loop's to count
	}
	if l.Proving() {
		w.upcalled(w.e.cfg.Loop.Proof(ProofUpcall{Link: l}), nil, nil)
	}
	dg := wire.MsgType(in.Message[0]) == wire.MsgSessionDatagram
	slot := 0
	if dg {
		slot = w.datagramSlot(in.Message)
		if !w.fenced(slot) && w.datagram(now, f.Flags, in.Message) {
			return true
		}
	}
	u := FrameUpcall{Link: l, Flags: f.Flags, TS: in.Timestamp, Arrived: arrived}
	if dg {
		u.Fence = w.handOff(slot)
	}
	if u.Msg, u.Buf = w.copyUp(in.Message); u.Buf == nil {
		u.Fence.Done()
		return true
	}
	w.upcalled(w.e.cfg.Loop.Frame(u), u.Buf, u.Fence)
	return true
}

// datagram finishes a SessionDatagram here when it can: delivered
// locally by the node's fast path, or forwarded when the published tables
// say where. It reports whether it did (or dropped it for a refused
// send); false leaves it, unchanged, to the loop.
func (w *Worker) datagram(now time.Time, flags uint8, msg []byte) bool {
	e := w.e
	if len(msg) < wire.SessionDatagramHeaderSize+wire.FSPPrefixSize {
		return false
	}
	dest := wire.SessionDatagramDest(msg)
	if dest == e.cfg.Self {
		if !w.deliver(now, flags&wire.FMPFlagCE != 0, msg) {
			return false
		}
		e.stats.Delivered.Add(1)
		e.stats.DeliveredBytes.Add(uint64(len(msg) - 1))
		return true
	}
	ttl := wire.SessionDatagramTTL(msg)
	fsp := msg[wire.SessionDatagramHeaderSize:]
	// Handshake phases and packets carrying coordinates warm the loop's
	// coordinate cache: with a published route the worker forwards them
	// in order with the rest of their flow and hands the loop a copy to
	// learn from (Loop.Learn); msg3 carries none.
	var learn bool
	switch wire.FSPPacketPhase(fsp) {
	case wire.FSPPhaseEstablished:
		learn = wire.FSPPacketFlags(fsp).CoordsPresent()
	case wire.FSPPhaseMsg1, wire.FSPPhaseMsg2:
		learn = true
	case wire.FSPPhaseMsg3:
	default:
		return false
	}
	if ttl <= 1 {
		return false
	}
	r := e.fwd.Load().Lookup(dest)
	if r == nil {
		e.stats.ForwardMisses.Add(1)
		return false
	}
	x := r.Tx
	if r.MTU > 0 && peer.FrameSize(msg) > r.MTU {
		return false // the loop answers MtuExceeded
	}
	s := w.sender(x.Transport())
	if s == nil {
		return false // a transport without worker sends (TCP): the loop's
	}
	if learn {
		// Before the rewrite: the loop's router reads the datagram as
		// received. A copy that does not fit is counted, the forward
		// goes on.
		if m, buf := w.copyUp(msg); buf != nil {
			w.upcalled(e.cfg.Loop.Learn(LearnUpcall{Msg: m, Buf: buf}), buf, nil)
		}
	}
	if route.ForwardInPlace(msg, r.MTU) != nil {
		return false
	}
	ce := flags&wire.FMPFlagCE != 0 || r.Congested
	var out uint8
	if ce {
		out = wire.FMPFlagCE
	}
	if err := x.Seal(now, s.s, out, msg); err != nil {
		e.stats.ForwardErrors.Add(1)
		return true
	}
	s.dirty = true
	e.stats.Forwarded.Add(1)
	e.stats.ForwardedBytes.Add(uint64(len(msg)))
	e.stats.ReceivedBytes.Add(uint64(len(msg) - 1))
	e.stats.ClassCounts[r.Class&7].Add(1)
	if ce {
		e.stats.CEForwarded.Add(1)
	}
	if r.Congested {
		e.stats.CongestionSeen.Add(1)
	}
	r.MarkUsed()
	return true
}

// Sender is the worker's send queue on transport id (nil when that
// transport has none); what is reserved goes out at the worker's next
// Flush.
func (w *Worker) Sender(id transport.ID) transport.Reserver {
	s := w.sender(id)
	if s == nil {
		return nil
	}
	s.dirty = true
	return s.s
}

// UseSender makes s the worker's send queue on transport id (instead of
// the one the transport would give it); call it before the worker
// handles a packet. The worker flushes and closes it.
func (w *Worker) UseSender(id transport.ID, s transport.Sender) {
	for i := range w.senders {
		if w.senders[i].id == id {
			if w.senders[i].s != nil {
				w.senders[i].s.Close()
			}
			w.senders[i].s = s
			return
		}
	}
	w.senders = append(w.senders, senderSlot{id: id, s: s})
}

// sender is the worker's send queue on transport id, made on first use;
// nil when that transport has none.
func (w *Worker) sender(id transport.ID) *senderSlot {
	for i := range w.senders {
		if w.senders[i].id == id {
			if w.senders[i].s == nil {
				return nil
			}
			return &w.senders[i]
		}
	}
	slot := senderSlot{id: id}
	if ws, ok := w.e.cfg.Transports[id].(transport.Batched); ok {
		if s, err := ws.NewSender(); err == nil {
			slot.s = s
		}
	}
	w.senders = append(w.senders, slot)
	if slot.s == nil {
		return nil
	}
	return &w.senders[len(w.senders)-1]
}

// copyUp copies msg into an upcall buffer; nil (counted as refused)
// when it does not fit.
func (w *Worker) copyUp(msg []byte) ([]byte, *transport.Buffer) {
	buf, b, ok := w.e.cfg.UpcallBufs.Copy(msg)
	if !ok {
		w.e.stats.UpcallsRefused.Add(1)
	}
	return b, buf
}

// upcalled counts an upcall the loop took (ok) or refused: a refused
// one's buffer is released and its fence, never to be handled, marked.
func (w *Worker) upcalled(ok bool, buf *transport.Buffer, f *Fence) {
	if ok {
		w.e.stats.Upcalls.Add(1)
		return
	}
	w.e.stats.UpcallsRefused.Add(1)
	buf.Release()
	f.Done()
}

// upcallFSP hands the loop an end-to-end message the worker decrypted
// but does not finish (see FSPUpcall); pt is copied.
func (w *Worker) upcallFSP(src identity.NodeAddr, counter uint64, ce bool, pt []byte) {
	u := FSPUpcall{Src: src, Counter: counter, CE: ce, Fence: w.handOff(flowSlot(src))}
	if u.Msg, u.Buf = w.copyUp(pt); u.Buf == nil {
		u.Fence.Done()
		return
	}
	w.upcalled(w.e.cfg.Loop.FSP(u), u.Buf, u.Fence)
}

// upcallPromote tells the loop a message authenticated under src's
// pending epoch on this worker.
func (w *Worker) upcallPromote(src identity.NodeAddr, epoch session.Epoch) {
	w.upcalled(w.e.cfg.Loop.Promote(PromoteUpcall{Src: src, Epoch: epoch}), nil, nil)
}

// Clock is the worker's time for the batch in progress.
func (w *Worker) Clock() time.Time { return w.clock() }

// Flush implements transport.DataWorker: the batch's sends go out.
func (w *Worker) Flush() {
	w.now = time.Time{}
	w.flushQueues()
}

// flushQueues writes what the worker holds: its TUN batch, its sends.
func (w *Worker) flushQueues() {
	w.flushTUN()
	for i := range w.senders {
		if s := &w.senders[i]; s.dirty {
			s.dirty = false
			s.s.Flush()
		}
	}
}

// Close implements transport.DataWorker.
func (w *Worker) Close() {
	if w.closed {
		return
	}
	w.closed = true
	w.Flush()
	for i := range w.senders {
		if s := w.senders[i].s; s != nil {
			s.Close()
		}
	}
	w.e.aqmMu.Lock()
	delete(w.e.aqms, w.aqm)
	w.e.aqmEnded += w.aqm.Drops.Load()
	w.e.aqmMu.Unlock()
	w.e.workers.Add(-1)
}

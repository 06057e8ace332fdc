// Package mesh is the in-process mesh harness: many complete node Cores —
// real link layer, real crypto — joined by simulated links with latency,
// loss and failures, on a simulated clock, deterministic for a seed. A
// 1,000-node mesh runs in seconds without root or sockets.
//
// Time only moves inside Run/RunUntil: packets are delivered and nodes
// ticked in time order from one event queue, so a test is reproducible
// and never sleeps.
package mesh

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
)

// Options configure a Net.
type Options struct {
	Seed         uint64
	TickInterval time.Duration // default 1 s
	Peer         peer.Config   // default peer.DefaultConfig()
	Log          *slog.Logger  // default: discard
	// Route and Session configure every node's router and session table
	// (zero: their defaults).
	Route   route.Config
	Session session.Config
	// MaxQueued bounds packets in flight; beyond it sends are dropped and
	// counted (a runaway protocol must not eat the test's memory).
	MaxQueued int // default 1,000,000
	// Start is the simulated wall-clock start (default 2026-01-01 UTC).
	Start time.Time
	// Core, when set, adjusts each node's options before its Core is
	// built (per-node routing rules, bloom schedules); index is the
	// node's Index.
	Core func(index int, o *node.CoreOptions)
	// TickAtStart, when set and true for a node's index, ticks that node
	// first the moment it is added, then every TickInterval (upstream's
	// event loop: a tokio interval, whose first tick fires at once).
	// Otherwise first ticks are staggered at random across the interval.
	TickAtStart func(index int) bool
}

// Net is a simulated network of nodes.
type Net struct {
	opts   Options
	now    time.Time
	rng    *rand.Rand
	nodes  []*Node
	byAddr map[transport.Addr]*Node
	links  map[[2]int]*Link
	events eventQueue
	seq    uint64

	// Counters.
	Sent, Delivered, Dropped, Overflow uint64
	// SentBytes is the size of every packet handed to a link (lost
	// ones included).
	SentBytes uint64

	trace hash.Hash64 // every delivery, in order: replays must match
}

// Node is one simulated node.
type Node struct {
	Index int
	Addr  transport.Addr
	ID    *identity.Identity
	Core  *node.Core
	net   *Net
	down  bool
	// MTU is this node's transport MTU (default 1280): the link MTU of
	// everything it sends, and its transport_mtu().
	MTU int
	// Received holds the datagrams delivered to this node, in order
	// (bounded by MaxReceived; the overflow is counted).
	Received        []Datagram
	ReceivedDropped uint64
	// SentPackets and SentBytes count what this node handed to its links.
	SentPackets, SentBytes uint64
	// Capture, when set, takes every packet this node sends instead of
	// the simulated links (allocation tests and benchmarks hand packets
	// from Core to Core themselves). pkt is valid only during the call.
	Capture func(to transport.Addr, pkt []byte)
	// wakeAt is the pending evWake's time, zero when none.
	wakeAt time.Time
}

// Datagram is one delivered DataPacket.
type Datagram struct {
	At               time.Time
	Src              identity.NodeAddr
	SrcPort, DstPort uint16
	Payload          []byte
	CE               bool
}

// MaxReceived bounds Node.Received.
const MaxReceived = 100_000

// Link is a bidirectional simulated link.
type Link struct {
	A, B    *Node
	Latency time.Duration
	Loss    float64 // per packet, each direction
	up      bool
}

// New makes an empty network.
func New(o Options) *Net {
	if o.TickInterval <= 0 {
		o.TickInterval = time.Second
	}
	if o.Peer == (peer.Config{}) {
		o.Peer = peer.DefaultConfig()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 1_000_000
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Net{opts: o, now: o.Start, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x51ed2701)),
		byAddr: map[transport.Addr]*Node{}, links: map[[2]int]*Link{}, trace: fnv.New64a()}
}

// Trace is a digest of every packet delivered so far, with its time,
// source and destination: two runs with the same seed and script must
// produce the same value.
func (n *Net) Trace() uint64 { return n.trace.Sum64() }

// Now is the simulated time.
func (n *Net) Now() time.Time { return n.now }

// Elapsed is the simulated time since the start.
func (n *Net) Elapsed() time.Duration { return n.now.Sub(n.opts.Start) }

// Nodes returns every node.
func (n *Net) Nodes() []*Node { return n.nodes }

// rngReader adapts the net's generator for keys, epochs and indices.
type rngReader struct{ r *rand.Rand }

func (s rngReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(s.r.Uint32())
	}
	return len(b), nil
}

// AddNode adds a node with a key drawn from the seed.
func (n *Net) AddNode() *Node {
	id, err := identity.Generate(rngReader{n.rng})
	if err != nil {
		panic(err)
	}
	return n.AddNodeWithIdentity(id)
}

// AddNodes adds k nodes.
func (n *Net) AddNodes(k int) []*Node {
	out := make([]*Node, k)
	for i := range out {
		out[i] = n.AddNode()
	}
	return out
}

// AddNodeWithIdentity adds a node with the given identity.
func (n *Net) AddNodeWithIdentity(id *identity.Identity) *Node {
	i := len(n.nodes)
	ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
	nd := &Node{Index: i, Addr: transport.AddrFromIP(netip.AddrPortFrom(ip, 2121)), ID: id, net: n, MTU: 1280}
	co := node.CoreOptions{Identity: id, Peer: n.opts.Peer, Log: n.opts.Log.With("node", i),
		Route: n.opts.Route, Session: n.opts.Session, Rand: rngReader{n.rng}, Deliver: nd.deliver, TransportMTU: func() int { return nd.MTU }}
	if n.opts.Core != nil {
		n.opts.Core(i, &co)
	}
	core, err := node.NewCore(n.now, co, nd)
	if err != nil {
		panic(err)
	}
	nd.Core = core
	n.nodes = append(n.nodes, nd)
	n.byAddr[nd.Addr] = nd
	// Stagger first ticks across the interval, as real nodes start at
	// different moments.
	first := time.Duration(n.rng.Int64N(int64(n.opts.TickInterval)))
	if n.opts.TickAtStart != nil && n.opts.TickAtStart(i) {
		first = 0
	}
	n.schedule(event{at: n.now.Add(first), kind: evTick, to: nd})
	return nd
}

func linkKey(a, b *Node) [2]int {
	if a.Index > b.Index {
		a, b = b, a
	}
	return [2]int{a.Index, b.Index}
}

// Connect creates an up link and configures each node as the other's
// static peer, so both dial at once.
func (n *Net) Connect(a, b *Node, latency time.Duration, loss float64) *Link {
	if a == b {
		panic("mesh: self link")
	}
	l := &Link{A: a, B: b, Latency: latency, Loss: loss, up: true}
	n.links[linkKey(a, b)] = l
	for _, pair := range [][2]*Node{{a, b}, {b, a}} {
		pair[0].Core.Peers().AddStatic(n.now, peer.StaticPeer{PublicKey: pair[1].ID.PublicKey(),
			Addresses: []peer.Candidate{{Transport: 1, Addr: pair[1].Addr}}, AutoReconnect: true})
	}
	return l
}

// Link returns the link between a and b, or nil.
func (n *Net) Link(a, b *Node) *Link { return n.links[linkKey(a, b)] }

// Links returns every link.
func (n *Net) Links() []*Link {
	out := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		out = append(out, l)
	}
	return out
}

// SetUp raises or cuts the link; packets already in flight still arrive.
func (l *Link) SetUp(up bool) { l.up = up }

// Up reports whether the link carries packets.
func (l *Link) Up() bool { return l.up }

// Crash stops a node: it neither sends nor receives nor ticks.
func (nd *Node) Crash() { nd.down = true }

// Send implements node.Env: the packet crosses the link to its
// destination after the link's latency, unless lost.
func (nd *Node) Send(_ transport.ID, to transport.Addr, pkt []byte) error {
	if nd.Capture != nil {
		nd.Capture(to, pkt)
		return nil
	}
	n := nd.net
	dst := n.byAddr[to]
	if nd.down || dst == nil {
		return fmt.Errorf("mesh: no node at %s", to)
	}
	l := n.links[linkKey(nd, dst)]
	if l == nil {
		return fmt.Errorf("mesh: no link %d-%d", nd.Index, dst.Index)
	}
	n.Sent++
	n.SentBytes += uint64(len(pkt))
	nd.SentPackets++
	nd.SentBytes += uint64(len(pkt))
	if !l.up || (l.Loss > 0 && n.rng.Float64() < l.Loss) {
		n.Dropped++
		return nil
	}
	if len(n.events) >= n.opts.MaxQueued {
		n.Overflow++
		return nil
	}
	n.schedule(event{at: n.now.Add(l.Latency), kind: evPacket, from: nd, to: dst, pkt: append([]byte(nil), pkt...)})
	return nil
}

// LinkMTU implements node.Env.
func (nd *Node) LinkMTU(transport.ID, transport.Addr) int { return nd.MTU }

// AcceptConnections implements node.Env.
func (nd *Node) AcceptConnections(transport.ID) bool { return true }

// CloseConnection implements node.Env.
func (nd *Node) CloseConnection(transport.ID, transport.Addr) {}

// Run advances the clock by d, delivering packets and ticking nodes in
// time order.
func (n *Net) Run(d time.Duration) {
	end := n.now.Add(d)
	for len(n.events) > 0 && !n.events[0].at.After(end) {
		n.step()
	}
	n.now = end
}

// RunUntil runs until cond holds (checked after every simulated tick
// interval) or max passes; it returns the simulated time taken.
func (n *Net) RunUntil(cond func() bool, max time.Duration) (time.Duration, bool) {
	start := n.now
	for {
		if cond() {
			return n.now.Sub(start), true
		}
		if n.now.Sub(start) >= max {
			return n.now.Sub(start), false
		}
		n.Run(n.opts.TickInterval / 4)
	}
}

func (n *Net) step() {
	e := heap.Pop(&n.events).(event)
	n.now = e.at
	switch e.kind {
	case evTick:
		if !e.to.down {
			e.to.Core.Tick(n.now)
		}
		n.schedule(event{at: n.now.Add(n.opts.TickInterval), kind: evTick, to: e.to})
		n.scheduleWake(e.to)
	case evWake:
		if !e.at.Equal(e.to.wakeAt) {
			return // superseded by an earlier one
		}
		e.to.wakeAt = time.Time{}
		if !e.to.down {
			e.to.Core.Wake(n.now)
		}
		n.scheduleWake(e.to)
	case evPacket:
		if e.to.down {
			n.Dropped++
			return
		}
		n.Delivered++
		var rec [16]byte
		binary.LittleEndian.PutUint64(rec[:], uint64(n.now.UnixNano()))
		binary.LittleEndian.PutUint32(rec[8:], uint32(e.from.Index))
		binary.LittleEndian.PutUint32(rec[12:], uint32(e.to.Index))
		n.trace.Write(rec[:])
		n.trace.Write(e.pkt)
		e.to.Core.HandlePacket(n.now, 1, e.from.Addr, e.pkt)
		// The daemon hands HandlePacket pooled buffers it reuses at once:
		// scribble over this one so any state that kept a reference to
		// it shows up as a failure in every mesh test.
		for i := range e.pkt {
			e.pkt[i] = 0xA5
		}
		n.scheduleWake(e.to)
	}
}

// scheduleWake queues an evWake for the moment nd's core asked for,
// unless one at or before it is queued.
func (n *Net) scheduleWake(nd *Node) {
	at, ok := nd.Core.NextWake()
	if !ok || nd.down {
		return
	}
	if at.Before(n.now) {
		at = n.now
	}
	if !nd.wakeAt.IsZero() && !at.Before(nd.wakeAt) {
		return
	}
	nd.wakeAt = at
	n.schedule(event{at: at, kind: evWake, to: nd})
}

const (
	evTick = iota
	evPacket
	evWake
)

type event struct {
	at       time.Time
	seq      uint64
	kind     int
	from, to *Node
	pkt      []byte
}

func (n *Net) schedule(e event) {
	n.seq++
	e.seq = n.seq
	heap.Push(&n.events, e)
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func (nd *Node) deliver(now time.Time, src identity.NodeAddr, srcPort, dstPort uint16, payload []byte, ce bool) {
	if len(nd.Received) >= MaxReceived {
		nd.ReceivedDropped++
		return
	}
	nd.Received = append(nd.Received, Datagram{At: now, Src: src, SrcPort: srcPort, DstPort: dstPort,
		Payload: append([]byte(nil), payload...), CE: ce})
}

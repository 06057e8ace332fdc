package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/history"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/native"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/rendezvous/lan"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/tree"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane"
	"github.com/fips-go/fips/dataplane/xdp"
)

// State is the node lifecycle state as show_status reports it.
type State string

// Node states (upstream names).
const (
	StateCreated  State = "created"
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateDegraded State = "degraded"
	StateDraining State = "draining"
	StateFailed   State = "failed"
	StateStopping State = "stopping"
	StateStopped  State = "stopped"
)

// StaticPeer is a configured peer with unresolved addresses.
type StaticPeer struct {
	PublicKey     identity.PublicKey
	Alias         string
	Addresses     []PeerAddress
	AutoReconnect bool
	// WireFormat is peers[].wire_format (peer.WireDefault: as the node).
	WireFormat peer.WireFormat
}

// PeerAddress is one configured address: a transport selector ("udp",
// "tcp", "udp/<instance>") and an address string.
type PeerAddress struct {
	Transport string
	Addr      string
	Priority  int
}

// Options configure a Node.
type Options struct {
	Identity       *identity.Identity
	IdentitySource identity.Source
	Persistent     bool
	Peer           peer.Config
	Transports     []transport.Transport
	StaticPeers    []StaticPeer
	ACL            *peer.ACL
	TickInterval   time.Duration // default 1 s
	QueueSize      int           // receive queue bound; default 1024
	DrainTimeout   time.Duration // shutdown drain; default 2 s
	Version        string
	ControlSocket  string
	LeafOnly       bool
	Log            *slog.Logger
	// ECNLoss and ECNETX are the congestion thresholds (node.ecn); zero
	// means upstream's 0.05 and 3.0.
	ECNLoss, ECNETX float64
	// Subsystem settings from fips.yaml; zero values mean upstream's
	// defaults (see CoreOptions).
	Tree              tree.Config
	Bloom             bloom.Config
	Route             route.Config
	Session           session.Config
	SessionMMP        mmp.Config
	IdentityCacheSize int
	// TUN enables the IPv6 adapter on a TUN device (tun.enabled).
	TUN TUNOptions
	// Resolve, when set, replaces the transports' ResolveAddr for static
	// peers' addresses (tests inject names that resolve only later).
	Resolve func(ctx context.Context, t transport.Transport, addr string) (transport.Addr, error)
	// HostName names a node from the hosts file (/etc/fips/hosts), for
	// display names; nil: no hosts file. It is called from any goroutine.
	HostName func(identity.NodeAddr) (string, bool)
	// Dataplane is dataplane.* (zero: userspace, no BPF).
	Dataplane DataplaneOptions
	// StatsHistoryPeers bounds the peers the stats history keeps rings
	// for (0: history.DefaultMaxPeers).
	StatsHistoryPeers int
	// Rendezvous is Nostr discovery and NAT traversal (zero: off).
	Rendezvous RendezvousOptions
	// LAN is mDNS LAN rendezvous (zero: off).
	LAN LANOptions
	// NativeAPI is the native datagram API (node.native_api; zero: off).
	NativeAPI NativeAPIOptions
}

// TUNOptions are tun.* from fips.yaml.
type TUNOptions struct {
	Enabled bool
	Name    string // fips0
	MTU     int    // 1280
	// Open, when set, replaces the OS's adapter (dataplane/tun or
	// fallback/tun): an embedder's own device, or a test's.
	Open dataplane.TUNOpenerFunc
}

// Node is a running node.
type Node struct {
	opts  Options
	log   *slog.Logger
	id    *identity.Identity
	core  *Core
	peers *peer.Manager // core.Peers()

	transports map[transport.ID]transport.Transport
	order      []transport.ID
	// queues are the loop's own send queues on the transports that give
	// it one (transport.Batched), flushed once per burst; dirty
	// lists those with something queued (loop only).
	queues map[transport.ID]transport.Sender
	dirty  []transport.Sender

	rx       chan rxItem
	requests chan request
	rxDrops  atomic.Uint64
	// stopped is closed when the event loop has returned: readers blocked
	// on a full queue give up then.
	stopped chan struct{}
	// aqm bounds the receive path's queueing delay (loop-owned).
	aqm *dataplane.CoDel
	// outerCE counts packets the loop received with outer CE.
	outerCE atomic.Uint64

	state   atomic.Value // State
	snap    atomic.Pointer[Snapshot]
	started time.Time

	runOnce sync.Once

	probeTab *probeTable
	// localLimits fills show_status' local_limits (SetLocalLimits).
	localLimits atomic.Pointer[func(*ctl.LocalLimits)]

	// kernelDrops is each transport's KernelDrops at the last tick;
	// dropping marks the transports whose count grew since (touched on
	// the loop only).
	kernelDrops map[transport.ID]uint64
	dropping    map[transport.ID]bool
	dropEvents  uint64

	tun            *dataplane.TUN
	tunName        string
	tunState       string // disabled|configured|active|failed
	tunIn          chan dataplane.TUNUpcall
	tunAQM         *dataplane.CoDel // the TUN read path's queueing delay (loop-owned)
	tunDrops       atomic.Uint64
	tunWriteErrors uint64
	tunIndex       atomic.Int64 // fips0's interface index once up, 0 before
	// bg tracks goroutines the node starts besides Run's own (the probe
	// driver, static-peer resolutions); Run waits for them before it
	// returns.
	bg sync.WaitGroup
	// runCtx is Run's context once running (static-peer resolutions end
	// with it); set before the loop starts, read on the loop.
	runCtx context.Context
	// aliases and staticNpubs are the configured peers' aliases and
	// npubs by address (display names); fixed after New.
	aliases     map[identity.NodeAddr]string
	staticNpubs map[identity.NodeAddr]string
	// neighbours is pollDiscovery's scratch buffer (loop goroutine only).
	neighbours []transport.Neighbour
	// seeded are the nodes a probe named by their short npub, at most
	// as many as the identity cache holds keys.
	seeded seededNames
	// xdp is the XDP program once attached (nil in userspace); dataplane
	// says which mode runs and why (set by Run before the loop starts).
	xdp       atomic.Pointer[xdp.Plane]
	dataplane ctl.DataplaneView

	// eng is the dataplane engine (nil: dataplane.engine off); fwdWant
	// are destinations the loop forwarded since the last publication,
	// routesDirty says the forwarding table may be stale (loop only).
	eng           *dataplane.Engine
	fwdWant       map[identity.NodeAddr]struct{}
	routesDirty   bool
	routesRefused uint64
	routesExpired uint64
	// fences are the workers' ordering fences of the datagrams handled in
	// this burst, released once its sends are flushed (loop only).
	fences []*dataplane.Fence
	// hist is the stats history, sampled on the tick (loop-owned);
	// histPeers is the tick's reused sample buffer.
	hist      *history.History
	histPeers []history.PeerSample
	// rdv is Nostr rendezvous state (loop-owned); nil when off.
	rdv *rendezvousState
	// lan is mDNS rendezvous once started (set on the loop's goroutine
	// before the loop runs).
	lan *lan.LAN
	// lanDials paces handshakes to peers found on the LAN that nobody
	// configured (loop-owned); lanDialLimited counts its refusals.
	lanDials       ratelimit.Bucket
	lanDialLimited uint64
	// beaconDials paces handshakes to peers found by Ethernet beacons
	// that nobody configured (loop-owned).
	beaconDials ratelimit.Bucket
	// native is the native API's registry (loop-owned), nativeOut the
	// datagrams its clients wrote, nativeSrv its socket (nil when off),
	// nativeMax the payload limit flows report.
	native    *native.Registry
	nativeOut chan native.Outbound
	nativeSrv *native.Server
	nativeMax atomic.Uint32
}

type request struct {
	f    func(now time.Time) any
	resp chan any
}

// ErrShuttingDown is returned by Do once the loop has stopped.
var ErrShuttingDown = errors.New("node shutting down")

// New builds a node; Run starts it.
func New(o Options) (*Node, error) {
	if o.Identity == nil {
		return nil, errors.New("node: no identity")
	}
	if o.TickInterval <= 0 {
		o.TickInterval = time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	n := &Node{
		opts: o, log: logging.WithTarget(o.Log, "fips::node"), id: o.Identity,
		transports: map[transport.ID]transport.Transport{},
		rx:         make(chan rxItem, o.QueueSize),
		stopped:    make(chan struct{}), aqm: dataplane.NewCoDel(),
		requests:    make(chan request),
		probeTab:    &probeTable{jobs: map[uint64]*probeJob{}, next: 1},
		kernelDrops: map[transport.ID]uint64{}, dropping: map[transport.ID]bool{},
		tunIn: make(chan dataplane.TUNUpcall, o.QueueSize), tunAQM: dataplane.NewCoDel(), tunState: "disabled",
		hist: history.New(history.Config{MaxPeers: o.StatsHistoryPeers, TickInterval: o.TickInterval}),
	}
	n.dataplane = ctl.DataplaneView{Mode: ctl.DataplaneUserspace, Configured: o.Dataplane.Mode, Reason: "not started", Interfaces: []ctl.XDPInterface{},
		TC: ctl.TCView{Reason: "not started", Interfaces: []ctl.TCInterface{}}, AFXDP: ctl.AFXDPView{Reason: "not started"}}
	n.aliases, n.staticNpubs = map[identity.NodeAddr]string{}, map[identity.NodeAddr]string{}
	for _, sp := range o.StaticPeers {
		a := sp.PublicKey.NodeAddr()
		n.staticNpubs[a] = sp.PublicKey.Npub()
		if sp.Alias != "" {
			n.aliases[a] = sp.Alias
		}
	}
	for _, t := range o.Transports {
		if _, dup := n.transports[t.ID()]; dup {
			return nil, fmt.Errorf("node: duplicate transport id %d", t.ID())
		}
		n.transports[t.ID()] = t
		n.order = append(n.order, t.ID())
	}
	core, err := NewCore(time.Now(), CoreOptions{Identity: o.Identity, Peer: o.Peer, ACL: o.ACL, Log: o.Log,
		ECNLoss: o.ECNLoss, ECNETX: o.ECNETX, TransportMTU: n.transportMTU, OnForward: n.forwarded,
		TransportCongested: func(id transport.ID) bool { return n.dropping[id] },
		Tree:               o.Tree, Bloom: o.Bloom, Route: o.Route, Session: o.Session, SessionMMP: o.SessionMMP,
		IdentityCacheSize: o.IdentityCacheSize, Name: n.displayName, Deliver: n.nativeDeliver}, n)
	if err != nil {
		return nil, err
	}
	n.core, n.peers = core, core.Peers()
	n.initNative()
	n.seeded.max = core.ids.max
	if !o.Dataplane.NoEngine {
		n.eng = dataplane.New(dataplane.Config{Self: o.Identity.NodeAddr(), Links: n.peers, Loop: inbox{n},
			UpcallBufs: transport.NewBufferPool(wire.FMPHeaderSize + 65535), Transports: n.transports,
			SessionTTL: core.Router().Config().SessionTTL})
		n.fwdWant = map[identity.NodeAddr]struct{}{}
	}
	n.state.Store(StateCreated)
	n.publish(time.Now())
	return n, nil
}

// State is the current lifecycle state.
func (n *Node) State() State { return n.state.Load().(State) }

// Snapshot is the last published view of the node.
func (n *Node) Snapshot() *Snapshot { return n.snap.Load() }

// liveAge is how old a snapshot LiveSnapshot still serves.
const liveAge = 50 * time.Millisecond

// LiveSnapshot is Snapshot brought up to date first when it is older
// than 50 ms: the dataplane workers count packets the loop never sees, so
// a published view can lag by a tick. It asks the loop to publish (within
// a second, else the last view is returned). Never call it from the loop.
func (n *Node) LiveSnapshot() *Snapshot {
	s := n.snap.Load()
	if s != nil && time.Since(s.At) < liveAge {
		return s
	}
	switch n.State() {
	case StateRunning, StateDegraded:
	default:
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := n.Do(ctx, func(now time.Time) any {
		n.publish(now)
		return nil
	}); err != nil {
		return n.snap.Load()
	}
	return n.snap.Load()
}

// Identity is the node's identity.
func (n *Node) Identity() *identity.Identity { return n.id }

// Run starts the transports and runs the event loop until ctx ends, then
// sends Disconnect to every peer, drains and closes the transports. It
// returns an error only when the node could not start.
func (n *Node) Run(ctx context.Context) error {
	first := false
	n.runOnce.Do(func() { first = true })
	if !first {
		return errors.New("node: Run called twice")
	}
	n.state.Store(StateStarting)
	n.started = time.Now()
	up := 0
	var failed []string
	lc := logging.WithTarget(n.log, "fips::node::lifecycle")
	// Transports outlive ctx: shutdown still needs them to send Disconnect.
	tctx, stopTransports := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTransports()
	n.startEngine()
	for _, id := range n.order {
		t := n.transports[id]
		if err := t.Start(tctx, n.deliver); err != nil {
			// Upstream's line: transport_type, name when the instance has
			// one, error.
			args := []any{"transport_type", t.Type()}
			if t.Name() != "" {
				args = append(args, "name", t.Name())
			}
			lc.Warn("Transport failed to start", append(args, "error", err)...)
			failed = append(failed, describe(t))
			continue
		}
		up++
		n.addQueue(t)
		n.log.Info("transport up", "transport", describe(t), "local_addr", t.LocalAddr(), "mtu", t.MTU())
	}
	if up > 0 {
		lc.Info("Transports initialized", "count", up)
	}
	if up == 0 {
		lc.Warn("Node start failed: no operational transports came up; tearing down partially-started children")
		n.state.Store(StateFailed)
		n.publish(time.Now())
		n.closeTransports()
		return errors.New("no operational transports")
	}
	if err := n.startDataplane(); err != nil {
		n.log.Error("dataplane failed to start", "error", err)
		n.state.Store(StateFailed)
		n.publish(time.Now())
		n.closeTransports()
		return err
	}
	if up < len(n.order) {
		n.state.Store(StateDegraded)
		lc.Warn("Node started DEGRADED: one or more configured optional children failed to start",
			"degraded_children", fmt.Sprintf("%v", failed))
	} else {
		n.state.Store(StateRunning)
	}
	// Upstream's four lines, which its harness waits for ("Node
	// started"); the first carries the identity as fields too.
	lc.Info("Node started:", "npub", n.id.Npub(), "node_addr", n.id.NodeAddr().String(),
		"address", n.id.IPv6().String(), "state", string(n.State()), "leaf_only", n.opts.LeafOnly)
	lc.Info("       state: " + string(n.State()))
	lc.Info(fmt.Sprintf("  transports: %d", up))
	lc.Info(fmt.Sprintf(" connections: %d", n.peers.PeerCount()))
	logging.WithTarget(n.log, logging.DefaultTarget).Info("FIPS running")

	if n.opts.TUN.Enabled {
		n.startTUN()
	}
	n.runCtx = ctx
	now := time.Now()
	for _, sp := range n.opts.StaticPeers {
		n.addStatic(now, sp)
	}
	n.initRendezvous(tctx)
	n.startLAN()
	n.startNative()
	n.flushSends()
	n.publish(now)
	logging.WithTarget(n.log, "fips::node::dataplane::rx_loop").Info("RX event loop started")
	n.loop(ctx)
	logging.WithTarget(n.log, logging.DefaultTarget).Info("RX loop exited")
	close(n.stopped)
	n.stopNative()
	n.shutdown()
	n.bg.Wait()
	return nil
}

func (n *Node) loop(ctx context.Context) {
	tick := time.NewTicker(n.opts.TickInterval)
	defer tick.Stop()
	// wake fires when the core asked for it between ticks (a filter
	// whose debounce passes); wakeAt is its deadline, zero when unset.
	wake := time.NewTimer(time.Hour)
	wake.Stop()
	defer wake.Stop()
	var wakeAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-wake.C:
			wakeAt = time.Time{}
			n.core.Wake(now)
		case it := <-n.rx:
			now := time.Now()
			n.receive(now, it)
			// Drain what is queued before republishing: one snapshot per
			// burst, not per packet.
			for more := true; more; {
				select {
				case it := <-n.rx:
					n.receive(now, it)
				default:
					more = false
				}
			}
			n.publishIfChanged(now)
			n.routesDirty = true
		case p := <-n.tunIn:
			now := time.Now()
			n.sendIPv6(now, p)
			// A TUN read hands over a burst (one offloaded super-packet
			// split in many): take what is queued, so its datagrams leave
			// in one flush.
			for more := true; more; {
				select {
				case p := <-n.tunIn:
					n.sendIPv6(now, p)
				default:
					more = false
				}
			}
		case now := <-tick.C:
			n.sampleKernelDrops()
			n.core.Tick(now)
			n.pollDiscovery(now)
			n.publishRoutes(now, true)
			n.publishLocal(true)
			n.recordHistory(now)
			n.rdvTick(now)
			n.native.Expire(now)
			n.updateNativeMax()
			n.publish(now)
		case o := <-n.nativeOut:
			now := time.Now()
			n.sendNative(now, o)
			for more := true; more; {
				select {
				case o := <-n.nativeOut:
					n.sendNative(now, o)
				default:
					more = false
				}
			}
		case r := <-n.requests:
			now := time.Now()
			r.resp <- r.f(now)
			n.routesDirty = true
			n.publish(now)
		}
		n.publishRoutes(time.Now(), false)
		n.publishLocal(false)
		n.flushSends()
		n.flushTUN()
		n.releaseFences()
		if at, ok := n.core.NextWake(); ok && (wakeAt.IsZero() || at.Before(wakeAt)) {
			wakeAt = at
			wake.Reset(max(time.Until(at), 0))
		}
	}
}

// receive hands one packet to the core, unless queue management drops
// it: only established frames (data and link control alike, as a router
// drops), never handshakes.
func (n *Node) receive(now time.Time, it rxItem) {
	if it.kind != rxPacket {
		n.handleUpcall(now, it)
		return
	}
	p := it.p
	if p.Arrived != 0 && len(p.Data) > 0 && wire.PacketPhase(p.Data) == wire.FMPPhaseEstablished &&
		n.aqm.Drop(now, now.Sub(time.Unix(0, p.Arrived))) {
		p.Buf.Release()
		return
	}
	if n.rdv != nil && len(p.Data) > 0 && !n.peers.AcceptsVersion(wire.PacketVersion(p.Data)) {
		n.rdvProtocolMismatch(now, p.Transport, wire.PacketVersion(p.Data))
	}
	if p.CE && wire.IsEstablishedFrameAny(p.Data) {
		n.outerCE.Add(1)
	}
	n.core.HandlePacketECN(now, p.Transport, p.From, p.Data, p.CE)
	p.Buf.Release() // HandlePacket retains nothing of Data
}

// sendIPv6 sends one packet read from the TUN device, unless queue
// management drops it: the sender's own standing queue (the loop behind
// the device) is bounded like a relay's, so the local TCP backs off.
func (n *Node) sendIPv6(now time.Time, p dataplane.TUNUpcall) {
	if p.Fence != nil {
		n.fences = append(n.fences, p.Fence)
	}
	if !n.tunAQM.Drop(now, now.Sub(time.Unix(0, p.Read))) {
		n.core.SendIPv6(now, p.Pkt)
	}
	p.Buf.Release() // SendIPv6 does not retain the packet
}

// flushSends sends what the burst queued on batching transports.
func (n *Node) flushSends() {
	for _, b := range n.dirty {
		b.Flush()
	}
	clear(n.dirty)
	n.dirty = n.dirty[:0]
}

// Do runs f on the event loop and returns its result.
func (n *Node) Do(ctx context.Context, f func(now time.Time) any) (any, error) {
	r := request{f: f, resp: make(chan any, 1)}
	select {
	case n.requests <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case v := <-r.resp:
		return v, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *Node) shutdown() {
	n.state.Store(StateDraining)
	now := time.Now()
	lc := logging.WithTarget(n.log, "fips::node::lifecycle")
	logging.WithTarget(n.log, logging.DefaultTarget).Info("FIPS shutting down")
	lc.Info("Node draining", "state", string(StateDraining))
	if sent, total := n.peers.Shutdown(now); total > 0 {
		lc.Info("Sent disconnect notifications", "sent", sent, "total", total, "reason", wire.DisconnectShutdown.String())
	} else {
		lc.Debug("No sendable peers for disconnect notification", "total_peers", 0)
	}
	n.flushSends() // the Disconnects
	if n.rdv != nil {
		n.rdv.svc.Close()
	}
	n.publish(now)
	// Packets already handed to transports are flushed by Close; TCP
	// writers get DrainTimeout to empty their queues.
	done := make(chan struct{})
	go func() {
		n.closeTransports()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(n.opts.DrainTimeout):
		n.log.Warn("transports did not close within the drain timeout", "timeout", n.opts.DrainTimeout)
		<-done
	}
	n.stopDataplane()
	if n.tun != nil {
		lc.Info("Shutting down TUN interface", "name", n.tunName)
		if err := n.tun.Close(); err != nil { // the policy rule (Linux) or route (Windows) first
			lc.Warn("Failed to shutdown TUN interface", "name", n.tunName, "error", err)
		}
	}
	n.state.Store(StateStopped)
	n.publish(time.Now())
	lc.Info("Node stopped", "state", string(StateStopped))
}

// closeTransports closes every transport, logging upstream's per-transport
// teardown line (transport_id, transport_type).
func (n *Node) closeTransports() {
	lc := logging.WithTarget(n.log, "fips::node::lifecycle")
	for _, id := range n.order {
		t := n.transports[id]
		wasUp := t.State() == transport.StateUp
		if err := t.Close(); err != nil {
			lc.Warn("Transport stop failed", "transport_id", uint32(id), "transport_type", t.Type(), "error", err)
			continue
		}
		if wasUp { // one that never started is not reported stopped
			lc.Info("Transport stopped", "transport_id", uint32(id), "transport_type", t.Type())
		}
	}
}

// deliver is the transports' hand-off into the loop. A full queue
// blocks the reader until the loop takes the packet, so a burst (a GRO
// run of 64 datagrams, many in a row) waits in the kernel's socket
// buffer instead of being dropped here: overload then shows as the
// transport's kernel_drops, and TCP inside the mesh sees delay where it
// would have seen loss. Once the loop has stopped, packets are refused
// and counted.
func (n *Node) deliver(p transport.Packet) bool { return n.enqueue(rxItem{p: p}) }

// enqueue puts it on the receive queue, blocking while the queue is full
// (see deliver); false, counted, once the loop has stopped.
func (n *Node) enqueue(it rxItem) bool {
	select {
	case n.rx <- it:
		return true
	default:
	}
	select {
	case n.rx <- it:
		return true
	case <-n.stopped:
		n.rxDrops.Add(1)
		return false
	}
}

func describe(t transport.Transport) string {
	if t.Name() != "" {
		return t.Type() + "/" + t.Name()
	}
	return t.Type()
}

// --- peer.Env ---

// addQueue gives the loop a send queue of its own on t, if t has them:
// what the loop sends in a burst leaves in one batch (UDP: one sendmmsg,
// runs as GSO messages).
func (n *Node) addQueue(t transport.Transport) {
	ws, ok := t.(transport.Batched)
	if !ok {
		return
	}
	s, err := ws.NewSender()
	if err != nil {
		n.log.Warn("transport gives the loop no send queue: sending one packet per call", "transport", describe(t), "error", err)
		return
	}
	if n.queues == nil {
		n.queues = map[transport.ID]transport.Sender{}
	}
	n.queues[t.ID()] = s
}

// removeQueue flushes and drops the loop's send queue on id.
func (n *Node) removeQueue(id transport.ID) {
	q := n.queues[id]
	if q == nil {
		return
	}
	delete(n.queues, id)
	if i := slices.Index(n.dirty, q); i >= 0 {
		n.dirty = slices.Delete(n.dirty, i, i+1)
	}
	q.Close()
}

// Send implements peer.Env: through the loop's send queue on the
// transport when it has one (sent at the burst's flush), else at once.
func (n *Node) Send(id transport.ID, to transport.Addr, pkt []byte) error {
	if q := n.SendQueue(id); q != nil {
		b, err := q.Reserve(to, len(pkt))
		if err != nil {
			return err
		}
		copy(b, pkt)
		return nil
	}
	t := n.transports[id]
	if t == nil {
		return fmt.Errorf("no transport %d", id)
	}
	return t.Send(to, pkt)
}

// SendQueue implements peer.FrameReserver: frames for a batching
// transport are sealed into its send queue, flushed at the end of the
// burst.
func (n *Node) SendQueue(id transport.ID) transport.Reserver {
	q := n.queues[id]
	if q == nil {
		return nil
	}
	if !slices.Contains(n.dirty, q) {
		n.dirty = append(n.dirty, q)
	}
	return q
}

// LinkMTU implements peer.Env.
func (n *Node) LinkMTU(id transport.ID, to transport.Addr) int {
	if t := n.transports[id]; t != nil {
		return t.LinkMTU(to)
	}
	return 0
}

// AcceptConnections implements peer.Env.
func (n *Node) AcceptConnections(id transport.ID) bool {
	t := n.transports[id]
	return t != nil && t.AcceptConnections()
}

// LinkAuthenticated implements peer's optional Env hook: a link was
// authenticated at to, so a connection-oriented transport stops holding
// that connection to its unauthenticated deadline.
func (n *Node) LinkAuthenticated(id transport.ID, to transport.Addr) {
	if a, ok := n.transports[id].(interface{ Authenticated(transport.Addr) }); ok {
		a.Authenticated(to)
	}
}

// LinkRejected implements peer's optional Env hook: a packet from `from`
// was invalid, so a connection-oriented transport closes that
// connection unless a link authenticated on it.
func (n *Node) LinkRejected(id transport.ID, from transport.Addr) {
	if r, ok := n.transports[id].(interface{ Rejected(transport.Addr) }); ok {
		r.Rejected(from)
	}
}

// CloseConnection implements peer.Env.
func (n *Node) CloseConnection(id transport.ID, to transport.Addr) {
	if t := n.transports[id]; t != nil {
		t.CloseConnection(to)
	}
}

// pid is reported by show_status.
func pid() int { return os.Getpid() }

// transportMTU is upstream's transport_mtu(): the smallest MTU of the
// transports that are up, else 1280.
func (n *Node) transportMTU() int {
	m := 0
	for _, id := range n.order {
		t := n.transports[id]
		if t.State() == transport.StateUp && (m == 0 || t.MTU() < m) {
			m = t.MTU()
		}
	}
	if m == 0 {
		return 1280
	}
	return m
}

// sampleKernelDrops marks transports whose kernel receive-drop counter
// grew since the last tick: upstream's sample_transport_congestion.
func (n *Node) sampleKernelDrops() {
	for _, id := range n.order {
		d := n.transports[id].Stats().KernelDrops
		grew := d > n.kernelDrops[id]
		// An event is a transition into dropping, as upstream counts
		// kernel_drop_events and logs it.
		if grew && !n.dropping[id] {
			n.dropEvents++
			logging.WithTarget(n.log, "fips::node::dataplane::forwarding").Warn(
				"Kernel recv drops first observed on transport", "transport_id", uint32(id))
		}
		n.dropping[id] = grew
		n.kernelDrops[id] = d
	}
}

// LearnIdentity records a node's key in the identity cache from another
// goroutine (the DNS responder priming it); it gives up after a second if
// the loop is busy or gone.
func (n *Node) LearnIdentity(pk identity.PublicKey) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = n.Do(ctx, func(time.Time) any {
		n.core.LearnIdentity(pk)
		return nil
	})
}

// startTUN opens the device; a failure leaves the node running degraded.
func (n *Node) startTUN() {
	name, mtu := n.opts.TUN.Name, n.opts.TUN.MTU
	if name == "" {
		name = "fips0"
	}
	if mtu <= 0 {
		mtu = 1280
	}
	cfg := dataplane.TUNConfig{Name: name, MTU: mtu, Addr: n.id.IPv6(), Log: logging.WithTarget(n.log, "fips::upper::tun")}
	if n.opts.TUN.Open != nil {
		cfg.Open = n.opts.TUN.Open
	}
	dev, err := dataplane.OpenTUN(cfg)
	if err == nil {
		err = n.runTUN(dev)
		if err != nil {
			dev.Close()
		}
	}
	lc := logging.WithTarget(n.log, "fips::node::lifecycle")
	if err != nil {
		n.tunState = "failed"
		n.state.Store(StateDegraded)
		lc.Warn("Failed to initialize TUN, continuing without it", "error", err, "name", name)
		return
	}
	n.tunIndex.Store(int64(dev.Index()))
	n.tun, n.tunName, n.tunState = dev, dev.Name(), "active"
	// Upstream's block; the first line carries the same as fields (ours).
	lc.Info("TUN device active:", "name", dev.Name(), "address", n.id.IPv6().String(), "mtu", mtu, "route", "fd00::/8")
	lc.Info("     name: " + dev.Name())
	lc.Info("  address: " + n.id.IPv6().String())
	lc.Info(fmt.Sprintf("      mtu: %d", mtu))
	lc.Info(fmt.Sprintf("effective MTU: %d bytes", n.transportMTU()-ipv6Overhead))
}

// TUNIndex is the IPv6 adapter's interface index once the device is up,
// 0 before or without one (the DNS responder drops queries arriving on it).
func (n *Node) TUNIndex() int { return int(n.tunIndex.Load()) }

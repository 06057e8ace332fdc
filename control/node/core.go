package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/tree"
	"github.com/fips-go/fips/control/wire"
)

// Env is what a Core needs from packet I/O: the node's transports, or the
// in-process mesh harness's simulated links.
type Env = peer.Env

// CoreOptions configure a Core.
type CoreOptions struct {
	Identity *identity.Identity
	Peer     peer.Config
	Tree     tree.Config    // zero: tree.DefaultConfig()
	Bloom    bloom.Config   // zero: bloom.DefaultConfig()
	Route    route.Config   // zero: route.DefaultConfig()
	Session  session.Config // zero: session.DefaultConfig()
	// SessionMMP is node.session_mmp.* (zero: mmp.DefaultSessionConfig()).
	SessionMMP mmp.Config
	// IdentityCacheSize bounds the NodeAddr → key cache (node.cache.identity_size).
	IdentityCacheSize int // zero: 10,000
	// ECNLoss and ECNETX are node.ecn.{loss,etx}_threshold (0: 0.05, 3.0).
	ECNLoss, ECNETX float64
	// TransportCongested reports kernel receive drops on a transport since
	// the last tick (SO_RXQ_OVFL); nil: never.
	TransportCongested func(transport.ID) bool
	// TransportMTU is the smallest MTU of the operational transports
	// (upstream's transport_mtu()); nil: 1280.
	TransportMTU func() int
	// OnForward, when set, hears the destination of every datagram the
	// loop forwarded (the node offers it to the dataplane's routes).
	OnForward func(dest identity.NodeAddr)
	// Deliver receives DataPackets addressed to this node (the IPv6
	// adapter, the native datagram API); nil drops them (counted).
	Deliver func(now time.Time, src identity.NodeAddr, srcPort, dstPort uint16, payload []byte, ce bool)
	ACL     *peer.ACL
	// Model, for simulations only (testing/mesh, testing/sim; the
	// daemon never sets it), makes the Core behave as another
	// implementation does where fips-go deliberately differs.
	Model Model
	Log   *slog.Logger
	Rand  io.Reader // nil: crypto/rand
	// Name is the display name of a node in log lines, given its npub
	// when known ("" otherwise): Node's hosts-file and alias names. Nil
	// names a node by its short npub, else its short hex.
	Name func(a identity.NodeAddr, npub string) string
}

// Model selects behaviours of other implementations (upstream FIPS, or
// fips-go before a fix) so a simulated mixed mesh holds nodes that act as
// those do. The zero Model is fips-go's behaviour.
type Model struct {
	// NoChildRemark: a peer's announce that makes it our child (or stops
	// it being one) marks no filter update (upstream's handle_tree_announce
	// re-marks filters only when our own parent changes). The child's
	// filter, if it arrived before that announce, is then not passed on
	// until something else marks our peers.
	NoChildRemark bool
	// NoFilterAfterParentAnnounce: a TreeAnnounce to our parent is not
	// followed by our filter (upstream; fips-go before the fix of issue
	// 24). A filter that reached the parent before the announce that makes
	// us its child is then never merged by an upstream parent.
	NoFilterAfterParentAnnounce bool
}

// UpstreamModel is upstream FIPS master's behaviour as a simulated node:
// its filter schedule (on the tick), routing rules and the tree-to-filter
// coupling above. o's other fields are kept; a zero Bloom or Route is
// taken as its default first.
func UpstreamModel(o *CoreOptions) {
	if o.Bloom == (bloom.Config{}) {
		o.Bloom = bloom.DefaultConfig()
	}
	if o.Route.CoordCacheSize == 0 {
		o.Route = route.DefaultConfig()
	}
	o.Route.NextHop = route.NextHopUpstream
	o.Route.FullFilterLookups = false
	o.Bloom.SendOnChange = false
	o.Bloom.PassOnFull = false
	o.Model = Model{NoChildRemark: true, NoFilterAfterParentAnnounce: true}
}

// Core is a node's mesh state machine: the link layer, the spanning tree
// and the bloom filters, with no goroutines, sockets or clock of its own.
// Node runs one on its event loop; the in-process harness runs thousands
// on a simulated clock. Every method must be called from one goroutine.
type Core struct {
	// peerList caches coreLinks.Peers for peerListVersion.
	peerList        []identity.NodeAddr
	peerListVersion uint64

	id       *identity.Identity
	log      *slog.Logger
	sessLog  *slog.Logger // upstream's session handler target
	dispLog  *slog.Logger // upstream's dispatch target
	peers    *peer.Manager
	tree     *tree.Tree
	bloom    *bloom.State
	route    *route.Router
	sess     *session.Table
	smmp     map[identity.NodeAddr]*sessionMetrics
	smmpKeys []identity.NodeAddr // scratch: smmp's keys in order, per tick
	ids      *identityCache
	opts     CoreOptions
	env      Env

	// now is the time of the event being handled: the subsystems' callbacks
	// (PeerUp, SendTreeAnnounce, …) carry no time of their own.
	now time.Time

	// lookups holds the last outcome per target of lookups this node
	// started, for the session layer and probes; bounded by the identity
	// cache size.
	lookups map[identity.NodeAddr]route.LookupEvent

	linkMsgs map[wire.MsgType]uint64 // link messages handed up, by type
	rejected map[string]uint64       // tree/bloom messages refused, by reason
	dirty    bool                    // peers came or went since the last snapshot

	// ports maps destination ports to their services (256 is the IPv6
	// adapter; the native API binds others). Unbound ports fall back to
	// CoreOptions.Deliver.
	ports       map[uint16]PortHandler
	v6          *ipv6State // the IPv6 adapter, when enabled
	undelivered uint64     // DataPackets with no local consumer
	ceReceived  uint64     // DataPackets delivered with CE
	// noRouteLookups: lookups sent because an established session found
	// no route (see coreSessionEnv.SendDatagram).
	noRouteLookups uint64
}

// NewCore builds a Core whose packets leave through env.
func NewCore(now time.Time, o CoreOptions, env Env) (*Core, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Tree == (tree.Config{}) {
		o.Tree = tree.DefaultConfig()
	}
	if o.Bloom == (bloom.Config{}) {
		o.Bloom = bloom.DefaultConfig()
	}
	if o.Route.CoordCacheSize == 0 {
		o.Route = route.DefaultConfig()
	}
	if o.IdentityCacheSize <= 0 {
		o.IdentityCacheSize = 10_000
	}
	if o.Session == (session.Config{}) {
		o.Session = session.DefaultConfig()
	}
	if o.ECNLoss == 0 {
		o.ECNLoss = 0.05
	}
	if o.ECNETX == 0 {
		o.ECNETX = 3.0
	}
	if o.SessionMMP == (mmp.Config{}) {
		o.SessionMMP = mmp.DefaultSessionConfig()
	}
	if o.TransportMTU == nil {
		o.TransportMTU = func() int { return 1280 }
	}
	c := &Core{id: o.Identity, log: o.Log, now: now, env: env, ids: newIdentityCache(o.IdentityCacheSize), opts: o,
		lookups: map[identity.NodeAddr]route.LookupEvent{}, smmp: map[identity.NodeAddr]*sessionMetrics{},
		ports:    map[uint16]PortHandler{},
		linkMsgs: map[wire.MsgType]uint64{}, rejected: map[string]uint64{}}
	pm, err := peer.New(o.Peer, o.Identity, env, c, o.Log, o.Rand)
	if err != nil {
		return nil, err
	}
	pm.SetACL(o.ACL)
	c.peers = pm
	c.tree = tree.New(now, o.Identity, o.Tree, coreTreeEnv{c}, o.Log, o.Rand)
	c.tree.SetNotifier(c)
	c.tree.SetLeaf(o.Route.Leaf)
	c.bloom = bloom.New(o.Identity.NodeAddr(), o.Bloom, coreBloomEnv{c}, o.Log)
	c.route = route.New(o.Identity, o.Route, coreTopology{c.tree}, c.bloom, coreLinks{c}, c.ids, o.Log, o.Rand)
	c.route.OnLookup(c.lookupDone)
	c.sess = session.New(o.Identity, pm.Epoch(), o.Session, coreSessionEnv{c}, coreSessionUpper{c}, o.Log, o.Rand)
	c.log = logging.WithTarget(o.Log, "fips::node")
	c.sessLog = logging.WithTarget(o.Log, "fips::node::handlers::session")
	c.dispLog = logging.WithTarget(o.Log, "fips::node::dataplane::dispatch")
	pm.SetNamer(c.displayName)
	c.tree.SetNamer(c.displayName)
	c.route.SetNamer(c.displayName)
	c.sess.SetNamer(c.displayName)
	return c, nil
}

// displayName is upstream's peer_display_name for log lines: Name's
// answer, given the node's npub when it is a peer or its key is cached.
func (c *Core) displayName(a identity.NodeAddr) string {
	npub := ""
	if p := c.peers.Peer(a); p != nil {
		npub = p.PublicKey.Npub()
	} else if pk, ok := c.ids.Lookup(a); ok {
		npub = pk.Npub()
	}
	if c.opts.Name != nil {
		return c.opts.Name(a, npub)
	}
	if npub != "" {
		return ShortNpub(npub)
	}
	return shortHex(a)
}

// Identity is the node's identity.
func (c *Core) Identity() *identity.Identity { return c.id }

// Peers is the link layer.
func (c *Core) Peers() *peer.Manager { return c.peers }

// Tree is the spanning tree.
func (c *Core) Tree() *tree.Tree { return c.tree }

// Bloom is the bloom-filter state.
func (c *Core) Bloom() *bloom.State { return c.bloom }

// NoRouteLookups is how many lookups the node started because an
// established session found no route.
func (c *Core) NoRouteLookups() uint64 { return c.noRouteLookups }

// Router is next-hop choice, forwarding and lookups.
func (c *Core) Router() *route.Router { return c.route }

// PortHandler receives the DataPackets sent to one port; payload is valid
// only during the call.
type PortHandler func(now time.Time, src identity.NodeAddr, srcPort uint16, payload []byte, ce bool)

// ErrPortInUse is returned by Listen for a port that already has a service.
var ErrPortInUse = errors.New("port already bound")

// Listen binds a service to a destination port (FIPS ports: 0–255
// protocol, 256 IPv6 shim, 256–1023 FIPS services, ≥ 1024 applications).
func (c *Core) Listen(port uint16, h PortHandler) error {
	if _, used := c.ports[port]; used {
		return fmt.Errorf("%w: %d", ErrPortInUse, port)
	}
	c.ports[port] = h
	return nil
}

// Unlisten releases a port.
func (c *Core) Unlisten(port uint16) { delete(c.ports, port) }

// Sessions is the FSP session table.
func (c *Core) Sessions() *session.Table { return c.sess }

// Send sends a datagram to dest's port over an end-to-end session,
// establishing it (and looking dest up) first when needed.
func (c *Core) Send(now time.Time, dest identity.NodeAddr, srcPort, dstPort uint16, payload []byte) error {
	c.now = now
	return c.sess.Send(now, dest, srcPort, dstPort, payload)
}

// LearnIdentity records a node's key (from DNS, configuration, the
// control socket) so lookups for it can be verified.
func (c *Core) LearnIdentity(pk identity.PublicKey) { c.ids.Add(c.now, pk) }

// HandlePacket processes one received packet. Nothing of pkt is kept
// after the call: the daemon reuses the buffer at once (testing/mesh
// overwrites it to prove that).
func (c *Core) HandlePacket(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	c.HandlePacketECN(now, t, from, pkt, false)
}

// HandlePacketECN is HandlePacket for a packet whose outer IP header
// carried CE (ce): an established frame is then handled as if its FMP CE
// flag were set.
func (c *Core) HandlePacketECN(now time.Time, t transport.ID, from transport.Addr, pkt []byte, ce bool) {
	c.now = now
	c.peers.HandlePacketECN(now, t, from, pkt, ce)
	c.filtersOnChange(now)
}

// filtersOnChange sends, with the send-on-change filter schedule, the
// filters owed because of what was just handled (debounce permitting),
// not at the next tick.
func (c *Core) filtersOnChange(now time.Time) {
	if c.opts.Bloom.SendOnChange {
		c.bloom.Tick(now)
	}
}

// HandleOpenedFSP finishes an end-to-end message a dataplane worker
// decrypted (see session.Table.HandleOpened); its MMP frame is recorded.
func (c *Core) HandleOpenedFSP(now time.Time, src identity.NodeAddr, counter uint64, pt []byte, ce bool) {
	c.now = now
	c.sess.HandleOpened(now, src, counter, pt, ce, true)
}

// HandleOpened finishes a frame a dataplane worker opened (see
// peer.Manager.HandleOpened).
func (c *Core) HandleOpened(now time.Time, l *peer.FastLink, flags uint8, in wire.FMPInner) {
	c.now = now
	c.peers.HandleOpened(now, l, flags, in)
	c.filtersOnChange(now)
}

// NextWake is when the core wants Wake called before its next tick: with
// the send-on-change filter schedule (bloom.Config.SendOnChange), the
// moment a pending filter's debounce passes. False: nothing before the
// tick. The driver (the node loop, the mesh harness) sets a timer.
func (c *Core) NextWake() (time.Time, bool) {
	if !c.opts.Bloom.SendOnChange {
		return time.Time{}, false
	}
	at, ok := c.bloom.NextSend()
	// A send that failed leaves its peer due at once: retry no sooner
	// than minWake, so a persistent failure cannot spin the loop.
	if floor := c.now.Add(minWake); at.Before(floor) {
		at = floor
	}
	return at, ok
}

// minWake is the shortest delay NextWake asks for.
const minWake = 10 * time.Millisecond

// Wake sends the filters whose debounce has passed, and nothing else:
// the other subsystems keep to the tick.
func (c *Core) Wake(now time.Time) {
	c.now = now
	c.bloom.Tick(now)
}

// Tick runs every subsystem's timers, in upstream's order.
func (c *Core) Tick(now time.Time) {
	c.now = now
	c.peers.Tick(now)
	c.tree.Tick(now)
	c.bloom.Tick(now)
	c.route.Tick(now)
	c.sess.Tick(now)
	c.sessionReports(now)
}

// PeerUp implements peer.Upper.
func (c *Core) PeerUp(p *peer.Peer) {
	c.dirty = true
	c.ids.Add(c.now, p.PublicKey)
	c.tree.PeerUp(c.now, p.NodeAddr)
	c.bloom.PeerUp(c.now, p.NodeAddr)
	if prof, declared := peerProfile(c, p.NodeAddr); declared && prof != wire.ProfileFull {
		// next's rule: a NonRouting or Leaf peer is advertised in our
		// filters (its own does not spread), so lookups find it.
		c.bloom.SetLeafDependent(c.now, p.NodeAddr, true)
	}
	c.route.ResetLookupBackoff()
}

// FirstRTT is the link layer's first-RTT hook: the peer can now be a
// tree parent, so the tree re-evaluates at once.
func (c *Core) FirstRTT(p *peer.Peer) { c.tree.FirstRTT(c.now, p.NodeAddr) }

// PeerDown implements peer.Upper.
func (c *Core) PeerDown(p *peer.Peer, why string) {
	c.dirty = true
	seq := c.tree.Sequence()
	c.tree.PeerDown(c.now, p.NodeAddr)
	c.bloom.PeerDown(c.now, p.NodeAddr)
	// The end-to-end session with the peer itself, and the packets
	// waiting for it, go with the peer (upstream's remove_active_peer):
	// a session kept past a restart of the peer, which no longer knows
	// it, would swallow every packet sent to the new one and keep a new
	// session from being set up until it idled out.
	c.sess.Remove(c.now, p.NodeAddr)
	c.dispLog.Debug("Peer removed and state cleaned up", "peer", logging.Named(c.displayName, p.NodeAddr),
		"link_id", p.LinkID, "tree_changed", c.tree.Sequence() != seq, "reason", why)
}

// LinkMessage implements peer.Upper: it dispatches authenticated link
// messages to the subsystem that owns their type.
func (c *Core) LinkMessage(p *peer.Peer, flags uint8, ts uint32, msg []byte) {
	t := wire.MsgType(msg[0])
	c.linkMsgs[t]++
	var err error
	switch t {
	case wire.MsgTreeAnnounce:
		err = c.tree.HandleAnnounce(c.now, p.NodeAddr, msg)
	case wire.MsgFilterAnnounce:
		err = c.bloom.HandleFilterAnnounce(c.now, p.NodeAddr, msg)
	case wire.MsgSessionDatagram:
		var d *route.Delivery
		d, err = c.route.HandleSessionDatagram(c.now, p.NodeAddr, flags&wire.FMPFlagCE != 0, msg)
		if d != nil {
			c.deliver(d)
		} else if err == nil && c.opts.OnForward != nil {
			c.opts.OnForward(wire.SessionDatagramDest(msg)) // a forwarded datagram parsed: its header is whole
		}
	case wire.MsgLookupRequest:
		err = c.route.HandleLookupRequest(c.now, p.NodeAddr, msg)
	case wire.MsgLookupResponse:
		err = c.route.HandleLookupResponse(c.now, p.NodeAddr, msg)
	}
	if err != nil {
		c.countReject(t, err)
	}
}

// countReject records why a message was refused (the subsystems count
// too; this keeps one place the node can log from).
func (c *Core) countReject(t wire.MsgType, err error) {
	var tr *tree.RejectError
	var br *bloom.RejectError
	switch {
	case errors.As(err, &tr):
		c.rejected["tree_"+tr.Reason.String()]++
	case errors.As(err, &br):
		c.rejected["bloom_"+br.Reason.String()]++
	default:
		c.rejected[t.String()]++
	}
	c.log.Debug("link message refused", "type", t.String(), "error", err)
}

// TreeChanged implements tree.Notifier: what a tree transition means for
// the bloom filters (and, with routing, the coordinate cache).
func (c *Core) TreeChanged(now time.Time, ch tree.Change) {
	if ch.InvalidateViaSelf() {
		c.route.Cache().InvalidateViaNode(c.id.NodeAddr())
	}
	if root, ok := ch.InvalidateOtherRoots(); ok {
		c.route.Cache().InvalidateOtherRoots(root)
	}
	if ch.ResetLookupBackoff() {
		c.route.ResetLookupBackoff()
	}
	if ch.Kind == tree.ChangeChildren && c.opts.Model.NoChildRemark {
		return
	}
	switch ch.Bloom() {
	case tree.BloomAll:
		c.bloom.MarkAll(now)
	case tree.BloomChanged:
		c.bloom.MarkChanged(now, ch.From)
	}
}

// ParentAnnounced implements tree.Notifier: our filter follows every
// TreeAnnounce to our parent, so the parent merges it knowing we are its
// child. An upstream parent ignores, for what it passes on, a filter that
// came before the announce making us its child and re-merges only on the
// child's next filter; with the send-on-change schedule our filter
// usually leaves first (the announce waits for the 500 ms announce
// interval), which left a joining fips-go node unreachable through an
// upstream relay (issue 24). One filter per announce to the parent:
// bounded by the announce interval and the filter debounce.
func (c *Core) ParentAnnounced(now time.Time, parent identity.NodeAddr) {
	if !c.opts.Model.NoFilterAfterParentAnnounce {
		c.bloom.MarkPeer(now, parent)
	}
}

// coreTreeEnv adapts the link layer for the tree.
type coreTreeEnv struct{ c *Core }

func (e coreTreeEnv) SendTreeAnnounce(peerAddr identity.NodeAddr, msg []byte) error {
	p := e.c.peers.Peer(peerAddr)
	if p == nil {
		return tree.ErrPeerNotFound
	}
	return e.c.peers.SendLink(e.c.now, p, 0, msg)
}

// LinkCost is MMP's etx × (1 + srtt/100 ms); unmeasured before the link's
// first RTT sample (the tree's cold-start rule).
func (e coreTreeEnv) LinkCost(a identity.NodeAddr) (float64, bool) {
	if p := e.c.peers.Peer(a); p != nil {
		return p.MMP().LinkCost()
	}
	return 1.0, false
}

func (e coreTreeEnv) PeerKey(peerAddr identity.NodeAddr) (identity.PublicKey, bool) {
	if p := e.c.peers.Peer(peerAddr); p != nil {
		return p.PublicKey, true
	}
	return identity.PublicKey{}, false
}

// PeerProfile is the profile an active peer declared on a link in
// upstream next's format (false: a master link, or no such peer): the
// tree takes no non-Full peer as parent, the router sends no one else's
// traffic or lookups through one.
func (e coreTreeEnv) PeerProfile(a identity.NodeAddr) (wire.NodeProfile, bool) {
	return peerProfile(e.c, a)
}

func peerProfile(c *Core, a identity.NodeAddr) (wire.NodeProfile, bool) {
	if p := c.peers.Peer(a); p != nil && p.V1() {
		return p.Profile(), true
	}
	return wire.ProfileFull, false
}

// PeerProfile: see coreTreeEnv.PeerProfile.
func (l coreLinks) PeerProfile(a identity.NodeAddr) (wire.NodeProfile, bool) {
	return peerProfile(l.c, a)
}

// LinkIsNext reports whether the link to a is in upstream next's format
// (lookups are encoded in next's layouts on it).
func (l coreLinks) LinkIsNext(a identity.NodeAddr) bool {
	p := l.c.peers.Peer(a)
	return p != nil && p.V1()
}

// coreBloomEnv adapts the link layer and the tree for the filters.
type coreBloomEnv struct{ c *Core }

func (e coreBloomEnv) SendFilterAnnounce(peerAddr identity.NodeAddr, msg []byte) error {
	p := e.c.peers.Peer(peerAddr)
	if p == nil {
		return errors.New("bloom: peer not active")
	}
	return e.c.peers.SendLink(e.c.now, p, 0, msg)
}

func (e coreBloomEnv) IsTreePeer(peerAddr identity.NodeAddr) bool {
	return e.c.tree.IsTreePeer(peerAddr)
}

// deliver hands a datagram addressed to this node to the session layer.
func (c *Core) deliver(d *route.Delivery) {
	c.observePathMTU(d.Src, d.PathMTU)
	c.sess.HandleFSP(c.now, d.Src, d.From, d.CE, d.Payload)
}

// coreLinks adapts the link layer for the router.
type coreLinks struct{ c *Core }

// Peers is the sorted active peer list, rebuilt (into a new slice, so a
// caller still reading the old one is unaffected) only when the peer set
// has changed: next-hop choice reads it per packet.
func (l coreLinks) Peers() []identity.NodeAddr {
	c := l.c
	if v := c.peers.PeerSetVersion(); v != c.peerListVersion || c.peerList == nil {
		out := make([]identity.NodeAddr, 0, c.peers.PeerCount())
		c.peers.Peers(func(p *peer.Peer) {
			if p.Announced() {
				out = append(out, p.NodeAddr)
			}
		})
		slices.SortFunc(out, identity.NodeAddr.Compare)
		c.peerList, c.peerListVersion = out, v
	}
	return c.peerList
}

// coreTopology is the tree as routing reads it: coordinates without a
// copy (route.Topology's contract).
type coreTopology struct{ t *tree.Tree }

func (t coreTopology) Coords() []identity.NodeAddr { return t.t.CoordsView() }

func (t coreTopology) PeerCoords(p identity.NodeAddr) ([]identity.NodeAddr, bool) {
	return t.t.PeerCoordsView(p)
}

func (t coreTopology) IsTreePeer(p identity.NodeAddr) bool { return t.t.IsTreePeer(p) }

// CanSend: a is an active peer the upper layers were told of (under link
// pq required, only once its link is post-quantum).
func (l coreLinks) CanSend(a identity.NodeAddr) bool {
	p := l.c.peers.Peer(a)
	return p != nil && p.Announced()
}

func (l coreLinks) LinkCost(a identity.NodeAddr) float64 {
	if p := l.c.peers.Peer(a); p != nil {
		cost, _ := p.MMP().LinkCost()
		return cost
	}
	return 1.0
}

func (l coreLinks) LinkMTU(a identity.NodeAddr) int {
	if p := l.c.peers.Peer(a); p != nil {
		return l.c.env.LinkMTU(p.Transport, p.Addr)
	}
	return 0
}

// Congested is upstream's predicate on the outgoing link: loss ≥ 0.05 or
// ETX ≥ 3 (node.ecn thresholds), or the kernel dropping packets on the
// link's transport.
func (l coreLinks) Congested(a identity.NodeAddr) bool {
	if p := l.c.peers.Peer(a); p != nil {
		if l.c.opts.TransportCongested != nil && l.c.opts.TransportCongested(p.Transport) {
			return true
		}
		return p.MMP().Congested(l.c.opts.ECNLoss, l.c.opts.ECNETX)
	}
	return false
}

func (l coreLinks) Send(a identity.NodeAddr, ce bool, msg []byte) error {
	p := l.c.peers.Peer(a)
	if p == nil {
		return errors.New("route: peer not active")
	}
	var flags uint8
	if ce {
		flags = wire.FMPFlagCE
	}
	return l.c.peers.SendLink(l.c.now, p, flags, msg)
}

func (c *Core) lookupDone(now time.Time, ev route.LookupEvent) {
	if len(c.lookups) >= c.ids.max {
		clear(c.lookups) // a bounded memo, not a table anything depends on
	}
	c.lookups[ev.Target] = ev
	if ev.Outcome == route.LookupFound {
		// Coordinates are cached now: a session waiting on them can go.
		c.sess.ResetWarmup(ev.Target)
		if err := c.sess.RetryAfterDiscovery(now, ev.Target); err != nil {
			c.log.Debug("session retry after lookup", "target", ev.Target.Short(), "error", err)
		}
	}
	if ev.Outcome == route.LookupTimedOut {
		queued := c.lookupFailed(ev.Target)
		logging.WithTarget(c.log, "fips::node::handlers::lookup").Info("Discovery lookup timed out, destination unreachable",
			"target_node", logging.Named(c.displayName, ev.Target), "queued_packets", queued, "failures", ev.Failures)
	}
}

// lookupFailed: nobody knows where target is. What waited for it is
// dropped, and every queued IPv6 packet is answered as unreachable.
func (c *Core) lookupFailed(target identity.NodeAddr) (queued int) {
	c.sess.DropPending(target, func(_, dstPort uint16, payload []byte) {
		queued++
		if dstPort == wire.FSPPortIPv6Shim {
			c.queuedUnreachable(target, payload)
		}
	})
	return queued
}

// LookupResult is the last outcome of a lookup this node started for
// target, if any.
func (c *Core) LookupResult(target identity.NodeAddr) (route.LookupEvent, bool) {
	ev, ok := c.lookups[target]
	return ev, ok
}

// StartLookup asks the mesh for target's coordinates; its key must be
// known (LearnIdentity) for the answer's proof to verify.
func (c *Core) StartLookup(now time.Time, pk identity.PublicKey) route.StartOutcome {
	c.now = now
	c.ids.Add(now, pk)
	delete(c.lookups, pk.NodeAddr())
	out, _ := c.route.StartLookup(now, pk.NodeAddr())
	return out
}

// coreSessionEnv adapts the router, tree and caches for the session table.
type coreSessionEnv struct{ c *Core }

// SendDatagram routes a session's datagram. When an established session
// finds no route (its cached coordinates point into a part of the tree
// that moved, and nothing will tell us: we are the source), the node looks
// the destination up again, as upstream does on PathBroken from a transit
// node; the answer replaces the coordinates and resets the warmup.
// Without this the session stays dark until it idles out (90 s).
func (e coreSessionEnv) SendDatagram(now time.Time, dest identity.NodeAddr, fsp []byte) (uint16, error) {
	mtu, err := e.c.route.SendDatagramPathMTU(now, dest, fsp)
	if err == nil && e.c.opts.OnForward != nil {
		e.c.opts.OnForward(dest) // our own traffic to dest: a route for the workers too
	}
	if err != nil && errors.Is(err, route.ErrNoRoute) && e.c.sess.Established(dest) && !e.c.route.LookupPending(dest) {
		if e.c.startLookup(now, dest) == route.StartSent {
			e.c.noRouteLookups++
			e.c.log.Debug("no route for an established session; looking its destination up", "dest", dest.Short())
		}
	}
	return mtu, err
}

func (e coreSessionEnv) Coords() []identity.NodeAddr { return e.c.tree.Coords() }

func (e coreSessionEnv) CachedCoords(dest identity.NodeAddr) ([]identity.NodeAddr, bool) {
	return e.c.route.Cache().Get(e.c.now, dest)
}

func (e coreSessionEnv) CacheCoords(now time.Time, addr identity.NodeAddr, coords []identity.NodeAddr) {
	e.c.route.Cache().Insert(now, addr, coords, 0)
}

func (e coreSessionEnv) InvalidateCoords(addr identity.NodeAddr) { e.c.route.Cache().Remove(addr) }

func (e coreSessionEnv) TransportMTU() int { return e.c.opts.TransportMTU() }

func (e coreSessionEnv) Identity(dest identity.NodeAddr) (identity.PublicKey, bool) {
	return e.c.ids.Lookup(dest)
}

func (e coreSessionEnv) LearnIdentity(_ identity.NodeAddr, pk identity.PublicKey) {
	e.c.ids.Add(e.c.now, pk)
}

func (e coreSessionEnv) StartLookup(now time.Time, dest identity.NodeAddr) {
	e.c.startLookup(now, dest)
}

func (e coreSessionEnv) NotifiedPathMTU(dest identity.NodeAddr) (uint16, bool) {
	if sm := e.c.smmp[dest]; sm != nil {
		return sm.link.PathMTU().Notified()
	}
	return 0, false
}

func (e coreSessionEnv) NextHop(now time.Time, dest identity.NodeAddr) (identity.NodeAddr, bool) {
	hop, _, ok := e.c.route.FindNextHop(now, dest)
	return hop, ok
}

// startLookup starts a lookup for dest on the session layer's behalf.
func (c *Core) startLookup(now time.Time, dest identity.NodeAddr) route.StartOutcome {
	out, _ := c.route.StartLookup(now, dest)
	switch out {
	case route.StartBloomMiss, route.StartSuppressed:
		// No peer's filter holds dest, or it failed moments ago: the
		// lookup fails without going out, as if it had timed out.
		c.lookupFailed(dest)
	}
	return out
}

// coreSessionUpper receives what sessions deliver.
type coreSessionUpper struct{ c *Core }

func (u coreSessionUpper) Deliver(now time.Time, src identity.NodeAddr, srcPort, dstPort uint16, payload []byte, ce bool) {
	if ce {
		u.c.ceReceived++
	}
	if h := u.c.ports[dstPort]; h != nil {
		h(now, src, srcPort, payload, ce)
		return
	}
	if u.c.opts.Deliver != nil {
		u.c.opts.Deliver(now, src, srcPort, dstPort, payload, ce)
		return
	}
	u.c.undelivered++
}

// Frame feeds session MMP.
func (u coreSessionUpper) Frame(now time.Time, src identity.NodeAddr, f session.Frame) {
	u.c.sessionFrame(now, src, f)
}

// Sent feeds session MMP's sender side.
func (u coreSessionUpper) Sent(now time.Time, dest identity.NodeAddr, counter uint64, ts uint32, size int) {
	if sm := u.c.smmp[dest]; sm != nil {
		sm.link.RecordSent(now, counter, ts, size)
	}
}

func (u coreSessionUpper) Event(now time.Time, ev session.Event) {
	u.c.dirty = true
	switch ev.Kind {
	case session.EventUp:
		u.c.sessionUp(now, ev.Remote, ev.Initiator)
	case session.EventDown:
		delete(u.c.smmp, ev.Remote)
	case session.EventRekeyed:
		if sm := u.c.smmp[ev.Remote]; sm != nil {
			sm.link.ResetForRekey(now)
		}
	}
	u.c.log.Debug("session event", "event", ev)
}

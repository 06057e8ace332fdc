package peer

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// Env is how a Manager reaches transports.
type Env interface {
	// Send transmits one FMP packet. The Manager reuses pkt after Send
	// returns, so an implementation that queues must copy it.
	Send(t transport.ID, to transport.Addr, pkt []byte) error
	// LinkMTU is the MTU of the transport towards an address.
	LinkMTU(t transport.ID, to transport.Addr) int
	// AcceptConnections says whether the transport admits msg1 from strangers.
	AcceptConnections(t transport.ID) bool
	// CloseConnection drops a connection-oriented transport's connection.
	CloseConnection(t transport.ID, to transport.Addr)
}

// FrameReserver is an optional Env method: SendQueue is transport t's
// send queue, which frames are sealed into in place (valid until the
// next call on the Env); nil when the transport has none, and then
// frames go through Send. It saves copying every frame once more.
type FrameReserver interface {
	SendQueue(t transport.ID) transport.Reserver
}

// LinkAuthenticator is an optional Env method: the Manager calls it when
// a frame from to authenticated a link (promotion, roaming), so a
// connection-oriented transport can close connections that never carry
// one.
type LinkAuthenticator interface {
	LinkAuthenticated(t transport.ID, to transport.Addr)
}

func (m *Manager) authenticated(t transport.ID, to transport.Addr) {
	if a, ok := m.env.(LinkAuthenticator); ok {
		a.LinkAuthenticated(t, to)
	}
}

// LinkRejecter is an optional Env method: the Manager calls it when it
// drops a packet from from as invalid (it does not parse, its handshake
// fails, its index or tag matches no session, the ACL refuses its
// sender), so a connection-oriented transport can close a connection no
// link has authenticated on rather than hold a slot for it. Packets
// refused for load (rate limits, peer limits) are not reported.
type LinkRejecter interface {
	LinkRejected(t transport.ID, from transport.Addr)
}

func (m *Manager) rejected(t transport.ID, from transport.Addr) {
	if r, ok := m.env.(LinkRejecter); ok {
		r.LinkRejected(t, from)
	}
}

// IndexObserver is an optional Env method set: the Manager reports each of
// its receiver indices as it starts and stops opening established frames
// on transport t — a link's index when it comes up, a rekey's new index
// while the old one drains, an answered handshake's index awaiting its
// first frame — so a kernel filter can drop frames whose index belongs to
// no session before any socket read. Calls are made from the Manager's
// goroutine; an index is reported added at most once until removed.
type IndexObserver interface {
	IndexAdded(t transport.ID, idx uint32)
	IndexRemoved(t transport.ID, idx uint32)
}

// setIndex registers e under k and reports a new key to the observer
// (unless preIndex already did).
func (m *Manager) setIndex(k linkKey, e *indexEntry) {
	_, had := m.byIndex[k]
	_, pre := m.preIndexed[k]
	delete(m.preIndexed, k)
	m.byIndex[k] = e
	m.pubDirty = true
	if o, ok := m.env.(IndexObserver); ok && !had && !pre {
		o.IndexAdded(k.t, k.idx)
	}
}

// preIndex reports k to the observer before any session is registered
// under it: the index of a v1 handshake, which the other end sends
// frames under as soon as it has read our msg2 (its msg3, then its
// frames, may overtake our reading of msg3) or our msg3 (it promotes at
// once). Without it an XDP program drops those frames as of an unknown
// index. setIndex takes the key over; unpreIndex withdraws one that got
// no session. At most one per pending v1 handshake (bounded by
// max_pending_inbound) or per msg2 being acted on.
func (m *Manager) preIndex(k linkKey) {
	if _, had := m.byIndex[k]; had {
		return
	}
	if _, pre := m.preIndexed[k]; pre {
		return
	}
	o, ok := m.env.(IndexObserver)
	if !ok {
		return
	}
	m.preIndexed[k] = struct{}{}
	o.IndexAdded(k.t, k.idx)
}

// unpreIndex withdraws k if preIndex reported it and no session took it.
func (m *Manager) unpreIndex(k linkKey) {
	if _, pre := m.preIndexed[k]; !pre {
		return
	}
	delete(m.preIndexed, k)
	if o, ok := m.env.(IndexObserver); ok {
		o.IndexRemoved(k.t, k.idx)
	}
}

// delIndex forgets k and reports it to the observer if it was registered.
func (m *Manager) delIndex(k linkKey) {
	if _, had := m.byIndex[k]; !had {
		return
	}
	delete(m.byIndex, k)
	m.pubDirty = true
	if o, ok := m.env.(IndexObserver); ok {
		o.IndexRemoved(k.t, k.idx)
	}
}

// Upper receives what the link layer does not consume itself.
type Upper interface {
	// PeerUp: a peer became active, was replaced after a restart, or had
	// its crossed handshakes resolved to one session (the upper layers
	// re-announce to it: anything sent on the losing session was lost).
	PeerUp(p *Peer)
	// PeerDown: a peer was removed.
	PeerDown(p *Peer, why string)
	// LinkMessage: an authenticated link message other than Heartbeat and
	// Disconnect. msg starts with the msg_type byte and is only valid during
	// the call.
	LinkMessage(p *Peer, flags uint8, timestamp uint32, msg []byte)
}

// StaticPeer is a configured peer the node keeps connected.
type StaticPeer struct {
	PublicKey identity.PublicKey
	Alias     string
	// Addresses are dial candidates already resolved, in preference
	// order. Targets, when set, replace them: configured addresses
	// resolved again at every dial attempt (a host name's answer may
	// change, or exist only later), through the Env's StaticResolver.
	Addresses     []Candidate
	Targets       []StaticAddress
	AutoReconnect bool
	// WireFormat is peers[].wire_format (fips-go's): the link format(s)
	// used with this peer; WireDefault follows node.wire_format.
	WireFormat WireFormat
}

// StaticAddress is one configured address of a static peer, as written
// ("host:port"), on the transport its selector names.
type StaticAddress struct {
	Transport transport.ID
	Addr      string
}

// Resolution is the outcome of resolving a static peer's Targets: the
// candidates that resolved, in the Targets' order, and why the others did
// not (nil when all did).
type Resolution struct {
	Candidates []Candidate
	Err        error
}

// StaticResolver is an optional Env method that resolves a static peer's
// Targets for one dial attempt. It answers at once (done true) or later,
// by calling Manager.StaticResolved on the Manager's goroutine; the
// Manager asks again only after an answer.
type StaticResolver interface {
	ResolveStatic(na identity.NodeAddr, targets []StaticAddress) (res Resolution, done bool)
}

// Candidate is one transport address to dial a peer at.
type Candidate struct {
	Transport transport.ID
	Addr      transport.Addr
	// Discovered marks a dial to a peer nobody configured, found by LAN
	// (mDNS) rendezvous: any LAN host can name such peers, so their
	// handshakes draw from a small budget of their own and give their
	// slot up to a configured peer's dial.
	Discovered bool
}

// Manager runs every link of one node. Not safe for concurrent use.
type Manager struct {
	// peerSetVersion counts additions to and removals from peers.
	peerSetVersion uint64

	// namer gives a node's display name for logs (SetNamer).
	namer func(identity.NodeAddr) string
	// mmpLog is upstream's MMP handler target, for the MMP lines.
	mmpLog *slog.Logger
	// rxLog is upstream's receive-loop target, for drops before dispatch.
	rxLog *slog.Logger
	// versionLog paces our INFO line for packets of another FMP version
	// (once a minute, besides upstream's DEBUG line for each).
	versionLog ratelimit.Bucket

	cfg   Config
	id    *identity.Identity
	epoch noise.Epoch
	env   Env
	upper Upper
	log   *slog.Logger
	rand  io.Reader
	acl   *ACL

	peers   map[identity.NodeAddr]*Peer
	byIndex map[linkKey]*indexEntry
	// preIndexed are indices reported to the IndexObserver ahead of a
	// byIndex entry (preIndex).
	preIndexed map[linkKey]struct{}
	// byAddr finds the active peer at a transport address (msg1 carve-out,
	// restart detection before crypto).
	byAddr map[addrKey]*Peer
	// legs are outbound handshakes in flight, keyed by our sender index.
	legs map[linkKey]*leg
	// unproven are inbound handshakes answered with msg2 and awaiting
	// their first authenticated frame, keyed by our receiver index and by
	// msg1 digest (a duplicate msg1 gets the same msg2 without new crypto).
	unproven       map[linkKey]*unproven
	unprovenByHash map[[32]byte]*unproven
	unprovenSeq    uint64
	// usedMsg1 are digests of msg1s whose sessions authenticated a frame
	// (a ring of usedMsg1Size): a copy of one is a replay.
	usedMsg1     map[[32]byte]struct{}
	usedMsg1Ring [][32]byte
	usedMsg1Next int

	// pqIndices are the receiver indices offered for post-quantum
	// upgrades, reserved until the accept (one per peer at most).
	pqIndices map[linkKey]*Peer

	static  map[identity.NodeAddr]*staticState
	nextLID uint64
	// overrides counts configured peers by their wire_format override,
	// so that packets of a version only some peers speak are let in.
	overrides [WireAuto + 1]int
	// pendingV1 are v1 handshakes we answered with msg2, awaiting msg3,
	// by our index; pendingV1ByHash finds one by its msg1's digest (a
	// duplicate msg1 gets the stored msg2 again).
	pendingV1       map[linkKey]*pendingV1
	pendingV1ByHash map[[32]byte]*pendingV1
	pendingV1Seq    uint64

	rates                 rates
	sources               *ratelimit.Keyed[sourceKey]
	stranger, established ratelimit.Bucket
	stats                 Stats

	// published is the link table for workers; pubDirty says it is out
	// of date (setIndex, delIndex, roaming). fast are the drops workers
	// count.
	published atomic.Pointer[Links]
	pubDirty  bool
	fast      fastDrops

	buf [wire.FMPHeaderSize + 65535 + wire.FMPTagSize]byte
	pt  [65535]byte // receive plaintext
}

type linkKey struct {
	t   transport.ID
	idx uint32
}

type addrKey struct {
	t    transport.ID
	addr transport.Addr
}

// indexEntry maps one of our receiver indices to the peer session it
// opens, or to the unproven handshake whose session it is.
type indexEntry struct {
	peer *Peer
	cand *unproven
	sess *linkSession
}

type staticState struct {
	cfg       StaticPeer
	nodeAddr  identity.NodeAddr
	retries   int
	nextDial  time.Time
	candidate int  // next address to try
	pending   bool // a retry is scheduled
	resolving bool // a resolution of cfg.Targets is under way
	// lastAddr is the address last dialled, lastErr why the last attempt
	// could not dial (resolution or dial failure), for the retry state.
	lastAddr string
	lastErr  error
	// learnedV1 is the format of the last link made with the peer (a v1
	// one when true), which an auto dial tries first.
	learnedV1 bool
}

// New makes a Manager. rnd may be nil (crypto/rand).
func New(cfg Config, id *identity.Identity, env Env, upper Upper, log *slog.Logger, rnd io.Reader) (*Manager, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	if log == nil {
		log = slog.Default()
	}
	mmpLog := logging.WithTarget(log, "fips::node::handlers::mmp")
	log = logging.WithTarget(log, "fips::node::handlers::handshake")
	m := &Manager{
		cfg: cfg, id: id, env: env, upper: upper, log: log, rand: rnd, mmpLog: mmpLog,
		rxLog:           logging.WithTarget(log, "fips::node::dataplane::rx_loop"),
		peers:           map[identity.NodeAddr]*Peer{},
		byIndex:         map[linkKey]*indexEntry{},
		preIndexed:      map[linkKey]struct{}{},
		byAddr:          map[addrKey]*Peer{},
		legs:            map[linkKey]*leg{},
		unproven:        map[linkKey]*unproven{},
		unprovenByHash:  map[[32]byte]*unproven{},
		pendingV1:       map[linkKey]*pendingV1{},
		pendingV1ByHash: map[[32]byte]*pendingV1{},
		pqIndices:       map[linkKey]*Peer{},
		usedMsg1:        map[[32]byte]struct{}{},
		static:          map[identity.NodeAddr]*staticState{},
		rates:           newRates(cfg),
		sources:         newSourceBuckets(cfg.StrangerSources, ratelimit.PerSecond(cfg.HandshakeBurst, cfg.HandshakeRate)),
	}
	if _, err := io.ReadFull(rnd, m.epoch[:]); err != nil {
		return nil, fmt.Errorf("draw epoch: %w", err)
	}
	return m, nil
}

// SetACL installs the peer ACL (nil = admit everyone).
func (m *Manager) SetACL(a *ACL) { m.acl = a }

// ACL returns the installed ACL, or nil.
func (m *Manager) ACL() *ACL { return m.acl }

// Epoch is this node's restart epoch, sent in every handshake.
func (m *Manager) Epoch() noise.Epoch { return m.epoch }

// Identity is the local identity.
func (m *Manager) Identity() *identity.Identity { return m.id }

// BeaconDialLimited counts a peer found by Ethernet beacons that the node
// did not dial for its discovered-dial pace (show_status
// link_layer.beacon_dial_limited).
func (m *Manager) BeaconDialLimited() { m.stats.BeaconDialLimited++ }

// Stats returns the counters.
func (m *Manager) Stats() Stats {
	s := m.stats
	s.PacketsIn += m.fast.packetsIn.Load()
	s.DropReplay += m.fast.replay.Load()
	s.DropDecrypt += m.fast.decrypt.Load()
	s.DropMalformed += m.fast.malformed.Load()
	s.DropVersionMismatch += m.fast.versionMismatch.Load()
	return s
}

// SetNamer sets the display names of the log lines (upstream's
// peer_display_name); without one a peer is named by its alias, else its
// short npub, and any other node by its short hex.
func (m *Manager) SetNamer(f func(identity.NodeAddr) string) { m.namer = f }

// name is a's display name, for a log line.
func (m *Manager) name(a identity.NodeAddr) slog.LogValuer {
	if m.namer != nil {
		return logging.Named(m.namer, a)
	}
	return logging.Named(m.defaultName, a)
}

func (m *Manager) defaultName(a identity.NodeAddr) string {
	if p := m.peers[a]; p != nil {
		if p.Alias != "" {
			return p.Alias
		}
		return identity.ShortNpub(p.PublicKey.Npub())
	}
	return a.ShortHex()
}

// Peer returns the active peer with this address.
func (m *Manager) Peer(a identity.NodeAddr) *Peer { return m.peers[a] }

// Peers calls f for each active peer.
func (m *Manager) Peers(f func(*Peer)) {
	for _, p := range m.peers {
		f(p)
	}
}

// PeerSetVersion changes whenever a peer is added, announced or removed, so a
// caller may cache what it derives from the peer set.
func (m *Manager) PeerSetVersion() uint64 { return m.peerSetVersion }

// PeerCount is the number of active peers.
func (m *Manager) PeerCount() int { return len(m.peers) }

// HandlePacket processes one packet received on a transport.
func (m *Manager) HandlePacket(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	m.HandlePacketECN(now, t, from, pkt, false)
}

// HandlePacketECN is HandlePacket for a packet whose outer IP header may
// have carried CE: an established frame is then treated as carrying the
// FMP CE flag. The flag cannot be set in the packet itself, as the FMP
// header is the AEAD's associated data.
func (m *Manager) HandlePacketECN(now time.Time, t transport.ID, from transport.Addr, pkt []byte, ce bool) {
	m.stats.PacketsIn++
	if len(pkt) < wire.FMPPrefixSize {
		m.stats.DropMalformed++
		m.rejected(t, from)
		return
	}
	if v := pkt[0] >> 4; !m.acceptsVersion(v) {
		m.stats.DropMalformed++
		m.stats.DropOtherVersion++
		m.rxLog.Debug("Unknown FMP version, dropping", "version", v, "transport_id", t)
		if m.versionLog.Take(now, ratelimit.Every(1, time.Minute)) {
			// Ours, besides upstream's line, at most once a minute: a
			// neighbour running upstream's next (version 1) shows up
			// without debug logs.
			ours := uint8(wire.FMPVersion)
			if m.nodeFormat() == WireV1 {
				ours = wire.FMPVersionNext
			}
			m.rxLog.Info("Packet of another FMP version dropped", "version", v, "our_version", ours,
				"transport_id", t, "remote_addr", from.String(), "hint", "version 1 is upstream's next format, 0 its master's (docs/next.md; node.wire_format)")
		}
		m.rejected(t, from)
		return
	}
	if pkt[0]>>4 == wire.FMPVersionNext {
		m.handleV1(now, t, from, pkt, ce)
		return
	}
	switch pkt[0] & 0x0f {
	case wire.FMPPhaseEstablished:
		m.handleFrame(now, t, from, pkt, ce)
	case wire.FMPPhaseMsg1:
		m.handleMsg1(now, t, from, pkt)
	case wire.FMPPhaseMsg2:
		m.handleMsg2(now, t, from, pkt)
	default:
		m.stats.DropMalformed++
		m.rejected(t, from)
	}
}

// allocIndex draws a random receiver index unused on transport t.
func (m *Manager) allocIndex(t transport.ID) (uint32, error) {
	var b [4]byte
	for range 64 {
		if _, err := io.ReadFull(m.rand, b[:]); err != nil {
			return 0, fmt.Errorf("draw index: %w", err)
		}
		idx := binary.LittleEndian.Uint32(b[:])
		k := linkKey{t, idx}
		if _, used := m.byIndex[k]; used {
			continue
		}
		if _, used := m.legs[k]; used {
			continue
		}
		if _, used := m.pqIndices[k]; used {
			continue
		}
		if _, used := m.pendingV1[k]; used {
			continue
		}
		return idx, nil
	}
	return 0, fmt.Errorf("no free receiver index on transport %d", t)
}

func (m *Manager) jitter() time.Duration {
	if m.cfg.RekeyJitter <= 0 {
		return 0
	}
	var b [8]byte
	if _, err := io.ReadFull(m.rand, b[:]); err != nil {
		return 0
	}
	// Whole seconds in [-J, +J], as upstream draws them.
	span := int64(m.cfg.RekeyJitter/time.Second)*2 + 1
	return time.Duration(int64(binary.LittleEndian.Uint64(b[:])%uint64(span))-span/2) * time.Second
}

// attrsAny spreads attributes into a slog call's arguments.
func attrsAny(as []slog.Attr) []any {
	out := make([]any, len(as))
	for i, a := range as {
		out[i] = a
	}
	return out
}

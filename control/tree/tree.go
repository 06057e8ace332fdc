package tree

import (
	"io"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/wire"
)

// Env is what the Tree needs from the node.
type Env interface {
	// SendTreeAnnounce sends msg, a whole link message starting with 0x10,
	// to an active peer. msg is only valid during the call.
	SendTreeAnnounce(peer identity.NodeAddr, msg []byte) error
	// LinkCost is the peer's link cost, etx × (1 + srtt_ms/100), and
	// whether it rests on an SRTT sample. Unmeasured peers are not
	// parent candidates once any peer is measured.
	LinkCost(peer identity.NodeAddr) (cost float64, measured bool)
	// PeerKey is an active peer's handshake public key.
	PeerKey(peer identity.NodeAddr) (identity.PublicKey, bool)
}

// declaration is a parent declaration without its signature. A node is
// root when parent is itself.
type declaration struct {
	parent    identity.NodeAddr
	seq       uint64
	timestamp uint64 // Unix seconds
}

// peerState is everything kept about one active peer. It dies with PeerDown.
type peerState struct {
	// Announce rate limit.
	lastSent time.Time
	sentOnce bool
	pending  bool

	// The last announce that passed validation, fresh or not (upstream
	// stores it on the ActivePeer before the freshness check).
	hasPosition   bool
	positionDepth int

	// The last accepted (fresher) declaration and its ancestry. hasDecl:
	// decl holds the peer's newest signed declaration, the freshness
	// reference; accepted: pos is its position too, and the peer is a
	// parent and next-hop candidate. An announce refused for its ancestry
	// (ancestryContradiction) leaves hasDecl without accepted.
	hasDecl  bool
	accepted bool
	decl     declaration
	pos      position

	// Signature-check budget (budget.go) and the newest announce left
	// unchecked for want of it.
	checks   ratelimit.Bucket
	deferred []byte
}

// Tree is one node's spanning-tree state machine. It is not safe for
// concurrent use.
type Tree struct {
	namer      func(identity.NodeAddr) string
	id         *identity.Identity
	self       identity.NodeAddr
	cfg        Config
	hysteresis float64
	minSendMs  uint64
	reevalMs   uint64
	env        Env
	notify     Notifier
	log        *slog.Logger
	rnd        io.Reader

	decl   declaration
	coords position // self → root; entry 0 carries our declaration's seq/ts
	root   identity.NodeAddr
	signed bool
	msg    []byte // our encoded, signed TreeAnnounce

	peers map[identity.NodeAddr]*peerState
	order []identity.NodeAddr // peers, sorted

	flap       flapDampener
	lastReeval time.Time
	reevaled   bool

	// leaf is upstream next's Leaf profile (docs/next.md §8): no
	// TreeAnnounce is sent, and the node never makes itself root while a
	// peer shows a root, attaching under its upstream even when its
	// address is the smallest (a coordinate it never announces).
	leaf bool

	costs  map[identity.NodeAddr]float64 // scratch for peerCosts
	sigBuf []byte                        // scratch for signing bytes
	stats  Stats
}

// New starts a node as its own root with declaration sequence 1 stamped
// with now, and signs it. env must not be nil; if it also implements
// Notifier it is used as the Notifier. log may be nil; rnd feeds the
// signatures' auxiliary randomness (nil for crypto/rand).
func New(now time.Time, id *identity.Identity, cfg Config, env Env, log *slog.Logger, rnd io.Reader) *Tree {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = logging.WithTarget(log, "fips::node::tree")
	t := &Tree{
		id:         id,
		self:       id.NodeAddr(),
		cfg:        cfg,
		hysteresis: clampHysteresis(cfg.ParentHysteresis),
		minSendMs:  cfg.AnnounceMinIntervalMs,
		reevalMs:   secsToMs(cfg.ReevalIntervalSecs),
		env:        env,
		log:        log,
		rnd:        rnd,
		peers:      map[identity.NodeAddr]*peerState{},
		flap:       newFlapDampener(cfg),
		costs:      map[identity.NodeAddr]float64{},
	}
	if n, ok := env.(Notifier); ok {
		t.notify = n
	}
	t.decl = declaration{parent: t.self, seq: 1, timestamp: unixSecs(now)}
	t.recompute()
	_ = t.sign()
	return t
}

// SetNotifier sets (or with nil, removes) the transition observer.
func (t *Tree) SetNotifier(n Notifier) { t.notify = n }

// SetLeaf makes the node a Leaf as upstream next's (node.leaf_only on a
// node whose wire format is v1), before any peer comes: it sends no
// TreeAnnounce and does not elect itself root while it has a peer with a
// root to attach under.
func (t *Tree) SetLeaf(leaf bool) { t.leaf = leaf }

// clampHysteresis clamps to [0, 1] and, like Rust's f64::clamp, passes NaN
// through (a NaN hysteresis makes every discretionary switch fail).
func clampHysteresis(h float64) float64 {
	switch {
	case h < 0:
		return 0
	case h > 1:
		return 1
	}
	return h
}

func unixSecs(now time.Time) uint64 {
	if s := now.Unix(); s > 0 {
		return uint64(s)
	}
	return 0
}

// SetNamer sets the display names of the log lines (upstream's
// peer_display_name); without one a node is named by its short hex.
func (t *Tree) SetNamer(f func(identity.NodeAddr) string) { t.namer = f }

func (t *Tree) name(a identity.NodeAddr) slog.LogValuer { return logging.Named(t.namer, a) }

// mmpLog is the logger of the lines upstream writes from its MMP handler
// (the first-RTT hook).
func (t *Tree) mmpLog() *slog.Logger { return logging.WithTarget(t.log, "fips::node::handlers::mmp") }

// ---------------------------------------------------------------------------
// Queries

// Self is our node address.
func (t *Tree) Self() identity.NodeAddr { return t.self }

// Coords is our coordinate, self to root (a copy).
func (t *Tree) Coords() []identity.NodeAddr { return slices.Clone(t.coords.addrs) }

// CoordsView is Coords without the copy, for readers on the loop that
// neither keep nor modify it (next-hop choice, per packet). A position
// is never changed in place: a new one replaces it.
func (t *Tree) CoordsView() []identity.NodeAddr { return t.coords.addrs }

// Root is the root of our tree.
func (t *Tree) Root() identity.NodeAddr { return t.root }

// Depth is our distance from the root.
func (t *Tree) Depth() int { return t.coords.depth() }

// IsRoot reports whether we are the root.
func (t *Tree) IsRoot() bool { return t.root == t.self }

// Parent is our declared parent; ok is false at the root.
func (t *Tree) Parent() (parent identity.NodeAddr, ok bool) {
	if t.IsRoot() {
		return t.self, false
	}
	return t.decl.parent, true
}

// Sequence is our declaration's sequence number.
func (t *Tree) Sequence() uint64 { return t.decl.seq }

// Declaration is our current declaration as signed: the parent
// (ourselves at the root), the sequence and the timestamp (Unix seconds).
func (t *Tree) Declaration() (parent identity.NodeAddr, seq, timestamp uint64) {
	return t.decl.parent, t.decl.seq, t.decl.timestamp
}

// Stats returns the counters.
func (t *Tree) Stats() Stats { return t.stats }

// PeerCoords is a peer's coordinate from its last accepted announce (a
// copy).
func (t *Tree) PeerCoords(peer identity.NodeAddr) ([]identity.NodeAddr, bool) {
	ps := t.peers[peer]
	if ps == nil || !ps.accepted {
		return nil, false
	}
	return slices.Clone(ps.pos.addrs), true
}

// PeerCoordsView is PeerCoords without the copy (see CoordsView).
func (t *Tree) PeerCoordsView(peer identity.NodeAddr) ([]identity.NodeAddr, bool) {
	ps := t.peers[peer]
	if ps == nil || !ps.accepted {
		return nil, false
	}
	return ps.pos.addrs, true
}

// PeerView is a peer's tree role for show_peers; false if it is not up.
func (t *Tree) PeerView(peer identity.NodeAddr) (PeerView, bool) {
	ps := t.peers[peer]
	if ps == nil {
		return PeerView{}, false
	}
	return PeerView{
		HasTreePosition: ps.hasPosition,
		Depth:           ps.positionDepth,
		IsParent:        !t.IsRoot() && t.decl.parent == peer,
		IsChild:         ps.accepted && ps.decl.parent == t.self,
	}, true
}

// IsTreePeer reports whether peer is our parent or declares us as its
// parent.
func (t *Tree) IsTreePeer(peer identity.NodeAddr) bool {
	if !t.IsRoot() && t.decl.parent == peer {
		return true
	}
	ps := t.peers[peer]
	return ps != nil && ps.accepted && ps.decl.parent == t.self
}

// FindNextHop is greedy tree routing towards dest (self to root): the peer
// whose coordinate is closest to dest (ties to the smaller address), if it
// is strictly closer than we are and dest shares our root. As upstream,
// canSend is asked about the winner only: a winner that cannot send means
// no hop, not the runner-up. canSend may be nil.
func (t *Tree) FindNextHop(dest []identity.NodeAddr, canSend func(identity.NodeAddr) bool) (identity.NodeAddr, bool) {
	if len(dest) == 0 || dest[len(dest)-1] != t.root {
		return identity.NodeAddr{}, false
	}
	mine := Distance(t.coords.addrs, dest)
	var best identity.NodeAddr
	bestDist, found := math.MaxInt, false
	for _, a := range t.order { // sorted: the first of equals is the smallest
		ps := t.peers[a]
		if !ps.accepted {
			continue
		}
		if d := Distance(ps.pos.addrs, dest); !found || d < bestDist {
			best, bestDist, found = a, d, true
		}
	}
	if !found || bestDist >= mine {
		return identity.NodeAddr{}, false
	}
	if canSend != nil && !canSend(best) {
		return identity.NodeAddr{}, false
	}
	return best, true
}

// ---------------------------------------------------------------------------
// Peer events

// PeerUp adds an active peer and sends it our announce (rate limit
// applies). For a peer already up (a link replaced in place) it keeps the
// peer's state, including its rate-limit stamp, and re-sends.
func (t *Tree) PeerUp(now time.Time, peer identity.NodeAddr) {
	if _, ok := t.peers[peer]; !ok {
		t.peers[peer] = &peerState{}
		i, _ := slices.BinarySearchFunc(t.order, peer, identity.NodeAddr.Compare)
		t.order = slices.Insert(t.order, i, peer)
	}
	if err := t.sendTo(now, peer); err != nil {
		// Upstream logs this from its handshake handler.
		logging.WithTarget(t.log, "fips::node::handlers::handshake").Debug("Failed to send initial TreeAnnounce", "peer", t.name(peer), "error", err)
	}
}

// PeerDown forgets a peer. If it was our parent we take an alternative
// parent or become root (sequence+1), and every remaining peer gets an
// announce at the next Tick.
func (t *Tree) PeerDown(now time.Time, peer identity.NodeAddr) {
	if _, ok := t.peers[peer]; !ok {
		return
	}
	wasParent := !t.IsRoot() && t.decl.parent == peer
	delete(t.peers, peer)
	if i, ok := slices.BinarySearchFunc(t.order, peer, identity.NodeAddr.Compare); ok {
		t.order = slices.Delete(t.order, i, i+1)
	}
	if !wasParent {
		return
	}
	t.stats.ParentLosses++
	dampened := t.recover(now, t.peerCosts())
	_ = t.sign() // on failure upstream still invalidates and re-announces
	t.log.Info("Tree state updated after parent loss", "new_root", t.root.String(), "is_root", t.IsRoot())
	if dampened {
		t.noteFlap("parent-loss")
	}
	for _, ps := range t.peers {
		ps.pending = true
	}
	t.emit(now, Change{Kind: ChangeParentLost, Trigger: TriggerPeerDown, From: peer, FlapDampened: dampened})
}

// FirstRTT re-evaluates the parent when a link gets its first SRTT sample
// (which may make a better root reachable through a newly measured peer).
func (t *Tree) FirstRTT(now time.Time, peer identity.NodeAddr) {
	costs := t.peerCosts()
	if p, ok := t.decide(now, costs); ok {
		t.applySwitch(now, p, TriggerFirstRTT, peer)
	} else if !t.IsRoot() && t.shouldBeRoot() {
		t.applySelfRoot(now, TriggerFirstRTT, peer)
	}
}

// Tick flushes rate-limited announces whose interval has passed and, every
// ReevalIntervalSecs with two or more peers, re-evaluates the parent and
// re-broadcasts our announce when nothing changed. Call it every tick (1 s).
func (t *Tree) Tick(now time.Time) {
	t.handleDeferred(now)
	t.sendPending(now)
	if t.reevalMs == 0 || len(t.peers) < 2 {
		return
	}
	if t.reevaled && sinceMs(now, t.lastReeval) < t.reevalMs {
		return
	}
	t.lastReeval, t.reevaled = now, true
	costs := t.peerCosts()
	if p, ok := t.decide(now, costs); ok {
		t.applySwitch(now, p, TriggerPeriodic, identity.NodeAddr{})
	} else if !t.IsRoot() && t.shouldBeRoot() {
		t.applySelfRoot(now, TriggerPeriodic, identity.NodeAddr{})
	} else {
		t.log.Debug("periodic TreeAnnounce re-broadcast", "seq", t.decl.seq, "root", t.root.Short())
		t.sendAll(now)
	}
}

// ---------------------------------------------------------------------------
// Sending

func (t *Tree) canSend(ps *peerState, now time.Time) bool {
	return !ps.sentOnce || sinceMs(now, ps.lastSent) >= t.minSendMs
}

// sendTo sends our announce to one peer, or marks it pending when the
// peer's interval has not passed.
func (t *Tree) sendTo(now time.Time, peer identity.NodeAddr) error {
	ps := t.peers[peer]
	if ps == nil {
		return ErrPeerNotFound
	}
	if t.leaf {
		return nil // a Leaf takes no part in the tree: it announces nothing
	}
	if !t.canSend(ps, now) {
		ps.pending = true
		t.stats.RateLimited++
		t.log.Debug("TreeAnnounce rate-limited, marking pending", "peer", peer.Short())
		return nil
	}
	if !t.signed {
		// Upstream refuses to send an unsigned declaration; signing again
		// here only differs when the randomness source failed before.
		if err := t.sign(); err != nil {
			return err
		}
	}
	if err := t.env.SendTreeAnnounce(peer, t.msg); err != nil {
		t.stats.SendFailed++
		return err
	}
	t.stats.Sent++
	ps.lastSent, ps.sentOnce, ps.pending = now, true, false
	if t.decl.parent == peer && t.notify != nil {
		t.notify.ParentAnnounced(now, peer)
	}
	return nil
}

func (t *Tree) sendAll(now time.Time) {
	for _, a := range t.order {
		if err := t.sendTo(now, a); err != nil {
			t.log.Debug("failed to send TreeAnnounce", "peer", a.Short(), "error", err)
		}
	}
}

func (t *Tree) sendPending(now time.Time) {
	for _, a := range t.order {
		if ps := t.peers[a]; ps.pending && t.canSend(ps, now) {
			if err := t.sendTo(now, a); err != nil {
				t.log.Debug("failed to send pending TreeAnnounce", "peer", a.Short(), "error", err)
			}
		}
	}
}

// sign signs our current declaration and encodes our announce.
func (t *Tree) sign() error {
	t.sigBuf = wire.AppendDeclaration(t.sigBuf[:0], t.self, t.decl.parent, t.decl.seq, t.decl.timestamp)
	sig, err := t.id.Sign(t.sigBuf, t.rnd)
	if err == nil {
		ann := wire.TreeAnnounce{
			Sequence:  t.decl.seq,
			Timestamp: t.decl.timestamp,
			Parent:    t.decl.parent,
			Ancestry:  wire.AncestryOf(t.coords.entries...),
			Signature: sig[:],
		}
		msg := make([]byte, ann.Len())
		if _, err = ann.MarshalTo(msg); err == nil {
			t.msg, t.signed = msg, true
			return nil
		}
	}
	t.signed, t.msg = false, nil
	t.stats.OutboundSignFailed++
	t.log.Warn("failed to sign tree declaration", "error", err)
	return err
}

// emit reports a transition.
func (t *Tree) emit(now time.Time, c Change) {
	if t.notify == nil {
		return
	}
	c.Root, c.Self = t.root, t.self
	t.notify.TreeChanged(now, c)
}

func (t *Tree) noteFlap(trigger string) {
	t.stats.FlapDampened++
	t.log.Warn("Flap dampening engaged, discretionary parent switching suppressed",
		"trigger", trigger, "dampening_secs", t.flap.durationMs/1000)
}

package bloom

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/wire"
)

// Config is node.bloom.*.
type Config struct {
	// UpdateDebounce is the minimum time between two announces to one peer
	// (update_debounce_ms).
	UpdateDebounce time.Duration
	// MaxInboundFPR is the anti-poison cap: an inbound filter whose FPR
	// exceeds it is dropped (max_inbound_fpr). It also bounds estimates.
	MaxInboundFPR float64
	// SendOnChange is node.routing.filter_schedule "change" (a fips-go
	// addition; the node reads it): the node calls Tick after every
	// packet it handles as well as on its tick, so a changed filter
	// leaves as soon as the peer's debounce allows instead of at the next
	// tick. Upstream ("tick") sends only on the tick: filters then cross
	// one hop per tick interval. The debounce still bounds announces to
	// one per peer per UpdateDebounce either way.
	SendOnChange bool
	// PassOnFull is node.routing.full_filter_lookups "tree" (a fips-go
	// addition; the node's router reads the same key): a tree peer whose
	// latest filter was refused over the FPR cap contributes a full
	// filter (every bit set) to what we send our other peers, instead of
	// nothing. Upstream drops the refused filter from its aggregate, so
	// in a mesh larger than a filter holds the parent's refusal silently
	// shrinks what a node passes on to a small, acceptable filter that
	// lacks most of the mesh; with PassOnFull the node says "more than a
	// filter holds" onwards, which the receiver refuses over the cap in
	// turn and (fips-go) keeps sending lookups through.
	PassOnFull bool
}

// DefaultConfig is upstream's default (500 ms debounce, FPR cap 0.20)
// with fips-go's send-on-change schedule and PassOnFull.
func DefaultConfig() Config {
	return Config{UpdateDebounce: 500 * time.Millisecond, MaxInboundFPR: 0.20, SendOnChange: true, PassOnFull: true}
}

// SelfWarnInterval is how often, at most, Tick warns that our own
// outgoing filter is above the FPR cap.
const SelfWarnInterval = 60 * time.Second

// Env is what a State needs from the node. Its methods must not call back
// into the State.
type Env interface {
	// SendFilterAnnounce sends msg, a whole FilterAnnounce link message
	// (starting 0x20), to peer. msg is valid only during the call.
	SendFilterAnnounce(peer identity.NodeAddr, msg []byte) error
	// IsTreePeer reports whether peer is our tree parent or a child (its
	// declaration names us as parent). Asked whenever outgoing filters
	// are computed.
	IsTreePeer(peer identity.NodeAddr) bool
}

// peerState is everything kept per peer, inbound and outbound. It dies
// with PeerDown.
type peerState struct {
	addr identity.NodeAddr

	// inbound: what is reachable through the peer
	hasFilter bool
	// overCap: the peer's latest announce (newer than the last accepted)
	// was refused over the FPR cap; cleared by the next accepted one.
	overCap    bool
	inbound    Filter
	seq        uint64 // last accepted sequence; 0 before any
	receivedAt time.Time

	// outbound
	pending    bool // we owe the peer an announce
	sent       bool // lastSent and lastSentAt are valid
	lastSentAt time.Time
	lastSent   Filter // what the peer holds for us

	// scratch for computeOutgoing
	target  bool
	contrib bool
	out     Filter
}

// State is a node's bloom-filter routing state. See the package doc.
type State struct {
	self identity.NodeAddr
	cfg  Config
	env  Env
	log  *slog.Logger

	base Filter // own address and leaf dependents
	// deps are the leaf dependents: peers that declared a profile other
	// than Full on a next link (they send no filter that counts: next's
	// Full nodes advertise them in their own, docs/next.md §7). Only
	// active peers, so bounded by the peer table.
	deps     []identity.NodeAddr
	full     Filter // every bit set: what an over-cap tree peer contributes with PassOnFull
	peers    map[identity.NodeAddr]*peerState
	order    []*peerState // peers sorted by address: deterministic sends
	sequence uint64       // last FilterAnnounce sequence used

	selfWarned   bool
	lastSelfWarn time.Time

	stats Stats

	// scratch, reused so steady state does not allocate
	contrib []*peerState
	suffix  [][FilterBytes]byte
	ready   []*peerState
	buf     [wire.FilterAnnounceSize]byte
}

// New returns the state of node self. A nil log discards.
func New(self identity.NodeAddr, cfg Config, env Env, log *slog.Logger) *State {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = logging.WithTarget(log, "fips::node::bloom")
	s := &State{
		self:  self,
		cfg:   cfg,
		env:   env,
		log:   log,
		base:  NewFilter(),
		peers: make(map[identity.NodeAddr]*peerState),
	}
	s.base.Insert(self)
	s.full = NewFilter()
	for i := range s.full.bits {
		s.full.bits[i] = 0xFF
	}
	return s
}

func cmpPeer(a *peerState, b identity.NodeAddr) int { return a.addr.Compare(b) }

// PeerUp records that peer is an active peer and marks it as owed an
// announce (handshake complete, or cross-connection resolved). For a peer
// already up it only marks: the inbound filter and sequence are kept. A
// peer that restarted (a new link session replacing the old one) should
// be reported as PeerDown then PeerUp, as its sequence starts again.
func (s *State) PeerUp(now time.Time, peer identity.NodeAddr) {
	ps := s.peers[peer]
	if ps == nil {
		ps = &peerState{addr: peer}
		s.peers[peer] = ps
		i, _ := slices.BinarySearchFunc(s.order, peer, cmpPeer)
		s.order = slices.Insert(s.order, i, ps)
	}
	ps.pending = true
}

// PeerDown forgets everything about peer (its inbound filter and sequence,
// what we sent it, its debounce) and marks every remaining peer as owed an
// announce. An unknown peer is ignored.
func (s *State) PeerDown(now time.Time, peer identity.NodeAddr) {
	ps := s.peers[peer]
	if ps == nil {
		return
	}
	delete(s.peers, peer)
	if i, ok := slices.BinarySearchFunc(s.order, peer, cmpPeer); ok {
		s.order = slices.Delete(s.order, i, i+1)
	}
	if i, ok := slices.BinarySearchFunc(s.deps, peer, identity.NodeAddr.Compare); ok {
		s.deps = slices.Delete(s.deps, i, i+1)
		s.rebuildBase()
	}
	s.MarkAll(now)
}

// SetLeafDependent makes an active peer a leaf dependent (dep) or not:
// upstream next's Full nodes put each peer that declared NonRouting or
// Leaf into the filters they send (such a peer's own filter does not
// spread: it is no tree peer), so lookups find it. Peers whose filters
// change are marked. An unknown peer is ignored; PeerDown drops it.
func (s *State) SetLeafDependent(now time.Time, peer identity.NodeAddr, dep bool) {
	if s.peers[peer] == nil {
		return
	}
	i, had := slices.BinarySearchFunc(s.deps, peer, identity.NodeAddr.Compare)
	switch {
	case dep && !had:
		s.deps = slices.Insert(s.deps, i, peer)
	case !dep && had:
		s.deps = slices.Delete(s.deps, i, i+1)
	default:
		return
	}
	s.rebuildBase()
	s.MarkChanged(now, identity.NodeAddr{})
}

// rebuildBase is our address and the leaf dependents' (a bloom filter
// forgets nothing, so a removal starts again).
func (s *State) rebuildBase() {
	s.base = NewFilter()
	s.base.Insert(s.self)
	for _, d := range s.deps {
		s.base.Insert(d)
	}
}

// LeafDependents are the current leaf dependents, in address order.
func (s *State) LeafDependents() []identity.NodeAddr { return slices.Clone(s.deps) }

// MarkAll marks every peer as owed an announce, whether or not its filter
// changed (tree parent switch, self-root promotion, peer removal).
func (s *State) MarkAll(now time.Time) {
	for _, ps := range s.order {
		ps.pending = true
	}
}

// MarkPeer marks one peer as owed an announce, whether or not its filter
// changed (our TreeAnnounce just made us its child: see
// tree.Notifier.ParentAnnounced). An unknown peer is ignored.
func (s *State) MarkPeer(now time.Time, peer identity.NodeAddr) {
	if ps := s.peers[peer]; ps != nil {
		ps.pending = true
	}
}

// MarkChanged recomputes the outgoing filter of every peer but exclude and
// marks those whose filter differs from the last one sent to them, or
// that were never sent one (an accepted inbound filter; an ancestry
// update from our parent, exclude being the parent).
func (s *State) MarkChanged(now time.Time, exclude identity.NodeAddr) {
	for _, ps := range s.order {
		ps.target = ps.addr != exclude
	}
	s.computeOutgoing()
	for _, ps := range s.order {
		if ps.target && (!ps.sent || !ps.out.Equal(&ps.lastSent)) {
			ps.pending = true
		}
	}
}

// HandleFilterAnnounce processes msg, a whole FilterAnnounce link message
// (starting 0x20) from peer from. It returns nil when the filter was
// stored, else a *RejectError. Checks run in upstream's order: decode
// (exact length, size class 1, non-zero hash count), v1 (fips-go: hash
// count 5), known peer, sequence above the last accepted one, FPR cap
// (computed at k=5). A rejected announce leaves the
// peer's previous filter and sequence in place. msg is not retained.
func (s *State) HandleFilterAnnounce(now time.Time, from identity.NodeAddr, msg []byte) error {
	s.stats.Received++
	fa, err := wire.ParseFilterAnnounce(msg)
	if err != nil {
		return s.reject(&RejectError{Reason: ReasonDecode, Peer: from, Cause: err})
	}
	// Upstream's is_valid and is_v1_compliant: the decoder has already
	// enforced both, so these never fire; kept for the counters' sake.
	if len(fa.Filter) != 512<<fa.SizeClass {
		return s.reject(&RejectError{Reason: ReasonInvalid, Peer: from, Sequence: fa.Sequence})
	}
	// v1 fixes the hash count at 5 as well as the size class, and upstream
	// only ever sends 5 (DEFAULT_HASH_COUNT). Upstream checks only the
	// size class and then applies the FPR cap with the sender's k, so a
	// sender choosing k makes any fill pass (k=255 at 99.4% fill is an FPR
	// of 0.2). fips-go refuses any other k as non-v1: an upstream node
	// never sends one, so nothing genuine is lost.
	if fa.SizeClass != SizeClassV1 || fa.HashCount != wire.BloomHashCount {
		return s.reject(&RejectError{Reason: ReasonNonV1, Peer: from, Sequence: fa.Sequence})
	}
	ps := s.peers[from]
	if ps == nil {
		return s.reject(&RejectError{Reason: ReasonUnknownPeer, Peer: from, Sequence: fa.Sequence})
	}
	if fa.Sequence <= ps.seq {
		return s.reject(&RejectError{Reason: ReasonStale, Peer: from, Sequence: fa.Sequence, Current: ps.seq})
	}
	fill := float64(popcount(fa.Filter)) / FilterBits
	if p := fpr(fill, wire.BloomHashCount); p > s.cfg.MaxInboundFPR { // our k, never the sender's
		was := ps.overCap
		// Upstream warns at every refusal. With PassOnFull a peer over
		// the cap is a normal state of a large mesh (every parent is),
		// so only the step over the cap warns; the rest are debug.
		level := slog.LevelWarn
		if was && s.cfg.PassOnFull {
			level = slog.LevelDebug
		}
		s.log.Log(context.Background(), level, "FilterAnnounce above FPR cap — rejected",
			"from", from.Short(), "seq", fa.Sequence, "fill", fill, "fpr", p, "cap", s.cfg.MaxInboundFPR)
		ps.overCap = true
		if !was && s.cfg.PassOnFull && s.env.IsTreePeer(from) {
			s.MarkChanged(now, from) // what we pass on becomes full
		}
		return s.reject(&RejectError{Reason: ReasonFillExceeded, Peer: from, Sequence: fa.Sequence, FPR: p})
	}
	s.stats.Accepted++
	ps.overCap = false
	copy(ps.inbound.bits[:], fa.Filter)
	ps.inbound.k = fa.HashCount
	ps.hasFilter = true
	ps.seq = fa.Sequence
	ps.receivedAt = now
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("Received FilterAnnounce", "from", from.Short(), "seq", fa.Sequence,
			"set_bits", ps.inbound.CountOnes(), "fill", ps.inbound.Fill(), "tree_peer", s.env.IsTreePeer(from))
	}
	s.MarkChanged(now, from)
	return nil
}

func (s *State) reject(e *RejectError) error {
	s.stats.reject(e.Reason)
	if e.Reason != ReasonFillExceeded && s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("FilterAnnounce rejected", "from", e.Peer.Short(), "reason", e.Reason.String(), "err", e)
	}
	return e
}

// Tick sends an announce to every peer that is owed one and whose
// debounce has passed (never sent, or now >= last send + UpdateDebounce).
// Changes that arrive within the debounce coalesce into one announce.
// Each announce takes the next value of the node-global sequence counter,
// even if Env refuses it; a refused announce stays pending and is not
// recorded as sent. DebounceSuppressed never counts here: upstream counts
// only when its second, later clock reading disagrees with the first,
// which a single now cannot.
func (s *State) Tick(now time.Time) {
	ready := s.ready[:0]
	for _, ps := range s.order {
		ps.target = ps.pending && (!ps.sent || !now.Before(ps.lastSentAt.Add(s.cfg.UpdateDebounce)))
		if ps.target {
			ready = append(ready, ps)
		}
	}
	if len(ready) == 0 {
		return
	}
	s.computeOutgoing()
	for i, ps := range ready {
		ready[i] = nil
		if s.peers[ps.addr] != ps { // gone meanwhile
			continue
		}
		s.sequence++
		fa := wire.FilterAnnounce{
			Sequence:  s.sequence,
			HashCount: ps.out.HashCount(),
			SizeClass: SizeClassV1,
			Filter:    ps.out.bits[:],
		}
		n, err := fa.MarshalTo(s.buf[:])
		if err == nil {
			err = s.env.SendFilterAnnounce(ps.addr, s.buf[:n])
		}
		if err != nil {
			s.stats.SendFailed++
			if s.log.Enabled(context.Background(), slog.LevelDebug) {
				s.log.Debug("Failed to send FilterAnnounce", "peer", ps.addr.Short(), "seq", fa.Sequence, "err", err)
			}
			continue
		}
		s.stats.Sent++
		// A full filter passed on (PassOnFull) is no aggregation drift.
		if p := ps.out.FPR(); p > s.cfg.MaxInboundFPR && !(s.cfg.PassOnFull && ps.out.bits == s.full.bits) &&
			(!s.selfWarned || now.Sub(s.lastSelfWarn) >= SelfWarnInterval) {
			s.selfWarned, s.lastSelfWarn = true, now
			s.log.Warn("Outgoing filter above FPR cap — aggregation drift or missed ingress?",
				"to", ps.addr.Short(), "fill", ps.out.Fill(), "fpr", p, "cap", s.cfg.MaxInboundFPR)
		}
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("Sent FilterAnnounce", "peer", ps.addr.Short(), "seq", fa.Sequence,
				"set_bits", ps.out.CountOnes(), "fill", ps.out.Fill(), "tree_peer", s.env.IsTreePeer(ps.addr))
		}
		if s.peers[ps.addr] != ps {
			continue
		}
		ps.pending = false
		ps.sent = true
		ps.lastSentAt = now
		ps.lastSent = ps.out
	}
	s.ready = ready[:0]
}

// NextSend is when Tick next has an announce to send: the earliest
// moment a pending peer's debounce passes (now, for a pending peer never
// sent one). False when no peer is pending.
func (s *State) NextSend() (time.Time, bool) {
	var at time.Time
	found := false
	for _, ps := range s.order {
		if !ps.pending {
			continue
		}
		t := ps.lastSentAt.Add(s.cfg.UpdateDebounce)
		if !ps.sent {
			t = time.Time{}
		}
		if !found || t.Before(at) {
			at, found = t, true
		}
	}
	return at, found
}

// computeOutgoing sets ps.out, for every peer with ps.target set, to the
// filter that peer should hold for us: our base filter OR the inbound
// filter of every tree peer other than it. Each target's union of "every
// contributor but me" is built from a running prefix union and a suffix
// union computed once, so the cost is linear in the number of peers, and
// the result is bit-identical to computing each target on its own (OR is
// commutative and associative).
func (s *State) computeOutgoing() {
	contrib := s.contrib[:0]
	for _, ps := range s.order {
		ps.contrib = (ps.hasFilter || s.passFull(ps)) && s.env.IsTreePeer(ps.addr)
		if ps.contrib {
			contrib = append(contrib, ps)
		}
	}
	n := len(contrib)
	if cap(s.suffix) < n+1 {
		s.suffix = make([][FilterBytes]byte, n+1, 2*n+2)
	}
	// suffix[i] = OR of contrib[i:]; suffix[n] is empty.
	suffix := s.suffix[:n+1]
	suffix[n] = [FilterBytes]byte{}
	for i := n - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1]
		orBits(&suffix[i], s.contribution(contrib[i]))
	}
	var prefix [FilterBytes]byte
	i := 0
	for _, ps := range s.order {
		switch {
		case ps.contrib:
			if ps.target {
				ps.out = s.base
				orBits(&ps.out.bits, &prefix)
				orBits(&ps.out.bits, &suffix[i+1])
			}
			orBits(&prefix, s.contribution(ps))
			i++
		case ps.target:
			ps.out = s.base
			orBits(&ps.out.bits, &suffix[0])
		}
	}
	for j := range contrib {
		contrib[j] = nil
	}
	s.contrib = contrib[:0]
}

// passFull: ps's filter was refused over the cap and, with PassOnFull,
// counts as full in what we pass on.
func (s *State) passFull(ps *peerState) bool { return s.cfg.PassOnFull && ps.overCap }

// contribution is what tree peer ps adds to the filters we send others:
// its inbound filter, or a full one (passFull).
func (s *State) contribution(ps *peerState) *[FilterBytes]byte {
	if s.passFull(ps) {
		return &s.full.bits
	}
	return &ps.inbound.bits
}

// OutgoingFilter computes, on its own, the filter peer to should hold for
// us now: our address plus the inbound filters of every tree peer but to
// (a full one for a tree peer over the cap, with PassOnFull).
func (s *State) OutgoingFilter(to identity.NodeAddr) Filter {
	f := s.base
	for _, ps := range s.order {
		if ps.addr == to || !s.env.IsTreePeer(ps.addr) {
			continue
		}
		switch {
		case s.passFull(ps):
			f.Merge(&s.full)
		case ps.hasFilter:
			f.Merge(&ps.inbound)
		}
	}
	return f
}

// MayReach reports whether dest may be reachable through peer: peer's
// inbound filter, tested with the hash count it announced, contains dest.
// No filter (or no such peer) means false.
func (s *State) MayReach(peer, dest identity.NodeAddr) bool {
	ps := s.peers[peer]
	return ps != nil && ps.hasFilter && ps.inbound.Contains(dest)
}

// OverCap reports whether peer's latest FilterAnnounce was refused over
// the FPR cap (max_inbound_fpr) and no filter has been accepted from it
// since: the peer announced that it reaches more nodes than a filter can
// hold, so MayReach knows nothing useful about it.
func (s *State) OverCap(peer identity.NodeAddr) bool {
	ps := s.peers[peer]
	return ps != nil && ps.overCap
}

// MeshSizeEstimate estimates the number of nodes in the mesh from the OR
// of every peer's inbound filter (tree and non-tree) plus ourselves,
// rounded. It reports false when no peer has sent a filter, or the union
// is saturated or above the FPR cap. The union takes the hash count of the
// first peer's filter, by address.
func (s *State) MeshSizeEstimate() (uint64, bool) {
	var union Filter
	have := false
	for _, ps := range s.order {
		if !ps.hasFilter {
			continue
		}
		if !have {
			union, have = ps.inbound, true
		} else {
			union.Merge(&ps.inbound)
		}
	}
	if !have {
		return 0, false
	}
	union.Insert(s.self)
	n, ok := union.EstimateCount(s.cfg.MaxInboundFPR)
	if !ok {
		return 0, false
	}
	return uint64(math.Round(n)), true
}

// PeerInfo is the per-peer state, for show_peers and tests.
type PeerInfo struct {
	HasFilter      bool      // an inbound filter is held
	FilterSequence uint64    // last accepted sequence, 0 before any
	ReceivedAt     time.Time // when it was accepted
	Pending        bool      // we owe the peer an announce
	Sent           bool      // we have sent it an announce
	LastSentAt     time.Time // when
}

// Peer returns peer's state, or false when it is not up.
func (s *State) Peer(peer identity.NodeAddr) (PeerInfo, bool) {
	ps := s.peers[peer]
	if ps == nil {
		return PeerInfo{}, false
	}
	return PeerInfo{
		HasFilter: ps.hasFilter, FilterSequence: ps.seq, ReceivedAt: ps.receivedAt,
		Pending: ps.pending, Sent: ps.sent, LastSentAt: ps.lastSentAt,
	}, true
}

// InboundFilter returns a copy of peer's inbound filter, if it holds one.
func (s *State) InboundFilter(peer identity.NodeAddr) (Filter, bool) {
	ps := s.peers[peer]
	if ps == nil || !ps.hasFilter {
		return Filter{}, false
	}
	return ps.inbound, true
}

// LastSentFilter returns a copy of the last filter sent to peer (what it
// holds for us), if any.
func (s *State) LastSentFilter(peer identity.NodeAddr) (Filter, bool) {
	ps := s.peers[peer]
	if ps == nil || !ps.sent {
		return Filter{}, false
	}
	return ps.lastSent, true
}

// Sequence is the last FilterAnnounce sequence used (0 before the first).
func (s *State) Sequence() uint64 { return s.sequence }

// PeerCount is the number of peers up.
func (s *State) PeerCount() int { return len(s.order) }

// Stats returns the counters.
func (s *State) Stats() Stats { return s.stats }

// Snapshot reports show_bloom's data. parent is our tree parent, ignored
// when isRoot.
func (s *State) Snapshot(parent identity.NodeAddr, isRoot bool) Snapshot {
	snap := Snapshot{
		OwnNodeAddr:        s.self,
		Sequence:           s.sequence,
		LeafDependents:     append([]identity.NodeAddr{}, s.deps...),
		LeafDependentCount: len(s.deps),
		PeerFilters:        make([]PeerFilterRow, 0, len(s.order)),
		Stats:              s.stats,
	}
	for _, ps := range s.order {
		row := PeerFilterRow{Peer: ps.addr, HasFilter: ps.seq > 0, FilterSequence: ps.seq}
		if ps.hasFilter {
			info := &PeerFilterInfo{SetBits: ps.inbound.CountOnes(), FillRatio: ps.inbound.Fill()}
			if n, ok := ps.inbound.EstimateCount(s.cfg.MaxInboundFPR); ok {
				info.EstimatedCount = &n
			}
			row.Filter = info
		}
		snap.PeerFilters = append(snap.PeerFilters, row)
	}
	if !isRoot {
		if ps := s.peers[parent]; ps != nil && ps.sent {
			fill := ps.lastSent.Fill()
			snap.UptreeFillRatio = &fill
			if n, ok := ps.lastSent.EstimateCount(s.cfg.MaxInboundFPR); ok {
				snap.UptreeEstimatedCount = &n
			}
		}
	}
	return snap
}

package peer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// leg is an outbound IK handshake in flight: a new link, or a rekey of an
// active peer's link.
type leg struct {
	t          transport.ID
	addr       transport.Addr
	ourIndex   uint32
	expect     identity.PublicKey
	expectAddr identity.NodeAddr
	hs         *noise.IKInitiator
	pkt        [wire.FMPMsg1Size]byte
	started    time.Time
	nextResend time.Time
	resends    int
	rekeyOf    *Peer
	linkID     uint64
	lastSent   time.Time
	// msg2Own and msg2Other bound the DH work msg2s for this leg cost:
	// those from the address msg1 went to, and those from anywhere else.
	// A forged msg2 needs the leg's index, which only an on-path
	// observer of our msg1 has; each costs a DH (ee). Flooding from its
	// own address drains msg2Other and leaves the genuine responder's
	// budget alone.
	msg2Own, msg2Other ratelimit.Bucket
	discovered         bool // Candidate.Discovered
	// anonymous is a v1 dial that named no key (DialAnonymous):
	// expectAddr stays zero until msg2 reveals who answered.
	anonymous bool
	// xx and pkt1 are the v1 (Noise XX) attempt, sharing ourIndex: hs
	// is nil on a v1-only leg, xx on a v0-only one. A leg with both
	// (wire_format auto) alternates its msg1s, v1Next saying which goes
	// next; the first msg2 of either version completes it.
	xx     *noise.XXInitiator
	pkt1   [wire.FMPv1Msg1Size]byte
	v1Next bool
}

// nextMsg1 is the msg1 to send now: the leg's only one, or on a
// dual-format leg the next in alternation.
func (l *leg) nextMsg1() []byte {
	switch {
	case l.xx == nil:
		return l.pkt[:]
	case l.hs == nil:
		return l.pkt1[:]
	}
	v1 := l.v1Next
	l.v1Next = !l.v1Next
	if v1 {
		return l.pkt1[:]
	}
	return l.pkt[:]
}

// Per-leg msg2 budgets (each of msg2Own, msg2Other): a genuine responder
// sends one msg2 per msg1 it receives, at most one per
// HandshakeResendInterval. Ours; upstream tries every msg2.
const (
	legMsg2Burst = 8
	legMsg2Rate  = 1 // per second
)

// ErrConnectionLimit: node.limits.max_connections handshakes are in flight.
var ErrConnectionLimit = errors.New("too many handshakes in flight")

// ErrACLDenied: the ACL refuses this peer.
var ErrACLDenied = errors.New("peer denied by ACL")

// Dial starts an outbound handshake to pk at c. It does nothing when the
// peer is already active or a handshake to it on the same address is in
// flight.
func (m *Manager) Dial(now time.Time, pk identity.PublicKey, c Candidate) error {
	na := pk.NodeAddr()
	if na == m.id.NodeAddr() {
		return fmt.Errorf("refusing to dial our own key")
	}
	if _, active := m.peers[na]; active {
		return nil
	}
	for _, l := range m.legs {
		if l.rekeyOf == nil && l.expectAddr == na && l.t == c.Transport && l.addr == c.Addr {
			return nil
		}
	}
	if c.Discovered && !m.discoveredRoom(c.Addr) {
		m.stats.DiscoveredLimit++
		return ErrDiscoveredLimit
	}
	if m.cfg.MaxConnections > 0 && len(m.legs) >= m.cfg.MaxConnections {
		if c.Discovered || !m.evictDiscovered() {
			m.stats.ConnectionLimit++
			return ErrConnectionLimit
		}
	}
	if d := m.acl.Check(pk); !d.Allowed {
		m.rejectedByACL(pk, c.Transport, c.Addr, "outbound_connect", d)
		return fmt.Errorf("%w (%s)", ErrACLDenied, d.Rule)
	}
	l, err := m.newLeg(now, pk, c.Transport, c.Addr, nil, m.peerFormat(na))
	if err != nil {
		return err
	}
	l.discovered = c.Discovered
	m.log.Debug("Connection initiated", "peer", m.name(na), "transport_id", c.Transport, "remote_addr", c.Addr,
		"link_id", l.linkID, "our_index", l.ourIndex)
	m.send(c.Transport, c.Addr, l.nextMsg1())
	return nil
}

// ErrDiscoveredLimit: the budget for handshakes to mDNS-discovered peers
// (in all, or to this host) is in flight.
var ErrDiscoveredLimit = errors.New("too many handshakes to discovered peers in flight")

// discoveredRoom reports whether one more discovered handshake, to addr's
// host, fits MaxDiscovered and MaxDiscoveredPerHost.
func (m *Manager) discoveredRoom(addr transport.Addr) bool {
	all, host := 0, 0
	for _, l := range m.legs {
		if !l.discovered {
			continue
		}
		all++
		if l.addr.IP.Addr() == addr.IP.Addr() && l.addr.MAC == addr.MAC {
			host++
		}
	}
	return (m.cfg.MaxDiscovered <= 0 || all < m.cfg.MaxDiscovered) &&
		(m.cfg.MaxDiscoveredPerHost <= 0 || host < m.cfg.MaxDiscoveredPerHost)
}

// evictDiscovered drops the oldest handshake to a discovered peer, to
// make room for a configured one; false when there is none.
func (m *Manager) evictDiscovered() bool {
	var old *leg
	for _, l := range m.legs {
		if l.discovered && (old == nil || l.started.Before(old.started) ||
			(l.started.Equal(old.started) && l.linkID < old.linkID)) {
			old = l
		}
	}
	if old == nil {
		return false
	}
	m.dropLeg(old)
	m.stats.DiscoveredEvicted++
	return true
}

// newLeg starts an outbound handshake in format f (v0: IK, v1: XX,
// auto: both, sharing one index). A rekey is always v0.
func (m *Manager) newLeg(now time.Time, pk identity.PublicKey, t transport.ID, addr transport.Addr, rekeyOf *Peer, f WireFormat) (*leg, error) {
	if f == WireV1 {
		return m.newLegV1(now, pk, t, addr, rekeyOf)
	}
	rs, err := pk.Point()
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	hs, err := noise.NewIKInitiator(m.id.Secret().Private(), rs, m.epoch, noise.WithRand(m.rand))
	if err != nil {
		return nil, fmt.Errorf("start handshake: %w", err)
	}
	idx, err := m.allocIndex(t)
	if err != nil {
		return nil, err
	}
	m.nextLID++
	l := &leg{t: t, addr: addr, ourIndex: idx, expect: pk, expectAddr: pk.NodeAddr(), hs: hs,
		started: now, nextResend: now.Add(m.cfg.HandshakeResendInterval), rekeyOf: rekeyOf, linkID: m.nextLID, lastSent: now}
	noiseMsg, err := hs.WriteMessage1(l.pkt[8:8])
	if err != nil {
		return nil, fmt.Errorf("write msg1: %w", err)
	}
	if _, err := (wire.FMPMsg1{SenderIndex: idx, Noise: noiseMsg}).MarshalTo(l.pkt[:]); err != nil {
		return nil, err
	}
	if f == WireAuto && rekeyOf == nil {
		if err := m.addXX(l); err != nil {
			return nil, err
		}
		if st := m.static[l.expectAddr]; st != nil {
			l.v1Next = st.learnedV1
		}
	}
	m.legs[linkKey{t, idx}] = l
	m.stats.HandshakesStarted++
	return l, nil
}

func (m *Manager) dropLeg(l *leg) {
	delete(m.legs, linkKey{l.t, l.ourIndex})
	if l.rekeyOf != nil && l.rekeyOf.rekey == l {
		l.rekeyOf.rekey = nil
	}
}

func (m *Manager) handleMsg1(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	m.stats.Msg1Received++
	msg, err := wire.ParseFMPMsg1(pkt)
	if err != nil {
		m.stats.DropMalformed++
		m.rejected(t, from)
		return
	}
	waiver, ok := m.admitInboundMsg1(now, t, from)
	if !ok {
		return
	}
	sum := sha256.Sum256(pkt)
	// A byte-identical msg1 for a handshake still unproven means our msg2
	// was lost: answer with the same msg2, no new crypto, no new state.
	// (To the address this copy came from: msg2 is smaller than msg1, so
	// even a spoofed copy reflects fewer bytes than it carried.)
	if u := m.unprovenByHash[sum]; u != nil {
		m.stats.Msg1Duplicate++
		m.send(t, from, u.msg2[:])
		return
	}
	// One whose session already authenticated a frame is a replay: the
	// initiator stops sending its msg1 once it has our msg2.
	if _, used := m.usedMsg1[sum]; used {
		m.stats.Msg1Replayed++
		return
	}
	hs, err := noise.NewIKResponder(m.id.Secret().Private(), m.epoch, noise.WithRand(m.rand))
	if err != nil {
		m.log.Error("cannot create handshake responder", "error", err)
		return
	}
	rs, epoch, err := hs.ReadMessage1(msg.Noise)
	if err != nil {
		m.stats.Msg1DecryptFailed++
		m.rejected(t, from)
		return
	}
	pk := identity.XOnly(rs)
	na := pk.NodeAddr()
	if na == m.id.NodeAddr() {
		m.stats.Msg1Ignored++
		m.rejected(t, from)
		return
	}
	// The established-link carve-out (own bucket, accept_connections
	// bypass) was granted on the source address alone; the DH now says
	// who sent it. Only the peer that owns the address (or the key we
	// are dialling there) may use it.
	if m.waiverMismatch(waiver, na, t, from) {
		return
	}
	if !m.formatAllowed(na, false) {
		m.rejected(t, from)
		return
	}
	if d := m.acl.Check(pk); !d.Allowed {
		m.stats.Msg1ACLDenied++
		m.rejectedByACL(pk, t, from, "inbound_handshake", d)
		m.rejected(t, from)
		return
	}
	existing := m.peers[na]
	var rekeyOf *Peer
	switch {
	case existing != nil && existing.Epoch == epoch && existing.v1:
		// An IK msg1 from a peer whose live link is v1, same run: no IK
		// rekey of a v1 link; the link we have stands.
		m.stats.Msg1Ignored++
		return
	case existing != nil && existing.Epoch == epoch:
		// A rekey when the session is old enough, otherwise a crossing or
		// stale attempt we leave unanswered (the link we have stands).
		if !m.cfg.RekeyEnabled || now.Sub(existing.cur.start) < m.cfg.RekeyMinAge {
			m.stats.Msg1Ignored++
			return
		}
		// Both sides started a rekey: the smaller NodeAddr stays
		// initiator. (Losing, we keep our leg until their session proves
		// itself: this msg1 may be a replay.)
		if existing.rekey != nil && m.id.NodeAddr().Less(na) {
			m.stats.Msg1Ignored++
			m.log.Debug("Dual rekey initiation: we win (smaller addr), dropping their msg1", "peer", m.name(na))
			return
		}
		rekeyOf = existing
	case existing != nil:
		// A new epoch: the peer restarted, or someone replays a msg1 from
		// one of its earlier runs. The live link stays until the new
		// session authenticates a frame.
		m.stats.RestartsUnproven++
	case m.cfg.MaxPeers > 0 && len(m.peers) >= m.cfg.MaxPeers && !m.hasLegTo(na):
		m.stats.Msg1PeerLimit++
		return
	}
	u := &unproven{t: t, addr: from, pk: pk, na: na, epoch: epoch, msg1Hash: sum, at: now, rekeyOf: rekeyOf}
	if !m.respond(hs, u, msg.SenderIndex) {
		return
	}
	if rekeyOf != nil {
		m.log.Debug("rekey: answered peer's msg1, awaiting its first frame", "peer", rekeyOf.String())
	}
}

// respond writes msg2 for a msg1 that hs has read, registers u as an
// unproven handshake, and sends msg2: the only packet an initiator gets
// before it has proved its address.
func (m *Manager) respond(hs *noise.IKResponder, u *unproven, theirIdx uint32) bool {
	ourIdx, err := m.allocIndex(u.t)
	if err != nil {
		m.log.Warn("cannot answer msg1", "error", err)
		return false
	}
	noiseMsg, err := hs.WriteMessage2(u.msg2[12:12])
	if err != nil {
		m.log.Warn("cannot write msg2", "error", err)
		return false
	}
	if _, err := (wire.FMPMsg2{SenderIndex: ourIdx, ReceiverIndex: theirIdx, Noise: noiseMsg}).MarshalTo(u.msg2[:]); err != nil {
		return false
	}
	sess, err := hs.Session()
	if err != nil {
		return false
	}
	var kbit bool
	if u.rekeyOf != nil {
		kbit = !u.rekeyOf.kbit
	}
	u.sess = &linkSession{s: sess, ourIndex: ourIdx, theirIndex: theirIdx, kbit: kbit}
	m.addUnproven(u)
	m.send(u.t, u.addr, u.msg2[:])
	return true
}

func (m *Manager) hasLegTo(na identity.NodeAddr) bool {
	for _, l := range m.legs {
		if l.expectAddr == na {
			return true
		}
	}
	return false
}

func (m *Manager) handleMsg2(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	m.stats.Msg2Received++
	msg, err := wire.ParseFMPMsg2(pkt)
	if err != nil {
		m.stats.DropMalformed++
		m.rejected(t, from)
		return
	}
	l := m.legs[linkKey{t, msg.ReceiverIndex}]
	if l == nil || l.hs == nil { // none, or a v1-only leg
		m.stats.Msg2Unmatched++
		m.rejected(t, from)
		return
	}
	// A msg2 that fails to authenticate leaves the leg as it was, so a
	// forged msg2 cannot kill a genuine handshake; the leg's budgets bound
	// what forged ones cost.
	if !m.takeHandshakeBudget(now, from, l.addr, &l.msg2Own, &l.msg2Other, &m.stats.Msg2LegLimited) {
		return
	}
	epoch, err := l.hs.ReadMessage2(msg.Noise)
	if err != nil {
		m.stats.Msg2DecryptFailed++
		if l.rekeyOf != nil {
			m.log.Warn("Rekey msg2 processing failed", "peer", m.name(l.expectAddr), "error", err)
		}
		return
	}
	sess, err := l.hs.Session()
	if err != nil {
		m.stats.Msg2DecryptFailed++
		return
	}
	m.dropLeg(l)
	if d := m.acl.Check(l.expect); !d.Allowed {
		m.stats.Msg2ACLDenied++
		m.rejectedByACL(l.expect, l.t, l.addr, "outbound_handshake", d)
		return
	}
	na := l.expectAddr
	existing := m.peers[na]
	if l.rekeyOf != nil {
		p := l.rekeyOf
		if existing != p {
			return // the peer went away while we rekeyed
		}
		if epoch != p.Epoch {
			m.stats.PeerRestarts++
			m.log.Info("Peer restart detected during FMP rekey, replacing stale endpoint session", "peer", m.name(na),
				"old_epoch", p.Epoch.String(), "new_epoch", epoch.String())
			m.removePeerKeeping(now, p, "peer restarted", false, addrKey{t, from})
			m.promote(now, l.expect, epoch, t, from, Outbound, sess, l.ourIndex, msg.SenderIndex, l.linkID, linkMeta{})
			return
		}
		m.cutover(now, p, &linkSession{s: sess, ourIndex: l.ourIndex, theirIndex: msg.SenderIndex}, true)
		return
	}
	m.establishOutbound(now, l, epoch, t, from, sess, msg.SenderIndex, linkMeta{})
}

// establishOutbound acts on a completed outbound handshake (not a rekey)
// to l.expect: a new peer, a restarted one, or crossed dials.
func (m *Manager) establishOutbound(now time.Time, l *leg, epoch noise.Epoch, t transport.ID, from transport.Addr,
	sess *noise.Session, theirIdx uint32, meta linkMeta) {
	na := l.expectAddr
	existing := m.peers[na]
	switch {
	case existing == nil:
		m.promote(now, l.expect, epoch, t, from, Outbound, sess, l.ourIndex, theirIdx, l.linkID, meta)
	case existing.Epoch != epoch:
		m.stats.PeerRestarts++
		oldEpoch, loser := existing.Epoch, existing.LinkID
		m.removePeerKeeping(now, existing, "peer restarted", false, addrKey{t, from})
		if p := m.promote(now, l.expect, epoch, t, from, Outbound, sess, l.ourIndex, theirIdx, l.linkID, meta); p != nil {
			m.restartedOnPromotion(p, loser, oldEpoch)
		}
	default:
		// Both sides dialed at once. Both keep the link the smaller
		// NodeAddr initiated, so both converge on the same session.
		m.stats.CrossConnections++
		if !m.id.NodeAddr().Less(na) {
			// Their outbound (our inbound) wins; drop ours. As upstream,
			// re-announce once the sessions are aligned.
			m.peerUp(existing)
			return
		}
		m.log.Debug("cross-connection: our outbound link wins", "peer", existing.String())
		m.replaceSession(now, existing, &linkSession{s: sess, ourIndex: l.ourIndex, theirIndex: theirIdx}, t, from, Outbound, l.linkID, meta)
		// Whatever we sent on the losing session before the swap was
		// dropped by the peer (it never had that index): as upstream,
		// re-send our TreeAnnounce and owe it a FilterAnnounce.
		m.peerUp(existing)
	}
}

// replaceSession makes next the only session of p, on (t, addr), with a
// fresh link: the resolution of crossed handshakes.
func (m *Manager) replaceSession(now time.Time, p *Peer, next *linkSession, t transport.ID, addr transport.Addr, dir Direction, linkID uint64, meta linkMeta) {
	oldT, oldAddr := p.Transport, p.Addr
	m.unregisterSessions(p)
	if m.byAddr[addrKey{oldT, oldAddr}] == p {
		delete(m.byAddr, addrKey{oldT, oldAddr})
	}
	next.start, next.kbit, next.v1 = now, false, meta.v1
	p.setMeta(meta)
	m.learnFormat(p.NodeAddr, meta.v1)
	next.rekeyAt = now.Add(m.cfg.RekeyAfter + m.jitter())
	p.cur, p.prev = next, nil
	p.Transport, p.Addr, p.Direction = t, addr, dir
	if linkID == 0 {
		m.nextLID++
		linkID = m.nextLID
	}
	p.LinkID = linkID
	p.kbit = false
	p.mmp = m.newLinkMMP(now, p, dir)
	m.setIndex(linkKey{t, next.ourIndex}, &indexEntry{peer: p, sess: p.cur})
	m.byAddr[addrKey{t, addr}] = p
	m.authenticated(t, addr)
	if oldT != t || oldAddr != addr {
		m.env.CloseConnection(oldT, oldAddr)
	}
	m.pqSessionStart(now, p)
}

// newLinkMMP starts the link metrics of p, whose format and profile
// (setMeta) are set: master's MMP with the spin-bit role of dir on a v0
// link, next's on a v1 link, with next's report gating by the two
// profiles.
func (m *Manager) newLinkMMP(now time.Time, p *Peer, dir Direction) *mmp.Link {
	l := mmp.NewLink(now, m.cfg.MMP, false)
	l.SetEpoch(now)
	if p.v1 {
		l.SetV1()
		l.SetReportGate(wire.MMPReports(m.cfg.Profile, p.profile))
	} else {
		l.SetInitiator(dir == Outbound)
	}
	return l
}

// promote makes a completed handshake an active peer.
func (m *Manager) promote(now time.Time, pk identity.PublicKey, epoch noise.Epoch, t transport.ID, addr transport.Addr, dir Direction, sess *noise.Session, ourIdx, theirIdx uint32, linkID uint64, meta linkMeta) *Peer {
	if linkID == 0 {
		m.nextLID++
		linkID = m.nextLID
	}
	p := &Peer{
		PublicKey: pk, NodeAddr: pk.NodeAddr(), LinkID: linkID,
		Transport: t, Addr: addr, Direction: dir, Epoch: epoch,
		Since: now, lastHB: now,
	}
	p.cur = &linkSession{s: sess, ourIndex: ourIdx, theirIndex: theirIdx, start: now,
		rekeyAt: now.Add(m.cfg.RekeyAfter + m.jitter()), v1: meta.v1}
	p.setMeta(meta)
	m.learnFormat(p.NodeAddr, meta.v1)
	p.hot.lastRecv.Store(unixNano(now))
	p.mmp = m.newLinkMMP(now, p, dir)
	if st := m.static[p.NodeAddr]; st != nil {
		p.Alias = st.cfg.Alias
		st.pending, st.retries = false, 0
	}
	m.peers[p.NodeAddr] = p
	m.peerSetVersion++
	m.setIndex(linkKey{t, ourIdx}, &indexEntry{peer: p, sess: p.cur})
	m.byAddr[addrKey{t, addr}] = p
	m.authenticated(t, addr)
	m.stats.PeersPromoted++
	if meta.v1 {
		m.log.Info("Peer promoted to active", "peer", m.name(p.NodeAddr), "npub", pk.Npub(), "direction", string(dir),
			"transport", t, "addr", addr.String(), "link_id", p.LinkID, "wire_format", "v1", "profile", meta.profile.String())
	} else {
		m.log.Info("Peer promoted to active", "peer", m.name(p.NodeAddr), "npub", pk.Npub(), "direction", string(dir),
			"transport", t, "addr", addr.String(), "link_id", p.LinkID)
	}
	m.pqSessionStart(now, p)
	m.peerUp(p)
	return p
}

// cutover makes next the current session of p and keeps the old one for
// the drain window. The K bit toggles: it is a parity bit, not "new".
func (m *Manager) cutover(now time.Time, p *Peer, next *linkSession, initiator bool) {
	if p.prev != nil {
		m.delIndex(linkKey{p.Transport, p.prev.ourIndex})
	}
	p.prev = p.cur
	p.prevDrainUntil = now.Add(m.cfg.DrainWindow)
	next.start = now
	next.rekeyAt = now.Add(m.cfg.RekeyAfter + m.jitter())
	p.kbit = !p.kbit
	// A candidate the workers already hold (an answered rekey or
	// post-quantum upgrade, published for the fast path) was made with
	// these values: written only when they differ, so no worker reading
	// them races with the loop.
	if next.kbit != p.kbit {
		next.kbit = p.kbit
	}
	if next.v1 != p.v1 {
		next.v1 = p.v1
	}
	p.cur = next
	m.setIndex(linkKey{p.Transport, next.ourIndex}, &indexEntry{peer: p, sess: next})
	p.mmp.ResetForRekey(now) // timestamps restart with the new session
	defer m.pqSessionStart(now, p)
	if next.pq {
		m.log.Debug("Post-quantum cutover, K-bit flipped", "peer", m.name(p.NodeAddr), "k", p.kbit, "initiator", initiator)
		return
	}
	p.stats.Rekeys++
	m.stats.RekeyCutovers++
	if initiator {
		m.log.Debug("Rekey cutover complete (initiator), K-bit flipped", "peer", m.name(p.NodeAddr), "k", p.kbit)
	} else {
		m.log.Debug("Peer new-epoch frame authenticated, K-bit flip promoting new session", "peer", m.name(p.NodeAddr),
			"k", p.kbit)
	}
}

func (m *Manager) unregisterSessions(p *Peer) {
	for _, s := range []*linkSession{p.cur, p.prev} {
		if s != nil {
			m.delIndex(linkKey{p.Transport, s.ourIndex})
		}
	}
	m.dropRekeyCandidates(p)
	if p.rekey != nil {
		m.dropLeg(p.rekey)
	}
	m.pqRelease(p)
}

// removePeer drops p and everything keyed to it, and closes its
// connection on a connection-oriented transport (after what is queued on
// it, a Disconnect say, has gone out). reconnect schedules a redial for
// configured peers.
func (m *Manager) removePeer(now time.Time, p *Peer, why string, reconnect bool) {
	m.removePeerKeeping(now, p, why, reconnect, addrKey{})
}

// removePeerKeeping is removePeer that leaves the connection at keep open:
// the link replacing p runs on it.
func (m *Manager) removePeerKeeping(now time.Time, p *Peer, why string, reconnect bool, keep addrKey) {
	if m.peers[p.NodeAddr] != p {
		return
	}
	name := m.name(p.NodeAddr).LogValue().String() // while p is still a peer
	if k := (addrKey{p.Transport, p.Addr}); k != keep {
		m.env.CloseConnection(p.Transport, p.Addr)
	}
	m.unregisterSessions(p)
	delete(m.peers, p.NodeAddr)
	m.peerSetVersion++
	if m.byAddr[addrKey{p.Transport, p.Addr}] == p {
		delete(m.byAddr, addrKey{p.Transport, p.Addr})
	}
	m.stats.PeersRemoved++
	m.log.Info("peer removed", "peer", name, "reason", why, "link_id", p.LinkID)
	m.mmpLog.Debug("MMP link teardown", append([]any{"peer", name}, attrsAny(p.mmp.TeardownLogAttrs())...)...)
	if p.pq.announced {
		m.upper.PeerDown(p, why)
	}
	if reconnect {
		m.scheduleRetry(now, p.NodeAddr, false)
	}
}

func (m *Manager) send(t transport.ID, to transport.Addr, pkt []byte) {
	if err := m.env.Send(t, to, pkt); err != nil {
		m.stats.SendErrors++
		m.log.Debug("send failed", "transport", t, "to", to, "error", err)
	}
}

// Connecting reports whether a handshake to na is in flight.
func (m *Manager) Connecting(na identity.NodeAddr) bool { return m.hasLegTo(na) }

// rejectedByACL is upstream's WARN for a peer the ACL refuses: context is
// upstream's (outbound_connect, inbound_handshake, outbound_handshake),
// decision its wording of the matching rule; rule is ours.
func (m *Manager) rejectedByACL(pk identity.PublicKey, t transport.ID, addr transport.Addr, context string, d ACLDecision) {
	decision := "denylist match"
	if d.Allowed {
		decision = "default allow"
	}
	logging.WithTarget(m.log, "fips::node::acl").Warn("Rejected peer by ACL", "peer", m.name(pk.NodeAddr()),
		"npub", pk.Npub(), "transport_id", uint32(t), "remote_addr", addr.String(), "context", context,
		"decision", decision, "rule", d.Rule)
}

// restartedOnPromotion is upstream's line for a handshake that found the
// peer already active under an older epoch: p is the new link (the
// winner), loser the replaced one; the epochs are ours.
func (m *Manager) restartedOnPromotion(p *Peer, loser uint64, oldEpoch noise.Epoch) {
	m.log.Info("Peer restart detected during promotion, replacing stale active peer", "peer", m.name(p.NodeAddr),
		"winner_link", p.LinkID, "loser_link", loser, "old_epoch", oldEpoch.String(), "new_epoch", p.Epoch.String())
}

package peer

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// An unproven handshake is a msg1 we answered with msg2 whose initiator has
// not yet authenticated a frame under the new session. A msg1 proves
// nothing: it can be a replay captured from an earlier run of the peer, and
// its source address can be spoofed. Only a frame that opens under the
// session our msg2 created shows that the initiator holds the keys and
// received our msg2, so only that frame may change what the node does:
// promote a new peer, replace a restarted one, cut a rekey over, or bind
// an address to a peer. Until then the node keeps the link it has, sends
// the initiator nothing but msg2 (one msg2, 69 bytes, per msg1 of 114
// bytes), and keeps the handshake in a table of its own, bounded by
// node.limits.max_pending_inbound, oldest evicted first.
type unproven struct {
	t        transport.ID
	addr     transport.Addr // where the msg1 came from (where msg2 went)
	pk       identity.PublicKey
	na       identity.NodeAddr
	epoch    noise.Epoch
	sess     *linkSession
	msg1Hash [32]byte
	msg2     [wire.FMPMsg2Size]byte
	at       time.Time
	seq      uint64
	// rekeyOf is the active peer (same epoch) whose session this msg1
	// would rekey; nil for a new link or a restart.
	rekeyOf *Peer
	// pq: not a msg1 but a post-quantum upgrade we answered (pq.go);
	// msg1Hash is then the exchange's transcript hash.
	pq bool
}

// maxRekeyCandidates bounds the unproven rekeys one peer may have at once.
// A replayed msg1 from the peer's current run makes one; a genuine rekey
// arriving beside it gets its own slot, so replays cannot block rekeys.
const maxRekeyCandidates = 4

// usedMsg1Size is how many accepted msg1 digests the node remembers, to
// refuse replays of them without cryptography.
const usedMsg1Size = 4096

// UnprovenCount is the number of answered handshakes awaiting their first
// authenticated frame.
func (m *Manager) UnprovenCount() int { return len(m.unproven) }

// addUnproven registers u, evicting the oldest unproven handshake when the
// table is full (and the peer's oldest rekey candidate when it has too
// many), so a flood cannot lock genuine initiators out: one needs only its
// first frame to arrive before max_pending_inbound newer msg1s do.
func (m *Manager) addUnproven(u *unproven) {
	if p := u.rekeyOf; p != nil {
		if len(p.rekeyCands) >= maxRekeyCandidates {
			m.stats.RekeyCandidatesEvicted++
			m.dropUnproven(p.rekeyCands[0])
		}
		p.rekeyCands = append(p.rekeyCands, u)
	}
	if limit := m.cfg.MaxPendingInbound; limit > 0 && len(m.unproven) >= limit {
		var oldest *unproven
		for _, c := range m.unproven {
			if oldest == nil || c.seq < oldest.seq {
				oldest = c
			}
		}
		m.stats.UnprovenEvicted++
		m.dropUnproven(oldest)
	}
	m.unprovenSeq++
	u.seq = m.unprovenSeq
	k := linkKey{u.t, u.sess.ourIndex}
	m.unproven[k] = u
	m.unprovenByHash[u.msg1Hash] = u
	m.setIndex(k, &indexEntry{cand: u, sess: u.sess})
}

// dropUnproven forgets u and its receiver index.
func (m *Manager) dropUnproven(u *unproven) { m.dropUnprovenKeeping(u, false) }

// dropUnprovenKeeping is dropUnproven that, with keepIndex, leaves u's
// receiver index registered: prove hands it straight to the session it
// promotes, and a kernel filter must not see it vanish in between.
func (m *Manager) dropUnprovenKeeping(u *unproven, keepIndex bool) {
	k := linkKey{u.t, u.sess.ourIndex}
	if m.unproven[k] != u {
		return
	}
	delete(m.unproven, k)
	if m.unprovenByHash[u.msg1Hash] == u {
		delete(m.unprovenByHash, u.msg1Hash)
	}
	if e := m.byIndex[k]; e != nil && e.cand == u && !keepIndex {
		m.delIndex(k)
	}
	if p := u.rekeyOf; p != nil {
		for i, c := range p.rekeyCands {
			if c == u {
				p.rekeyCands = append(p.rekeyCands[:i:i], p.rekeyCands[i+1:]...)
				break
			}
		}
	}
}

// dropRekeyCandidates forgets every unproven rekey of p.
func (m *Manager) dropRekeyCandidates(p *Peer) {
	for len(p.rekeyCands) > 0 {
		m.dropUnproven(p.rekeyCands[0])
	}
}

// rememberMsg1 records the digest of a msg1 whose session authenticated a
// frame: the genuine initiator never sends it again once it has msg2, so a
// later copy is a replay.
func (m *Manager) rememberMsg1(sum [32]byte) {
	if _, ok := m.usedMsg1[sum]; ok {
		return
	}
	if len(m.usedMsg1Ring) < usedMsg1Size {
		m.usedMsg1Ring = append(m.usedMsg1Ring, sum)
	} else {
		delete(m.usedMsg1, m.usedMsg1Ring[m.usedMsg1Next])
		m.usedMsg1Ring[m.usedMsg1Next] = sum
		m.usedMsg1Next = (m.usedMsg1Next + 1) % usedMsg1Size
	}
	m.usedMsg1[sum] = struct{}{}
}

// expireUnproven drops unproven handshakes older than the handshake timeout.
func (m *Manager) expireUnproven(now time.Time) {
	for _, u := range m.unproven {
		if now.Sub(u.at) >= m.cfg.HandshakeTimeout {
			m.dropUnproven(u)
			m.stats.UnprovenExpired++
			if u.rekeyOf != nil && !u.pq {
				// A rekey we answered whose initiator never cut over (it
				// gave up, every frame since was lost, or it was a replay).
				m.stats.RekeysAbandoned++
			}
		}
	}
}

// prove acts on the first frame that authenticated under u's session,
// received from addr: only now does the handshake change the node. It
// returns the peer the frame belongs to, or nil when the handshake lost
// (the frame is then dropped).
func (m *Manager) prove(now time.Time, u *unproven, t transport.ID, addr transport.Addr) *Peer {
	// The index stays registered for the session it becomes; if the
	// handshake loses, release drops it.
	k := linkKey{u.t, u.sess.ourIndex}
	m.dropUnprovenKeeping(u, true)
	defer func() {
		if e := m.byIndex[k]; e != nil && e.cand == u {
			m.delIndex(k)
		}
	}()
	if !u.pq {
		m.rememberMsg1(u.msg1Hash)
		m.stats.HandshakesProven++
	}
	if d := m.acl.Check(u.pk); !d.Allowed {
		m.stats.Msg1ACLDenied++
		m.rejectedByACL(u.pk, t, addr, "inbound_handshake", d)
		return nil
	}
	existing := m.peers[u.na]
	switch {
	case existing != nil && existing == u.rekeyOf && existing.Epoch == u.epoch:
		// The initiator has cut over: the first frame that authenticates
		// under the new session promotes it here too.
		m.dropRekeyCandidates(existing)
		if existing.rekey != nil {
			m.dropLeg(existing.rekey) // the crossing rekey of ours lost
		}
		m.cutover(now, existing, u.sess, false)
		existing.dampenUntil = now.Add(m.cfg.RekeyDampening)
		if !u.pq {
			m.stats.RekeysResponded++
		}
		return existing
	case existing != nil && existing.Epoch == u.epoch:
		// Both sides dialed at once and our outbound completed first.
		// Both keep the link the smaller NodeAddr initiated.
		m.stats.CrossConnections++
		if !u.na.Less(m.id.NodeAddr()) {
			// Ours wins. As upstream, re-announce once the sessions are
			// aligned.
			m.stats.HandshakesSuperseded++
			m.peerUp(existing)
			return nil
		}
		m.log.Debug("cross-connection: their outbound link wins", "peer", existing.String())
		m.replaceSession(now, existing, u.sess, t, addr, Inbound, 0, linkMeta{})
		m.peerUp(existing)
		return existing
	case existing != nil:
		m.stats.PeerRestarts++
		oldEpoch, loser := existing.Epoch, existing.LinkID
		m.removePeerKeeping(now, existing, "peer restarted", false, addrKey{t, addr})
		p := m.promote(now, u.pk, u.epoch, t, addr, Inbound, u.sess.s, u.sess.ourIndex, u.sess.theirIndex, 0, linkMeta{})
		if p != nil {
			m.restartedOnPromotion(p, loser, oldEpoch)
		}
		return p
	case m.cfg.MaxPeers > 0 && len(m.peers) >= m.cfg.MaxPeers && !m.hasLegTo(u.na):
		// Other handshakes proved first and filled the table.
		m.stats.Msg1PeerLimit++
		return nil
	}
	return m.promote(now, u.pk, u.epoch, t, addr, Inbound, u.sess.s, u.sess.ourIndex, u.sess.theirIndex, 0, linkMeta{})
}

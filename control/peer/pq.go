package peer

import (
	"crypto/mlkem"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/pq"
	"github.com/fips-go/fips/control/wire"
)

// The post-quantum upgrade of links (ours, not upstream's; issue 32, the
// session upgrade's mechanism one layer down; docs/wire.md).
//
// Every classical session of a link (the IK handshake's, and each IK
// rekey's) whose policy is not off is upgraded: the side that sent that
// session's msg1 offers a fresh ML-KEM-768 encapsulation key and a new
// receiver index in MsgLinkPQ fragments sealed under it; the other side
// encapsulates, derives the keys, registers the upgraded session under a
// new receiver index of its own as an answered rekey (an unproven
// candidate: the dataplane and the kernel filter learn it as they learn
// any rekey's) and answers. The offerer verifies the accept's key
// confirmation and cuts over as the initiator of a rekey does; the
// answerer cuts over on the first frame that authenticates under the new
// session, as for any rekey. So the K bit flips, the old session drains,
// and Publish and the IndexObserver see the same changes a rekey makes.
//
// Upstream drops unknown link message types (dispatch_link_message's
// "Unknown link message type", DEBUG) and keeps the link, so a classic
// peer never answers: after PQTimeout the link is recorded classical
// (preferred) or torn down with one line (required).

// linkSchedule is the link layer's key schedule: the session upgrade's
// (package pq) under a label and suite of its own.
var linkSchedule = pq.Schedule{Label: "fips-go/link-pq/v1", Suite: LinkPQSuite}

// LinkPQSuite names what a link's upgraded keys combine.
const LinkPQSuite = "ML-KEM-768+Noise_IK_secp256k1_ChaChaPoly_SHA256"

// linkPQ is one peer's upgrade state.
type linkPQ struct {
	mode pq.Mode
	// classic: recorded classical (preferred): no more offers or waits
	// for this peer, though an offer is still answered.
	classic bool
	// announced: the upper layers were told PeerUp. Under required they
	// hear of the peer only once its link is post-quantum, so nothing of
	// theirs (tree, bloom, lookups, routed datagrams) travels classical.
	announced bool
	// deadline: the current classical session must be upgraded by then
	// (zero: nothing awaited).
	deadline time.Time
	// epoch is the classical session the exchange upgrades: offers and
	// accepts sealed under any other are refused.
	epoch *linkSession
	id    [wire.PQIDSize]byte

	// offerer
	dk         *mlkem.DecapsulationKey768
	offer      []byte // index ‖ encapsulation key
	ourIndex   uint32 // reserved in Manager.pqIndices until used or released
	nextResend time.Time

	// answerer
	answered bool
	accept   []byte // index ‖ ciphertext ‖ tag, sent again for a resent offer
	cand     *unproven

	rx pq.Reassembly
}

// PostQuantum reports whether the link's current keys come from an
// ML-KEM-768 upgrade.
func (p *Peer) PostQuantum() bool { return p.cur != nil && p.cur.pq }

// PQMode is the peer's link policy.
func (p *Peer) PQMode() pq.Mode { return p.pq.mode }

// PQMode is the link policy for na: its peers[].link_pq, else node.link.pq.
func (m *Manager) PQMode(na identity.NodeAddr) pq.Mode {
	if m.cfg.PQPeers != nil {
		if md, ok := (*m.cfg.PQPeers)[na]; ok {
			return md
		}
	}
	return m.cfg.PQ
}

// peerUp tells the upper layers of p, unless pq required holds it back
// until the link is post-quantum.
func (m *Manager) peerUp(p *Peer) {
	if p.pq.mode == pq.Required && !p.PostQuantum() {
		return
	}
	if !p.pq.announced {
		p.pq.announced = true
		m.peerSetVersion++ // routing's peer list holds announced peers only
	}
	m.upper.PeerUp(p)
}

// Announced reports whether the upper layers have been told of the peer
// (PeerUp): always, but under link pq required before its link is
// post-quantum. Routing sends nothing through a peer not announced.
func (p *Peer) Announced() bool { return p.pq.announced }

// pqRelease forgets the exchange in flight, releasing a reserved index.
func (m *Manager) pqRelease(p *Peer) {
	x := &p.pq
	if x.dk != nil {
		delete(m.pqIndices, linkKey{p.Transport, x.ourIndex})
	}
	x.dk, x.offer, x.ourIndex, x.nextResend = nil, nil, 0, time.Time{}
	x.answered, x.accept, x.cand = false, nil, nil
	x.epoch, x.id = nil, [wire.PQIDSize]byte{}
	x.rx.Reset()
}

// pqBusy: an exchange is under way (offered, or answered and awaiting its
// first frame), which a rekey of ours would only race.
func (m *Manager) pqBusy(p *Peer) bool {
	x := &p.pq
	return x.dk != nil || (x.cand != nil && m.unproven[linkKey{x.cand.t, x.cand.sess.ourIndex}] == x.cand)
}

// pqSessionStart runs when p's current session changed: an upgraded one
// completes the exchange, a classical one starts the next.
func (m *Manager) pqSessionStart(now time.Time, p *Peer) {
	x := &p.pq
	m.pqRelease(p)
	x.mode = m.PQMode(p.NodeAddr)
	x.deadline = time.Time{}
	if p.cur.pq {
		x.classic = false
		m.stats.PQUpgrades++
		m.log.Info("Link upgraded to post-quantum keys (ML-KEM-768)", "peer", m.name(p.NodeAddr), "link_id", p.LinkID)
		if !x.announced {
			m.peerUp(p)
		}
		return
	}
	if x.mode == pq.Off {
		return
	}
	x.epoch = p.cur
	if x.classic {
		return
	}
	if p.cur.s.Role() != noise.Initiator {
		// The answerer waits for the offer and for the first frame on
		// the upgraded session: twice the offerer's wait.
		x.deadline = now.Add(2 * m.cfg.PQTimeout)
		return
	}
	x.deadline = now.Add(m.cfg.PQTimeout)
	if err := m.pqOffer(now, p); err != nil {
		// The deadline gives up on it (at a tick, not inside promote).
		m.log.Warn("post-quantum link offer failed", "peer", m.name(p.NodeAddr), "error", err)
	}
}

// pqOffer draws a key pair, an exchange id and a receiver index for the
// upgraded session, and sends the offer.
func (m *Manager) pqOffer(now time.Time, p *Peer) error {
	x := &p.pq
	var seed [mlkem.SeedSize]byte
	if _, err := io.ReadFull(m.rand, seed[:]); err != nil {
		return fmt.Errorf("no randomness for the ML-KEM key: %w", err)
	}
	dk, err := mlkem.NewDecapsulationKey768(seed[:])
	clear(seed[:])
	if err != nil {
		return fmt.Errorf("ML-KEM key generation: %w", err)
	}
	if _, err := io.ReadFull(m.rand, x.id[:]); err != nil {
		return fmt.Errorf("no randomness for the exchange id: %w", err)
	}
	idx, err := m.allocIndex(p.Transport)
	if err != nil {
		return err
	}
	m.pqIndices[linkKey{p.Transport, idx}] = p
	x.dk, x.ourIndex = dk, idx
	x.offer = linkPQPayload(idx, dk.EncapsulationKey().Bytes(), wire.LinkPQOfferSize)
	x.nextResend = now.Add(m.cfg.HandshakeResendInterval)
	m.stats.PQOffered++
	if err := m.pqSend(now, p, wire.PQKindOffer, x.offer); err != nil {
		m.log.Debug("post-quantum offer not sent, resending later", "peer", m.name(p.NodeAddr), "error", err)
	}
	return nil
}

// linkPQPayload is a link offer's payload (index ‖ encapsulation key) or
// an accept's before its tag (index ‖ ciphertext), with room for size.
func linkPQPayload(idx uint32, key []byte, size int) []byte {
	return append(binary.LittleEndian.AppendUint32(make([]byte, 0, size), idx), key...)
}

// pqSend sends payload's fragments on p's current session.
func (m *Manager) pqSend(now time.Time, p *Peer, kind wire.PQKind, payload []byte) error {
	frags, err := wire.LinkPQFragments(kind, p.pq.id, payload)
	if err != nil {
		return err
	}
	var b [wire.LinkPQMsgSize]byte
	for _, f := range frags {
		if _, err := wire.MarshalLinkPQ(b[:], f); err != nil {
			return err
		}
		if err := m.SendLink(now, p, 0, b[:]); err != nil {
			return fmt.Errorf("link pq %s fragment %d: %w", kind, f.Index, err)
		}
	}
	return nil
}

// pqTick runs p's upgrade timers: the offer's resends and the deadline.
// It reports whether p is still a peer.
func (m *Manager) pqTick(now time.Time, p *Peer) bool {
	x := &p.pq
	if x.deadline.IsZero() {
		return true
	}
	if !now.Before(x.deadline) {
		why := "no post-quantum offer from the peer"
		if x.dk != nil {
			why = "no post-quantum accept from the peer"
		} else if x.answered {
			why = "no frame from the peer on the post-quantum keys"
		}
		return m.pqGiveUp(now, p, why)
	}
	if x.dk != nil && !now.Before(x.nextResend) {
		if err := m.pqSend(now, p, wire.PQKindOffer, x.offer); err == nil {
			m.stats.PQOfferResends++
		}
		x.nextResend = now.Add(m.cfg.HandshakeResendInterval)
	}
	return true
}

// pqGiveUp ends p's upgrade attempt: preferred stays classical, counted;
// required tears the link down with one line. It reports whether p is
// still a peer.
func (m *Manager) pqGiveUp(now time.Time, p *Peer, why string) bool {
	x := &p.pq
	x.deadline = time.Time{}
	if x.mode == pq.Required {
		m.stats.PQRefused++
		m.log.Warn("Link torn down: pq is required and the peer did not upgrade to post-quantum keys",
			"peer", m.name(p.NodeAddr), "why", why, "link_id", p.LinkID)
		m.disconnect(now, p, wire.DisconnectOther, true)
		return false
	}
	// An answered exchange stays registered: a late frame on the
	// upgraded session still cuts over, so a peer that did is never a
	// black hole. The offer goes.
	if x.dk != nil {
		delete(m.pqIndices, linkKey{p.Transport, x.ourIndex})
		x.dk, x.offer, x.ourIndex = nil, nil, 0
	}
	x.rx.Reset()
	x.classic = true
	m.stats.PQFallbacks++
	m.log.Info("Link stays classical: the peer did not upgrade to post-quantum keys", "peer", m.name(p.NodeAddr), "why", why)
	return true
}

func (m *Manager) pqRefuse(p *Peer, what string) {
	m.stats.PQMessagesRefused++
	m.log.Debug("post-quantum link message refused", "why", what, "peer", m.name(p.NodeAddr))
}

// handlePQ handles one MsgLinkPQ that authenticated on p's current
// session, or its previous one when draining.
func (m *Manager) handlePQ(now time.Time, p *Peer, draining bool, msg []byte) {
	x := &p.pq
	if x.mode == pq.Off {
		// As a classic peer: an unknown type, dropped.
		m.stats.DropUnknownMsgType++
		return
	}
	f, err := wire.ParseLinkPQ(msg)
	if err != nil {
		m.stats.PQFragmentsRefused++
		m.log.Debug("post-quantum link fragment refused", "peer", m.name(p.NodeAddr), "error", err)
		return
	}
	onEpoch := !draining && x.epoch != nil && x.epoch == p.cur
	switch f.Kind {
	case wire.PQKindOffer:
		switch {
		case !onEpoch:
			m.pqRefuse(p, "offer outside the classical session it must upgrade")
		case x.answered && f.ID == x.id:
			// The offer again: our accept was lost. Answered once per
			// resent offer, on its first fragment.
			if f.Index == 0 {
				if err := m.pqSend(now, p, wire.PQKindAccept, x.accept); err != nil {
					m.log.Debug("post-quantum accept resend failed", "peer", m.name(p.NodeAddr), "error", err)
				}
			}
		case x.answered:
			m.pqRefuse(p, "second offer in one session (replayed)")
		case x.epoch.s.Role() == noise.Initiator:
			m.pqRefuse(p, "offer from the side that answered this session's handshake")
		default:
			if payload, ok := m.pqReassemble(p, f); ok {
				m.pqAnswer(now, p, f.ID, payload)
			}
		}
	case wire.PQKindAccept:
		switch {
		case x.dk == nil:
			m.pqRefuse(p, "accept without an offer")
		case f.ID != x.id:
			m.pqRefuse(p, "accept for another exchange")
		case !onEpoch:
			m.pqRefuse(p, "accept outside the offer's session")
		default:
			if payload, ok := m.pqReassemble(p, f); ok {
				m.pqFinish(now, p, payload)
			}
		}
	}
}

func (m *Manager) pqReassemble(p *Peer, f wire.PQFragment) ([]byte, bool) {
	return p.pq.rx.AddCounted(f, &m.stats.PQFragmentsRefused)
}

// pqAnswer is the answerer's half: encapsulate, register the upgraded
// session as an answered rekey under a new index, send the accept.
func (m *Manager) pqAnswer(now time.Time, p *Peer, id [wire.PQIDSize]byte, offer []byte) {
	x := &p.pq
	if p.RekeyInProgress() {
		m.pqRefuse(p, "offer while a rekey is under way")
		return
	}
	ourIdx, err := m.allocIndex(p.Transport)
	if err != nil {
		m.pqRefuse(p, err.Error())
		return
	}
	ex, accept, err := linkSchedule.Answer(x.epoch.s.Exporter(), p.PublicKey, m.id.PublicKey(), id,
		offer, offer[wire.LinkPQIndexSize:], linkPQPayload(ourIdx, nil, wire.LinkPQIndexSize))
	if err != nil {
		m.pqRefuse(p, err.Error())
		return
	}
	keys, th := ex.Keys, ex.TH
	sess := noise.NewDerivedSession(x.epoch.s, keys.AnswererToOfferer, keys.OffererToAnswerer, keys.Exporter)
	u := &unproven{t: p.Transport, addr: p.Addr, pk: p.PublicKey, na: p.NodeAddr, epoch: p.Epoch, at: now, rekeyOf: p, pq: true,
		msg1Hash: th, sess: &linkSession{s: sess, ourIndex: ourIdx, theirIndex: wire.LinkPQIndex(offer), kbit: !p.kbit, pq: true, v1: p.v1}}
	m.addUnproven(u)
	x.id, x.answered, x.accept, x.cand = id, true, accept, u
	m.stats.PQAccepted++
	if err := m.pqSend(now, p, wire.PQKindAccept, accept); err != nil {
		m.log.Debug("post-quantum accept not sent, answering the resent offer", "peer", m.name(p.NodeAddr), "error", err)
	}
}

// pqFinish is the offerer's half: decapsulate, verify the accept's key
// confirmation, cut over as a rekey's initiator does.
func (m *Manager) pqFinish(now time.Time, p *Peer, accept []byte) {
	x := &p.pq
	if p.RekeyInProgress() {
		// The peer's rekey came first: its cutover restarts the upgrade.
		m.pqRefuse(p, "accept while a rekey is under way")
		return
	}
	ex, err := linkSchedule.Finish(x.dk, x.epoch.s.Exporter(), m.id.PublicKey(), p.PublicKey, x.id, x.offer, accept, wire.LinkPQIndexSize)
	if errors.Is(err, pq.ErrConfirm) {
		// A ciphertext or tag changed on the way (only someone holding
		// the classical keys can): the keys would differ, so no cutover.
		m.stats.PQConfirmFailed++
		m.pqGiveUp(now, p, "the accept's key confirmation failed")
		return
	}
	if err != nil {
		m.pqRefuse(p, err.Error())
		return
	}
	keys := ex.Keys
	next := &linkSession{s: noise.NewDerivedSession(x.epoch.s, keys.OffererToAnswerer, keys.AnswererToOfferer, keys.Exporter),
		ourIndex: x.ourIndex, theirIndex: wire.LinkPQIndex(accept), pq: true, v1: p.v1}
	delete(m.pqIndices, linkKey{p.Transport, x.ourIndex})
	x.dk = nil // the index is the session's now, not a reservation
	m.cutover(now, p, next, true)
	// The answerer cuts over on the first frame under the new keys: send
	// one now rather than at the next heartbeat.
	hb := [1]byte{byte(wire.MsgHeartbeat)}
	if m.SendLink(now, p, 0, hb[:]) == nil {
		m.stats.HeartbeatsSent++
	}
}

package peer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// Links in upstream next's format (FMP version 1, docs/next.md §2–3): a
// Noise XX handshake in three packets, each side's node profile in an
// encrypted negotiation payload after msg2 and msg3.
//
// Initiator: msg1 (41 bytes, an ephemeral key), then on msg2 the
// responder's static, checked against the key dialled, then msg3 and
// promotion at once. Responder: msg1 is unauthenticated and answered
// with a 144-byte msg2, so it passes the same per-source and shared msg1
// buckets as an IK msg1 before any DH or reply; the handshake waits in
// pendingV1 (bounded like the unproven table, oldest evicted) for msg3,
// which names the initiator and authenticates it: only then is the
// ACL, the peer limit or the per-peer wire format applied and the peer
// promoted. A msg3 cannot be replayed (it is bound to our fresh
// ephemeral), so unlike an IK msg1 nothing waits for a first frame.

// v1 packet sizes as fips-go sends them: the fixed parts plus a 10-byte
// negotiation payload and its tag.
const (
	v1PayloadWire = wire.NegotiationHeaderSize + wire.FMPTagSize
	v1Msg2Size    = wire.FMPv1Msg2MinSize + v1PayloadWire // 144
	v1Msg3Size    = wire.FMPv1Msg3MinSize + v1PayloadWire // 111
)

// pendingV1 is a v1 msg1 we answered with msg2, awaiting msg3.
type pendingV1 struct {
	t          transport.ID
	addr       transport.Addr // where msg1 came from, and msg2 went
	hs         *noise.XXResponder
	ourIndex   uint32
	theirIndex uint32
	msg1Hash   [32]byte
	msg2       [v1Msg2Size]byte
	at         time.Time
	seq        uint64
	// waiver is whose the msg1 must be when it was admitted for its
	// source address (an active peer's, on that peer's bucket, or one we
	// are dialling on a transport that refuses strangers): only that
	// identity may complete it.
	waiver msg1Waiver
	// msg3Own and msg3Other bound the DH a msg3 costs: from the address
	// msg2 went to, and from anywhere else.
	msg3Own, msg3Other ratelimit.Bucket
}

// errNegotiation wraps every refusal of a peer's negotiation payload.
var errNegotiation = errors.New("FMP negotiation failed")

// PendingV1Count is the number of v1 handshakes answered with msg2 and
// awaiting msg3.
func (m *Manager) PendingV1Count() int { return len(m.pendingV1) }

// addXX adds a v1 (XX) attempt to l, sharing its index.
func (m *Manager) addXX(l *leg) error {
	xx, err := noise.NewXXInitiator(m.id.Secret().Private(), m.epoch, noise.WithRand(m.rand))
	if err != nil {
		return fmt.Errorf("start XX handshake: %w", err)
	}
	e, err := xx.WriteMessage1(l.pkt1[8:8])
	if err != nil {
		return fmt.Errorf("write XX msg1: %w", err)
	}
	if _, err := (wire.FMPv1Handshake{Phase: wire.FMPPhaseMsg1, SenderIndex: l.ourIndex, Noise: e}).MarshalTo(l.pkt1[:]); err != nil {
		return fmt.Errorf("marshal XX msg1: %w", err)
	}
	l.xx = xx
	return nil
}

// newLegV1 starts a v1-only outbound handshake.
func (m *Manager) newLegV1(now time.Time, pk identity.PublicKey, t transport.ID, addr transport.Addr, rekeyOf *Peer) (*leg, error) {
	idx, err := m.allocIndex(t)
	if err != nil {
		return nil, err
	}
	m.nextLID++
	l := &leg{t: t, addr: addr, ourIndex: idx, expect: pk, expectAddr: pk.NodeAddr(),
		started: now, nextResend: now.Add(m.cfg.HandshakeResendInterval), linkID: m.nextLID, lastSent: now, rekeyOf: rekeyOf}
	if err := m.addXX(l); err != nil {
		return nil, err
	}
	m.legs[linkKey{t, idx}] = l
	m.stats.HandshakesStarted++
	return l, nil
}

// handleV1 dispatches a packet of FMP version 1.
func (m *Manager) handleV1(now time.Time, t transport.ID, from transport.Addr, pkt []byte, ce bool) {
	switch pkt[0] & 0x0f {
	case wire.FMPPhaseEstablished:
		m.handleFrame(now, t, from, pkt, ce)
	case wire.FMPPhaseMsg1:
		m.handleMsg1V1(now, t, from, pkt)
	case wire.FMPPhaseMsg2:
		m.handleMsg2V1(now, t, from, pkt)
	case wire.FMPPhaseMsg3:
		m.handleMsg3V1(now, t, from, pkt)
	default:
		m.stats.DropMalformed++
		m.rejected(t, from)
	}
}

// ourNegotiation writes our FMP negotiation payload into b (at least
// NegotiationHeaderSize bytes).
func (m *Manager) ourNegotiation(b []byte) ([]byte, error) {
	n, err := wire.FMPNegotiation(m.cfg.Profile).MarshalTo(b)
	if err != nil {
		return nil, fmt.Errorf("negotiation payload: %w", err)
	}
	return b[:n], nil
}

// checkNegotiation reads the peer's payload as next does: none means a
// Full peer and no rekey; otherwise it must decode, declare a profile of
// 0–2 and a well-formed REKEY_OF if any, and one end must be Full. The
// versions and the MMP wants/provides bits are not enforced (next does
// not read them: docs/next.md §3).
func (m *Manager) checkNegotiation(payload []byte) (wire.NodeProfile, bool, error) {
	prof, rekey, _, err := m.checkNegotiationRekey(payload)
	return prof, rekey, err
}

// checkNegotiationRekey is checkNegotiation that also returns the index
// a REKEY_OF names.
func (m *Manager) checkNegotiationRekey(payload []byte) (wire.NodeProfile, bool, uint32, error) {
	if payload == nil {
		return wire.ProfileFull, false, 0, nil
	}
	n, err := wire.ParseNegotiation(payload)
	if err != nil {
		return 0, false, 0, fmt.Errorf("%w: %w", errNegotiation, err)
	}
	prof, err := n.Profile()
	if err != nil {
		return 0, false, 0, fmt.Errorf("%w: %w", errNegotiation, err)
	}
	idx, rekey, err := n.RekeyOf()
	if err != nil {
		return 0, false, 0, fmt.Errorf("%w: %w", errNegotiation, err)
	}
	if !wire.ProfilesCompatible(m.cfg.Profile, prof) {
		return 0, false, 0, fmt.Errorf("%w: neither end is a full node (ours %s, theirs %s)", errNegotiation, m.cfg.Profile, prof)
	}
	return prof, rekey, idx, nil
}

func (m *Manager) handleMsg1V1(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	m.stats.Msg1Received++
	h, err := wire.ParseFMPv1Handshake(pkt)
	if err != nil {
		m.stats.DropMalformed++
		m.rejected(t, from)
		return
	}
	// As for IK: classify and rate-limit before any crypto or reply. The
	// reply is 3.5 times the request here, so this is what keeps the
	// node from being a reflector (docs/next.md §13).
	waiver, ok := m.admitInboundMsg1(now, t, from)
	if !ok {
		return
	}
	sum := sha256.Sum256(pkt)
	if pd := m.pendingV1ByHash[sum]; pd != nil {
		// Our msg2 was lost: the same msg2 again, no new crypto or
		// state, and only to where the first went (a copy from elsewhere
		// would make us reflect 144 bytes for 41).
		m.stats.Msg1Duplicate++
		if from == pd.addr {
			m.send(t, from, pd.msg2[:])
		}
		return
	}
	hs, err := noise.NewXXResponder(m.id.Secret().Private(), m.epoch, noise.WithRand(m.rand))
	if err != nil {
		m.log.Error("cannot create handshake responder", "error", err)
		return
	}
	if err := hs.ReadMessage1(h.Noise); err != nil {
		m.stats.Msg1DecryptFailed++ // not a curve point
		m.rejected(t, from)
		return
	}
	ourIdx, err := m.allocIndex(t)
	if err != nil {
		m.log.Warn("cannot answer msg1", "error", err)
		return
	}
	pd := &pendingV1{t: t, addr: from, hs: hs, ourIndex: ourIdx, theirIndex: h.SenderIndex, msg1Hash: sum, at: now, waiver: waiver}
	var pl [wire.NegotiationHeaderSize]byte
	payload, err := m.ourNegotiation(pl[:])
	if err != nil {
		m.log.Warn("cannot write msg2", "error", err)
		return
	}
	noiseMsg, err := hs.WriteMessage2(pd.msg2[12:12], payload)
	if err != nil {
		m.log.Warn("cannot write msg2", "error", err)
		return
	}
	if _, err := (wire.FMPv1Handshake{Phase: wire.FMPPhaseMsg2, SenderIndex: ourIdx, ReceiverIndex: h.SenderIndex, Noise: noiseMsg}).MarshalTo(pd.msg2[:]); err != nil {
		m.log.Warn("cannot write msg2", "error", err)
		return
	}
	m.addPendingV1(pd)
	m.preIndex(linkKey{t, ourIdx})
	m.stats.V1Msg2Sent++
	m.send(t, from, pd.msg2[:])
}

// addPendingV1 registers pd, evicting the oldest pending handshake when
// node.limits.max_pending_inbound are waiting.
func (m *Manager) addPendingV1(pd *pendingV1) {
	if limit := m.cfg.MaxPendingInbound; limit > 0 && len(m.pendingV1) >= limit {
		var oldest *pendingV1
		for _, c := range m.pendingV1 {
			if oldest == nil || c.seq < oldest.seq {
				oldest = c
			}
		}
		m.stats.V1PendingEvicted++
		m.dropPendingV1(oldest)
		m.unpreIndex(linkKey{oldest.t, oldest.ourIndex})
	}
	m.pendingV1Seq++
	pd.seq = m.pendingV1Seq
	m.pendingV1[linkKey{pd.t, pd.ourIndex}] = pd
	m.pendingV1ByHash[pd.msg1Hash] = pd
}

func (m *Manager) dropPendingV1(pd *pendingV1) {
	k := linkKey{pd.t, pd.ourIndex}
	if m.pendingV1[k] != pd {
		return
	}
	delete(m.pendingV1, k)
	if m.pendingV1ByHash[pd.msg1Hash] == pd {
		delete(m.pendingV1ByHash, pd.msg1Hash)
	}
}

// expirePendingV1 drops v1 handshakes whose msg3 did not come within the
// handshake timeout.
func (m *Manager) expirePendingV1(now time.Time) {
	for _, pd := range m.pendingV1 {
		if now.Sub(pd.at) >= m.cfg.HandshakeTimeout {
			m.dropPendingV1(pd)
			m.unpreIndex(linkKey{pd.t, pd.ourIndex})
			m.stats.V1PendingExpired++
		}
	}
}

func (m *Manager) handleMsg2V1(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	m.stats.Msg2Received++
	h, err := wire.ParseFMPv1Handshake(pkt)
	if err != nil {
		m.stats.DropMalformed++
		m.rejected(t, from)
		return
	}
	l := m.legs[linkKey{t, h.ReceiverIndex}]
	if l == nil || l.xx == nil { // none, or a v0-only leg
		m.stats.Msg2Unmatched++
		m.rejected(t, from)
		return
	}
	if !m.takeHandshakeBudget(now, from, l.addr, &l.msg2Own, &l.msg2Other, &m.stats.Msg2LegLimited) {
		return
	}
	saved := *l.xx
	rs, epoch, payload, err := l.xx.ReadMessage2(h.Noise)
	if err != nil {
		m.stats.Msg2DecryptFailed++
		return
	}
	pk := identity.XOnly(rs)
	if l.anonymous && l.expectAddr.IsZero() && !m.learnAnonymousMsg2(l, pk) {
		return
	}
	na := l.expectAddr
	if pk.NodeAddr() != na {
		// Answered by someone else than the key we dialled: anyone who
		// saw our msg1 can do that with a key of its own. The leg
		// stays as it was for the genuine msg2 (upstream drops it).
		*l.xx = saved
		m.stats.Msg2WrongIdentity++
		if l.rekeyOf != nil {
			// Our rekey's msg1 travels in the clear: an on-path
			// stranger answering it holds key rotation back
			// (upstream next's rekey_static_mismatch). The working
			// session is untouched either way.
			m.stats.RekeyStaticMismatch++
			m.log.Warn("rekey msg2 answered by a different static than the peer's, keeping the current session",
				"peer", m.name(na), "actual", m.name(pk.NodeAddr()), "transport_id", uint32(t), "remote_addr", from.String())
		} else {
			m.log.Warn("msg2 answered by a different static than the one dialed, dropping it", "expected", m.name(na),
				"actual", m.name(pk.NodeAddr()), "transport_id", uint32(t), "remote_addr", from.String())
		}
		m.rejected(t, from)
		return
	}
	prof, rekey, err := m.checkNegotiation(payload)
	if err == nil && rekey {
		err = fmt.Errorf("%w: a rekey marker in msg2", errNegotiation)
	}
	if err != nil {
		m.dropLeg(l)
		m.stats.V1NegotiationFailed++
		m.log.Warn("FMP negotiation failed", "peer", m.name(na), "direction", "outbound", "error", err)
		if l.rekeyOf == nil && !l.anonymous {
			m.scheduleRetry(now, na, true)
		}
		return
	}
	if p := l.rekeyOf; p != nil && (m.peers[na] != p || !p.v1) {
		m.dropLeg(l) // the peer went away (or relinked) while we rekeyed
		return
	}
	if d := m.acl.Check(l.expect); !d.Allowed {
		m.dropLeg(l)
		m.stats.Msg2ACLDenied++
		m.rejectedByACL(l.expect, l.t, l.addr, "outbound_handshake", d)
		return
	}
	var pl [wire.NegotiationHeaderSize + v1RekeyTLVSize]byte
	neg := wire.FMPNegotiation(m.cfg.Profile)
	if p := l.rekeyOf; p != nil {
		neg = neg.WithRekeyOf(p.cur.theirIndex)
	}
	pn, err := neg.MarshalTo(pl[:])
	if err != nil {
		m.log.Warn("cannot write msg3", "error", err)
		return
	}
	ours := pl[:pn]
	var msg3 [v1Msg3Size + v1RekeyTLVSize]byte
	noiseMsg, err := l.xx.WriteMessage3(msg3[12:12], ours)
	if err != nil {
		m.log.Warn("cannot write msg3", "error", err)
		return
	}
	n3, err := (wire.FMPv1Handshake{Phase: wire.FMPPhaseMsg3, SenderIndex: l.ourIndex, ReceiverIndex: h.SenderIndex, Noise: noiseMsg}).MarshalTo(msg3[:])
	if err != nil {
		m.log.Warn("cannot write msg3", "error", err)
		return
	}
	sess, err := l.xx.Session()
	if err != nil {
		m.stats.Msg2DecryptFailed++
		return
	}
	m.dropLeg(l)
	// The peer promotes on msg3 and sends at once: the index must pass
	// XDP before msg3 leaves. A session takes it below, or it goes.
	m.preIndex(linkKey{t, l.ourIndex})
	defer m.unpreIndex(linkKey{t, l.ourIndex})
	// msg3 first: frames the promotion sends must not overtake it.
	m.send(t, from, msg3[:n3])
	m.stats.V1Msg3Sent++
	meta := linkMeta{v1: true, profile: prof}
	if p := l.rekeyOf; p != nil {
		if epoch != p.Epoch {
			// Restarted meanwhile: it takes our msg3 as a fresh link.
			m.stats.PeerRestarts++
			m.log.Info("Peer restart detected during FMP rekey, replacing stale endpoint session", "peer", m.name(na),
				"old_epoch", p.Epoch.String(), "new_epoch", epoch.String())
			m.removePeerKeeping(now, p, "peer restarted", false, addrKey{t, from})
			m.promote(now, l.expect, epoch, t, from, Outbound, sess, l.ourIndex, h.SenderIndex, l.linkID, meta)
			return
		}
		// As for IK, the initiator cuts over at once (next does at its
		// next tick); the responder holds the new session from msg3 and
		// promotes it on our first frame under it, whose K bit is
		// flipped. msg3 is resent until the peer is heard on it.
		m.cutover(now, p, &linkSession{s: sess, ourIndex: l.ourIndex, theirIndex: h.SenderIndex}, true)
		p.rekeyMsg3 = append(p.rekeyMsg3[:0], msg3[:n3]...)
		p.rekeyMsg3Sent = 0
		p.rekeyMsg3Next = now.Add(m.cfg.HandshakeResendInterval)
		// A heartbeat at once: the first frame under the new session is
		// what moves the responder over to it.
		hb := [1]byte{byte(wire.MsgHeartbeat)}
		if m.SendLink(now, p, 0, hb[:]) == nil {
			m.stats.HeartbeatsSent++
		}
		return
	}
	m.establishOutbound(now, l, epoch, t, from, sess, h.SenderIndex, meta)
}

// v1RekeyTLVSize is a REKEY_OF TLV on the wire: header and index.
const v1RekeyTLVSize = 4 + 4

// resendRekeyMsg3 resends p's v1 rekey msg3 until a frame authenticates
// under the session it made, with the handshake backoff and at most
// handshake_max_resends times.
func (m *Manager) resendRekeyMsg3(now time.Time, p *Peer) {
	if p.rekeyMsg3 == nil {
		return
	}
	if p.cur.heard.Load() || p.rekeyMsg3Sent >= m.cfg.HandshakeMaxResends {
		p.rekeyMsg3 = nil
		return
	}
	if now.Before(p.rekeyMsg3Next) {
		return
	}
	p.rekeyMsg3Sent++
	m.stats.HandshakeResends++
	m.send(p.Transport, p.Addr, p.rekeyMsg3)
	gap := float64(m.cfg.HandshakeResendInterval) * math.Pow(m.cfg.HandshakeResendBackoff, float64(p.rekeyMsg3Sent))
	p.rekeyMsg3Next = now.Add(time.Duration(gap))
}

func (m *Manager) handleMsg3V1(now time.Time, t transport.ID, from transport.Addr, pkt []byte) {
	m.stats.V1Msg3Received++
	h, err := wire.ParseFMPv1Handshake(pkt)
	if err != nil {
		m.stats.DropMalformed++
		m.rejected(t, from)
		return
	}
	pd := m.pendingV1[linkKey{t, h.ReceiverIndex}]
	if pd == nil || pd.theirIndex != h.SenderIndex {
		m.stats.V1Msg3Unmatched++
		m.rejected(t, from)
		return
	}
	if !m.takeHandshakeBudget(now, from, pd.addr, &pd.msg3Own, &pd.msg3Other, &m.stats.V1Msg3Limited) {
		return
	}
	rs, epoch, payload, err := pd.hs.ReadMessage3(h.Noise)
	if err != nil {
		// The handshake is unchanged: the genuine msg3 may still come.
		m.stats.V1Msg3DecryptFailed++
		m.rejected(t, from)
		return
	}
	sess, err := pd.hs.Session()
	m.dropPendingV1(pd)
	// The index stays with the XDP program if a session takes it below
	// (promotion, a crossing, a rekey candidate), else it goes.
	defer m.unpreIndex(linkKey{t, pd.ourIndex})
	if err != nil {
		m.stats.V1Msg3DecryptFailed++
		return
	}
	pk := identity.XOnly(rs)
	na := pk.NodeAddr()
	if na == m.id.NodeAddr() {
		m.stats.Msg1Ignored++
		m.rejected(t, from)
		return
	}
	if m.waiverMismatch(pd.waiver, na, t, from) {
		return
	}
	prof, rekey, rekeyOf, err := m.checkNegotiationRekey(payload)
	if err != nil {
		m.stats.V1NegotiationFailed++
		m.log.Warn("FMP negotiation failed", "peer", m.name(na), "direction", "inbound", "error", err)
		m.rejected(t, from)
		return
	}
	if !m.formatAllowed(na, true) {
		m.rejected(t, from)
		return
	}
	if d := m.acl.Check(pk); !d.Allowed {
		m.stats.Msg1ACLDenied++
		m.rejectedByACL(pk, t, from, "inbound_handshake", d)
		m.rejected(t, from)
		return
	}
	meta := linkMeta{v1: true, profile: prof}
	existing := m.peers[na]
	switch {
	case existing == nil:
		if m.cfg.MaxPeers > 0 && len(m.peers) >= m.cfg.MaxPeers {
			m.stats.Msg1PeerLimit++
			m.log.Debug("max_peers reached, refusing inbound v1 link at promotion", "peer", m.name(na))
			return
		}
		m.promote(now, pk, epoch, t, from, Inbound, sess, pd.ourIndex, pd.theirIndex, 0, meta)
	case existing.Epoch != epoch:
		m.stats.PeerRestarts++
		oldEpoch, loser := existing.Epoch, existing.LinkID
		m.removePeerKeeping(now, existing, "peer restarted", false, addrKey{t, from})
		if p := m.promote(now, pk, epoch, t, from, Inbound, sess, pd.ourIndex, pd.theirIndex, 0, meta); p != nil {
			m.restartedOnPromotion(p, loser, oldEpoch)
		}
	case rekey && (!existing.v1 || rekeyOf != existing.cur.ourIndex):
		// A rekey of a session we do not hold (an old one, or of a v0
		// link): next resends its msg2 here and lets the initiator's
		// resends converge; we have nothing to resend, so it is dropped
		// and the current session stays.
		m.stats.V1RekeysRefused++
		m.log.Debug("v1 rekey msg3 names a session we do not hold, ignoring it", "peer", m.name(na),
			"rekey_of", rekeyOf, "our_index", existing.cur.ourIndex)
	case rekey && existing.rekey != nil && m.id.NodeAddr().Less(na):
		// Crossed rekeys: the smaller NodeAddr's stands (next's rule);
		// the peer abandons its own when our msg3 reaches it.
		m.stats.V1RekeysRefused++
		m.log.Debug("Dual rekey initiation: we win (smaller addr), dropping their msg3", "peer", m.name(na))
	case rekey:
		// The peer rekeys the session we hold (next's REKEY_OF, §4.2):
		// the new session waits, as an answered IK rekey does, for the
		// first frame that authenticates under it, which cuts over.
		u := &unproven{t: t, addr: from, pk: pk, na: na, epoch: epoch, msg1Hash: sha256.Sum256(pkt), at: now, rekeyOf: existing,
			sess: &linkSession{s: sess, ourIndex: pd.ourIndex, theirIndex: pd.theirIndex, kbit: !existing.kbit, v1: true}}
		m.addUnproven(u)
		m.log.Debug("rekey: peer's v1 msg3 accepted, awaiting its first frame", "peer", existing.String())
	default:
		// Crossed dials: both keep the link the smaller NodeAddr
		// initiated, as for IK.
		m.stats.CrossConnections++
		if !na.Less(m.id.NodeAddr()) {
			m.stats.HandshakesSuperseded++
			m.upper.PeerUp(existing)
			return
		}
		m.log.Debug("cross-connection: their outbound link wins", "peer", existing.String())
		m.replaceSession(now, existing, &linkSession{s: sess, ourIndex: pd.ourIndex, theirIndex: pd.theirIndex}, t, from, Inbound, 0, meta)
		m.upper.PeerUp(existing)
	}
}

// learnFormat remembers the format a configured peer's link was made in,
// which a dual-format dial to it tries first next time.
func (m *Manager) learnFormat(na identity.NodeAddr, v1 bool) {
	if st := m.static[na]; st != nil {
		st.learnedV1 = v1
	}
}

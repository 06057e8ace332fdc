package peer

import (
	"errors"
	"fmt"
	"time"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

func (m *Manager) handleFrame(now time.Time, t transport.ID, from transport.Addr, pkt []byte, outerCE bool) {
	f, err := wire.ParseFMPFrameAny(pkt)
	if err != nil {
		m.stats.DropMalformed++
		m.rejected(t, from)
		return
	}
	if outerCE {
		// Outer CE is CE on this link: MMP counts it and a relay passes
		// it on. f.Header, the AEAD's associated data, stays as received.
		f.Flags |= wire.FMPFlagCE
	}
	// The receiver index routes the frame before any crypto; indices are
	// per session, so it also picks current, previous or pending.
	e := m.byIndex[linkKey{t, f.ReceiverIndex}]
	if e == nil {
		m.stats.DropUnknownIndex++
		m.rejected(t, from)
		return
	}
	if (f.Version() == wire.FMPVersionNext) != e.sess.v1 {
		// Not the format of the link the index belongs to: never
		// decrypted (docs/next.md §15.2).
		m.stats.DropVersionMismatch++
		m.rejected(t, from)
		return
	}
	p, s := e.peer, e.sess
	pt, err := s.s.Open(m.pt[:0], f.Counter, f.Header, f.Sealed)
	if err == nil && !s.heard.Load() {
		s.heard.Store(true)
	}
	if err != nil {
		if errors.Is(err, noise.ErrReplay) {
			m.stats.DropReplay++
		} else {
			// The receiver index is cleartext: anyone who has seen one
			// frame can forge frames carrying it. A failure is counted,
			// never acted on; a link whose peer really lost its keys goes
			// quiet and is removed by the dead-link timeout.
			m.stats.DropDecrypt++
			m.rejected(t, from)
		}
		if p != nil {
			countOpenError(p, err, t == p.Transport && from == p.Addr)
		}
		return
	}
	if e.cand != nil {
		// The first frame under an answered handshake's session: the
		// initiator holds the keys and received our msg2.
		if p = m.prove(now, e.cand, t, from); p == nil {
			return
		}
	}
	if from != p.Addr {
		// Roaming: authenticated frames move the peer to their source.
		if m.byAddr[addrKey{t, p.Addr}] == p {
			delete(m.byAddr, addrKey{t, p.Addr})
		}
		m.log.Info("peer roamed", "peer", p.String(), "from", p.Addr.String(), "to", from.String())
		p.Addr = from
		m.byAddr[addrKey{t, from}] = p
		m.authenticated(t, from)
		p.stats.Roams++
		m.pubDirty = true
	}
	draining := e.cand == nil && s == p.prev
	in, err := accept(now, p, p.mmp, draining, f, len(pkt), pt)
	if err != nil {
		m.stats.DropMalformed++
		return
	}
	m.dispatch(now, p, f.Flags, draining, in)
}

// HandleOpened is the loop's half of a frame a dataplane worker opened
// (FastLink.Open) and could not finish itself: the peer's counters and
// link metrics already have it; what is left is the message.
func (m *Manager) HandleOpened(now time.Time, l *FastLink, flags uint8, in wire.FMPInner) {
	if m.peers[l.peer.NodeAddr] != l.peer {
		m.stats.OpenedForRemoved++
		return
	}
	m.dispatch(now, l.peer, flags, l.draining, in)
}

// dispatch hands an authenticated message to its consumer.
func (m *Manager) dispatch(now time.Time, p *Peer, flags uint8, draining bool, in wire.FMPInner) {
	switch in.Type() {
	case wire.MsgHeartbeat:
		m.stats.HeartbeatsRecv++
	case wire.MsgSenderReport, wire.MsgReceiverReport:
		if draining {
			m.stats.ReportsDraining++
			return
		}
	}
	switch in.Type() {
	case wire.MsgHeartbeat:
	case wire.MsgSenderReport:
		if err := handleSenderReport(now, p, in.Message); err != nil {
			m.stats.DropMalformed++
		}
	case wire.MsgReceiverReport:
		first, err := handleReceiverReport(now, p, in.Message)
		if err != nil {
			m.stats.DropMalformed++
			return
		}
		if first {
			// The first RTT sample makes the peer eligible as a tree
			// parent (upstream's first-RTT hook).
			if fr, ok := m.upper.(interface{ FirstRTT(*Peer) }); ok {
				fr.FirstRTT(p)
			}
		}
	case wire.MsgLinkPQ:
		m.handlePQ(now, p, draining, in.Message)
	case wire.MsgDisconnect:
		m.stats.DisconnectsRecv++
		reason := wire.DisconnectOther
		dl := logging.WithTarget(m.log, "fips::node::dataplane::dispatch")
		if d, err := wire.ParseDisconnect(in.Message); err == nil {
			reason = d.Reason
			dl.Info("Peer sent disconnect notification", "peer", m.name(p.NodeAddr), "reason", reason.String())
		} else {
			// Upstream drops a malformed one; the peer is removed here
			// regardless, as it has said it is leaving.
			dl.Debug("Malformed disconnect message", "from", m.name(p.NodeAddr), "error", err)
		}
		m.removePeer(now, p, "peer sent Disconnect: "+reason.String(), true)
	default:
		if !in.Type().Known() {
			m.stats.DropUnknownMsgType++
			return
		}
		m.upper.LinkMessage(p, flags, in.Timestamp, in.Message)
	}
}

// SendLink seals one link message (msg_type first) to p on its current
// session. flags may carry CE and SP; K is set from the session.
func (m *Manager) SendLink(now time.Time, p *Peer, flags uint8, msg []byte) error {
	s := p.cur
	n := wire.FMPHeaderSize + 4 + len(msg) + wire.FMPTagSize
	if n > len(m.buf) {
		return fmt.Errorf("link message of %d bytes too large", len(msg))
	}
	// The link MTU bounds the data path (SessionDatagrams, which the
	// router answers with MtuExceeded). Control messages go regardless, as
	// upstream's UDP path sends them: a FilterAnnounce alone is 1072 bytes
	// on the wire, and a narrow link must still learn its neighbours'
	// filters. A transport that cannot carry one refuses it itself.
	if mtu := m.env.LinkMTU(p.Transport, p.Addr); mtu > 0 && n > mtu && wire.MsgType(msg[0]) == wire.MsgSessionDatagram {
		return &transport.MTUError{Size: n, MTU: mtu}
	}
	if 4+len(msg) > noise.MaxPlaintextSize {
		return noise.ErrMessageTooLarge
	}
	// The frame is built and sealed in place: in the transport's send
	// queue when it has one, else in m.buf. msg (which may alias the
	// receive buffer) is copied once, behind the header and timestamp.
	var pkt []byte
	if fr, ok := m.env.(FrameReserver); ok {
		if q := fr.SendQueue(p.Transport); q != nil {
			b, err := q.Reserve(p.Addr, n)
			if err != nil {
				m.stats.SendErrors++
				return err
			}
			pkt = b
		}
	}
	queued := pkt != nil
	if !queued {
		pkt = m.buf[:n]
	}
	if err := sealFrame(now, p, s, p.mmp, p.kbit, pkt, flags, msg); err != nil {
		return err
	}
	if queued {
		return nil
	}
	if err := m.env.Send(p.Transport, p.Addr, pkt); err != nil {
		m.stats.SendErrors++
		return err
	}
	return nil
}

// Disconnect tells p we are closing the link and removes it.
func (m *Manager) Disconnect(now time.Time, p *Peer, reason wire.DisconnectReason, reconnect bool) {
	m.disconnect(now, p, reason, reconnect)
}

// disconnect is Disconnect, saying whether the message was sent.
func (m *Manager) disconnect(now time.Time, p *Peer, reason wire.DisconnectReason, reconnect bool) bool {
	msg := [2]byte{byte(wire.MsgDisconnect), byte(reason)}
	err := m.SendLink(now, p, 0, msg[:])
	if err == nil {
		m.stats.DisconnectsSent++
	}
	m.removePeer(now, p, "local Disconnect: "+reason.String(), reconnect)
	return err == nil
}

// Shutdown sends Disconnect(Shutdown) to every peer and forgets them all,
// scheduling nothing. It returns how many Disconnects were sent and to how
// many peers, for upstream's "Sent disconnect notifications" line.
func (m *Manager) Shutdown(now time.Time) (sent, total int) {
	for _, p := range sortedValues(m.peers, func(a, b *Peer) int { return a.NodeAddr.Compare(b.NodeAddr) }) {
		total++
		if m.disconnect(now, p, wire.DisconnectShutdown, false) {
			sent++
		}
	}
	for _, l := range m.legs {
		m.dropLeg(l)
	}
	for _, st := range m.static {
		st.pending = false
	}
	return sent, total
}

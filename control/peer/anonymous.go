package peer

import (
	"errors"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
)

// Anonymous dials (docs/next.md §12.2, upstream next's
// poll_transport_discovery): a neighbour heard by next's keyless
// Ethernet beacon is known by its MAC alone, so it is dialled with a v1
// (Noise XX) handshake that names no key. msg2 reveals who answered;
// from there the leg is treated as a dial to that key: self, the
// per-peer wire format, the ACL, then promotion with max_peers, a
// restart or crossed dials as for any outbound handshake. Anyone on the
// segment can beacon and answer, exactly as on next: the key learned is
// authenticated by the handshake, not by the beacon.

// ErrAnonymousLimit: MaxAnonymous anonymous dials are in flight.
var ErrAnonymousLimit = errors.New("too many anonymous handshakes in flight")

// ErrAnonymousFormat: the node's wire format is v0, which has no
// handshake that can learn the responder's key.
var ErrAnonymousFormat = errors.New("anonymous dials need node.wire_format v1 or auto")

// DialsAnonymously reports whether the node's own format speaks v1, the
// only one that can dial a neighbour known by its address alone. A v0
// node (even one with a v1 peer override) ignores keyless neighbours,
// since a link to an unconfigured peer follows the node's format.
func (m *Manager) DialsAnonymously() bool { return m.nodeFormat().allows(true) }

// DialAnonymous starts a v1 handshake to whoever answers at c, learning
// its key from msg2. Like upstream, it does nothing when a link or a
// handshake (ours or theirs) already runs on that address; unlike
// upstream, at most MaxAnonymous such dials are in flight, and they
// draw from the discovered budget.
func (m *Manager) DialAnonymous(now time.Time, c Candidate) error {
	if !m.DialsAnonymously() {
		return ErrAnonymousFormat
	}
	if m.addrBusy(c.Transport, c.Addr) {
		return nil
	}
	anon := 0
	for _, l := range m.legs {
		if l.anonymous {
			anon++
		}
	}
	if m.cfg.MaxAnonymous > 0 && anon >= m.cfg.MaxAnonymous {
		m.stats.AnonymousDialLimited++
		return ErrAnonymousLimit
	}
	if !m.discoveredRoom(c.Addr) {
		m.stats.DiscoveredLimit++
		return ErrDiscoveredLimit
	}
	if m.cfg.MaxConnections > 0 && len(m.legs) >= m.cfg.MaxConnections {
		m.stats.ConnectionLimit++
		return ErrConnectionLimit
	}
	l, err := m.newLegV1(now, identity.PublicKey{}, c.Transport, c.Addr, nil)
	if err != nil {
		return err
	}
	l.expectAddr = identity.NodeAddr{}
	l.anonymous, l.discovered = true, true
	m.stats.AnonymousDials++
	m.log.Debug("Anonymous discovery connection initiated", "transport_id", c.Transport, "remote_addr", c.Addr,
		"link_id", l.linkID, "our_index", l.ourIndex)
	m.send(c.Transport, c.Addr, l.nextMsg1())
	return nil
}

// AddrBusy reports whether a link or a handshake runs on (t, addr).
func (m *Manager) AddrBusy(t transport.ID, addr transport.Addr) bool { return m.addrBusy(t, addr) }

// addrBusy reports whether a link, an outbound handshake or an answered
// inbound one runs on (t, addr): upstream's addr_to_link check.
func (m *Manager) addrBusy(t transport.ID, addr transport.Addr) bool {
	if m.byAddr[addrKey{t, addr}] != nil {
		return true
	}
	for _, l := range m.legs {
		if l.t == t && l.addr == addr {
			return true
		}
	}
	for _, pd := range m.pendingV1 {
		if pd.t == t && pd.addr == addr {
			return true
		}
	}
	return false
}

// learnAnonymousMsg2 fixes the key an anonymous leg reached, as msg2
// named it, and runs the checks a keyed dial ran before msg1: false, the
// leg dropped, when that key is our own (our dial came back to us;
// upstream: "Discovered self via shared-media beacon"), when the
// per-peer wire format refuses v1 with it, or when it would be a new
// peer past max_peers (an anonymous neighbour is a stranger, as an
// inbound one is). The ACL and an already-linked identity are handled
// after, as for every v1 msg2.
func (m *Manager) learnAnonymousMsg2(l *leg, pk identity.PublicKey) bool {
	na := pk.NodeAddr()
	switch {
	case na == m.id.NodeAddr():
		m.dropLeg(l)
		m.log.Debug("Discovered self via shared-media beacon, dropping", "link_id", l.linkID)
		return false
	case !m.formatAllowed(na, true):
		m.dropLeg(l)
		return false
	case m.peers[na] == nil && m.cfg.MaxPeers > 0 && len(m.peers) >= m.cfg.MaxPeers:
		m.dropLeg(l)
		m.stats.AnonymousPeerLimit++
		m.log.Debug("max_peers reached, dropping anonymous handshake", "peer", m.name(na), "link_id", l.linkID)
		return false
	}
	l.expect, l.expectAddr = pk, na
	return true
}

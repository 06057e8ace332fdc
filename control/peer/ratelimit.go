package peer

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/transport"
)

// rates are the shapes of the manager's msg1 and msg2 buckets, from its
// configuration.
type rates struct {
	peerMsg1, stranger, established, legMsg2 ratelimit.Rate
}

func newRates(cfg Config) rates {
	return rates{
		peerMsg1:    ratelimit.PerSecond(cfg.PeerMsg1Burst, cfg.PeerMsg1Rate),
		stranger:    ratelimit.PerSecond(cfg.StrangerBurst, cfg.StrangerRate),
		established: ratelimit.PerSecond(cfg.EstablishedBurst, cfg.EstablishedRate),
		legMsg2:     ratelimit.PerSecond(legMsg2Burst, legMsg2Rate),
	}
}

// sourceKey names a msg1 source for its bucket, per transport: an IPv4
// address, or an IPv6 /64, without the port. A sender picks its ports
// freely, and one IPv6 host is usually given a whole /64 to pick
// addresses from: keyed by exact address, a /64 got 2⁶⁴ buckets, each
// with a full burst. The TCP transport's per-source share and the XDP
// bucket group sources the same way. On a link-layer transport
// (Ethernet) the source is its MAC.
type sourceKey struct {
	t   transport.ID
	ip  [16]byte
	mac transport.MAC
}

func sourceOf(t transport.ID, a transport.Addr) sourceKey {
	if !a.IP.IsValid() {
		return sourceKey{t: t, mac: a.MAC}
	}
	ip := a.IP.Addr().Unmap()
	k := sourceKey{t: t, ip: ip.As16()}
	if ip.Is6() {
		clear(k.ip[8:])
	}
	return k
}

// newSourceBuckets makes the strangers' msg1 buckets, one per source, in
// a least-recently-used table of bounded size (max; 0 is unbounded): a
// source that floods drains only its own bucket. A source evicted to make
// room starts again with a full bucket, so the global bucket behind them
// bounds the total work.
func newSourceBuckets(max int, r ratelimit.Rate) *ratelimit.Keyed[sourceKey] {
	return ratelimit.NewKeyed[sourceKey](ratelimit.KeyedConfig{Rates: []ratelimit.Rate{r}, Max: max, WhenFull: ratelimit.EvictLRU, TouchOnRefusal: true})
}

// admitMsg1 draws the tokens a msg1 needs before any cryptography. From
// the address of an active peer: that peer's bucket, then the bucket all
// peers share (node.rate_limit.established_handshake_*). From anyone
// else: the source's bucket (node.rate_limit.handshake_*), then the
// bucket all strangers share. A source or a peer that floods empties its
// own bucket first, so it cannot lock out others with fewer packets than
// the shared bucket's rate.
func (m *Manager) admitMsg1(now time.Time, t transport.ID, from transport.Addr, known *Peer) bool {
	if known != nil {
		return known.msg1Bucket.TakeCounted(now, m.rates.peerMsg1, &m.stats.Msg1PeerBucketLimited) &&
			m.established.TakeCounted(now, m.rates.established, &m.stats.Msg1EstablishedLimited)
	}
	evicted := m.sources.Evicted
	v := m.sources.Take(now, sourceOf(t, from))
	m.stats.Msg1SourcesEvicted += m.sources.Evicted - evicted
	if v != ratelimit.Admitted {
		m.stats.Msg1SourceLimited++
		return false
	}
	return m.stranger.TakeCounted(now, m.rates.stranger, &m.stats.Msg1StrangerLimited)
}

// msg1Waiver is whose a msg1 must turn out to be once its sender is
// known, when it got past a transport that refuses strangers
// (accept_connections: false) only because of its source address.
type msg1Waiver struct {
	// peer is the active peer that owns the address (also when the
	// transport accepts: its msg1s draw from that peer's bucket).
	peer *Peer
	// dial is set when one of our own dials to the address is in flight,
	// as upstream master and next admit it (a crossed dial needs the
	// other side's msg1 answered); expect is the key dialled (zero for a
	// dial that names none).
	dial   bool
	expect identity.NodeAddr
}

// mismatch reports a sender na the waiver was not granted for.
func (w msg1Waiver) mismatch(na identity.NodeAddr) (identity.NodeAddr, bool) {
	switch {
	case w.peer != nil && w.peer.NodeAddr != na:
		return w.peer.NodeAddr, true
	case w.peer == nil && w.dial && w.expect != (identity.NodeAddr{}) && w.expect != na:
		return w.expect, true
	}
	return identity.NodeAddr{}, false
}

// admitInboundMsg1 classifies a msg1 (of either format) by its source
// and rate-limits it before any crypto: a source address that belongs to
// an active peer (rekey, restart) draws from that peer's bucket and
// bypasses accept_connections, so a flood of strangers cannot starve
// rekeys. A source we are dialling bypasses accept_connections too, but
// draws from the strangers' buckets. It returns the waiver and whether
// to go on; refusals are counted.
func (m *Manager) admitInboundMsg1(now time.Time, t transport.ID, from transport.Addr) (msg1Waiver, bool) {
	w := msg1Waiver{peer: m.byAddr[addrKey{t, from}]}
	if !m.admitMsg1(now, t, from, w.peer) {
		m.stats.Msg1RateLimited++
		return msg1Waiver{}, false
	}
	if w.peer == nil && !m.env.AcceptConnections(t) {
		l := m.dialTo(t, from)
		if l == nil {
			m.stats.Msg1NotAccepting++
			return msg1Waiver{}, false
		}
		w.dial, w.expect = true, l.expectAddr
		m.stats.Msg1DialWaiver++
	}
	return w, true
}

// waiverMismatch drops a handshake whose sender na is not the one its
// msg1's waiver was granted for, counted and logged as upstream does.
func (m *Manager) waiverMismatch(w msg1Waiver, na identity.NodeAddr, t transport.ID, from transport.Addr) bool {
	expected, bad := w.mismatch(na)
	if !bad {
		return false
	}
	m.stats.Msg1IdentityMismatch++
	m.log.Warn("Msg1 admitted by the established-address waiver carries a different identity, dropping",
		"expected", m.name(expected), "actual", m.name(na), "transport_id", uint32(t))
	m.rejected(t, from)
	return true
}

// dialTo is a dial of ours (not a rekey) in flight to addr on t.
func (m *Manager) dialTo(t transport.ID, addr transport.Addr) *leg {
	for _, l := range m.legs {
		if l.rekeyOf == nil && l.t == t && l.addr == addr {
			return l
		}
	}
	return nil
}

// takeHandshakeBudget draws a token for a handshake reply that costs a
// DH (a msg2 for one of our legs, a msg3 for one of our pending
// handshakes) from the handshake's own budget for the address it is
// bound to (at), or from its budget for everywhere else; a refusal is
// counted in refused.
func (m *Manager) takeHandshakeBudget(now time.Time, from, at transport.Addr, own, other *ratelimit.Bucket, refused *uint64) bool {
	b := other
	if from == at {
		b = own
	}
	return b.TakeCounted(now, m.rates.legMsg2, refused)
}

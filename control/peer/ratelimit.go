package peer

import (
	"time"

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

// admitInboundMsg1 classifies a msg1 (of either format) by its source
// and rate-limits it before any crypto: a source address that belongs to
// an active peer (rekey, restart) draws from that peer's bucket and
// bypasses accept_connections, so a flood of strangers cannot starve
// rekeys. It returns that peer, if any, and whether to go on; refusals
// are counted.
func (m *Manager) admitInboundMsg1(now time.Time, t transport.ID, from transport.Addr) (*Peer, bool) {
	known := m.byAddr[addrKey{t, from}]
	if !m.admitMsg1(now, t, from, known) {
		m.stats.Msg1RateLimited++
		return nil, false
	}
	if known == nil && !m.env.AcceptConnections(t) {
		m.stats.Msg1NotAccepting++
		return nil, false
	}
	return known, true
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

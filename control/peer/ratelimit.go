package peer

import (
	"container/list"
	"time"

	"github.com/fips-go/fips/control/transport"
)

// tokenBucket is a classic token bucket refilled continuously from the
// caller's clock.
type tokenBucket struct {
	burst, rate float64
	tokens      float64
	last        time.Time
}

func newTokenBucket(burst, rate float64) tokenBucket {
	return tokenBucket{burst: burst, rate: rate, tokens: burst}
}

// take consumes one token if available.
func (b *tokenBucket) take(now time.Time) bool {
	if !b.last.IsZero() {
		if dt := now.Sub(b.last).Seconds(); dt > 0 {
			b.tokens += dt * b.rate
			if b.tokens > b.burst {
				b.tokens = b.burst
			}
		}
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// sourceKey names a msg1 source for its bucket, per transport: an IPv4
// address, or an IPv6 /64, without the port. A sender picks its ports
// freely, and one IPv6 host is usually given a whole /64 to pick
// addresses from: keyed by exact address, a /64 got 2⁶⁴ buckets, each
// with a full burst. The TCP transport's per-source share and the XDP
// bucket group sources the same way.
type sourceKey struct {
	t  transport.ID
	ip [16]byte
}

func sourceOf(t transport.ID, a transport.Addr) sourceKey {
	ip := a.IP.Addr().Unmap()
	k := sourceKey{t: t, ip: ip.As16()}
	if ip.Is6() {
		clear(k.ip[8:])
	}
	return k
}

type sourceBucket struct {
	key sourceKey
	b   tokenBucket
}

// sourceBuckets are the strangers' msg1 buckets, one per source, in a
// least-recently-used table of bounded size: a source that floods drains
// only its own bucket. A source evicted to make room starts again with a
// full bucket, so the global bucket behind them bounds the total work.
type sourceBuckets struct {
	max         int
	burst, rate float64
	lru         *list.List // of *sourceBucket, most recent first
	idx         map[sourceKey]*list.Element
}

func newSourceBuckets(max int, burst, rate float64) sourceBuckets {
	return sourceBuckets{max: max, burst: burst, rate: rate, lru: list.New(), idx: map[sourceKey]*list.Element{}}
}

// take draws one token from k's bucket; evicted reports whether another
// source's bucket was dropped to make room.
func (s *sourceBuckets) take(now time.Time, k sourceKey) (ok, evicted bool) {
	el := s.idx[k]
	if el != nil {
		s.lru.MoveToFront(el)
	} else {
		if s.max > 0 && s.lru.Len() >= s.max {
			old := s.lru.Back()
			s.lru.Remove(old)
			delete(s.idx, old.Value.(*sourceBucket).key)
			evicted = true
		}
		el = s.lru.PushFront(&sourceBucket{key: k, b: newTokenBucket(s.burst, s.rate)})
		s.idx[k] = el
	}
	return el.Value.(*sourceBucket).b.take(now), evicted
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
		if !known.msg1Bucket.take(now) {
			m.stats.Msg1PeerBucketLimited++
			return false
		}
		if !m.established.take(now) {
			m.stats.Msg1EstablishedLimited++
			return false
		}
		return true
	}
	ok, evicted := m.sources.take(now, sourceOf(t, from))
	if evicted {
		m.stats.Msg1SourcesEvicted++
	}
	if !ok {
		m.stats.Msg1SourceLimited++
		return false
	}
	if !m.stranger.take(now) {
		m.stats.Msg1StrangerLimited++
		return false
	}
	return true
}

package session

import (
	"time"

	"github.com/fips-go/fips/control/identity"
)

// bucket is a token bucket refilled against the caller's clock.
type bucket struct {
	tokens   float64
	capacity float64
	rate     float64
	last     time.Time
}

func newBucket(capacity int, rate float64, now time.Time) bucket {
	return bucket{tokens: float64(capacity), capacity: float64(capacity), rate: rate, last: now}
}

func (b *bucket) take(now time.Time) bool {
	if d := now.Sub(b.last); d > 0 {
		b.tokens += d.Seconds() * b.rate
		if b.tokens > b.capacity {
			b.tokens = b.capacity
		}
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// linkBuckets are one link peer's SessionSetup buckets: strangers (setups
// that would open a session) and setups naming an established session.
type linkBuckets struct {
	stranger, established bucket
	seen                  time.Time
}

// setupLimiter is upstream's SessionSetupRateLimiter, keyed by the link
// peer the setup arrived from.
type setupLimiter struct {
	cfg   *Config
	links map[identity.NodeAddr]*linkBuckets
}

func (l *setupLimiter) admit(now time.Time, linkPeer identity.NodeAddr, established bool) bool {
	lb := l.links[linkPeer]
	if lb == nil {
		lb = &linkBuckets{
			stranger:    newBucket(l.cfg.SetupBurst, l.cfg.SetupRate, now),
			established: newBucket(l.cfg.EstablishedSetupBurst, l.cfg.EstablishedSetupRate, now),
		}
		l.links[linkPeer] = lb
	}
	lb.seen = now
	var ok bool
	if established {
		ok = lb.established.take(now)
	} else {
		ok = lb.stranger.take(now)
	}
	if ok {
		for k, v := range l.links {
			if now.Sub(v.seen) >= l.cfg.SetupBucketIdle {
				delete(l.links, k)
			}
		}
	}
	return ok
}

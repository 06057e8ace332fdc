package ipv6

import (
	"net/netip"
	"time"

	"github.com/fips-go/fips/control/ratelimit"
)

// Rate limiter defaults, as upstream's IcmpRateLimiter.
const (
	// DefaultInterval is the minimum gap between two Packet Too Big
	// messages to the same source address (at most 10 per second).
	DefaultInterval = 100 * time.Millisecond
	// DefaultMaxAge is how long an entry is remembered; older entries are
	// dropped on every permitted send.
	DefaultMaxAge = 10 * time.Second
	// DefaultCapacity bounds the table. Upstream's table is bounded only by
	// age; this bound protects against a flood of distinct sources.
	DefaultCapacity = 4096
)

// RateLimiter limits ICMPv6 errors per source address. It is not safe for
// concurrent use; the caller serialises access (upstream keeps it inside
// the single-threaded node loop). The zero value is not usable; use
// NewRateLimiter.
type RateLimiter struct {
	k *ratelimit.Keyed[netip.Addr]
}

// NewRateLimiter returns a limiter with the given minimum interval per
// source and table capacity; interval <= 0 selects DefaultInterval and
// capacity <= 0 selects DefaultCapacity. Entries expire after
// DefaultMaxAge, or after interval if that is longer.
func NewRateLimiter(interval time.Duration, capacity int) *RateLimiter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &RateLimiter{k: ratelimit.NewKeyed[netip.Addr](ratelimit.KeyedConfig{
		Rates:        []ratelimit.Rate{ratelimit.Every(1, interval)},
		Max:          capacity,
		WhenFull:     ratelimit.EvictLRU,
		Forget:       ratelimit.Idle,
		IdleAfter:    max(DefaultMaxAge, interval),
		SweepOnAdmit: true,
	})}
}

// Allow reports whether an error may be sent to src at time now, and if so
// records the send. A send is refused when the previous permitted send to
// src was less than the interval before now. On each permitted send,
// entries older than the maximum age are dropped; if the table is still
// full, the entry least recently permitted a send is evicted to make room.
func (r *RateLimiter) Allow(src netip.Addr, now time.Time) bool {
	return r.k.Take(now, src) == ratelimit.Admitted
}

// Len returns the number of tracked source addresses.
func (r *RateLimiter) Len() int { return r.k.Len() }

// RateLimiterStats are the limiter's cumulative counters.
type RateLimiterStats struct {
	Refused uint64 // sends refused because the source was too recent
	Evicted uint64 // entries evicted because the table was full
	Expired uint64 // entries dropped for exceeding the maximum age
	Tracked int    // entries currently held
}

// Stats returns the limiter's counters.
func (r *RateLimiter) Stats() RateLimiterStats {
	return RateLimiterStats{Refused: r.k.Limited, Evicted: r.k.Evicted, Expired: r.k.Expired, Tracked: r.k.Len()}
}

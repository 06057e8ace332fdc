package ipv6

import (
	"net/netip"
	"time"
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
	last     map[netip.Addr]time.Time
	interval time.Duration
	maxAge   time.Duration
	capacity int

	refused uint64
	evicted uint64
	expired uint64
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
	return &RateLimiter{
		last:     make(map[netip.Addr]time.Time),
		interval: interval,
		maxAge:   max(DefaultMaxAge, interval),
		capacity: capacity,
	}
}

// Allow reports whether an error may be sent to src at time now, and if so
// records the send. A send is refused when the previous permitted send to
// src was less than the interval before now. On each permitted send,
// entries older than the maximum age are dropped; if the table is still
// full, the entry with the oldest send time is evicted to make room.
func (r *RateLimiter) Allow(src netip.Addr, now time.Time) bool {
	if t, ok := r.last[src]; ok && now.Sub(t) < r.interval {
		r.refused++
		return false
	}
	r.last[src] = now
	for a, t := range r.last {
		if now.Sub(t) >= r.maxAge {
			delete(r.last, a)
			r.expired++
		}
	}
	for len(r.last) > r.capacity {
		var oldest netip.Addr
		var ot time.Time
		first := true
		for a, t := range r.last {
			if a == src {
				continue
			}
			if first || t.Before(ot) {
				oldest, ot, first = a, t, false
			}
		}
		if first {
			break
		}
		delete(r.last, oldest)
		r.evicted++
	}
	return true
}

// Len returns the number of tracked source addresses.
func (r *RateLimiter) Len() int { return len(r.last) }

// RateLimiterStats are the limiter's cumulative counters.
type RateLimiterStats struct {
	Refused uint64 // sends refused because the source was too recent
	Evicted uint64 // entries evicted because the table was full
	Expired uint64 // entries dropped for exceeding the maximum age
	Tracked int    // entries currently held
}

// Stats returns the limiter's counters.
func (r *RateLimiter) Stats() RateLimiterStats {
	return RateLimiterStats{Refused: r.refused, Evicted: r.evicted, Expired: r.expired, Tracked: len(r.last)}
}

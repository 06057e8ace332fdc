// Package ratelimit holds the protocol core's one token bucket and its one
// keyed (per-address, per-peer) limiter. Neither starts goroutines nor
// reads a clock: every call takes the caller's now, so the core stays a
// state machine a simulated clock drives deterministically. Neither is
// safe for concurrent use.
//
// A bucket is kept as the time it owes rather than a float count of
// tokens: a token costs its Rate's period, the bucket holds its burst of
// them, and elapsed time pays the debt back, in whole nanoseconds. One event per
// interval is the bucket of burst 1 refilled every interval, exactly: a
// refusal never moves the next admission. A clock that goes back refills
// nothing and is otherwise ignored, so it neither mints tokens nor panics.
package ratelimit

import (
	"math"
	"time"
)

// Rate is a bucket's shape: at most Burst tokens, one more every period.
// A period of zero (the zero Rate) limits nothing.
type Rate struct {
	every     time.Duration // the price of one token
	tolerance time.Duration // the debt at which a token may still be taken: (burst-1)·every
	still     bool          // never refills
}

// PerSecond is a bucket of burst tokens refilled at rate tokens a second,
// the refill period rounded to the nanosecond (so a rate above 2e9 limits
// nothing). An infinite rate refills a token a nanosecond; one not above
// zero never refills (the burst is all there is).
func PerSecond(burst, rate float64) Rate {
	if math.IsInf(rate, 1) {
		return Every(burst, 1)
	}
	if !(rate > 0) {
		const unit = time.Millisecond
		return Rate{every: unit, tolerance: scale(burst-1, unit), still: true}
	}
	return Every(burst, time.Duration(math.Round(float64(time.Second)/rate)))
}

// Every is a bucket of burst tokens refilled one per period: Every(1, d)
// admits one event per d. A period not above zero limits nothing.
func Every(burst float64, period time.Duration) Rate {
	period = max(period, 0)
	return Rate{every: period, tolerance: scale(burst-1, period)}
}

func scale(f float64, d time.Duration) time.Duration {
	v := f * float64(d)
	switch {
	case f < 0 || math.IsNaN(f):
		return -1 // below one token: nothing is ever admitted
	case v >= math.MaxInt64:
		return math.MaxInt64
	case math.IsNaN(v): // an infinite burst of a zero period
		return 0
	}
	return time.Duration(math.Round(v))
}

// Bucket is one token bucket's state; its Rate is the caller's to keep
// and pass. The zero Bucket is full.
type Bucket struct {
	debt time.Duration // time owed: 0 is full
	last time.Time     // the latest now seen
}

func (b *Bucket) refill(now time.Time, r Rate) {
	if !now.After(b.last) {
		return
	}
	if !r.still {
		if d := now.Sub(b.last); d >= b.debt {
			b.debt = 0
		} else {
			b.debt -= d
		}
	}
	b.last = now
}

// Take consumes one token if one is there at now.
func (b *Bucket) Take(now time.Time, r Rate) bool {
	if !b.Ready(now, r) {
		return false
	}
	b.debt += r.every
	return true
}

// Ready reports whether Take would succeed at now, taking nothing.
func (b *Bucket) Ready(now time.Time, r Rate) bool {
	b.refill(now, r)
	return b.debt <= r.tolerance
}

// Full reports whether the bucket has refilled completely by now, so that
// forgetting it changes no decision.
func (b *Bucket) Full(now time.Time, r Rate) bool {
	b.refill(now, r)
	return b.debt == 0
}

// TakeCounted is Take, adding a refusal to *refused.
func (b *Bucket) TakeCounted(now time.Time, r Rate, refused *uint64) bool {
	if b.Take(now, r) {
		return true
	}
	*refused++
	return false
}

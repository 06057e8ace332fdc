package peer

import "time"

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

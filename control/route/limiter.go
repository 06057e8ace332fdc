package route

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ratelimit"
)

// newAddrLimiter is upstream's PerAddrRateLimiter: one event per address
// per interval, entries dropped once maxAge after their last event. It is
// bounded: a new address is refused (and counted in NoRoom) when max
// addresses are tracked after dropping the stale ones. Whether a stale
// entry is still stored never changes a decision (maxAge ≥ interval), so
// stale entries are swept only by Tick and when the table is full rather
// than on every event. Its clock is the router's millisecond one (msTime).
func newAddrLimiter(interval, maxAge time.Duration, max int) *ratelimit.Keyed[identity.NodeAddr] {
	return ratelimit.NewKeyed[identity.NodeAddr](ratelimit.KeyedConfig{
		Rates:     []ratelimit.Rate{ratelimit.Every(1, interval)},
		Max:       max,
		WhenFull:  ratelimit.Refuse,
		Forget:    ratelimit.Idle,
		IdleAfter: maxAge,
	})
}

// msTime is a time of the router's millisecond clock (ms) as the limiters
// take it: their decisions see only whole milliseconds, as before.
func msTime(n int64) time.Time { return time.UnixMilli(n) }

// msDuration is d in whole milliseconds, as the limiters' intervals were
// kept.
func msDuration(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }

package route

import "github.com/fips-go/fips/control/identity"

// addrLimiter is upstream's PerAddrRateLimiter: one event per address per
// interval, entries dropped once older than maxAge. It is bounded: a new
// address is refused (and counted) when max addresses are tracked after
// dropping the stale ones. Whether a stale entry is still stored never
// changes a decision (maxAge ≥ interval), so stale entries are swept only
// by Tick and when the table is full rather than on every event.
type addrLimiter struct {
	interval, maxAge int64 // ms
	max              int
	last             map[identity.NodeAddr]int64
	full             uint64 // refusals for want of room
}

func newAddrLimiter(interval, maxAge int64, max int) *addrLimiter {
	return &addrLimiter{interval: interval, maxAge: maxAge, max: max, last: map[identity.NodeAddr]int64{}}
}

// allow reports whether an event for a may happen at now, and records it.
func (l *addrLimiter) allow(a identity.NodeAddr, now int64) bool {
	t, ok := l.last[a]
	if ok && satSub(now, t) < l.interval {
		return false
	}
	if !ok && len(l.last) >= l.max {
		l.sweep(now)
		if len(l.last) >= l.max {
			l.full++
			return false
		}
	}
	l.last[a] = now
	return true
}

// sweep drops entries at least maxAge old.
func (l *addrLimiter) sweep(now int64) {
	for a, t := range l.last {
		if satSub(now, t) >= l.maxAge {
			delete(l.last, a)
		}
	}
}

package dataplane

import (
	"math"
	"sync/atomic"
	"time"
)

// CoDel is CoDel (RFC 8289) on a receive path: a packet's sojourn is
// the time from its kernel arrival (SO_TIMESTAMPNS, so the socket buffer
// counts) to a worker or the loop taking it. When the sojourn has stayed
// above target for a whole interval, established frames are dropped, at
// intervals shrinking with the square root of the drops so far, until it
// falls below target again. A relay that cannot keep up then holds a
// short queue — TCP inside the mesh backs off on the drops — instead of
// filling the socket buffer: latency under load stays near the target.
// One goroutine's (each worker has its own; the loop has its own).
type CoDel struct {
	target, interval time.Duration

	firstAbove time.Time // when the sojourn will have been above target for an interval
	dropping   bool
	dropNext   time.Time
	count      uint32 // drops in this dropping state
	lastCount  uint32

	// Drops counts what Drop refused (read by others: atomic).
	Drops atomic.Uint64
}

// CoDel's defaults (RFC 8289 §4.2).
const (
	codelTarget   = 5 * time.Millisecond
	codelInterval = 100 * time.Millisecond
)

// NewCoDel has RFC 8289's target and interval.
func NewCoDel() *CoDel { return &CoDel{target: codelTarget, interval: codelInterval} }

// Drop reports whether the packet dequeued at now after waiting sojourn
// should be dropped, and counts it.
func (c *CoDel) Drop(now time.Time, sojourn time.Duration) bool {
	ok := c.okToDrop(now, sojourn)
	switch {
	case c.dropping && !ok:
		c.dropping = false
	case c.dropping && !now.Before(c.dropNext):
		c.count++
		c.dropNext = c.controlLaw(c.dropNext)
		c.Drops.Add(1)
		return true
	case !c.dropping && ok:
		c.dropping = true
		// Resume near the last drop rate when the last dropping state
		// ended recently (RFC 8289 §5.4).
		delta := c.count - c.lastCount
		if c.count > 2 && delta > 1 && now.Sub(c.dropNext) < 16*c.interval {
			c.count = delta
		} else {
			c.count = 1
		}
		c.lastCount = c.count
		c.dropNext = c.controlLaw(now)
		c.Drops.Add(1)
		return true
	}
	return false
}

func (c *CoDel) okToDrop(now time.Time, sojourn time.Duration) bool {
	if sojourn < c.target {
		c.firstAbove = time.Time{}
		return false
	}
	if c.firstAbove.IsZero() {
		c.firstAbove = now.Add(c.interval)
		return false
	}
	return !now.Before(c.firstAbove)
}

func (c *CoDel) controlLaw(t time.Time) time.Time {
	return t.Add(time.Duration(float64(c.interval) / math.Sqrt(float64(c.count))))
}

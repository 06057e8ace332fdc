package mmp

import (
	"math"
	"sync/atomic"
	"time"
)

// noMTU is the "nothing known" value (u16::MAX upstream).
const noMTU = math.MaxUint16

// PathMTU is one session's path-MTU state (upstream PathMtuState). The
// destination side observes the path_mtu of arriving session datagrams and
// notifies the source: first as soon as anything is observed, at once when
// the observed value falls below the current one, else every
// max(10 s, 5·SRTT). The source side applies notifications: a decrease at
// once, an increase only after three consecutive notifications of the same
// higher value spanning at least two notification intervals; values below
// MinActionablePathMTU are ignored and counted.
type PathMTU struct {
	current uint16
	// lastObserved is atomic: a dataplane worker reads it to tell
	// whether a datagram's path MTU is news for the loop.
	lastObserved atomic.Uint32
	changed      bool

	lastNotif    time.Time
	hasLastNotif bool
	intervalMS   int64

	incCount   uint8
	firstInc   time.Time
	hasInc     bool
	pendingInc uint16

	belowFloor uint64
	// notified is the last PathMtuNotification applied (0: none): the
	// path MTU the destination saw, authenticated end to end.
	notified uint16
}

// NewPathMTU starts with no measurement in either direction.
func NewPathMTU() *PathMTU {
	p := &PathMTU{
		current:    noMTU,
		intervalMS: int64(MinPathMTUNotificationInterval / time.Millisecond),
	}
	p.lastObserved.Store(noMTU)
	return p
}

func elapsedMS(now, since time.Time) int64 {
	d := now.Sub(since)
	if d < 0 {
		return 0
	}
	return int64(d / time.Millisecond)
}

// Current is the effective source-side path MTU (65535 = none known).
func (p *PathMTU) Current() uint16 { return p.current }

// LastObserved is the last path_mtu seen at the destination side (65535 =
// none).
func (p *PathMTU) LastObserved() uint16 { return uint16(p.lastObserved.Load()) }

// NotificationInterval is max(10 s, 5·SRTT) as last updated.
func (p *PathMTU) NotificationInterval() time.Duration {
	return time.Duration(p.intervalMS) * time.Millisecond
}

// BelowFloor counts notifications ignored for being under
// MinActionablePathMTU.
func (p *PathMTU) BelowFloor() uint64 { return p.belowFloor }

// UpdateInterval sets the notification interval to max(10 s, 5·srtt).
func (p *PathMTU) UpdateInterval(srtt time.Duration) {
	p.updateIntervalMS(float64(srtt) / float64(time.Millisecond))
}

func (p *PathMTU) updateIntervalMS(srttMS float64) {
	p.intervalMS = max(int64(satU64(srttMS*5)), int64(MinPathMTUNotificationInterval/time.Millisecond))
}

// SeedSource lowers the source-side MTU to the outbound first-hop MTU (never
// raises it), as the node does on every send.
func (p *PathMTU) SeedSource(mtu uint16) {
	if mtu < p.current {
		p.current = mtu
	}
}

// Observe records the path_mtu of an arriving session datagram
// (destination side).
func (p *PathMTU) Observe(mtu uint16) {
	if mtu != p.LastObserved() {
		p.changed = true
		p.lastObserved.Store(uint32(mtu))
	}
}

// NotificationDue reports whether a PathMtuNotification should be sent.
// The "decrease" test compares the observation with our own source-side
// value, as upstream does.
func (p *PathMTU) NotificationDue(now time.Time) bool {
	if p.LastObserved() == noMTU {
		return false
	}
	if !p.hasLastNotif {
		return true
	}
	if p.changed && p.LastObserved() < p.current {
		return true
	}
	return elapsedMS(now, p.lastNotif) >= p.intervalMS
}

// BuildNotification returns the value to send and restarts the interval;
// false with nothing observed.
func (p *PathMTU) BuildNotification(now time.Time) (uint16, bool) {
	if p.LastObserved() == noMTU {
		return 0, false
	}
	p.lastNotif, p.hasLastNotif = now, true
	p.changed = false
	return p.LastObserved(), true
}

// ApplyNotification applies a PathMtuNotification at the source side and
// reports whether the effective MTU changed.
func (p *PathMTU) ApplyNotification(now time.Time, mtu uint16) (changed bool) {
	if mtu < MinActionablePathMTU {
		p.belowFloor++
		return false
	}
	p.notified = mtu
	if mtu < p.current {
		p.current = mtu
		p.incCount, p.hasInc = 0, false
		return true
	}
	if mtu > p.current {
		if mtu == p.pendingInc {
			if p.incCount != math.MaxUint8 {
				p.incCount++
			}
		} else {
			p.pendingInc, p.incCount = mtu, 1
			p.firstInc, p.hasInc = now, true
		}
		if p.incCount >= 3 && p.hasInc && elapsedMS(now, p.firstInc) >= 2*p.intervalMS {
			p.current = mtu
			p.incCount, p.hasInc = 0, false
			return true
		}
	}
	return false
}

// ResetSource forgets the source-side value and any pending increase (the
// path it described is broken); the destination side is untouched.
func (p *PathMTU) ResetSource() {
	p.current = noMTU
	p.incCount, p.hasInc, p.pendingInc = 0, false, 0
	p.notified = 0
}

// Notified is the path MTU of the last PathMtuNotification applied: what
// the destination saw arrive, the minimum link MTU every relay folded
// into the datagrams (authenticated end to end, unlike an MtuExceeded).
// False before the first.
func (p *PathMTU) Notified() (uint16, bool) { return p.notified, p.notified != 0 }

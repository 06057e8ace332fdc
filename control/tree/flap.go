package tree

import (
	"math"
	"time"
)

// maxDampeningMs bounds a dampening episode at one year, which is as good as
// permanent and keeps a hostile flap_dampening_secs from overflowing.
const maxDampeningMs = 365 * 24 * 60 * 60 * 1000

// secsToMs converts configured seconds to milliseconds, saturating.
func secsToMs(s uint64) uint64 {
	if s > math.MaxUint64/1000 {
		return math.MaxUint64
	}
	return s * 1000
}

// sinceMs is the milliseconds from then to now, 0 if the clock went back.
func sinceMs(now, then time.Time) uint64 {
	d := now.Sub(then)
	if d <= 0 {
		return 0
	}
	return uint64(d.Milliseconds())
}

// flapDampener is the hold-down and flap-dampening state behind parent
// selection. Only discretionary switches are subject to it.
type flapDampener struct {
	holdDownMs  uint64 // 0 = disabled
	lastSwitch  time.Time
	switched    bool // lastSwitch is set
	count       uint32
	windowStart time.Time
	windowSet   bool
	until       time.Time // dampened while now < until
	dampened    bool      // until is set (the episode may have lapsed)
	threshold   uint32
	windowMs    uint64
	durationMs  uint64
}

func newFlapDampener(cfg Config) flapDampener {
	return flapDampener{
		holdDownMs: secsToMs(cfg.HoldDownSecs),
		threshold:  cfg.FlapThreshold,
		windowMs:   secsToMs(cfg.FlapWindowSecs),
		durationMs: min(secsToMs(cfg.FlapDampeningSecs), maxDampeningMs),
	}
}

// markSwitch stamps a parent declaration, changed or not (hold-down).
func (f *flapDampener) markSwitch(now time.Time) {
	f.lastSwitch, f.switched = now, true
}

// recordChange counts an actual parent change and reports whether it
// engaged a dampening episode.
func (f *flapDampener) recordChange(now time.Time) bool {
	// A lapsed episode is retired here, so the next episode costs a fresh
	// threshold of changes rather than re-engaging on the first one.
	if f.dampened && !f.isDampened(now) {
		f.dampened = false
		f.count = 0
		f.windowSet = false
	}
	if f.windowSet && sinceMs(now, f.windowStart) < f.windowMs {
		f.count++
	} else {
		f.windowStart, f.windowSet = now, true
		f.count = 1
	}
	if f.count >= f.threshold && !f.isDampened(now) {
		f.until = now.Add(time.Duration(f.durationMs) * time.Millisecond)
		f.dampened = true
		return true
	}
	return false
}

func (f *flapDampener) isDampened(now time.Time) bool {
	return f.dampened && now.Before(f.until)
}

func (f *flapDampener) holdDownActive(now time.Time) bool {
	return f.holdDownMs != 0 && f.switched && sinceMs(now, f.lastSwitch) < f.holdDownMs
}

// suppressed is the veto on discretionary switches.
func (f *flapDampener) suppressed(now time.Time) bool {
	return f.holdDownActive(now) || f.isDampened(now)
}

package mmp

import "github.com/fips-go/fips/control/wire"

// gapTracker finds loss bursts from counter gaps (per-interval statistics).
type gapTracker struct {
	expected    uint64
	hasExpected bool
	inBurst     bool
	curLen      uint16

	count    uint32
	maxLen   uint16
	totalLen uint64
}

// observe returns how many frames the counter skipped (0 in order, for a
// duplicate, a late frame or the first frame).
func (g *gapTracker) observe(counter uint64) uint64 {
	if !g.hasExpected {
		g.expected, g.hasExpected = counter+1, true
		return 0
	}
	exp := g.expected
	var lost uint64
	if counter > exp {
		lost = counter - exp
		// Upstream narrows the gap with a truncating u16 cast, then adds
		// with saturation.
		if g.inBurst {
			g.curLen = satAdd16(g.curLen, uint16(lost))
		} else {
			g.inBurst, g.curLen = true, uint16(lost)
			g.count++
		}
	} else if g.inBurst {
		g.finish()
	}
	if counter >= exp {
		g.expected = counter + 1
	}
	return lost
}

func (g *gapTracker) finish() {
	if g.inBurst {
		g.maxLen = max(g.maxLen, g.curLen)
		g.totalLen += uint64(g.curLen)
		g.inBurst, g.curLen = false, 0
	}
}

// take returns (count, max, mean u8.8) and resets the interval. A burst
// still open is closed first.
func (g *gapTracker) take() (uint32, uint16, uint16) {
	g.finish()
	c, m := g.count, g.maxLen
	var mean uint16
	if c > 0 {
		mean = satU16(float64(g.totalLen) / float64(c) * 256)
	}
	g.count, g.maxLen, g.totalLen = 0, 0, 0
	return c, m, mean
}

func satAdd16(a, b uint16) uint16 {
	if a+b < a {
		return ^uint16(0)
	}
	return a + b
}

// receiver is the per-link/per-session receive accounting (upstream
// ReceiverState). Times are ms on the owning Link's clock.
type receiver struct {
	cumPackets, cumBytes uint64
	reorders             uint64
	highest              uint64

	intPackets, intBytes uint32

	jitter jitterEstimator
	owd    owdTrend
	owdSeq uint32
	gaps   gapTracker
	ce     uint32

	lastSenderTS uint32
	lastRecv     int64
	hasLastRecv  bool

	graceUntil int64
	inGrace    bool

	lastReport    int64
	hasLastReport bool
	intervalMS    int64
	hasData       bool
	srttUpdates   uint32
}

func newReceiver(owdWindow int, coldStartMS int64) receiver {
	return receiver{owd: newOWDTrend(owdWindow), intervalMS: coldStartMS}
}

func (r *receiver) resetForRekey(nowMS int64) {
	r.highest = 0
	r.reorders = 0
	r.gaps = gapTracker{}
	r.intPackets, r.intBytes = 0, 0
	r.jitter = jitterEstimator{}
	r.owd.clear()
	r.owdSeq = 0
	r.lastSenderTS = 0
	r.hasLastRecv = false
	r.graceUntil, r.inGrace = nowMS+rekeyGraceMS, true
	r.ce = 0
	r.hasData = false
	// Lifetime totals and report scheduling carry over, as upstream.
}

func (r *receiver) recordRecv(counter uint64, senderTS uint32, n int, ce bool, nowMS int64) {
	r.hasData = true
	r.cumPackets++
	r.cumBytes += uint64(n)
	if r.intPackets != ^uint32(0) {
		r.intPackets++
	}
	b := uint32(n)
	if r.intBytes+b < r.intBytes {
		r.intBytes = ^uint32(0)
	} else {
		r.intBytes += b
	}

	if counter < r.highest {
		r.reorders++
	} else {
		r.highest = counter
	}
	r.gaps.observe(counter)
	if ce && r.ce != ^uint32(0) {
		r.ce++
	}

	senderUS := int64(senderTS) * 1000
	if !(r.inGrace && nowMS < r.graceUntil) {
		r.inGrace = false
		if r.hasLastRecv {
			recvDelta := satSub(nowMS, r.lastRecv) * 1000
			sendDelta := senderUS - int64(r.lastSenderTS)*1000
			r.jitter.update(int32(recvDelta - sendDelta))
		}
	}

	// OWD sample: upstream measures the receive offset from the previous
	// frame (or zero for the first), not from a fixed origin.
	ref := nowMS
	if r.hasLastRecv {
		ref = r.lastRecv
	}
	r.owdSeq++
	r.owd.push(r.owdSeq, satSub(nowMS, ref)*1000-senderUS)

	r.lastSenderTS = senderTS
	r.lastRecv, r.hasLastRecv = nowMS, true
}

func (r *receiver) build(nowMS int64) (wire.ReceiverReport, bool) {
	if !r.hasData {
		return wire.ReceiverReport{}, false
	}
	echo, dwell := r.echo(nowMS)
	count, maxLen, mean := r.gaps.take()
	rep := wire.ReceiverReport{
		HighestCounter:         r.highest,
		CumulativePacketsRecv:  r.cumPackets,
		CumulativeBytesRecv:    r.cumBytes,
		TimestampEcho:          echo,
		DwellTime:              dwell,
		MaxBurstLoss:           maxLen,
		MeanBurstLoss:          mean,
		Jitter:                 r.jitter.us(),
		ECNCECount:             r.ce,
		OWDTrend:               r.owd.usPerSec(),
		BurstLossCount:         count,
		CumulativeReorderCount: uint32(r.reorders),
		IntervalPacketsRecv:    r.intPackets,
		IntervalBytesRecv:      r.intBytes,
	}
	r.endInterval(nowMS)
	return rep, true
}

// buildV1 is build in next's layout (docs/next.md §6.2): the burst
// maximum and mean and the interval counts are not reported (the burst
// count still closes the interval's bursts).
func (r *receiver) buildV1(nowMS int64) (wire.ReceiverReportV1, bool) {
	if !r.hasData {
		return wire.ReceiverReportV1{}, false
	}
	echo, dwell := r.echo(nowMS)
	count, _, _ := r.gaps.take()
	rep := wire.ReceiverReportV1{
		TimestampEcho:          echo,
		DwellTime:              dwell,
		HighestCounter:         r.highest,
		CumulativePacketsRecv:  r.cumPackets,
		CumulativeBytesRecv:    r.cumBytes,
		Jitter:                 r.jitter.us(),
		ECNCECount:             r.ce,
		OWDTrend:               r.owd.usPerSec(),
		BurstLossCount:         count,
		CumulativeReorderCount: uint32(r.reorders),
	}
	r.endInterval(nowMS)
	return rep, true
}

// echo is the timestamp echo and dwell time: the last sender timestamp
// seen and the time since that frame; a dwell over 65535 ms sends echo 0
// and dwell 65535.
func (r *receiver) echo(nowMS int64) (uint32, uint16) {
	if !r.hasLastRecv {
		return 0, 0
	}
	d := satSub(nowMS, r.lastRecv)
	if d > 0xFFFF {
		return 0, 0xFFFF
	}
	return r.lastSenderTS, uint16(d)
}

func (r *receiver) endInterval(nowMS int64) {
	r.intPackets, r.intBytes, r.hasData = 0, 0, false
	r.lastReport, r.hasLastReport = nowMS, true
}

func (r *receiver) due(nowMS int64) bool {
	if !r.hasData {
		return false
	}
	if !r.hasLastReport {
		return true
	}
	return satSub(nowMS, r.lastReport) >= r.intervalMS
}

// updateFromSRTT is the link rule: 1·SRTT clamped to [floor, 5000].
func (r *receiver) updateFromSRTT(srttUS int64) {
	if r.srttUpdates != ^uint32(0) {
		r.srttUpdates++
	}
	floor := minReportMS
	if r.srttUpdates <= ColdStartSamples {
		floor = coldStartMS
	}
	r.updateBounded(srttUS, floor, maxReportMS)
}

func (r *receiver) updateBounded(srttUS, lo, hi int64) {
	if srttUS <= 0 {
		return
	}
	r.intervalMS = min(max(srttUS/1000, lo), hi)
}

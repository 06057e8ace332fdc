package mmp

import "github.com/fips-go/fips/control/wire"

// sender is the per-link/per-session transmit accounting (upstream
// SenderState). Times are ms on the owning Link's clock. master's report
// names the interval by its first and last counters and timestamps,
// next's counts its frames (packets); both are kept, each layout takes
// its own.
type sender struct {
	cumPackets, cumBytes uint64

	startCounter uint64
	startTS      uint32
	bytes        uint32
	packets      uint32
	lastCounter  uint64
	lastTS       uint32
	hasData      bool

	lastReport    int64
	hasLastReport bool
	intervalMS    int64

	failures    uint32
	srttUpdates uint32
}

func newSender(coldStartMS int64) sender { return sender{intervalMS: coldStartMS} }

func (s *sender) recordSent(counter uint64, ts uint32, n int) {
	if !s.hasData {
		s.startCounter, s.startTS, s.hasData = counter, ts, true
	}
	s.lastCounter, s.lastTS = counter, ts
	b := uint32(n)
	if s.bytes+b < s.bytes {
		s.bytes = ^uint32(0)
	} else {
		s.bytes += b
	}
	if s.packets != ^uint32(0) {
		s.packets++
	}
	s.cumPackets++
	s.cumBytes += uint64(n)
}

func (s *sender) build(nowMS int64) (wire.SenderReport, bool) {
	if !s.hasData {
		return wire.SenderReport{}, false
	}
	r := wire.SenderReport{
		IntervalStartCounter:   s.startCounter,
		IntervalEndCounter:     s.lastCounter,
		IntervalStartTimestamp: s.startTS,
		IntervalEndTimestamp:   s.lastTS,
		IntervalBytesSent:      s.bytes,
		CumulativePacketsSent:  s.cumPackets,
		CumulativeBytesSent:    s.cumBytes,
	}
	s.endInterval(nowMS)
	return r, true
}

// buildV1 is build in next's layout (docs/next.md §6.2).
func (s *sender) buildV1(nowMS int64) (wire.SenderReportV1, bool) {
	if !s.hasData {
		return wire.SenderReportV1{}, false
	}
	r := wire.SenderReportV1{
		IntervalPacketsSent:   s.packets,
		IntervalBytesSent:     s.bytes,
		CumulativePacketsSent: s.cumPackets,
	}
	s.endInterval(nowMS)
	return r, true
}

func (s *sender) endInterval(nowMS int64) {
	s.hasData, s.bytes, s.packets = false, 0, 0
	s.lastReport, s.hasLastReport = nowMS, true
}

func (s *sender) backoff() float64 {
	if s.failures == 0 {
		return 1
	}
	return float64(uint64(1) << min(s.failures, maxBackoffShift))
}

func (s *sender) due(nowMS int64) bool {
	if !s.hasData {
		return false
	}
	if !s.hasLastReport {
		return true
	}
	eff := int64(satU64(float64(s.intervalMS) * s.backoff()))
	return satSub(nowMS, s.lastReport) >= eff
}

// updateFromSRTT is the link rule: 2·SRTT clamped to [floor, 5000], floor
// 200 ms for the first ColdStartSamples updates, then 1000 ms.
func (s *sender) updateFromSRTT(srttUS int64) {
	if s.srttUpdates != ^uint32(0) {
		s.srttUpdates++
	}
	floor := minReportMS
	if s.srttUpdates <= ColdStartSamples {
		floor = coldStartMS
	}
	s.updateBounded(srttUS, floor, maxReportMS)
}

func (s *sender) updateBounded(srttUS, lo, hi int64) {
	if srttUS <= 0 {
		return
	}
	s.intervalMS = min(max(srttUS*2/1000, lo), hi)
}

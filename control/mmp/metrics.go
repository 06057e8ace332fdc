package mmp

import "github.com/fips-go/fips/control/wire"

// rrOutcome says what one ReceiverReport did (upstream's RrLog).
type rrOutcome uint8

const (
	rrNoEcho     rrOutcome = iota // no timestamp echo
	rrStale                       // dropped: regressed or duplicate counters
	rrSample                      // RTT sample taken
	rrInvalidRTT                  // echo present, RTT ≤ 0 ms or arithmetic failed
)

// metrics are the derived metrics fed by incoming ReceiverReports (upstream
// MmpMetrics). Times are ms on the owning Link's clock.
type metrics struct {
	srtt srttEstimator

	rttTrend, lossTrend, goodputTrend, jitterTrend, etxTrend dualEWMA

	dfwd, drev float64
	etx        float64
	goodput    float64 // bytes/s, EWMA α 1/4

	prevPackets, prevBytes, prevHighest uint64
	prevCE, prevReorder                 uint32
	prevAt                              int64
	hasPrevAt                           bool
	hasPrev                             bool

	prevRevPackets, prevRevHighest uint64
	hasPrevRev                     bool

	reportsSeen, stale, rttSamples, rttZero, rttArithFail uint64
	lastRTT                                               uint32
	hasLastRTT                                            bool

	// regressedRun counts consecutive regressed reports; rebaselines
	// counts the times rebaselineAfter of them were taken as the new
	// baseline; refused counts reports with impossible values.
	regressedRun         int
	rebaselines, refused uint64
}

// rebaselineAfter consecutive regressed reports are taken as a new
// baseline: counters that went backwards for good (a report built from a
// session the peer has left set the baseline, or the peer restarted its
// counters) would otherwise freeze every metric until they caught up.
// Ours; upstream drops every regressed report.
const rebaselineAfter = 3

// Bounds on what a peer may claim in a ReceiverReport; anything beyond is
// refused and counted (upstream uses every value as it comes). A peer
// cannot have received more than we sent: twice our totals, plus slack
// for a peer that counts bytes differently, is generous.
const (
	maxReportJitterUS = 60_000_000 // 60 s
	maxReportCounter  = 1 << 48
	reportPacketSlack = 1024
	reportByteSlack   = 1 << 20
)

// plausible reports whether rr's values are possible for a peer we have
// sent sentPackets frames of sentBytes bytes in all.
func plausible(rr *wire.ReceiverReport, sentPackets, sentBytes uint64) bool {
	return rr.CumulativePacketsRecv <= 2*sentPackets+reportPacketSlack &&
		rr.CumulativeBytesRecv <= 2*sentBytes+reportByteSlack &&
		rr.HighestCounter <= maxReportCounter &&
		rr.Jitter <= maxReportJitterUS &&
		uint64(rr.ECNCECount) <= rr.CumulativePacketsRecv+reportPacketSlack &&
		uint64(rr.CumulativeReorderCount) <= rr.CumulativePacketsRecv+reportPacketSlack &&
		uint64(rr.IntervalPacketsRecv) <= rr.CumulativePacketsRecv+reportPacketSlack
}

// subMillisecondRTTUS is the RTT, in µs, a link is first taken to have
// when its echoes give 0 ms: the middle of what 0 ms can mean.
const subMillisecondRTTUS = 500

func newMetrics() metrics { return metrics{dfwd: 1, drev: 1, etx: 1} }

// resetForRekey forgets the report baselines (the new session restarts its
// counters) but keeps SRTT, ETX, trends, goodput and the reverse ratio.
func (m *metrics) resetForRekey() {
	m.prevPackets, m.prevBytes, m.prevHighest = 0, 0, 0
	m.prevCE, m.prevReorder = 0, 0
	m.hasPrevAt, m.hasPrev = false, false
	m.dfwd = 1
	m.prevRevPackets, m.prevRevHighest, m.hasPrevRev = 0, 0, false
}

// process folds in a ReceiverReport; ourTS is our session-relative ms now.
// It reports whether this produced the first SRTT.
func (m *metrics) process(rr *wire.ReceiverReport, ourTS uint32, nowMS int64) (bool, rrOutcome) {
	had := m.srtt.init
	m.reportsSeen++
	if m.hasPrev {
		regressed := rr.HighestCounter < m.prevHighest ||
			rr.CumulativePacketsRecv < m.prevPackets ||
			rr.CumulativeBytesRecv < m.prevBytes ||
			rr.ECNCECount < m.prevCE ||
			rr.CumulativeReorderCount < m.prevReorder
		dup := rr.HighestCounter == m.prevHighest &&
			rr.CumulativePacketsRecv == m.prevPackets &&
			rr.CumulativeBytesRecv == m.prevBytes &&
			rr.ECNCECount == m.prevCE &&
			rr.CumulativeReorderCount == m.prevReorder
		if regressed && m.regressedRun+1 >= rebaselineAfter {
			m.rebaselines++
			m.regressedRun = 0
			m.hasPrev, m.hasPrevAt = false, false // this one is the new baseline
		} else if regressed || dup {
			if regressed {
				m.regressedRun++
			}
			m.stale++
			return false, rrStale
		}
	}
	m.regressedRun = 0

	out := rrNoEcho
	if rr.TimestampEcho > 0 {
		done := uint64(rr.TimestampEcho) + uint64(rr.DwellTime)
		switch {
		case done > 0xFFFFFFFF || uint64(ourTS) < done:
			m.rttArithFail++
			out = rrInvalidRTT
		case uint64(ourTS) == done:
			m.rttZero++
			out = rrInvalidRTT
			// Upstream drops a sample that truncated to 0 ms. On a
			// sub-millisecond link whose reports are phase-locked to the
			// 1 s tick every sample can truncate to 0 for minutes, and a
			// link without SRTT may not become a tree parent. The first
			// such sample therefore seeds SRTT at half a millisecond;
			// later ones are dropped as upstream drops them.
			if !m.srtt.init {
				m.srtt.update(subMillisecondRTTUS)
				m.rttTrend.update(subMillisecondRTTUS)
			}
		default:
			rttMS := uint32(uint64(ourTS) - done)
			m.rttSamples++
			m.lastRTT, m.hasLastRTT = rttMS, true
			us := int64(rttMS) * 1000
			m.srtt.update(us)
			m.rttTrend.update(float64(us))
			out = rrSample
		}
	}

	if m.hasPrev {
		span := satSubU(rr.HighestCounter, m.prevHighest)
		got := satSubU(rr.CumulativePacketsRecv, m.prevPackets)
		if span > 0 {
			m.dfwd = min(max(float64(got)/float64(span), 0), 1)
			m.lossTrend.update(1 - m.dfwd)
			m.etx = ETX(m.dfwd, m.drev)
			m.etxTrend.update(m.etx)
		}
		db := satSubU(rr.CumulativeBytesRecv, m.prevBytes)
		m.goodputTrend.update(float64(db))
		if m.hasPrevAt {
			secs := float64(satSub(nowMS, m.prevAt)) / 1000
			if secs > 0 {
				bps := float64(db) / secs
				if m.goodput == 0 {
					m.goodput = bps
				} else {
					m.goodput += (bps - m.goodput) * 0.25
				}
			}
		}
	}

	m.jitterTrend.update(float64(rr.Jitter))

	m.prevPackets = rr.CumulativePacketsRecv
	m.prevBytes = rr.CumulativeBytesRecv
	m.prevHighest = rr.HighestCounter
	m.prevCE = rr.ECNCECount
	m.prevReorder = rr.CumulativeReorderCount
	m.prevAt, m.hasPrevAt = nowMS, true
	m.hasPrev = true
	return !had && m.srtt.init, out
}

// updateReverse computes the reverse delivery ratio over the interval since
// the previous call from our own receiver's totals.
func (m *metrics) updateReverse(ourPackets, peerHighest uint64) {
	if m.hasPrevRev {
		span := satSubU(peerHighest, m.prevRevHighest)
		got := satSubU(ourPackets, m.prevRevPackets)
		if span > 0 {
			m.drev = min(max(float64(got)/float64(span), 0), 1)
			m.etx = ETX(m.dfwd, m.drev)
			m.etxTrend.update(m.etx)
		}
	}
	m.prevRevPackets, m.prevRevHighest, m.hasPrevRev = ourPackets, peerHighest, true
}

func (m *metrics) srttMS() (float64, bool) {
	if !m.srtt.init {
		return 0, false
	}
	return float64(m.srtt.srtt) / 1000, true
}

func (m *metrics) loss() float64 { return 1 - m.dfwd }

func satSubU(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

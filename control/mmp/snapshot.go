package mmp

import "math"

// Trend labels of show_mmp.
const (
	TrendRising  = "rising"
	TrendFalling = "falling"
	TrendStable  = "stable"
)

// TrendLabel compares a short-term with a long-term average: rising above
// 1.05×, falling below 0.95×, else (or when not finite or long is 0) stable.
func TrendLabel(short, long float64) string {
	if !finite(short) || !finite(long) || long == 0 {
		return TrendStable
	}
	switch r := short / long; {
	case r > 1.05:
		return TrendRising
	case r < 0.95:
		return TrendFalling
	}
	return TrendStable
}

// Stats are the report-processing counters.
type Stats struct {
	ReportsSeen          uint64 `json:"reports_seen"`           // ReceiverReports that arrived
	StaleReports         uint64 `json:"stale_reports"`          // dropped as regressed/duplicate
	Rebaselines          uint64 `json:"rebaselines"`            // regressed reports taken as a new baseline
	RefusedReports       uint64 `json:"refused_reports"`        // impossible values, refused
	RTTSamples           uint64 `json:"rtt_samples"`            // accepted RTT samples
	RTTZero              uint64 `json:"rtt_zero"`               // echoes giving 0 ms
	RTTArithFail         uint64 `json:"rtt_arith_fail"`         // echoes that wrapped or were in the future
	SenderReportsRecv    uint64 `json:"sender_reports_recv"`    // SenderReports that arrived
	CumulativePacketsTx  uint64 `json:"cumulative_packets_tx"`  // frames we sent
	CumulativeBytesTx    uint64 `json:"cumulative_bytes_tx"`    // bytes we sent
	CumulativePacketsRx  uint64 `json:"cumulative_packets_rx"`  // frames we received
	CumulativeBytesRx    uint64 `json:"cumulative_bytes_rx"`    // bytes we received
	ConsecutiveSendFails uint32 `json:"consecutive_send_fails"` // session backoff count
}

// Stats returns the counters.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats()
}

func (l *Link) stats() Stats {
	return Stats{
		ReportsSeen:          l.met.reportsSeen,
		StaleReports:         l.met.stale,
		Rebaselines:          l.met.rebaselines,
		RefusedReports:       l.met.refused,
		RTTSamples:           l.met.rttSamples,
		RTTZero:              l.met.rttZero,
		RTTArithFail:         l.met.rttArithFail,
		SenderReportsRecv:    l.srRecv,
		CumulativePacketsTx:  l.snd.cumPackets,
		CumulativeBytesTx:    l.snd.cumBytes,
		CumulativePacketsRx:  l.rcv.cumPackets,
		CumulativeBytesRx:    l.rcv.cumBytes,
		ConsecutiveSendFails: l.snd.failures,
	}
}

// Snapshot is everything upstream's show_mmp (link_layer / session_layer)
// and the show_peers / show_sessions "mmp" objects print, under their JSON
// names. Optional fields are nil when upstream omits them. The node chooses
// which to render and in what key order; Quality is "lqi" for a link and
// "sqi" for a session.
type Snapshot struct {
	Mode                 string   `json:"mode"`
	SRTTMs               *float64 `json:"srtt_ms,omitempty"`
	LossRate             float64  `json:"loss_rate"`
	ETX                  float64  `json:"etx"`
	GoodputBps           float64  `json:"goodput_bps"`
	DeliveryRatioForward float64  `json:"delivery_ratio_forward"`
	DeliveryRatioReverse float64  `json:"delivery_ratio_reverse"`
	SmoothedLoss         *float64 `json:"smoothed_loss,omitempty"`
	SmoothedETX          *float64 `json:"smoothed_etx,omitempty"`
	Quality              *float64 `json:"-"`                       // lqi / sqi: smoothed_etx × (1 + srtt_ms/100)
	SpinBitRole          string   `json:"spin_bit_role,omitempty"` // none on next's MMP (SetV1)
	RTTTrend             *string  `json:"rtt_trend,omitempty"`
	LossTrend            *string  `json:"loss_trend,omitempty"`
	GoodputTrend         *string  `json:"goodput_trend,omitempty"`
	JitterTrend          *string  `json:"jitter_trend,omitempty"`
	ETXTrend             *string  `json:"etx_trend,omitempty"`
	ECNCECount           uint32   `json:"ecn_ce_count"` // CE count the peer last reported on our frames
	PathMTU              *uint16  `json:"path_mtu,omitempty"`
	JitterUs             uint32   `json:"jitter_us"` // measured on the peer's frames
	Stats                Stats    `json:"stats"`
}

// Snapshot returns the metrics for display.
func (l *Link) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &l.met
	s := Snapshot{
		Mode:                 l.cfg.Mode.String(),
		LossRate:             m.loss(),
		ETX:                  m.etx,
		GoodputBps:           m.goodput,
		DeliveryRatioForward: m.dfwd,
		DeliveryRatioReverse: m.drev,
		ECNCECount:           m.prevCE,
		JitterUs:             l.rcv.jitter.us(),
		Stats:                l.stats(),
	}
	switch {
	case l.v1:
	case l.spin.initiator:
		s.SpinBitRole = "initiator"
	default:
		s.SpinBitRole = "responder"
	}
	if v, ok := m.srttMS(); ok {
		s.SRTTMs = &v
		if m.etxTrend.init {
			q := m.etxTrend.long * (1 + v/100)
			s.Quality = &q
		}
	}
	if m.lossTrend.init {
		v := m.lossTrend.long
		s.SmoothedLoss = &v
	}
	if m.etxTrend.init {
		v := m.etxTrend.long
		s.SmoothedETX = &v
	}
	trend := func(e *dualEWMA) *string {
		if !e.init {
			return nil
		}
		t := TrendLabel(e.short, e.long)
		return &t
	}
	s.RTTTrend = trend(&m.rttTrend)
	s.LossTrend = trend(&m.lossTrend)
	s.GoodputTrend = trend(&m.goodputTrend)
	s.JitterTrend = trend(&m.jitterTrend)
	s.ETXTrend = trend(&m.etxTrend)
	if l.pmtu != nil {
		v := l.pmtu.current
		s.PathMTU = &v
	}
	return s
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

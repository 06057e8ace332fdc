package mmp

import (
	"sync"
	"time"

	"github.com/fips-go/fips/control/wire"
)

// Link is the MMP state of one link peer, or of one end-to-end session when
// created with session=true (upstream MmpPeerState / MmpSessionState). The
// node calls RecordSent for every frame it sends to the peer, RecordRecv for
// every authenticated frame from it, asks Due each tick and sends what the
// builders return, and feeds incoming reports to HandleReceiverReport and
// HandleSenderReport.
//
// RecordSent and RecordRecv may be called from dataplane workers while the
// control loop builds and handles reports: mu guards the sender and
// receiver halves (held for a few field updates, never across I/O). Every
// other method belongs to the control loop.
type Link struct {
	mu sync.Mutex

	cfg     Config
	session bool
	// v1: upstream next's MMP (docs/next.md §6): no spin bit, reports in
	// next's layouts. sendSR and sendRR are the link's profile gate
	// (both true unless SetReportGate says otherwise).
	v1             bool
	sendSR, sendRR bool

	base  time.Time // origin of the ms clock the state machines run on
	epoch time.Time // origin of our session-relative timestamps

	snd  sender
	rcv  receiver
	met  metrics
	spin spinBit

	lastLog    int64
	hasLastLog bool

	srRecv uint64

	pmtu *PathMTU
}

// NewLink starts MMP for a link (session=false) or a session (session=true)
// established at now. Our session-relative timestamps count from now until
// ResetForRekey or SetEpoch moves the origin.
func NewLink(now time.Time, cfg Config, session bool) *Link {
	cold := coldStartMS
	if session {
		cold = sessionColdStartMS
	}
	l := &Link{
		cfg:     cfg,
		session: session,
		sendSR:  true,
		sendRR:  true,
		base:    now,
		epoch:   now,
		snd:     newSender(cold),
		rcv:     newReceiver(cfg.OWDWindowSize, cold),
		met:     newMetrics(),
	}
	if session {
		l.pmtu = NewPathMTU()
	}
	return l
}

func (l *Link) ms(now time.Time) int64 {
	d := now.Sub(l.base)
	if d < 0 {
		return 0
	}
	return int64(d / time.Millisecond)
}

// Mode is the configured reporting mode.
func (l *Link) Mode() Mode { return l.cfg.Mode }

// Session reports whether this is session-layer MMP.
func (l *Link) Session() bool { return l.session }

// Timestamp is our session-relative timestamp in ms (truncated to u32) at
// now: what the node puts in the inner header of frames it sends and what
// RTT is measured against.
func (l *Link) Timestamp(now time.Time) uint32 {
	return uint32(now.Sub(l.epoch) / time.Millisecond)
}

// SetEpoch moves the origin of our session-relative timestamps (for a node
// that keeps its own session start).
func (l *Link) SetEpoch(t time.Time) { l.epoch = t }

// SetV1 makes this upstream next's MMP (docs/next.md §6), for a v1 link
// or an XX session: there is no spin bit (no role, SpinBit always false,
// received bits ignored), and the reports are next's, built by
// BuildSenderReportV1 and BuildReceiverReportV1 and read by
// HandleSenderReportV1 and HandleReceiverReportV1. Call it before any
// traffic.
func (l *Link) SetV1() { l.v1 = true }

// V1 reports whether this is next's MMP.
func (l *Link) V1() bool { return l.v1 }

// SetReportGate is next's per-link report gating by node profile: a
// SenderReport is sent only when sr (our profile provides it and the
// peer's wants it: wire.MMPReports), a ReceiverReport only when rr, on
// top of the mode. Links are created with both true.
func (l *Link) SetReportGate(sr, rr bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sendSR, l.sendRR = sr, rr
}

// SetInitiator sets the spin-bit role: true when this node initiated the
// Noise handshake. Call it before any traffic.
func (l *Link) SetInitiator(initiator bool) { l.spin.initiator = initiator }

// Initiator reports the spin-bit role (false on next's MMP, which has
// none).
func (l *Link) Initiator() bool { return l.spin.initiator && !l.v1 }

// SpinBit is the spin bit to set on an outgoing frame (always false on
// next's MMP).
func (l *Link) SpinBit() bool { return l.spin.value && !l.v1 }

// ObserveSpinBit feeds the spin bit of a received frame; next's MMP
// ignores it (the bit is reserved there). Upstream discards the
// initiator's RTT samples; so does this (they are not returned).
func (l *Link) ObserveSpinBit(now time.Time, bit bool, counter uint64) {
	if l.v1 {
		return
	}
	l.spin.observe(bit, counter, l.ms(now))
}

// RecordSent accounts a frame sent to the peer: counter is its AEAD counter,
// ts its inner timestamp (ms), bytes its wire size.
func (l *Link) RecordSent(now time.Time, counter uint64, ts uint32, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = now
	l.snd.recordSent(counter, ts, bytes)
}

// RecordRecv accounts an authenticated frame from the peer: counter is its
// AEAD counter, senderTS its inner timestamp, ce its CE flag.
func (l *Link) RecordRecv(now time.Time, counter uint64, senderTS uint32, bytes int, ce bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rcv.recordRecv(counter, senderTS, bytes, ce, l.ms(now))
}

// ResetForRekey is the rekey cutover: the receiver forgets the old
// session's counters and timestamps and suspends jitter for
// RekeyJitterGrace, the report baselines are dropped (SRTT, ETX, trends and
// goodput are kept), and our timestamps restart from now.
func (l *Link) ResetForRekey(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rcv.resetForRekey(l.ms(now))
	l.met.resetForRekey()
	l.epoch = now
}

// Due reports which reports should be built now: a SenderReport only in
// full mode, a ReceiverReport in full and lightweight mode, each only when
// the report gate lets it (SetReportGate), its interval has data and its
// interval (the SenderReport's stretched by the send-failure backoff) has
// elapsed since the last one.
func (l *Link) Due(now time.Time) (sr, rr bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.ms(now)
	sr = l.cfg.Mode == Full && l.sendSR && l.snd.due(n)
	rr = l.cfg.Mode != Minimal && l.sendRR && l.rcv.due(n)
	return sr, rr
}

// BuildSenderReport returns the SenderReport for the interval and starts a
// new one; false when the interval has no data or the mode sends none.
func (l *Link) BuildSenderReport(now time.Time) (wire.SenderReport, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Mode != Full {
		return wire.SenderReport{}, false
	}
	return l.snd.build(l.ms(now))
}

// BuildReceiverReport returns the ReceiverReport for the interval and
// starts a new one; false when the interval has no data or the mode sends
// none. The echo is the last sender timestamp seen, the dwell the time since
// that frame; a dwell over 65535 ms sends echo 0 and dwell 65535.
func (l *Link) BuildReceiverReport(now time.Time) (wire.ReceiverReport, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Mode == Minimal {
		return wire.ReceiverReport{}, false
	}
	return l.rcv.build(l.ms(now))
}

// BuildSenderReportV1 is BuildSenderReport in next's layout: the
// interval's frame count, its bytes and the frames sent in all.
func (l *Link) BuildSenderReportV1(now time.Time) (wire.SenderReportV1, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Mode != Full {
		return wire.SenderReportV1{}, false
	}
	return l.snd.buildV1(l.ms(now))
}

// BuildReceiverReportV1 is BuildReceiverReport in next's layout, without
// master's burst maximum and mean and interval counts.
func (l *Link) BuildReceiverReportV1(now time.Time) (wire.ReceiverReportV1, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Mode == Minimal {
		return wire.ReceiverReportV1{}, false
	}
	return l.rcv.buildV1(l.ms(now))
}

// HandleSenderReport counts a SenderReport from the peer; upstream ignores
// its content.
func (l *Link) HandleSenderReport(now time.Time, sr wire.SenderReport) {
	_, _ = now, sr
	l.srRecv++
}

// HandleSenderReportV1 is HandleSenderReport for next's layout (whose
// content next ignores too).
func (l *Link) HandleSenderReportV1(now time.Time, sr wire.SenderReportV1) {
	_, _ = now, sr
	l.srRecv++
}

// HandleReceiverReportV1 is HandleReceiverReport for next's layout. What
// next dropped from the report (burst maximum and mean, interval counts)
// is what neither line derives anything from, so RTT, loss, goodput,
// jitter and ETX come out as from master's report.
func (l *Link) HandleReceiverReportV1(now time.Time, rr wire.ReceiverReportV1) (firstRTT bool) {
	return l.HandleReceiverReport(now, rr.V0())
}

// HandleReceiverReport folds in the peer's report on our traffic: RTT from
// the echo, forward delivery, loss, goodput and trends (a regressed or
// duplicate report changes none of these and is counted), then, as
// upstream's handler does for every report, retunes the report intervals
// from SRTT and recomputes the reverse delivery ratio and ETX from our own
// receiver. It returns true exactly once: when the first SRTT is measured.
//
// A report claiming what cannot be (more received than we sent, jitter
// over a minute, …) is refused and counted in Stats().RefusedReports
// before it touches anything.
func (l *Link) HandleReceiverReport(now time.Time, rr wire.ReceiverReport) (firstRTT bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !plausible(&rr, l.snd.cumPackets, l.snd.cumBytes) {
		l.met.reportsSeen++
		l.met.refused++
		return false
	}
	n := l.ms(now)
	first, _ := l.met.process(&rr, l.Timestamp(now), n)
	if srttMS, ok := l.met.srttMS(); ok {
		us := int64(srttMS * 1000)
		if l.session {
			l.snd.updateBounded(us, minSessionReportMS, maxSessionReportMS)
			l.rcv.updateBounded(us, minSessionReportMS, maxSessionReportMS)
			l.pmtu.updateIntervalMS(srttMS)
		} else {
			l.snd.updateFromSRTT(us)
			l.rcv.updateFromSRTT(us)
		}
	}
	l.met.updateReverse(l.rcv.cumPackets, l.rcv.highest)
	return first
}

// RecordSendFailure notes that this tick's reports to the destination all
// failed; the SenderReport interval is stretched ×2^min(f,5). It returns the
// consecutive failure count.
func (l *Link) RecordSendFailure() uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.snd.failures++
	return l.snd.failures
}

// RecordSendSuccess ends the backoff and returns the failure count it
// cleared.
func (l *Link) RecordSendSuccess() uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.snd.failures
	l.snd.failures = 0
	return p
}

// SendFailures is the consecutive send-failure count.
func (l *Link) SendFailures() uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snd.failures
}

// LogDue reports whether the periodic operator log is due.
func (l *Link) LogDue(now time.Time) bool {
	return !l.hasLastLog || satSub(l.ms(now), l.lastLog) >= int64(l.cfg.LogInterval/time.Millisecond)
}

// MarkLogged records that the periodic log was written.
func (l *Link) MarkLogged(now time.Time) { l.lastLog, l.hasLastLog = l.ms(now), true }

// PathMTU is the session's path-MTU state (nil for a link).
func (l *Link) PathMTU() *PathMTU { return l.pmtu }

// SRTT is the smoothed RTT; false before the first sample.
func (l *Link) SRTT() (time.Duration, bool) {
	if !l.met.srtt.init {
		return 0, false
	}
	return time.Duration(l.met.srtt.srtt) * time.Microsecond, true
}

// RTTVar is the RTT variance; false before the first sample.
func (l *Link) RTTVar() (time.Duration, bool) {
	return time.Duration(l.met.srtt.rttvar) * time.Microsecond, l.met.srtt.init
}

// RTO is SRTT + max(4·RTTVAR, 1 s), at least 1 s.
func (l *Link) RTO() time.Duration { return time.Duration(l.met.srtt.rtoUS()) * time.Microsecond }

// LastRTT is the most recent accepted per-report RTT sample.
func (l *Link) LastRTT() (time.Duration, bool) {
	return time.Duration(l.met.lastRTT) * time.Millisecond, l.met.hasLastRTT
}

// Loss is the forward loss rate over the last report interval (1 − df).
func (l *Link) Loss() float64 { return l.met.loss() }

// ETX is the expected transmission count, clamp(1/(df·dr), 1, 100).
func (l *Link) ETX() float64 { return l.met.etx }

// DeliveryRatios are the forward (peer received of ours) and reverse (we
// received of the peer's) delivery ratios.
func (l *Link) DeliveryRatios() (forward, reverse float64) { return l.met.dfwd, l.met.drev }

// Jitter is the interarrival jitter we measure on the peer's frames.
func (l *Link) Jitter() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(l.rcv.jitter.us()) * time.Microsecond
}

// Goodput is the smoothed forward goodput in bytes per second (0 before it
// is measured).
func (l *Link) Goodput() float64 { return l.met.goodput }

// SmoothedLoss is the long-term loss EWMA; false before the first sample.
func (l *Link) SmoothedLoss() (float64, bool) { return l.met.lossTrend.long, l.met.lossTrend.init }

// SmoothedETX is the long-term ETX EWMA; false before the first sample.
func (l *Link) SmoothedETX() (float64, bool) { return l.met.etxTrend.long, l.met.etxTrend.init }

// LinkCost is etx × (1 + srtt_ms/100), upstream's parent-selection cost.
// Before the first SRTT it is 1 and measured is false.
func (l *Link) LinkCost() (cost float64, measured bool) {
	s, ok := l.met.srttMS()
	if !ok {
		return 1, false
	}
	return l.met.etx * (1 + s/100), true
}

// Congested is the link half of upstream's ECN predicate: loss ≥
// lossThreshold or ETX ≥ etxThreshold (defaults DefaultECNLossThreshold and
// DefaultECNETXThreshold). Local transport drops are the node's business.
func (l *Link) Congested(lossThreshold, etxThreshold float64) bool {
	return l.met.loss() >= lossThreshold || l.met.etx >= etxThreshold
}

// LastRecv is when the last frame from the peer arrived; false if none has
// since creation or the last rekey (the node's liveness input).
func (l *Link) LastRecv() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rcv.hasLastRecv {
		return time.Time{}, false
	}
	return l.base.Add(time.Duration(l.rcv.lastRecv) * time.Millisecond), true
}

// ReportIntervals are the current SenderReport and ReceiverReport
// intervals (the SenderReport's before any send-failure backoff).
func (l *Link) ReportIntervals() (sr, rr time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(l.snd.intervalMS) * time.Millisecond, time.Duration(l.rcv.intervalMS) * time.Millisecond
}

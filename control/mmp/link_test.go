package mmp_test

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/wire"
)

var t0 = time.Unix(1_700_000_000, 0)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// rrFor makes the n-th fresh report (counters advance) echoing echo with
// the given dwell.
func rrFor(n int, echo uint32, dwell uint16) wire.ReceiverReport {
	c := uint64(10 * n)
	return wire.ReceiverReport{HighestCounter: c, CumulativePacketsRecv: c, CumulativeBytesRecv: 100 * c,
		TimestampEcho: echo, DwellTime: dwell}
}

// feed gives l an RR at time at (ms) measuring rtt ms.
func feed(l *mmp.Link, n, at, rtt int) bool {
	return l.HandleReceiverReport(ms(at), rrFor(n, uint32(at-rtt), 0))
}

func intervals(l *mmp.Link) (int, int) {
	sr, rr := l.ReportIntervals()
	return int(sr / time.Millisecond), int(rr / time.Millisecond)
}

func TestLinkIntervalsColdStartAndClamp(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	if sr, rr := intervals(l); sr != 200 || rr != 200 {
		t.Fatalf("before SRTT: %d %d", sr, rr)
	}
	// 20 ms RTT: 2·SRTT = 40 and 1·SRTT = 20 both floor at 200 for the
	// first five updates, then at 1000.
	for i := 1; i <= 5; i++ {
		first := feed(l, i, 1000*i, 20)
		if first != (i == 1) {
			t.Fatalf("report %d: firstRTT %v", i, first)
		}
		if sr, rr := intervals(l); sr != 200 || rr != 200 {
			t.Fatalf("cold sample %d: %d %d", i, sr, rr)
		}
	}
	feed(l, 6, 6000, 20)
	if sr, rr := intervals(l); sr != 1000 || rr != 1000 {
		t.Fatalf("steady: %d %d", sr, rr)
	}
	// A long RTT: SR = min(2·SRTT, 5000), RR = SRTT. Seed a fresh link with
	// a 3 s RTT and move past cold start.
	h := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	for i := 1; i <= 6; i++ {
		feed(h, i, 10_000*i, 3000)
	}
	if sr, rr := intervals(h); sr != 5000 || rr != 3000 {
		t.Fatalf("3 s RTT: %d %d", sr, rr)
	}
	v := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	for i := 1; i <= 6; i++ {
		feed(v, i, 20_000*i, 7000)
	}
	if sr, rr := intervals(v); sr != 5000 || rr != 5000 {
		t.Fatalf("7 s RTT: %d %d", sr, rr)
	}
	// During cold start an RTT above the floor is used as is.
	c := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	feed(c, 1, 1000, 300)
	if sr, rr := intervals(c); sr != 600 || rr != 300 {
		t.Fatalf("cold 300 ms: %d %d", sr, rr)
	}
}

func TestLinkColdStartCountsReportsAfterFirstSRTT(t *testing.T) {
	// Upstream retunes the intervals on every RR once an SRTT exists, stale
	// ones included, so the cold-start budget counts reports, not samples.
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	feed(l, 1, 1000, 20)
	dup := rrFor(1, 980, 0)
	for range 5 {
		l.HandleReceiverReport(ms(2000), dup)
	}
	if sr, rr := intervals(l); sr != 1000 || rr != 1000 {
		t.Fatalf("after 1 sample + 5 stale: %d %d", sr, rr)
	}
	if st := l.Stats(); st.StaleReports != 5 || st.ReportsSeen != 6 || st.RTTSamples != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSessionIntervals(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultSessionConfig(), true)
	if sr, rr := intervals(l); sr != 1000 || rr != 1000 {
		t.Fatalf("session initial: %d %d", sr, rr)
	}
	feed(l, 1, 1000, 20)
	if sr, rr := intervals(l); sr != 500 || rr != 500 {
		t.Fatalf("session 20 ms: %d %d", sr, rr)
	}
	m := mmp.NewLink(t0, mmp.DefaultSessionConfig(), true)
	feed(m, 1, 10_000, 4000)
	if sr, rr := intervals(m); sr != 8000 || rr != 4000 {
		t.Fatalf("session 4 s: %d %d", sr, rr)
	}
	if got := m.PathMTU().NotificationInterval(); got != 20*time.Second {
		t.Fatalf("path MTU interval %v, want 5·SRTT = 20s", got)
	}
	n := mmp.NewLink(t0, mmp.DefaultSessionConfig(), true)
	feed(n, 1, 20_000, 12_000)
	if sr, rr := intervals(n); sr != 10_000 || rr != 10_000 {
		t.Fatalf("session 12 s: %d %d", sr, rr)
	}
}

func TestSessionSendFailureBackoff(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultSessionConfig(), true)
	l.RecordSent(ms(0), 1, 0, 100)
	if sr, _ := l.Due(ms(0)); !sr {
		t.Fatal("first SR not immediate")
	}
	l.BuildSenderReport(ms(0))
	l.RecordSent(ms(1), 2, 1, 100)
	for f := uint32(1); f <= 7; f++ {
		if got := l.RecordSendFailure(); got != f {
			t.Fatalf("failure count %d", got)
		}
		mult := 1 << min(f, 5)
		if sr, _ := l.Due(ms(1000*mult - 1)); sr {
			t.Fatalf("%d failures: due before %d ms", f, 1000*mult)
		}
		if sr, _ := l.Due(ms(1000 * mult)); !sr {
			t.Fatalf("%d failures: not due at %d ms", f, 1000*mult)
		}
	}
	if prev := l.RecordSendSuccess(); prev != 7 || l.SendFailures() != 0 {
		t.Fatalf("success cleared %d", prev)
	}
	if sr, _ := l.Due(ms(1000)); !sr {
		t.Fatal("backoff not reset")
	}
}

func TestFirstRTTOnceAndStaleReports(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	// Reports without an echo, or with an unusable one, are no SRTT.
	if l.HandleReceiverReport(ms(1000), rrFor(1, 0, 0)) {
		t.Fatal("no echo gave first RTT")
	}
	if l.HandleReceiverReport(ms(1000), rrFor(3, 2000, 0)) { // future
		t.Fatal("future echo gave first RTT")
	}
	if _, ok := l.SRTT(); ok {
		t.Fatal("SRTT from unusable echoes")
	}
	if c, measured := l.LinkCost(); measured || c != 1 {
		t.Fatalf("cost before SRTT %v %v", c, measured)
	}
	if !l.HandleReceiverReport(ms(2000), rrFor(4, 1950, 10)) {
		t.Fatal("first RTT not signalled")
	}
	if s, _ := l.SRTT(); s != 40*time.Millisecond {
		t.Fatalf("srtt %v, want echo-minus-dwell 40ms", s)
	}
	if c, measured := l.LinkCost(); !measured || c != 1.4 {
		t.Fatalf("cost %v %v, want 1·(1+40/100)", c, measured)
	}
	if l.HandleReceiverReport(ms(3000), rrFor(5, 2950, 0)) {
		t.Fatal("first RTT signalled twice")
	}
	if l.HandleReceiverReport(ms(3000), rrFor(6, 2995, 5)) { // 0 ms: dropped
		t.Fatal("a 0 ms echo signalled a first RTT")
	}
	// Duplicate and regressed reports are dropped and counted.
	s, _ := l.SRTT()
	l.HandleReceiverReport(ms(9000), rrFor(6, 2995, 5))
	l.HandleReceiverReport(ms(9000), rrFor(4, 1950, 0))
	if s2, _ := l.SRTT(); s2 != s {
		t.Fatalf("stale report moved SRTT %v → %v", s, s2)
	}
	st := l.Stats()
	if st.StaleReports != 2 || st.ReportsSeen != 7 || st.RTTSamples != 2 || st.RTTZero != 1 || st.RTTArithFail != 1 {
		t.Fatalf("stats %+v", st)
	}
	if last, ok := l.LastRTT(); !ok || last != 50*time.Millisecond {
		t.Fatalf("last rtt %v", last)
	}
	l.HandleSenderReport(ms(9000), wire.SenderReport{CumulativePacketsSent: 99})
	if l.Stats().SenderReportsRecv != 1 {
		t.Fatal("SR not counted")
	}
}

func TestLinkTimestampAndRekey(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	if l.Timestamp(ms(1234)) != 1234 {
		t.Fatal("timestamp")
	}
	// Traffic, a first RTT and a report baseline.
	for i := 1; i <= 100; i++ {
		l.RecordRecv(ms(i*10), uint64(i), uint32(i*10), 100, i%10 == 0)
	}
	if last, ok := l.LastRecv(); !ok || !last.Equal(ms(1000)) {
		t.Fatalf("last recv %v", last)
	}
	l.HandleReceiverReport(ms(1000), rrFor(1, 960, 0))
	l.HandleReceiverReport(ms(2000), wire.ReceiverReport{HighestCounter: 20, CumulativePacketsRecv: 15, CumulativeBytesRecv: 2000, TimestampEcho: 1960})
	if l.Loss() != 0.5 {
		t.Fatalf("loss %v", l.Loss())
	}
	s, _ := l.SRTT()

	l.ResetForRekey(ms(5000))
	if l.Timestamp(ms(5100)) != 100 {
		t.Fatal("timestamps restart at rekey")
	}
	if _, ok := l.LastRecv(); ok {
		t.Fatal("last recv survives rekey")
	}
	if s2, _ := l.SRTT(); s2 != s {
		t.Fatal("SRTT lost at rekey")
	}
	if l.Loss() != 0 {
		t.Fatal("forward delivery not reset")
	}
	// The new session's counters restart: a report with small counters is a
	// fresh baseline, not a regression.
	before := l.Stats().StaleReports
	l.HandleReceiverReport(ms(5200), wire.ReceiverReport{HighestCounter: 3, CumulativePacketsRecv: 3, CumulativeBytesRecv: 3})
	if l.Stats().StaleReports != before {
		t.Fatal("post-rekey report treated as stale")
	}
	// New-session frames from counter 0: no reorder, no loss burst; the
	// report after rekey carries the fresh highest counter.
	l.RecordRecv(ms(5300), 0, 100, 10, false)
	l.RecordRecv(ms(5301), 1, 101, 10, false)
	r, ok := l.BuildReceiverReport(ms(5310))
	if !ok || r.HighestCounter != 1 || r.CumulativeReorderCount != 0 || r.BurstLossCount != 0 || r.ECNCECount != 0 || r.TimestampEcho != 101 || r.DwellTime != 9 {
		t.Fatalf("post-rekey report %+v", r)
	}
	if r.CumulativePacketsRecv != 102 {
		t.Fatalf("lifetime receive total %d", r.CumulativePacketsRecv)
	}
}

func TestDwellOverflowSuppressesEcho(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	l.RecordRecv(ms(0), 1, 100, 500, false)
	r, ok := l.BuildReceiverReport(ms(65_536))
	if !ok || r.TimestampEcho != 0 || r.DwellTime != 65535 || r.CumulativePacketsRecv != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestCongestedAndSnapshot(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	if l.Congested(0.05, 3) {
		t.Fatal("fresh link congested")
	}
	snap := l.Snapshot()
	if snap.Mode != "full" || snap.SRTTMs != nil || snap.SmoothedLoss != nil || snap.Quality != nil || snap.PathMTU != nil ||
		snap.ETX != 1 || snap.DeliveryRatioForward != 1 || snap.DeliveryRatioReverse != 1 || snap.SpinBitRole != "responder" || snap.RTTTrend != nil {
		t.Fatalf("fresh snapshot %+v", snap)
	}
	l.HandleReceiverReport(ms(1000), wire.ReceiverReport{HighestCounter: 100, CumulativePacketsRecv: 100, CumulativeBytesRecv: 100, TimestampEcho: 900, ECNCECount: 4})
	l.HandleReceiverReport(ms(2000), wire.ReceiverReport{HighestCounter: 200, CumulativePacketsRecv: 195, CumulativeBytesRecv: 200, TimestampEcho: 1900, ECNCECount: 7})
	if !l.Congested(0.05, 3) || l.Congested(0.06, 3) {
		t.Fatalf("loss 5%% at thresholds: loss %v", l.Loss())
	}
	snap = l.Snapshot()
	if snap.SRTTMs == nil || *snap.SRTTMs != 100 || snap.SmoothedLoss == nil || snap.SmoothedETX == nil ||
		snap.Quality == nil || *snap.Quality != *snap.SmoothedETX*2 || snap.ECNCECount != 7 || snap.LossTrend == nil {
		t.Fatalf("snapshot %+v", snap)
	}
	for _, c := range []struct {
		s, l float64
		want string
	}{{1.06, 1, "rising"}, {0.94, 1, "falling"}, {1, 1, "stable"}, {1, 0, "stable"}, {1.05, 1, "stable"}} {
		if got := mmp.TrendLabel(c.s, c.l); got != c.want {
			t.Errorf("TrendLabel(%v, %v) = %s", c.s, c.l, got)
		}
	}
}

func TestLogCadence(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	if !l.LogDue(ms(0)) {
		t.Fatal("first log not due")
	}
	l.MarkLogged(ms(0))
	if l.LogDue(ms(29_999)) || !l.LogDue(ms(30_000)) {
		t.Fatal("30 s cadence")
	}
}

func TestModeGating(t *testing.T) {
	for _, c := range []struct {
		mode   mmp.Mode
		sr, rr bool
	}{{mmp.Full, true, true}, {mmp.Lightweight, false, true}, {mmp.Minimal, false, false}} {
		cfg := mmp.DefaultConfig()
		cfg.Mode = c.mode
		l := mmp.NewLink(t0, cfg, false)
		l.RecordSent(ms(0), 1, 0, 10)
		l.RecordRecv(ms(0), 1, 0, 10, false)
		sr, rr := l.Due(ms(0))
		_, bsr := l.BuildSenderReport(ms(0))
		_, brr := l.BuildReceiverReport(ms(0))
		if sr != c.sr || rr != c.rr || bsr != c.sr || brr != c.rr {
			t.Errorf("%v: due %v/%v built %v/%v", c.mode, sr, rr, bsr, brr)
		}
	}
}

// A sub-millisecond link whose echoes all truncate to 0 ms is measured
// from its first report (SRTT 0.5 ms), so it can become a tree parent;
// upstream would leave it unmeasured until an echo happens to give 1 ms.
func TestSubMillisecondLinkIsMeasured(t *testing.T) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), false)
	if !l.HandleReceiverReport(ms(1000), rrFor(1, 995, 5)) {
		t.Fatal("a 0 ms echo did not give the first RTT")
	}
	if s, ok := l.SRTT(); !ok || s != 500*time.Microsecond {
		t.Fatalf("srtt %v %v, want 500µs", s, ok)
	}
	if c, measured := l.LinkCost(); !measured || c != 1.005 {
		t.Fatalf("cost %v %v, want 1·(1+0.5/100)", c, measured)
	}
	if st := l.Stats(); st.RTTZero != 1 || st.RTTSamples != 0 {
		t.Fatalf("stats %+v", st)
	}
}

package mmp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/wire"
)

func newV1(session bool) *mmp.Link {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), session)
	l.SetV1()
	return l
}

// TestV1SenderReport: next's SenderReport counts the interval's frames,
// whatever their counters (next's test_build_report and
// test_build_report_resets_interval).
func TestV1SenderReport(t *testing.T) {
	l := newV1(false)
	l.RecordSent(t0, 10, 1000, 500)
	l.RecordSent(t0, 11, 1100, 600)
	l.RecordSent(t0, 12, 1200, 400)
	r, ok := l.BuildSenderReportV1(t0)
	if want := (wire.SenderReportV1{IntervalPacketsSent: 3, IntervalBytesSent: 1500, CumulativePacketsSent: 3}); !ok || r != want {
		t.Fatalf("report %+v %v, want %+v", r, ok, want)
	}
	if _, ok := l.BuildSenderReportV1(t0); ok {
		t.Fatal("a report for an empty interval")
	}
	// A gap in the counters (frames the link layer sent without MMP
	// seeing them do not exist; a rekey restarts the counters) is not
	// frames: master's counter span would say 41.
	l.RecordSent(ms(100), 13, 1300, 300)
	l.RecordSent(ms(100), 53, 1300, 200)
	r, ok = l.BuildSenderReportV1(ms(100))
	if want := (wire.SenderReportV1{IntervalPacketsSent: 2, IntervalBytesSent: 500, CumulativePacketsSent: 5}); !ok || r != want {
		t.Fatalf("second report %+v %v, want %+v", r, ok, want)
	}
	// Lightweight and minimal modes send none.
	for _, mode := range []mmp.Mode{mmp.Lightweight, mmp.Minimal} {
		c := mmp.DefaultConfig()
		c.Mode = mode
		w := mmp.NewLink(t0, c, false)
		w.SetV1()
		w.RecordSent(t0, 1, 1, 100)
		if _, ok := w.BuildSenderReportV1(t0); ok {
			t.Errorf("%s mode built a SenderReport", mode)
		}
	}
}

// TestV1ReceiverReport: next's ReceiverReport carries what master's
// does, less the burst maximum and mean and the interval counts (next's
// test_receiver_build_report, test_reorder_detection,
// test_build_report_suppresses_rtt_echo_when_dwell_overflows,
// test_gap_tracker_multiple_bursts).
func TestV1ReceiverReport(t *testing.T) {
	l := newV1(false)
	l.RecordRecv(t0, 1, 100, 500, false)
	l.RecordRecv(ms(100), 2, 200, 600, true)
	r, ok := l.BuildReceiverReportV1(ms(150))
	if !ok || r.HighestCounter != 2 || r.CumulativePacketsRecv != 2 || r.CumulativeBytesRecv != 1100 ||
		r.TimestampEcho != 200 || r.DwellTime != 50 || r.ECNCECount != 1 {
		t.Fatalf("report %+v %v", r, ok)
	}
	if _, ok := l.BuildReceiverReportV1(ms(150)); ok {
		t.Fatal("a report for an empty interval")
	}

	ro := newV1(false)
	ro.RecordRecv(t0, 5, 500, 100, false)
	ro.RecordRecv(ms(10), 3, 300, 100, false)
	if r, _ := ro.BuildReceiverReportV1(ms(20)); r.CumulativeReorderCount != 1 || r.HighestCounter != 5 {
		t.Errorf("reorder: %+v", r)
	}

	d := newV1(false)
	d.RecordRecv(t0, 1, 100, 500, false)
	if r, _ := d.BuildReceiverReportV1(ms(65536)); r.TimestampEcho != 0 || r.DwellTime != 65535 || r.CumulativePacketsRecv != 1 {
		t.Errorf("dwell overflow: %+v", r)
	}

	// Bursts: frames 2, 3 and 6, 7 lost. The same frames on master's MMP
	// give the same report, plus the fields next dropped.
	g, m := newV1(false), mmp.NewLink(t0, mmp.DefaultConfig(), false)
	for i, c := range []uint64{1, 4, 5, 8, 9} {
		g.RecordRecv(ms(10*i), c, uint32(10*i), 100, false)
		m.RecordRecv(ms(10*i), c, uint32(10*i), 100, false)
	}
	r1, _ := g.BuildReceiverReportV1(ms(60))
	r0, _ := m.BuildReceiverReport(ms(60))
	if r1.BurstLossCount != 2 || r0.MaxBurstLoss != 2 || r0.MeanBurstLoss != 512 {
		t.Errorf("bursts: v1 %+v, v0 %+v", r1, r0)
	}
	if r1 != wire.ReceiverReportV1Of(r0) {
		t.Errorf("v1 report %+v differs from master's %+v in a shared field", r1, r0)
	}
}

// TestV1ReceiverReportMetrics: what next derives from its reports, fips-go
// derives from them too: RTT from the echo (next's test_rtt_from_echo:
// echo 1000, dwell 5 at 1050 is 45 ms), loss from the counters, goodput.
func TestV1ReceiverReportMetrics(t *testing.T) {
	l := newV1(false)
	for i := range 30 {
		l.RecordSent(t0, uint64(i), 0, 1000)
	}
	rr := wire.ReceiverReportV1{TimestampEcho: 1000, DwellTime: 5, HighestCounter: 10, CumulativePacketsRecv: 10, CumulativeBytesRecv: 5000}
	if !l.HandleReceiverReportV1(ms(1050), rr) {
		t.Fatal("no first RTT")
	}
	if s, ok := l.SRTT(); !ok || s != 45*time.Millisecond {
		t.Fatalf("srtt %v %v, want 45 ms", s, ok)
	}
	// next's test_ignores_duplicate_receiver_report_after_valid_sample:
	// 10 frames of 10 counters, then 8 of 10: 20 % loss, 9000 B in 1 s.
	rr2 := wire.ReceiverReportV1{TimestampEcho: 1100, DwellTime: 5, HighestCounter: 20, CumulativePacketsRecv: 18, CumulativeBytesRecv: 14_000}
	l.HandleReceiverReportV1(ms(2050), rr2)
	if loss := l.Loss(); loss < 0.199 || loss > 0.201 {
		t.Errorf("loss %v, want 0.2", loss)
	}
	if g := l.Goodput(); g != 9000 {
		t.Errorf("goodput %v, want 9000 B/s", g)
	}
	srtt, _ := l.SRTT()
	l.HandleReceiverReportV1(ms(6000), rr2) // a duplicate: stale
	if s, _ := l.SRTT(); s != srtt || l.Stats().StaleReports != 1 {
		t.Errorf("duplicate moved SRTT %v → %v, stale %d", srtt, s, l.Stats().StaleReports)
	}
	if l.HandleSenderReportV1(ms(6000), wire.SenderReportV1{IntervalPacketsSent: 1}); l.Stats().SenderReportsRecv != 1 {
		t.Errorf("sender reports %d", l.Stats().SenderReportsRecv)
	}
}

// TestV1NoSpinBit: next's MMP has no spin bit: no role in the snapshot
// (nor its JSON), never a bit to send, received bits ignored. Master's
// keeps both roles.
func TestV1NoSpinBit(t *testing.T) {
	l := newV1(false)
	l.SetInitiator(true)
	l.ObserveSpinBit(t0, true, 1)
	l.ObserveSpinBit(ms(10), false, 2)
	if l.SpinBit() || l.Initiator() {
		t.Errorf("v1 link: spin bit %v, initiator %v", l.SpinBit(), l.Initiator())
	}
	s := l.Snapshot()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if s.SpinBitRole != "" || strings.Contains(string(b), "spin_bit_role") {
		t.Errorf("v1 snapshot has a spin-bit role: %s", b)
	}
	for _, init := range []bool{false, true} {
		v0 := mmp.NewLink(t0, mmp.DefaultConfig(), false)
		v0.SetInitiator(init)
		want := map[bool]string{false: "responder", true: "initiator"}[init]
		b, _ := json.Marshal(v0.Snapshot())
		if !strings.Contains(string(b), `"spin_bit_role":"`+want+`"`) {
			t.Errorf("v0 snapshot lost its role %s: %s", want, b)
		}
	}
}

// TestV1ReportGate: next sends a report on a link when our profile
// provides it and the peer's wants it (peer/active.rs with_session).
func TestV1ReportGate(t *testing.T) {
	full, nr, leaf := wire.ProfileFull, wire.ProfileNonRouting, wire.ProfileLeaf
	for _, c := range []struct {
		ours, theirs wire.NodeProfile
		sr, rr       bool
	}{
		{full, full, true, true}, {full, nr, false, true}, {full, leaf, false, false},
		{nr, full, true, true}, {nr, nr, false, true}, {nr, leaf, false, false},
		{leaf, full, false, true}, {leaf, nr, false, true}, {leaf, leaf, false, false},
	} {
		sr, rr := wire.MMPReports(c.ours, c.theirs)
		if sr != c.sr || rr != c.rr {
			t.Errorf("%s → %s: SR %v RR %v, want %v %v", c.ours, c.theirs, sr, rr, c.sr, c.rr)
		}
		l := newV1(false)
		l.SetReportGate(sr, rr)
		l.RecordSent(t0, 1, 0, 100)
		l.RecordRecv(t0, 1, 0, 100, false)
		if dsr, drr := l.Due(t0); dsr != c.sr || drr != c.rr {
			t.Errorf("%s → %s: due %v %v", c.ours, c.theirs, dsr, drr)
		}
	}
}

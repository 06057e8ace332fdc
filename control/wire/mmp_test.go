package wire_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// Upstream's sample reports (proto/mmp/tests/wire.rs).
func fspSampleSR() wire.SenderReport {
	return wire.SenderReport{
		IntervalStartCounter:   100,
		IntervalEndCounter:     200,
		IntervalStartTimestamp: 5000,
		IntervalEndTimestamp:   6000,
		IntervalBytesSent:      50_000,
		CumulativePacketsSent:  10_000,
		CumulativeBytesSent:    5_000_000,
	}
}

func fspSampleRR() wire.ReceiverReport {
	return wire.ReceiverReport{
		HighestCounter:         195,
		CumulativePacketsRecv:  9_500,
		CumulativeBytesRecv:    4_750_000,
		TimestampEcho:          5900,
		DwellTime:              5,
		MaxBurstLoss:           3,
		MeanBurstLoss:          384, // 1.5 in u8.8
		Jitter:                 1200,
		ECNCECount:             0,
		OWDTrend:               -50,
		BurstLossCount:         2,
		CumulativeReorderCount: 10,
		IntervalPacketsRecv:    95,
		IntervalBytesRecv:      47_500,
	}
}

// The 44 field bytes of fspSampleSR, at the offsets of the digest §3.5
// minus 4.
func fspSRFields(t testing.TB) []byte {
	return cat(
		mustHex(t, "64 00 00 00 00 00 00 00"), // [4]  interval_start_counter 100
		mustHex(t, "c8 00 00 00 00 00 00 00"), // [12] interval_end_counter 200
		mustHex(t, "88 13 00 00"),             // [20] interval_start_ts 5000
		mustHex(t, "70 17 00 00"),             // [24] interval_end_ts 6000
		mustHex(t, "50 c3 00 00"),             // [28] interval_bytes_sent 50000
		mustHex(t, "10 27 00 00 00 00 00 00"), // [32] cumulative_packets_sent 10000
		mustHex(t, "40 4b 4c 00 00 00 00 00")) // [40] cumulative_bytes_sent 5000000
}

// The 64 field bytes of fspSampleRR.
func fspRRFields(t testing.TB) []byte {
	return cat(
		mustHex(t, "c3 00 00 00 00 00 00 00"), // [4]  highest_counter 195
		mustHex(t, "1c 25 00 00 00 00 00 00"), // [12] cumulative_packets_recv 9500
		mustHex(t, "b0 7a 48 00 00 00 00 00"), // [20] cumulative_bytes_recv 4750000
		mustHex(t, "0c 17 00 00"),             // [28] timestamp_echo 5900
		mustHex(t, "05 00"),                   // [32] dwell_time 5
		mustHex(t, "03 00"),                   // [34] max_burst_loss 3
		mustHex(t, "80 01"),                   // [36] mean_burst_loss 384
		mustHex(t, "00 00"),                   // [38] reserved
		mustHex(t, "b0 04 00 00"),             // [40] jitter 1200
		mustHex(t, "00 00 00 00"),             // [44] ecn_ce_count 0
		mustHex(t, "ce ff ff ff"),             // [48] owd_trend -50
		mustHex(t, "02 00 00 00"),             // [52] burst_loss_count 2
		mustHex(t, "0a 00 00 00"),             // [56] cumulative_reorder_count 10
		mustHex(t, "5f 00 00 00"),             // [60] interval_packets_recv 95
		mustHex(t, "8c b9 00 00"))             // [64] interval_bytes_recv 47500
}

func TestSenderReportLayout(t *testing.T) {
	// test_sender_report_encode_size: 48 bytes, type 0x01.
	b := marshal(t, fspSampleSR())
	equal(t, "layout", b, cat(mustHex(t, "01 00 00 00"), fspSRFields(t)))
	got, err := wire.ParseSenderReport(b)
	if err != nil || got != fspSampleSR() {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	// test_sender_report_zero_values, and max values.
	for _, r := range []wire.SenderReport{{}, {math.MaxUint64, math.MaxUint64, math.MaxUint32, math.MaxUint32, math.MaxUint32, math.MaxUint64, math.MaxUint64}} {
		if got, err := wire.ParseSenderReport(marshal(t, r)); err != nil || got != r {
			t.Errorf("%+v: %v %+v", r, err, got)
		}
	}
	// Reserved bytes are ignored.
	b[1], b[2], b[3] = 0xFF, 0xFF, 0xFF
	if got, err := wire.ParseSenderReport(b); err != nil || got != fspSampleSR() {
		t.Errorf("reserved bytes: %v", err)
	}
}

func TestReceiverReportLayout(t *testing.T) {
	// test_receiver_report_encode_size: 68 bytes, type 0x02.
	b := marshal(t, fspSampleRR())
	equal(t, "layout", b, cat(mustHex(t, "02 00 00 00"), fspRRFields(t)))
	got, err := wire.ParseReceiverReport(b)
	if err != nil || got != fspSampleRR() {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	// test_receiver_report_max_values and _negative_owd_trend.
	maxRR := wire.ReceiverReport{
		HighestCounter: math.MaxUint64, CumulativePacketsRecv: math.MaxUint64, CumulativeBytesRecv: math.MaxUint64,
		TimestampEcho: math.MaxUint32, DwellTime: math.MaxUint16, MaxBurstLoss: math.MaxUint16, MeanBurstLoss: math.MaxUint16,
		Jitter: math.MaxUint32, ECNCECount: math.MaxUint32, OWDTrend: math.MaxInt32, BurstLossCount: math.MaxUint32,
		CumulativeReorderCount: math.MaxUint32, IntervalPacketsRecv: math.MaxUint32, IntervalBytesRecv: math.MaxUint32,
	}
	neg := fspSampleRR()
	neg.OWDTrend = -12345
	for _, r := range []wire.ReceiverReport{maxRR, neg, {OWDTrend: math.MinInt32}} {
		if got, err := wire.ParseReceiverReport(marshal(t, r)); err != nil || got != r {
			t.Errorf("%+v: %v %+v", r, err, got)
		}
	}
	// The max report leaves the reserved u16 at 38 zero.
	if mb := marshal(t, maxRR); mb[38] != 0 || mb[39] != 0 {
		t.Errorf("reserved u16 written as %x", mb[38:40])
	}
	// Reserved bytes (1..4 and 38..40) are ignored.
	b[1], b[3], b[38], b[39] = 0xFF, 0xFF, 0xFF, 0xFF
	if got, err := wire.ParseReceiverReport(b); err != nil || got != fspSampleRR() {
		t.Errorf("reserved bytes: %v", err)
	}
}

func TestSessionReportLayout(t *testing.T) {
	// Session bodies: 2 reserved bytes then the same field block (46 / 66).
	sr := wire.SessionSenderReport{SenderReport: fspSampleSR()}
	b := marshal(t, sr)
	equal(t, "session SR", b, cat(mustHex(t, "00 00"), fspSRFields(t)))
	if got, err := wire.ParseSessionSenderReport(b); err != nil || got != sr {
		t.Fatalf("session SR round trip: %v %+v", err, got)
	}
	rr := wire.SessionReceiverReport{ReceiverReport: fspSampleRR()}
	b = marshal(t, rr)
	equal(t, "session RR", b, cat(mustHex(t, "00 00"), fspRRFields(t)))
	if got, err := wire.ParseSessionReceiverReport(b); err != nil || got != rr {
		t.Fatalf("session RR round trip: %v %+v", err, got)
	}
	// The session reserved u16 of the RR sits at 36 (field offset 34).
	b[0], b[1], b[36], b[37] = 0xEE, 0xEE, 0xEE, 0xEE
	if got, err := wire.ParseSessionReceiverReport(b); err != nil || got != rr {
		t.Errorf("session RR reserved bytes: %v", err)
	}
	neg := rr
	neg.OWDTrend = -12345
	if got, _ := wire.ParseSessionReceiverReport(marshal(t, neg)); got.OWDTrend != -12345 {
		t.Errorf("owd_trend %d", got.OWDTrend)
	}
}

func TestMMPSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"SenderReport", wire.SenderReportSize, 48},
		{"ReceiverReport", wire.ReceiverReportSize, 68},
		{"SessionSenderReport", wire.SessionSenderReportSize, 46},
		{"SessionReceiverReport", wire.SessionReceiverReportSize, 66},
		{"PathMtuNotification", wire.PathMtuNotificationSize, 2},
		{"SR Len", wire.SenderReport{}.Len(), 48},
		{"RR Len", wire.ReceiverReport{}.Len(), 68},
		{"session SR Len", wire.SessionSenderReport{}.Len(), 46},
		{"session RR Len", wire.SessionReceiverReport{}.Len(), 66},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestMMPRejects(t *testing.T) {
	sr := marshal(t, fspSampleSR())
	rr := marshal(t, fspSampleRR())
	ssr := marshal(t, wire.SessionSenderReport{SenderReport: fspSampleSR()})
	srr := marshal(t, wire.SessionReceiverReport{ReceiverReport: fspSampleRR()})
	parse := map[string]func([]byte) error{
		"SR":  func(b []byte) error { _, err := wire.ParseSenderReport(b); return err },
		"RR":  func(b []byte) error { _, err := wire.ParseReceiverReport(b); return err },
		"SSR": func(b []byte) error { _, err := wire.ParseSessionSenderReport(b); return err },
		"SRR": func(b []byte) error { _, err := wire.ParseSessionReceiverReport(b); return err },
	}
	for _, c := range []struct {
		parser, name string
		b            []byte
		kind         error
	}{
		{"SR", "empty", nil, wire.ErrTruncated},
		// test_*_too_short feeds 10 zero bytes.
		{"SR", "10 bytes", append([]byte{1}, make([]byte, 9)...), wire.ErrTruncated},
		{"SR", "47 bytes", sr[:47], wire.ErrTruncated},
		{"SR", "49 bytes", append(bytes.Clone(sr), 0), wire.ErrLength},
		{"SR", "is an RR", rr, wire.ErrType},
		{"RR", "empty", nil, wire.ErrTruncated},
		{"RR", "10 bytes", append([]byte{2}, make([]byte, 9)...), wire.ErrTruncated},
		{"RR", "67 bytes", rr[:67], wire.ErrTruncated},
		{"RR", "69 bytes", append(bytes.Clone(rr), 0), wire.ErrLength},
		{"RR", "is an SR", sr, wire.ErrType},
		{"SSR", "10 bytes", make([]byte, 10), wire.ErrTruncated},
		{"SSR", "45 bytes", ssr[:45], wire.ErrTruncated},
		{"SSR", "47 bytes", append(bytes.Clone(ssr), 0), wire.ErrLength},
		{"SRR", "10 bytes", make([]byte, 10), wire.ErrTruncated},
		{"SRR", "65 bytes", srr[:65], wire.ErrTruncated},
		{"SRR", "67 bytes", append(bytes.Clone(srr), 0), wire.ErrLength},
	} {
		err := parse[c.parser](c.b)
		if err == nil {
			t.Errorf("%s %s: accepted", c.parser, c.name)
			continue
		}
		t.Run(c.parser+"/"+c.name, func(t *testing.T) { wantKind(t, err, c.kind) })
	}
}

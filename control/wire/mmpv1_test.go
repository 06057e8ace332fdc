package wire

import (
	"encoding/hex"
	"errors"
	"testing"
)

// Upstream next's MMP test samples (src/proto/mmp/tests/wire.rs), encoded
// by hand from the layout in src/proto/mmp/wire.rs.
var (
	sampleSRV1 = SenderReportV1{IntervalPacketsSent: 100, IntervalBytesSent: 50_000, CumulativePacketsSent: 10_000}
	sampleRRV1 = ReceiverReportV1{TimestampEcho: 5900, DwellTime: 5, HighestCounter: 195, CumulativePacketsRecv: 9_500,
		CumulativeBytesRecv: 4_750_000, Jitter: 1200, OWDTrend: -50, BurstLossCount: 2, CumulativeReorderCount: 10}
)

const (
	vecSRV1 = "01" + "00" + "1000" + "64000000" + "50c30000" + "1027000000000000"
	vecRRV1 = "02" + "00" + "3200" + "0c170000" + "0500" + "c300000000000000" + "1c25000000000000" + "b07a480000000000" +
		"b0040000" + "00000000" + "ceffffff" + "02000000" + "0a000000"
)

func TestMMPV1Vectors(t *testing.T) {
	b := make([]byte, SenderReportV1Size)
	if n, err := sampleSRV1.MarshalTo(b); err != nil || n != 20 || hex.EncodeToString(b) != vecSRV1 {
		t.Fatalf("SR %x %d %v, want %s", b, n, err, vecSRV1)
	}
	if r, err := ParseSenderReportV1(b); err != nil || r != sampleSRV1 {
		t.Fatalf("SR decoded %+v %v", r, err)
	}
	b = make([]byte, ReceiverReportV1Size)
	if n, err := sampleRRV1.MarshalTo(b); err != nil || n != 54 || hex.EncodeToString(b) != vecRRV1 {
		t.Fatalf("RR %x %d %v, want %s", b, n, err, vecRRV1)
	}
	if r, err := ParseReceiverReportV1(b); err != nil || r != sampleRRV1 {
		t.Fatalf("RR decoded %+v %v", r, err)
	}
	// Session bodies are the link messages without msg_type.
	sb := make([]byte, SessionSenderReportV1Size)
	if _, err := sampleSRV1.MarshalSessionTo(sb); err != nil || hex.EncodeToString(sb) != vecSRV1[2:] {
		t.Fatalf("session SR %x %v", sb, err)
	}
	if r, err := ParseSessionSenderReportV1(sb); err != nil || r != sampleSRV1 {
		t.Fatalf("session SR %+v %v", r, err)
	}
	rb := make([]byte, SessionReceiverReportV1Size)
	if _, err := sampleRRV1.MarshalSessionTo(rb); err != nil || hex.EncodeToString(rb) != vecRRV1[2:] {
		t.Fatalf("session RR %x %v", rb, err)
	}
	if r, err := ParseSessionReceiverReportV1(rb); err != nil || r != sampleRRV1 {
		t.Fatalf("session RR %+v %v", r, err)
	}
}

// A later format version appends fields: they are skipped; one declaring
// less than the version-0 fields is refused. A version-0 report declaring
// less is read, as upstream reads it.
func TestMMPV1ForwardCompat(t *testing.T) {
	sr := unhex(t, vecSRV1)
	later := append(append([]byte{}, sr...), 0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xba, 0xbe)
	later[1], later[2] = 1, 16+8
	if r, err := ParseSenderReportV1(later); err != nil || r != sampleSRV1 {
		t.Errorf("v1 SR with 8 more bytes: %+v %v", r, err)
	}
	short := append([]byte{}, sr...)
	short[1], short[2] = 1, 14
	if _, err := ParseSenderReportV1(short); !errors.Is(err, ErrLength) {
		t.Errorf("v1 SR declaring 14: %v", err)
	}
	short[1] = 0
	if _, err := ParseSenderReportV1(short); err != nil {
		t.Errorf("v0 SR declaring 14: %v", err)
	}
	claims := append([]byte{}, sr...)
	claims[2] = 40 // more than the message holds
	if _, err := ParseSenderReportV1(claims); !errors.Is(err, ErrTruncated) {
		t.Errorf("SR declaring 40: %v", err)
	}
	rr := unhex(t, vecRRV1)
	if _, err := ParseReceiverReportV1(rr[:53]); !errors.Is(err, ErrTruncated) {
		t.Errorf("short RR: %v", err)
	}
	if _, err := ParseReceiverReportV1(sr); !errors.Is(err, ErrType) {
		t.Errorf("SR as RR: %v", err)
	}
}

func FuzzParseMMPV1(f *testing.F) {
	f.Add(unhex(f, vecSRV1))
	f.Add(unhex(f, vecRRV1))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseSenderReportV1(b); err == nil {
			out := make([]byte, SenderReportV1Size)
			_, _ = r.MarshalTo(out)
			if r2, err := ParseSenderReportV1(out); err != nil || r2 != r {
				t.Fatalf("SR round trip %+v → %+v %v", r, r2, err)
			}
		}
		if r, err := ParseReceiverReportV1(b); err == nil {
			out := make([]byte, ReceiverReportV1Size)
			_, _ = r.MarshalTo(out)
			if r2, err := ParseReceiverReportV1(out); err != nil || r2 != r {
				t.Fatalf("RR round trip %+v → %+v %v", r, r2, err)
			}
		}
		_, _ = ParseSessionSenderReportV1(b)
		_, _ = ParseSessionReceiverReportV1(b)
	})
}

// A master-layout report carried in next's keeps every field next has;
// back in master's layout the fields next dropped are zero.
func TestReceiverReportV1Conversion(t *testing.T) {
	r := ReceiverReport{HighestCounter: 1, CumulativePacketsRecv: 2, CumulativeBytesRecv: 3, TimestampEcho: 4,
		DwellTime: 5, MaxBurstLoss: 6, MeanBurstLoss: 7, Jitter: 8, ECNCECount: 9, OWDTrend: -10, BurstLossCount: 11,
		CumulativeReorderCount: 12, IntervalPacketsRecv: 13, IntervalBytesRecv: 14}
	var b [SessionReceiverReportV1Size]byte
	if _, err := ReceiverReportV1Of(r).MarshalSessionTo(b[:]); err != nil {
		t.Fatal(err)
	}
	v1, err := ParseSessionReceiverReportV1(b[:])
	if err != nil {
		t.Fatal(err)
	}
	want := r
	want.MaxBurstLoss, want.MeanBurstLoss, want.IntervalPacketsRecv, want.IntervalBytesRecv = 0, 0, 0, 0
	if got := v1.V0(); got != want {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

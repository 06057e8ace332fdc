package mmp_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/wire"
)

// FuzzLink drives a Link with arbitrary events and reports: it must not
// panic, and its metrics stay in range.
func FuzzLink(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, false)
	f.Add(make([]byte, 200), true)
	f.Fuzz(func(t *testing.T, data []byte, session bool) { fuzzLink(t, data, session, false) })
}

// FuzzLinkV1 is FuzzLink on upstream next's MMP: next's report layouts
// decoded and handled, next's reports built.
func FuzzLinkV1(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, false)
	f.Add(make([]byte, 200), true)
	f.Fuzz(func(t *testing.T, data []byte, session bool) { fuzzLink(t, data, session, true) })
}

func fuzzLink(t *testing.T, data []byte, session, v1 bool) {
	l := mmp.NewLink(t0, mmp.DefaultConfig(), session)
	if v1 {
		l.SetV1()
	}
	now := t0
	for len(data) >= 9 {
		op, v := data[0], binary.LittleEndian.Uint64(data[1:9])
		data = data[9:]
		now = now.Add(time.Duration(v%5000) * time.Millisecond)
		switch op % 8 {
		case 0:
			l.RecordSent(now, v>>8, uint32(v), int(v%2000))
		case 1:
			l.RecordRecv(now, v>>16, uint32(v>>3), int(v%2000), v&1 == 1)
		case 2:
			if v1 {
				if len(data) >= wire.ReceiverReportV1Size {
					b := append([]byte{byte(wire.MsgReceiverReport)}, data[:wire.ReceiverReportV1Size-1]...)
					data = data[wire.ReceiverReportV1Size-1:]
					if rr, err := wire.ParseReceiverReportV1(b); err == nil {
						l.HandleReceiverReportV1(now, rr)
					}
				}
			} else if len(data) >= wire.ReceiverReportSize-4 {
				b := append([]byte{byte(wire.MsgReceiverReport), 0, 0, 0}, data[:wire.ReceiverReportSize-4]...)
				data = data[wire.ReceiverReportSize-4:]
				if rr, err := wire.ParseReceiverReport(b); err == nil {
					l.HandleReceiverReport(now, rr)
				}
			}
		case 3:
			l.Due(now)
			if v1 {
				l.BuildSenderReportV1(now)
				l.BuildReceiverReportV1(now)
				if l.SpinBit() || l.Snapshot().SpinBitRole != "" {
					t.Fatal("spin bit on next's MMP")
				}
			} else {
				l.BuildSenderReport(now)
				l.BuildReceiverReport(now)
			}
		case 4:
			l.ResetForRekey(now)
		case 5:
			if v&1 == 0 {
				l.RecordSendFailure()
			} else {
				l.RecordSendSuccess()
			}
		case 6:
			if p := l.PathMTU(); p != nil {
				p.Observe(uint16(v))
				p.ApplyNotification(now, uint16(v>>16))
				p.BuildNotification(now)
			}
		case 7:
			l.ObserveSpinBit(now, v&1 == 1, v>>1)
		}
		if e := l.ETX(); e < 1 || e > 100 {
			t.Fatalf("etx %v", e)
		}
		if x := l.Loss(); x < 0 || x > 1 {
			t.Fatalf("loss %v", x)
		}
		sr, rr := l.ReportIntervals()
		if sr <= 0 || rr <= 0 || sr > 10*time.Second || rr > 10*time.Second {
			t.Fatalf("intervals %v %v", sr, rr)
		}
	}
	_ = l.Snapshot()
}

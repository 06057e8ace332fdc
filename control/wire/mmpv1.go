package wire

import (
	"encoding/binary"
	"fmt"
)

// MMP reports in upstream's `next` format (src/proto/mmp/wire.rs on
// branch next, docs/next.md §6): slimmer field sets behind an
// extensibility header [format_version:1][total_length:2 LE] (link
// reports put msg_type 0x01/0x02 before it, session reports are the FSP
// bodies of 0x11/0x12). Format version 0 defines the fields below; a
// decoder reads them from the front and skips what total_length declares
// past them, so later versions can append fields.
const (
	SenderReportV1Size          = 20 // link message, msg_type included
	ReceiverReportV1Size        = 54 // link message, msg_type included
	SessionSenderReportV1Size   = 19 // session body
	SessionReceiverReportV1Size = 53 // session body

	senderReportV1Fields   = 16 // total_length of a version-0 SenderReport
	receiverReportV1Fields = 50 // total_length of a version-0 ReceiverReport
	mmpV1Header            = 3  // format_version, total_length
)

// SenderReportV1 is what a link's or session's sender counted over the last
// interval, in the `next` layout.
type SenderReportV1 struct {
	IntervalPacketsSent   uint32 `json:"interval_packets_sent"`
	IntervalBytesSent     uint32 `json:"interval_bytes_sent"`
	CumulativePacketsSent uint64 `json:"cumulative_packets_sent"`
}

// ReceiverReportV1 is what a link's or session's receiver reports, in the
// `next` layout: the timestamp echo and dwell time first.
type ReceiverReportV1 struct {
	TimestampEcho          uint32 `json:"timestamp_echo"`
	DwellTime              uint16 `json:"dwell_time"`
	HighestCounter         uint64 `json:"highest_counter"`
	CumulativePacketsRecv  uint64 `json:"cumulative_packets_recv"`
	CumulativeBytesRecv    uint64 `json:"cumulative_bytes_recv"`
	Jitter                 uint32 `json:"jitter"`
	ECNCECount             uint32 `json:"ecn_ce_count"`
	OWDTrend               int32  `json:"owd_trend"`
	BurstLossCount         uint32 `json:"burst_loss_count"`
	CumulativeReorderCount uint32 `json:"cumulative_reorder_count"`
}

// mmpV1Body checks a report body (after msg_type for link reports): at
// least the header and the version-0 fields, and as many bytes as
// total_length declares. A report of a later format version must declare
// at least the version-0 fields; a version-0 one declaring fewer is read
// anyway, as upstream does, since the bytes are there. It returns the
// fields.
func mmpV1Body(b []byte, msg string, fields int) ([]byte, error) {
	if len(b) < mmpV1Header+fields {
		return nil, errTruncated(msg, "", len(b), mmpV1Header+fields)
	}
	total := int(binary.LittleEndian.Uint16(b[1:]))
	if len(b) < mmpV1Header+total {
		return nil, errTruncated(msg, "total_length", len(b)-mmpV1Header, total)
	}
	if b[0] > 0 && total < fields {
		return nil, errLength(msg, "total_length", total, fields)
	}
	return b[mmpV1Header : mmpV1Header+fields], nil
}

func putMMPV1Header(b []byte, fields int) {
	b[0] = 0
	binary.LittleEndian.PutUint16(b[1:], uint16(fields))
}

func checkLinkType(b []byte, msg string, typ MsgType) error {
	if len(b) < 1 {
		return errTruncated(msg, "msg_type", 0, 1)
	}
	if MsgType(b[0]) != typ {
		return errKind(ErrType, msg, "msg_type", fmt.Sprintf("got 0x%02x, want 0x%02x", b[0], uint8(typ)))
	}
	return nil
}

// ParseSenderReportV1 decodes a `next` link SenderReport (msg_type first).
func ParseSenderReportV1(b []byte) (SenderReportV1, error) {
	const msg = "SenderReport v1"
	if err := checkLinkType(b, msg, MsgSenderReport); err != nil {
		return SenderReportV1{}, err
	}
	return parseSenderReportV1Body(b[1:], msg)
}

// ParseSessionSenderReportV1 decodes a `next` SessionSenderReport body.
func ParseSessionSenderReportV1(body []byte) (SenderReportV1, error) {
	return parseSenderReportV1Body(body, "SessionSenderReport v1")
}

func parseSenderReportV1Body(b []byte, msg string) (SenderReportV1, error) {
	f, err := mmpV1Body(b, msg, senderReportV1Fields)
	if err != nil {
		return SenderReportV1{}, err
	}
	le := binary.LittleEndian
	return SenderReportV1{IntervalPacketsSent: le.Uint32(f), IntervalBytesSent: le.Uint32(f[4:]), CumulativePacketsSent: le.Uint64(f[8:])}, nil
}

// MarshalTo writes the link message (20 bytes, msg_type included).
func (r SenderReportV1) MarshalTo(b []byte) (int, error) {
	if len(b) < SenderReportV1Size {
		return 0, errBuffer("SenderReport v1", len(b), SenderReportV1Size)
	}
	b[0] = byte(MsgSenderReport)
	r.putBody(b[1:])
	return SenderReportV1Size, nil
}

// MarshalSessionTo writes the session body (19 bytes).
func (r SenderReportV1) MarshalSessionTo(b []byte) (int, error) {
	if len(b) < SessionSenderReportV1Size {
		return 0, errBuffer("SessionSenderReport v1", len(b), SessionSenderReportV1Size)
	}
	r.putBody(b)
	return SessionSenderReportV1Size, nil
}

func (r SenderReportV1) putBody(b []byte) {
	putMMPV1Header(b, senderReportV1Fields)
	le := binary.LittleEndian
	le.PutUint32(b[3:], r.IntervalPacketsSent)
	le.PutUint32(b[7:], r.IntervalBytesSent)
	le.PutUint64(b[11:], r.CumulativePacketsSent)
}

// ParseReceiverReportV1 decodes a `next` link ReceiverReport (msg_type
// first).
func ParseReceiverReportV1(b []byte) (ReceiverReportV1, error) {
	const msg = "ReceiverReport v1"
	if err := checkLinkType(b, msg, MsgReceiverReport); err != nil {
		return ReceiverReportV1{}, err
	}
	return parseReceiverReportV1Body(b[1:], msg)
}

// ParseSessionReceiverReportV1 decodes a `next` SessionReceiverReport body.
func ParseSessionReceiverReportV1(body []byte) (ReceiverReportV1, error) {
	return parseReceiverReportV1Body(body, "SessionReceiverReport v1")
}

func parseReceiverReportV1Body(b []byte, msg string) (ReceiverReportV1, error) {
	f, err := mmpV1Body(b, msg, receiverReportV1Fields)
	if err != nil {
		return ReceiverReportV1{}, err
	}
	le := binary.LittleEndian
	return ReceiverReportV1{
		TimestampEcho: le.Uint32(f), DwellTime: le.Uint16(f[4:]), HighestCounter: le.Uint64(f[6:]),
		CumulativePacketsRecv: le.Uint64(f[14:]), CumulativeBytesRecv: le.Uint64(f[22:]), Jitter: le.Uint32(f[30:]),
		ECNCECount: le.Uint32(f[34:]), OWDTrend: int32(le.Uint32(f[38:])), BurstLossCount: le.Uint32(f[42:]),
		CumulativeReorderCount: le.Uint32(f[46:]),
	}, nil
}

// MarshalTo writes the link message (54 bytes, msg_type included).
func (r ReceiverReportV1) MarshalTo(b []byte) (int, error) {
	if len(b) < ReceiverReportV1Size {
		return 0, errBuffer("ReceiverReport v1", len(b), ReceiverReportV1Size)
	}
	b[0] = byte(MsgReceiverReport)
	r.putBody(b[1:])
	return ReceiverReportV1Size, nil
}

// MarshalSessionTo writes the session body (53 bytes).
func (r ReceiverReportV1) MarshalSessionTo(b []byte) (int, error) {
	if len(b) < SessionReceiverReportV1Size {
		return 0, errBuffer("SessionReceiverReport v1", len(b), SessionReceiverReportV1Size)
	}
	r.putBody(b)
	return SessionReceiverReportV1Size, nil
}

func (r ReceiverReportV1) putBody(b []byte) {
	putMMPV1Header(b, receiverReportV1Fields)
	le := binary.LittleEndian
	f := b[mmpV1Header:]
	le.PutUint32(f, r.TimestampEcho)
	le.PutUint16(f[4:], r.DwellTime)
	le.PutUint64(f[6:], r.HighestCounter)
	le.PutUint64(f[14:], r.CumulativePacketsRecv)
	le.PutUint64(f[22:], r.CumulativeBytesRecv)
	le.PutUint32(f[30:], r.Jitter)
	le.PutUint32(f[34:], r.ECNCECount)
	le.PutUint32(f[38:], uint32(r.OWDTrend))
	le.PutUint32(f[42:], r.BurstLossCount)
	le.PutUint32(f[46:], r.CumulativeReorderCount)
}

// ReceiverReportV1Of is r in the `next` layout: the fields master's has
// and next's dropped (burst loss maximum and mean, interval counts) are
// left out.
func ReceiverReportV1Of(r ReceiverReport) ReceiverReportV1 {
	return ReceiverReportV1{
		TimestampEcho: r.TimestampEcho, DwellTime: r.DwellTime, HighestCounter: r.HighestCounter,
		CumulativePacketsRecv: r.CumulativePacketsRecv, CumulativeBytesRecv: r.CumulativeBytesRecv,
		Jitter: r.Jitter, ECNCECount: r.ECNCECount, OWDTrend: r.OWDTrend, BurstLossCount: r.BurstLossCount,
		CumulativeReorderCount: r.CumulativeReorderCount,
	}
}

// V0 is r in master's layout, the fields `next` dropped zero.
func (r ReceiverReportV1) V0() ReceiverReport {
	return ReceiverReport{
		TimestampEcho: r.TimestampEcho, DwellTime: r.DwellTime, HighestCounter: r.HighestCounter,
		CumulativePacketsRecv: r.CumulativePacketsRecv, CumulativeBytesRecv: r.CumulativeBytesRecv,
		Jitter: r.Jitter, ECNCECount: r.ECNCECount, OWDTrend: r.OWDTrend, BurstLossCount: r.BurstLossCount,
		CumulativeReorderCount: r.CumulativeReorderCount,
	}
}

package wire

import (
	"encoding/binary"
	"fmt"
)

// MMP (metrics measurement) reports exist at two layers with the same
// fields: as FMP link messages (msg_type 0x01/0x02, then 3 reserved bytes)
// and as FSP session messages (msg_type in the inner header, then 2
// reserved bytes). The field block after the reserved bytes is identical.

// MMP report sizes.
const (
	SenderReportSize          = 48 // link message, msg_type included
	ReceiverReportSize        = 68 // link message, msg_type included
	SessionSenderReportSize   = 46 // session body after the inner header
	SessionReceiverReportSize = 66 // session body after the inner header

	senderReportFieldsSize   = 44
	receiverReportFieldsSize = 64

	mmpLinkReserved    = 3
	mmpSessionReserved = 2
)

// SenderReport is what the sender of a link or session counted over the
// last report interval.
type SenderReport struct {
	IntervalStartCounter   uint64 `json:"interval_start_counter"`
	IntervalEndCounter     uint64 `json:"interval_end_counter"`
	IntervalStartTimestamp uint32 `json:"interval_start_timestamp"`
	IntervalEndTimestamp   uint32 `json:"interval_end_timestamp"`
	IntervalBytesSent      uint32 `json:"interval_bytes_sent"`
	CumulativePacketsSent  uint64 `json:"cumulative_packets_sent"`
	CumulativeBytesSent    uint64 `json:"cumulative_bytes_sent"`
}

// ParseSenderReport decodes a link SenderReport message (msg_type 0x01
// first, 48 bytes).
func ParseSenderReport(b []byte) (SenderReport, error) {
	const msg = "SenderReport"
	if err := checkLinkReport(b, msg, MsgSenderReport, SenderReportSize); err != nil {
		return SenderReport{}, err
	}
	return parseSenderReportFields(b[1+mmpLinkReserved:]), nil
}

// Len is the encoded size.
func (SenderReport) Len() int { return SenderReportSize }

// MarshalTo writes the link message, msg_type included.
func (r SenderReport) MarshalTo(b []byte) (int, error) {
	if len(b) < SenderReportSize {
		return 0, errBuffer("SenderReport", len(b), SenderReportSize)
	}
	b[0] = byte(MsgSenderReport)
	clear(b[1 : 1+mmpLinkReserved])
	r.putFields(b[1+mmpLinkReserved:])
	return SenderReportSize, nil
}

func parseSenderReportFields(b []byte) SenderReport {
	le := binary.LittleEndian
	return SenderReport{
		IntervalStartCounter:   le.Uint64(b[0:]),
		IntervalEndCounter:     le.Uint64(b[8:]),
		IntervalStartTimestamp: le.Uint32(b[16:]),
		IntervalEndTimestamp:   le.Uint32(b[20:]),
		IntervalBytesSent:      le.Uint32(b[24:]),
		CumulativePacketsSent:  le.Uint64(b[28:]),
		CumulativeBytesSent:    le.Uint64(b[36:]),
	}
}

func (r SenderReport) putFields(b []byte) {
	le := binary.LittleEndian
	_ = b[senderReportFieldsSize-1]
	le.PutUint64(b[0:], r.IntervalStartCounter)
	le.PutUint64(b[8:], r.IntervalEndCounter)
	le.PutUint32(b[16:], r.IntervalStartTimestamp)
	le.PutUint32(b[20:], r.IntervalEndTimestamp)
	le.PutUint32(b[24:], r.IntervalBytesSent)
	le.PutUint64(b[28:], r.CumulativePacketsSent)
	le.PutUint64(b[36:], r.CumulativeBytesSent)
}

// ReceiverReport is what the receiver of a link or session observed; the
// sender derives RTT (from TimestampEcho and DwellTime), loss, jitter and
// congestion from it.
type ReceiverReport struct {
	HighestCounter         uint64 `json:"highest_counter"`
	CumulativePacketsRecv  uint64 `json:"cumulative_packets_recv"`
	CumulativeBytesRecv    uint64 `json:"cumulative_bytes_recv"`
	TimestampEcho          uint32 `json:"timestamp_echo"`
	DwellTime              uint16 `json:"dwell_time"` // ms
	MaxBurstLoss           uint16 `json:"max_burst_loss"`
	MeanBurstLoss          uint16 `json:"mean_burst_loss"` // u8.8 fixed point
	Jitter                 uint32 `json:"jitter"`          // µs
	ECNCECount             uint32 `json:"ecn_ce_count"`
	OWDTrend               int32  `json:"owd_trend"` // µs/s
	BurstLossCount         uint32 `json:"burst_loss_count"`
	CumulativeReorderCount uint32 `json:"cumulative_reorder_count"`
	IntervalPacketsRecv    uint32 `json:"interval_packets_recv"`
	IntervalBytesRecv      uint32 `json:"interval_bytes_recv"`
}

// ParseReceiverReport decodes a link ReceiverReport message (msg_type 0x02
// first, 68 bytes).
func ParseReceiverReport(b []byte) (ReceiverReport, error) {
	const msg = "ReceiverReport"
	if err := checkLinkReport(b, msg, MsgReceiverReport, ReceiverReportSize); err != nil {
		return ReceiverReport{}, err
	}
	return parseReceiverReportFields(b[1+mmpLinkReserved:]), nil
}

// Len is the encoded size.
func (ReceiverReport) Len() int { return ReceiverReportSize }

// MarshalTo writes the link message, msg_type included.
func (r ReceiverReport) MarshalTo(b []byte) (int, error) {
	if len(b) < ReceiverReportSize {
		return 0, errBuffer("ReceiverReport", len(b), ReceiverReportSize)
	}
	b[0] = byte(MsgReceiverReport)
	clear(b[1 : 1+mmpLinkReserved])
	r.putFields(b[1+mmpLinkReserved:])
	return ReceiverReportSize, nil
}

// The two reserved bytes at field offset 34 (link offset 38) follow
// MeanBurstLoss.
func parseReceiverReportFields(b []byte) ReceiverReport {
	le := binary.LittleEndian
	return ReceiverReport{
		HighestCounter:         le.Uint64(b[0:]),
		CumulativePacketsRecv:  le.Uint64(b[8:]),
		CumulativeBytesRecv:    le.Uint64(b[16:]),
		TimestampEcho:          le.Uint32(b[24:]),
		DwellTime:              le.Uint16(b[28:]),
		MaxBurstLoss:           le.Uint16(b[30:]),
		MeanBurstLoss:          le.Uint16(b[32:]),
		Jitter:                 le.Uint32(b[36:]),
		ECNCECount:             le.Uint32(b[40:]),
		OWDTrend:               int32(le.Uint32(b[44:])),
		BurstLossCount:         le.Uint32(b[48:]),
		CumulativeReorderCount: le.Uint32(b[52:]),
		IntervalPacketsRecv:    le.Uint32(b[56:]),
		IntervalBytesRecv:      le.Uint32(b[60:]),
	}
}

func (r ReceiverReport) putFields(b []byte) {
	le := binary.LittleEndian
	_ = b[receiverReportFieldsSize-1]
	le.PutUint64(b[0:], r.HighestCounter)
	le.PutUint64(b[8:], r.CumulativePacketsRecv)
	le.PutUint64(b[16:], r.CumulativeBytesRecv)
	le.PutUint32(b[24:], r.TimestampEcho)
	le.PutUint16(b[28:], r.DwellTime)
	le.PutUint16(b[30:], r.MaxBurstLoss)
	le.PutUint16(b[32:], r.MeanBurstLoss)
	le.PutUint16(b[34:], 0)
	le.PutUint32(b[36:], r.Jitter)
	le.PutUint32(b[40:], r.ECNCECount)
	le.PutUint32(b[44:], uint32(r.OWDTrend))
	le.PutUint32(b[48:], r.BurstLossCount)
	le.PutUint32(b[52:], r.CumulativeReorderCount)
	le.PutUint32(b[56:], r.IntervalPacketsRecv)
	le.PutUint32(b[60:], r.IntervalBytesRecv)
}

// SessionSenderReport is the FSP session message 0x11: the SenderReport
// fields end to end.
type SessionSenderReport struct {
	SenderReport
}

// ParseSessionSenderReport decodes the 46-byte body after the inner header.
func ParseSessionSenderReport(body []byte) (SessionSenderReport, error) {
	if err := fixedBody(body, "SessionSenderReport", SessionSenderReportSize); err != nil {
		return SessionSenderReport{}, err
	}
	return SessionSenderReport{parseSenderReportFields(body[mmpSessionReserved:])}, nil
}

// Len is the encoded body size.
func (SessionSenderReport) Len() int { return SessionSenderReportSize }

// MarshalTo writes the body.
func (r SessionSenderReport) MarshalTo(b []byte) (int, error) {
	if len(b) < SessionSenderReportSize {
		return 0, errBuffer("SessionSenderReport", len(b), SessionSenderReportSize)
	}
	clear(b[:mmpSessionReserved])
	r.putFields(b[mmpSessionReserved:])
	return SessionSenderReportSize, nil
}

// SessionReceiverReport is the FSP session message 0x12: the
// ReceiverReport fields end to end.
type SessionReceiverReport struct {
	ReceiverReport
}

// ParseSessionReceiverReport decodes the 66-byte body after the inner
// header.
func ParseSessionReceiverReport(body []byte) (SessionReceiverReport, error) {
	if err := fixedBody(body, "SessionReceiverReport", SessionReceiverReportSize); err != nil {
		return SessionReceiverReport{}, err
	}
	return SessionReceiverReport{parseReceiverReportFields(body[mmpSessionReserved:])}, nil
}

// Len is the encoded body size.
func (SessionReceiverReport) Len() int { return SessionReceiverReportSize }

// MarshalTo writes the body.
func (r SessionReceiverReport) MarshalTo(b []byte) (int, error) {
	if len(b) < SessionReceiverReportSize {
		return 0, errBuffer("SessionReceiverReport", len(b), SessionReceiverReportSize)
	}
	clear(b[:mmpSessionReserved])
	r.putFields(b[mmpSessionReserved:])
	return SessionReceiverReportSize, nil
}

// checkLinkReport checks type and exact size of a link report. Upstream
// tolerates trailing bytes but never sends them.
func checkLinkReport(b []byte, msg string, typ MsgType, size int) error {
	if len(b) < 1 {
		return errTruncated(msg, "msg_type", 0, 1)
	}
	if MsgType(b[0]) != typ {
		return errKind(ErrType, msg, "msg_type", fmt.Sprintf("got 0x%02x, want 0x%02x", b[0], uint8(typ)))
	}
	return fixedBody(b, msg, size)
}

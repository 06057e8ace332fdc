package peer

import "github.com/fips-go/fips/control/wire"

// MMP reports on v1 links travel in next's layouts (docs/next.md §6.2),
// translated at the link layer from and to the v0 fields the MMP
// engine works with. Until MMP itself learns the v1 fields (checklist
// step 11) the translation loses what v1 dropped: a received v1
// ReceiverReport has no burst-loss maximum and mean and no interval
// receive counts (zero here), and a v1 SenderReport's interval packet
// count is the v0 report's counter span.

func parseSenderReportOn(p *Peer, msg []byte) (wire.SenderReport, error) {
	if !p.v1 {
		return wire.ParseSenderReport(msg)
	}
	r, err := wire.ParseSenderReportV1(msg)
	if err != nil {
		return wire.SenderReport{}, err
	}
	return wire.SenderReport{IntervalBytesSent: r.IntervalBytesSent, CumulativePacketsSent: r.CumulativePacketsSent}, nil
}

func parseReceiverReportOn(p *Peer, msg []byte) (wire.ReceiverReport, error) {
	if !p.v1 {
		return wire.ParseReceiverReport(msg)
	}
	r, err := wire.ParseReceiverReportV1(msg)
	if err != nil {
		return wire.ReceiverReport{}, err
	}
	return wire.ReceiverReport{HighestCounter: r.HighestCounter, CumulativePacketsRecv: r.CumulativePacketsRecv,
		CumulativeBytesRecv: r.CumulativeBytesRecv, TimestampEcho: r.TimestampEcho, DwellTime: r.DwellTime,
		Jitter: r.Jitter, ECNCECount: r.ECNCECount, OWDTrend: r.OWDTrend, BurstLossCount: r.BurstLossCount,
		CumulativeReorderCount: r.CumulativeReorderCount}, nil
}

func marshalSenderReportOn(p *Peer, r wire.SenderReport, b []byte) (int, error) {
	if !p.v1 {
		return r.MarshalTo(b)
	}
	var n uint32
	if r.IntervalEndCounter >= r.IntervalStartCounter {
		n = uint32(min(r.IntervalEndCounter-r.IntervalStartCounter+1, 1<<32-1))
	}
	return wire.SenderReportV1{IntervalPacketsSent: n, IntervalBytesSent: r.IntervalBytesSent,
		CumulativePacketsSent: r.CumulativePacketsSent}.MarshalTo(b)
}

func marshalReceiverReportOn(p *Peer, r wire.ReceiverReport, b []byte) (int, error) {
	if !p.v1 {
		return r.MarshalTo(b)
	}
	return wire.ReceiverReportV1{TimestampEcho: r.TimestampEcho, DwellTime: r.DwellTime, HighestCounter: r.HighestCounter,
		CumulativePacketsRecv: r.CumulativePacketsRecv, CumulativeBytesRecv: r.CumulativeBytesRecv, Jitter: r.Jitter,
		ECNCECount: r.ECNCECount, OWDTrend: r.OWDTrend, BurstLossCount: r.BurstLossCount,
		CumulativeReorderCount: r.CumulativeReorderCount}.MarshalTo(b)
}

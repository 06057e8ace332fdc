package peer

import (
	"time"

	"github.com/fips-go/fips/control/wire"
)

// MMP reports travel in their link's format: master's layouts on v0
// links, next's on v1 links (docs/next.md §6.2), whose MMP state is
// next's (mmp.Link.SetV1, set up by newLinkMMP).

// handleSenderReport reads a SenderReport in p's format.
func handleSenderReport(now time.Time, p *Peer, msg []byte) error {
	if p.v1 {
		r, err := wire.ParseSenderReportV1(msg)
		if err == nil {
			p.mmp.HandleSenderReportV1(now, r)
		}
		return err
	}
	r, err := wire.ParseSenderReport(msg)
	if err == nil {
		p.mmp.HandleSenderReport(now, r)
	}
	return err
}

// handleReceiverReport reads a ReceiverReport in p's format; firstRTT is
// mmp.Link.HandleReceiverReport's.
func handleReceiverReport(now time.Time, p *Peer, msg []byte) (firstRTT bool, err error) {
	if p.v1 {
		r, err := wire.ParseReceiverReportV1(msg)
		if err != nil {
			return false, err
		}
		return p.mmp.HandleReceiverReportV1(now, r), nil
	}
	r, err := wire.ParseReceiverReport(msg)
	if err != nil {
		return false, err
	}
	return p.mmp.HandleReceiverReport(now, r), nil
}

// buildSenderReport writes p's SenderReport for the interval into b in
// p's format; n is 0 when there is none to send.
func buildSenderReport(now time.Time, p *Peer, b []byte) (n int, err error) {
	if p.v1 {
		if r, ok := p.mmp.BuildSenderReportV1(now); ok {
			return r.MarshalTo(b)
		}
		return 0, nil
	}
	if r, ok := p.mmp.BuildSenderReport(now); ok {
		return r.MarshalTo(b)
	}
	return 0, nil
}

// buildReceiverReport is buildSenderReport for the ReceiverReport.
func buildReceiverReport(now time.Time, p *Peer, b []byte) (n int, err error) {
	if p.v1 {
		if r, ok := p.mmp.BuildReceiverReportV1(now); ok {
			return r.MarshalTo(b)
		}
		return 0, nil
	}
	if r, ok := p.mmp.BuildReceiverReport(now); ok {
		return r.MarshalTo(b)
	}
	return 0, nil
}

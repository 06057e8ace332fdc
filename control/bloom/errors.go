package bloom

import (
	"errors"
	"fmt"

	"github.com/fips-go/fips/control/identity"
)

// Reason is why an inbound FilterAnnounce was rejected (upstream's
// BloomReject). Each reason has its own counter in Stats.
type Reason uint8

// Rejection reasons, in the order upstream checks them.
const (
	ReasonDecode       Reason = iota + 1 // malformed, including a size class other than v1's
	ReasonInvalid                        // filter length disagrees with size_class (unreachable after decode)
	ReasonNonV1                          // size class (unreachable after decode) or hash count is not v1's
	ReasonUnknownPeer                    // sender is not a peer we know of
	ReasonStale                          // sequence not above the last accepted one
	ReasonFillExceeded                   // FPR above max_inbound_fpr (anti-poison)
)

// Sentinel errors, one per Reason; errors.Is(err, ErrStale) and so on.
var (
	ErrDecode       = errors.New("malformed FilterAnnounce")
	ErrInvalid      = errors.New("FilterAnnounce filter/size_class mismatch")
	ErrNonV1        = errors.New("non-v1 FilterAnnounce")
	ErrUnknownPeer  = errors.New("FilterAnnounce from unknown peer")
	ErrStale        = errors.New("stale FilterAnnounce")
	ErrFillExceeded = errors.New("FilterAnnounce above FPR cap")
)

// Err is the sentinel error of r.
func (r Reason) Err() error {
	switch r {
	case ReasonDecode:
		return ErrDecode
	case ReasonInvalid:
		return ErrInvalid
	case ReasonNonV1:
		return ErrNonV1
	case ReasonUnknownPeer:
		return ErrUnknownPeer
	case ReasonStale:
		return ErrStale
	case ReasonFillExceeded:
		return ErrFillExceeded
	}
	return nil
}

// String is upstream's counter name for r.
func (r Reason) String() string {
	switch r {
	case ReasonDecode:
		return "decode_error"
	case ReasonInvalid:
		return "invalid"
	case ReasonNonV1:
		return "non_v1"
	case ReasonUnknownPeer:
		return "unknown_peer"
	case ReasonStale:
		return "stale"
	case ReasonFillExceeded:
		return "fill_exceeded"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// RejectError is what HandleFilterAnnounce returns for a rejected
// announce. errors.Is matches the reason's sentinel and, for decode
// failures, the wire error class (wire.ErrTruncated and so on).
type RejectError struct {
	Reason   Reason
	Peer     identity.NodeAddr
	Sequence uint64  // announced sequence (0 when undecodable)
	Current  uint64  // last accepted sequence from Peer (stale)
	FPR      float64 // announced filter's FPR (fill exceeded)
	Cause    error   // decode error, if any
}

func (e *RejectError) Error() string {
	s := "bloom: " + e.Reason.Err().Error() + " from " + e.Peer.Short()
	switch e.Reason {
	case ReasonStale:
		s += fmt.Sprintf(": seq %d <= %d", e.Sequence, e.Current)
	case ReasonFillExceeded:
		s += fmt.Sprintf(": seq %d fpr %.4f", e.Sequence, e.FPR)
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the reason's sentinel and the cause.
func (e *RejectError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Reason.Err(), e.Cause}
	}
	return []error{e.Reason.Err()}
}

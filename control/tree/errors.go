package tree

import (
	"errors"

	"github.com/fips-go/fips/control/identity"
)

// Reason is why HandleAnnounce dropped an announce. Each is also the name
// of its Stats counter, and an error for errors.Is.
type Reason uint8

// Rejection reasons, in pipeline order.
const (
	ReasonDecodeError     Reason = iota + 1 // malformed message
	ReasonUnknownPeer                       // sender is not an active peer
	ReasonAddrMismatch                      // ancestry entry 0 is not the sender
	ReasonSigFailed                         // declaration signature does not verify
	ReasonAncestryInvalid                   // semantic ancestry rules broken
	ReasonStale                             // sequence not above the stored one
	ReasonDeferred                          // over the sender's check budget: kept for the tick
	// ReasonAncestryContradicted (ours): the ancestry names a node we
	// hold a signed declaration from (an active peer, or us) at that very
	// declaration, followed by a node other than the parent it signed.
	ReasonAncestryContradicted
)

func (r Reason) String() string {
	switch r {
	case ReasonDecodeError:
		return "decode_error"
	case ReasonUnknownPeer:
		return "unknown_peer"
	case ReasonAddrMismatch:
		return "addr_mismatch"
	case ReasonSigFailed:
		return "sig_failed"
	case ReasonAncestryInvalid:
		return "ancestry_invalid"
	case ReasonStale:
		return "stale"
	case ReasonDeferred:
		return "verify_deferred"
	case ReasonAncestryContradicted:
		return "ancestry_contradicted"
	}
	return "unknown"
}

func (r Reason) Error() string { return "TreeAnnounce rejected: " + r.String() }

// RejectError is HandleAnnounce's error: errors.Is matches its Reason and,
// when present, the underlying decode, signature or validation error.
type RejectError struct {
	Reason Reason
	Peer   identity.NodeAddr // the sender
	Err    error             // cause, or nil
}

func (e *RejectError) Error() string {
	s := "TreeAnnounce from " + e.Peer.Short() + " rejected: " + e.Reason.String()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap exposes the Reason and the cause.
func (e *RejectError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// ErrPeerNotFound is returned when sending to a peer that is not up.
var ErrPeerNotFound = errors.New("tree: peer not found")

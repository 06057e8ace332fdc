package bloom

import "github.com/fips-go/fips/control/identity"

// Stats is upstream's "bloom" counter family (show_metrics, show_bloom),
// with its names.
type Stats struct {
	Received           uint64 `json:"received"`            // every HandleFilterAnnounce call
	DecodeError        uint64 `json:"decode_error"`        // ReasonDecode
	Invalid            uint64 `json:"invalid"`             // ReasonInvalid
	NonV1              uint64 `json:"non_v1"`              // ReasonNonV1 (fips-go: also a hash count other than 5)
	UnknownPeer        uint64 `json:"unknown_peer"`        // ReasonUnknownPeer
	Stale              uint64 `json:"stale"`               // ReasonStale
	FillExceeded       uint64 `json:"fill_exceeded"`       // ReasonFillExceeded
	Accepted           uint64 `json:"accepted"`            // stored filters
	Sent               uint64 `json:"sent"`                // announces Env accepted
	DebounceSuppressed uint64 `json:"debounce_suppressed"` // see Tick
	SendFailed         uint64 `json:"send_failed"`         // announces Env refused
}

func (s *Stats) reject(r Reason) {
	switch r {
	case ReasonDecode:
		s.DecodeError++
	case ReasonInvalid:
		s.Invalid++
	case ReasonNonV1:
		s.NonV1++
	case ReasonUnknownPeer:
		s.UnknownPeer++
	case ReasonStale:
		s.Stale++
	case ReasonFillExceeded:
		s.FillExceeded++
	}
}

// Snapshot is what show_bloom reports. The control layer renders it:
// upstream flattens PeerFilterRow.Filter into the row (estimated_count,
// set_bits and fill_ratio appear only when a filter is held, and
// estimated_count is null when the estimate is refused), fills
// DisplayName, and prints optional floats as null.
type Snapshot struct {
	OwnNodeAddr        identity.NodeAddr   `json:"own_node_addr"`
	IsLeafOnly         bool                `json:"is_leaf_only"` // false here; show_bloom reports node.leaf_only
	Sequence           uint64              `json:"sequence"`     // last FilterAnnounce sequence sent
	LeafDependentCount int                 `json:"leaf_dependent_count"`
	LeafDependents     []identity.NodeAddr `json:"leaf_dependents"` // never nil; next's non-Full peers (empty on master links)
	PeerFilters        []PeerFilterRow     `json:"peer_filters"`    // every peer, by address
	// The last filter sent to our tree parent (our subtree); nil when we are
	// root or nothing has been sent to the parent yet. The estimate is also
	// nil when refused (saturated or over the cap).
	UptreeFillRatio      *float64 `json:"uptree_fill_ratio"`
	UptreeEstimatedCount *float64 `json:"uptree_estimated_count"`
	Stats                Stats    `json:"stats"`
}

// PeerFilterRow is one peer in Snapshot.PeerFilters.
type PeerFilterRow struct {
	Peer           identity.NodeAddr `json:"peer"`
	DisplayName    string            `json:"display_name"` // left empty; the node fills it
	HasFilter      bool              `json:"has_filter"`   // FilterSequence > 0
	FilterSequence uint64            `json:"filter_sequence"`
	Filter         *PeerFilterInfo   `json:"filter,omitempty"` // nil without an inbound filter
}

// PeerFilterInfo describes a held inbound filter.
type PeerFilterInfo struct {
	EstimatedCount *float64 `json:"estimated_count"` // nil when refused
	SetBits        int      `json:"set_bits"`
	FillRatio      float64  `json:"fill_ratio"`
}

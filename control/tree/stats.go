package tree

import (
	"math"

	"github.com/fips-go/fips/control/identity"
)

// Stats are upstream's "tree" counter family. Fields are in alphabetical
// order, as upstream renders them, so encoding/json reproduces its objects.
type Stats struct {
	Accepted        uint64 `json:"accepted"`         // announces that passed every check and were fresher
	AddrMismatch    uint64 `json:"addr_mismatch"`    // declaring node was not the sending peer
	AncestryChanged uint64 `json:"ancestry_changed"` // same parent, new address path: re-announced
	// AncestryContradicted (ours): announces refused because their
	// ancestry contradicts a declaration signed by the node it names (an
	// active peer, or us); the sender stops being a parent or next-hop
	// candidate until an announce of it is accepted.
	AncestryContradicted uint64 `json:"ancestry_contradicted"`
	AncestryInvalid      uint64 `json:"ancestry_invalid"`     // signed, but the ancestry broke the semantic rules
	DecodeError          uint64 `json:"decode_error"`         // malformed announce
	FlapDampened         uint64 `json:"flap_dampened"`        // dampening episodes engaged
	LoopDetected         uint64 `json:"loop_detected"`        // our parent's path came to contain us
	OutboundSignFailed   uint64 `json:"outbound_sign_failed"` // signing our own declaration failed
	ParentLosses         uint64 `json:"parent_losses"`        // our parent was removed
	ParentSwitches       uint64 `json:"parent_switches"`      // switches and self-root promotions
	RateLimited          uint64 `json:"rate_limited"`         // sends deferred to the tick by the per-peer interval
	Received             uint64 `json:"received"`             // announces handed to HandleAnnounce
	SendFailed           uint64 `json:"send_failed"`          // Env.SendTreeAnnounce errors
	Sent                 uint64 `json:"sent"`                 // announces handed to Env.SendTreeAnnounce
	SigFailed            uint64 `json:"sig_failed"`           // declaration signature did not verify
	Stale                uint64 `json:"stale"`                // sequence not above the stored one
	UnknownPeer          uint64 `json:"unknown_peer"`         // sender is not an active peer
	// VerifyDeferred (ours): announces left unchecked because their
	// sender had spent its budget of signature checks; the newest is
	// handled at the next tick with budget.
	VerifyDeferred uint64 `json:"verify_deferred"`
}

// Snapshot is the tree part of upstream's show_tree. The node adds what it
// owns: root_npub, parent_display_name and each peer's display_name. Keys
// upstream renders in alphabetical order.
type Snapshot struct {
	MyNodeAddr identity.NodeAddr `json:"my_node_addr"`
	Root       identity.NodeAddr `json:"root"`
	IsRoot     bool              `json:"is_root"`
	Depth      int               `json:"depth"`
	// MyCoords is self to root.
	MyCoords []identity.NodeAddr `json:"my_coords"`
	// Parent is the second coordinate, or ourselves at the root (upstream
	// reads it from the coordinates, not the declaration).
	Parent              identity.NodeAddr `json:"parent"`
	DeclarationSequence uint64            `json:"declaration_sequence"`
	DeclarationSigned   bool              `json:"declaration_signed"`
	// PeerTreeCount is the number of peers with an accepted declaration.
	PeerTreeCount int            `json:"peer_tree_count"`
	Peers         []PeerSnapshot `json:"peers"` // by node address
	Stats         Stats          `json:"stats"`
}

// PeerSnapshot is one peer's accepted tree position.
type PeerSnapshot struct {
	NodeAddr identity.NodeAddr   `json:"node_addr"`
	Depth    int                 `json:"depth"`
	Root     identity.NodeAddr   `json:"root"`
	Coords   []identity.NodeAddr `json:"coords"`
	// DistanceToUs is math.MaxUint64 (upstream's usize::MAX) when the
	// peer's root is not ours.
	DistanceToUs uint64 `json:"distance_to_us"`
}

// PeerView is what show_peers reports about one active peer's tree role.
type PeerView struct {
	// HasTreePosition and Depth come from the peer's last announce that
	// passed validation, fresh or not (upstream's ActivePeer copy).
	HasTreePosition bool
	Depth           int
	IsParent        bool // we declare it as our parent
	IsChild         bool // its accepted declaration names us as parent
}

// Snapshot captures the state for show_tree.
func (t *Tree) Snapshot() Snapshot {
	s := Snapshot{
		MyNodeAddr:          t.self,
		Root:                t.root,
		IsRoot:              t.IsRoot(),
		Depth:               t.coords.depth(),
		MyCoords:            t.Coords(),
		Parent:              t.self,
		DeclarationSequence: t.decl.seq,
		DeclarationSigned:   t.signed,
		Peers:               []PeerSnapshot{},
		Stats:               t.stats,
	}
	if len(t.coords.addrs) > 1 {
		s.Parent = t.coords.addrs[1]
	}
	for _, a := range t.order {
		ps := t.peers[a]
		if !ps.accepted {
			continue
		}
		d := uint64(math.MaxUint64)
		if n := Distance(t.coords.addrs, ps.pos.addrs); n != math.MaxInt {
			d = uint64(n)
		}
		s.Peers = append(s.Peers, PeerSnapshot{
			NodeAddr:     a,
			Depth:        ps.pos.depth(),
			Root:         ps.pos.root(),
			Coords:       append([]identity.NodeAddr(nil), ps.pos.addrs...),
			DistanceToUs: d,
		})
	}
	s.PeerTreeCount = len(s.Peers)
	return s
}

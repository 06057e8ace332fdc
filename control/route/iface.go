package route

import "github.com/fips-go/fips/control/identity"

// Topology is the spanning-tree state routing reads. The router reads
// the slices it returns during one call and neither keeps nor modifies
// them, so an implementation may hand out its own (per-packet next-hop
// choice must not copy them).
type Topology interface {
	// Coords is our path to the root, self first, root last; never empty.
	Coords() []identity.NodeAddr
	// PeerCoords is the path a peer last announced (self first), when the
	// tree holds one for it.
	PeerCoords(p identity.NodeAddr) ([]identity.NodeAddr, bool)
	// IsTreePeer reports whether p is our parent or names us as its
	// parent.
	IsTreePeer(p identity.NodeAddr) bool
}

// Filters answers bloom-filter membership.
type Filters interface {
	// MayReach reports whether peer's inbound filter contains dest; false
	// when the peer has sent none.
	MayReach(peer, dest identity.NodeAddr) bool
	// OverCap reports whether peer's latest filter was refused over the
	// FPR cap (it reaches more nodes than a filter holds) and none has
	// been accepted from it since.
	OverCap(peer identity.NodeAddr) bool
}

// Links is what routing needs from the active peers and their links.
type Links interface {
	// Peers lists the active peers in ascending address order. The router
	// reads it during one call only and does not modify it.
	Peers() []identity.NodeAddr
	// CanSend reports whether p is an active peer whose link can carry a
	// message now (upstream: Connected or Stale). False for non-peers.
	CanSend(p identity.NodeAddr) bool
	// LinkCost is upstream's link_cost: etx × (1 + srtt_ms/100), 1.0
	// without measurements.
	LinkCost(p identity.NodeAddr) float64
	// LinkMTU is the transport MTU of the link to p, or 0 when unknown
	// (then no path MTU is folded).
	LinkMTU(p identity.NodeAddr) int
	// Congested is the local ECN signal for the link to p (upstream
	// detect_congestion: loss or ETX over threshold, or kernel drops);
	// false when ECN is disabled.
	Congested(p identity.NodeAddr) bool
	// Send encrypts msg (a link message starting with its type byte) to p
	// with the FMP CE flag set to ce. It must not retain msg. A message
	// too large for the link must be refused with an error that unwraps
	// to *transport.MTUError, checked before sending on every transport
	// (upstream's UDP fast path skips that check; the port must not).
	Send(p identity.NodeAddr, ce bool, msg []byte) error
}

// Identities is the node's identity cache (NodeAddr ↔ public key), read
// to verify lookup proofs. Upstream matches on the 15-byte FIPS address
// prefix; an implementation may do the same.
type Identities interface {
	Lookup(addr identity.NodeAddr) (identity.PublicKey, bool)
}

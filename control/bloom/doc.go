// Package bloom owns a node's bloom-filter routing state: the inbound
// filter and sequence each peer last announced, the outgoing filter each
// peer should hold for us (own address plus the inbound filters of the
// other tree peers: split horizon, tree-only merge), the per-peer send
// debounce, the node-global FilterAnnounce sequence counter, the anti-poison
// FPR cap on inbound filters, the mesh-size estimate and the bloom counter
// family.
//
// A State is a state machine owned by one goroutine (the node's event
// loop). Every method takes the current time; it never reads a clock,
// sleeps or starts goroutines, so the in-process harness can drive it on a
// simulated clock. Announces leave only from Tick, through the Env it is
// given, and only when a peer is pending and its debounce has passed.
//
// The node drives it as upstream does:
//   - link handshake complete, or cross-connection resolved: PeerUp
//   - peer removed (a restarted peer too, before its PeerUp): PeerDown
//   - parent switch (inbound, periodic or first-RTT) or self-root: MarkAll
//   - same parent, ancestry path changed: MarkChanged(parent)
//   - FilterAnnounce link message: HandleFilterAnnounce
//   - the 1 s tick, after the tree's pending announces: Tick, then
//     MeshSizeEstimate
//
// Gaining or losing a child is not a trigger (upstream neither): the
// child's own switch makes it announce to us, and accepting that
// announce recomputes with the current tree roles.
//
// It must not touch the wire format (control/wire owns the FilterAnnounce
// codec and the exact hash and bit layout, which Filter reuses), the
// spanning tree (it only asks Env.IsTreePeer, at computation time), peer
// lifecycles or sockets (the node reports PeerUp and PeerDown), or routing
// decisions beyond answering MayReach.
package bloom

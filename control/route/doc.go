// Package route is a FIPS node's routing state machine: the choice of next
// hop for a destination (upstream's find_next_hop priority chain: local,
// direct peer, bloom candidates ranked by (link cost, tree distance,
// address) among peers strictly closer than us, greedy tree fallback), the
// coordinate cache (bounded LRU, TTL refreshed by routing, surgical
// invalidation), transit forwarding of SessionDatagrams (TTL, path MTU
// folding, ECN CE relay, cache warming from plaintext FSP headers), the
// routing error signals a transit node sends back to a source
// (CoordsRequired, PathBroken, MtuExceeded, rate limited per destination),
// and mesh lookups (LookupRequest/LookupResponse: bloom-guided request
// forwarding with dedup and a per-target forward limit, reverse-path
// responses with path MTU folding, proof signing at the target and proof
// verification at the origin, retries and timeouts). It keeps upstream's
// forwarding and lookup counter families.
//
// A Router is a pure state machine owned by one goroutine (the node's event
// loop). Every method takes the current time; it never reads a clock,
// sleeps or starts goroutines, and iterates maps only after sorting, so a
// simulated-clock harness replays it exactly. Tick drives retries and
// expiry. Every table is bounded, and a refusal is counted in
// Stats.Limits.
//
// What it needs from the rest of the node comes through small interfaces:
// Topology (our and our peers' tree coordinates, tree-peer test), Filters
// (bloom MayReach), Links (active peers, link cost/MTU/congestion, Send)
// and Identities (public keys for proof verification). It must not touch
// the spanning tree or bloom state (control/tree and control/bloom own
// them), sessions and their admission of routing signals, the TUN queue,
// the path-MTU clamp map, sockets or link encryption: where upstream's
// handlers reach into those, the Router reports an outcome (Delivery,
// LookupEvent, typed errors) and the node does the rest.
package route

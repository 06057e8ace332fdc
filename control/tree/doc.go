// Package tree is the FIPS spanning tree: a node's parent declaration and
// coordinates, its peers' last accepted declarations and ancestries, parent
// selection (smallest root, then lowest depth plus link cost, with
// hysteresis, hold-down and flap dampening), the TreeAnnounce receive
// pipeline, the per-peer announce rate limit, periodic re-evaluation and
// re-broadcast, and greedy tree routing over coordinates.
//
// A Tree is a pure state machine owned by one goroutine (the node's event
// loop). Every method that can change state takes the current time: the
// declaration timestamps are now.Unix(), and the rate limit, hold-down, flap
// dampening and re-evaluation timers are measured on the same clock, so an
// in-process harness can drive many Trees on a simulated clock. It starts no
// goroutines, never sleeps and never reads the wall clock.
//
// Announces leave through Env.SendTreeAnnounce; what other subsystems must
// do when the tree changes (coordinate-cache invalidation, lookup backoff
// reset, bloom update marking) is reported through Notifier as a Change
// that names each effect, so the node can do exactly what upstream does.
//
// It owns no sockets, no link sessions, no bloom filters and no coordinate
// cache, and must not touch them: link costs and peer keys come from Env,
// and peers exist only between PeerUp and PeerDown.
package tree

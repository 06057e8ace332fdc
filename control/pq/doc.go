// Package pq is what the post-quantum (ML-KEM-768) upgrades of sessions
// and of links share (ours, not upstream's; issue 32): the policy, the key
// schedule and the reassembly of an offer or accept from its fragments.
// Each layer keeps its own messages, state machine and domain label.
package pq

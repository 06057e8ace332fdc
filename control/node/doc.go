// Package node is a running FIPS node: one goroutine (the event loop) owns
// all mesh state — today the link layer (control/peer) — and is fed by the
// transports' receive queue, a periodic tick and control requests. Readers
// (the control socket, metrics) see a snapshot the loop publishes; they
// never touch loop state.
package node

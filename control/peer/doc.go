// Package peer owns FMP link lifecycles: dialing static peers and
// reconnecting them, the Noise IK handshake with resends and timeouts, msg1
// admission (token buckets, accept_connections, ACL, peer limits),
// cross-connection and restart resolution, established-frame sealing and
// opening with replay protection, heartbeats and dead-link detection,
// Disconnect, roaming, and hitless rekey with the K bit.
//
// A Manager is a state machine owned by one goroutine (the node's event
// loop). Every method takes the current time, and it never sleeps or starts
// goroutines, so the in-process mesh harness can drive thousands of them
// on a simulated clock. Packets leave through the Env it is given; link
// messages other than Heartbeat and Disconnect go up through Upper.
//
// It must not know about routing, sessions or sockets.
package peer

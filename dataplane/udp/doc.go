// Package udp is the UDP transport and the packet I/O under it. One
// socket (or, with Options.Workers on Linux, one SO_REUSEPORT socket per
// dataplane worker) serves every peer, and each datagram carries exactly
// one FMP packet with nothing around it.
//
// The transport (Transport: options, validation, resolving, adopting a
// punched socket, the reader goroutines and the counters) reads in
// batches into buffers of MTU+100 bytes (the headroom upstream allows, so
// a peer with a slightly larger MTU still gets through) and hands each
// datagram to its dataplane worker, or a pooled copy to the node.
// Datagrams longer than MTU+100 and NAT hole-punch probes that reach the
// socket after it was handed to FIPS are dropped there and counted as
// DroppedInvalid.
//
// Its I/O (Conn, SendQueue) is batched on Linux: recvmmsg with UDP_GRO
// (one read returns many datagrams, a coalesced run split by its segment
// size) and sendmmsg with UDP_SEGMENT (consecutive datagrams to one
// address and of one size leave in one GSO message). Elsewhere the same
// API runs over fallback/udp's plain socket, one datagram per call. A
// Conn and its queues belong to one goroutine each (a reader, a sender);
// nothing there locks or allocates per packet.
//
// The I/O knows nothing of FIPS but the address form control/transport
// sets: a link-local address carries its interface index as its zone.
package udp

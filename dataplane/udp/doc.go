// Package udp is batched UDP I/O for the packet path: on Linux, recvmmsg
// with UDP_GRO (one read returns many datagrams, a coalesced run split by
// its segment size) and sendmmsg with UDP_SEGMENT (consecutive datagrams
// to one address and of one size leave in one GSO message); elsewhere the
// same API over one datagram per call. A Conn and its queues belong to one
// goroutine each (a reader, a sender); nothing here locks or allocates
// per packet.
//
// It knows nothing of FIPS but the address form control/transport sets (a
// link-local address carries its interface index as its zone): the
// transport in fallback/udp owns the socket, its options and its
// counters, and uses this for the data.
package udp

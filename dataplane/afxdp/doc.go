// Package afxdp receives the frames the XDP program redirects: AF_XDP
// sockets (one per interface RX queue) with their UMEM and fill,
// completion and RX rings, mapped from the kernel and driven without
// cgo, and the parser that finds the UDP datagram in a received Ethernet
// frame. It owns no FIPS state: what a frame carries is handed to a
// dataplane worker by the caller (dataplane/xdp), and what is sent goes
// through the UDP transports' own worker send queues.
//
// Linux only; elsewhere Open returns ErrNotSupported.
package afxdp

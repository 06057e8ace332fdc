// Package dataplane is the packet engine: run-to-completion workers (the
// transports' reader goroutines) that open, forward and seal established
// FMP and FSP traffic with the keys and forwarding entries the control
// plane publishes, and the Linux acceleration behind them (UDP GSO/GRO
// batching, TUN offload, XDP).
//
// The control plane programs it only by publishing immutable tables: the
// link layer's (control/peer: Links, FastLink, FastTx), the forwarding
// table (Forwarding) and the IPv6 adapter's sessions (Local, over
// control/session's FastSession). A worker calls the same per-packet
// steps the control loop's slow path calls, and hands the loop what only
// it may decide through the Loop interface, one typed upcall per kind
// (upcall.go). See docs/dataplane.md.
//
// This package owns every reader goroutine and per-packet step: the
// workers (engine.go), local delivery and TUN egress (local.go), the TUN
// device and its reader (tunpath.go). The I/O is in its subpackages:
// dataplane/udp (the UDP transport and its recvmmsg/sendmmsg with GRO
// and GSO), dataplane/tun (the Linux TUN device with virtio-net offloads,
// and the batched Reader and Batch every TUN device is read and written
// with), dataplane/xdp (the XDP and tc programs, the AF_XDP sockets'
// readers and the XSK sender) over dataplane/afxdp and bpf. control/
// does no packet I/O of its own.
package dataplane

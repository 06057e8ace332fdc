// Package dataplane is the packet engine: run-to-completion workers (the
// transports' reader goroutines) that open, forward and seal established
// FMP and FSP traffic with the keys and forwarding entries the control
// plane publishes, and the Linux acceleration behind them (UDP GSO/GRO
// batching, TUN offload, XDP).
//
// The control plane programs it only by publishing immutable tables: the
// link layer's (control/peer: Links, FastLink, FastTx), the forwarding
// table (Forwarding, built by control/node) and the session layer's
// (control/session: Sessions). A worker calls the same per-packet steps
// the control loop's slow path calls, and hands the loop what only it may
// decide as upcalls on its bounded receive queue. See docs/dataplane.md.
//
// The packet I/O is in its subpackages: dataplane/udp (the UDP transport
// and its recvmmsg/sendmmsg with GRO and GSO) and dataplane/tun (the
// Linux TUN device with virtio-net offloads, and the batched Reader and
// Batch every TUN device is read and written with). control/ does none
// of its own.
package dataplane

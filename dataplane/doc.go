// Package dataplane is the packet engine: per-core workers that open,
// forward and seal established FMP and FSP traffic using the keys and
// forwarding entries the control plane installs, and the Linux acceleration
// behind them (AF_XDP rings, UDP GSO/GRO batching, TUN offload).
//
// The packet I/O is in its subpackages: dataplane/udp (recvmmsg/sendmmsg
// with GRO and GSO) and dataplane/tun (the Linux TUN device with
// virtio-net offloads, and the batched Reader and Batch every TUN device
// is read and written with). control/ does none of its own.
//
// It imports control/wire for packet layouts and nothing else from control;
// the control plane drives it only through the interface control/node
// defines.
package dataplane

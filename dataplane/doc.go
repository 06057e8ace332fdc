// Package dataplane is the packet engine: per-core workers that open,
// forward and seal established FMP and FSP traffic using the keys and
// forwarding entries the control plane installs, and the Linux acceleration
// behind them (AF_XDP rings, UDP GSO/GRO batching, TUN offload).
//
// It imports control/wire for packet layouts and nothing else from control;
// the control plane drives it only through the interface control/node
// defines.
package dataplane

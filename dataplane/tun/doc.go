// Package tun is the IPv6 adapter's packet I/O: the TUN device on Linux
// (wireguard/tun with the virtio-net header, so reads arrive as offloaded
// super-packets split into segments and batched writes are coalesced
// back into GRO super-packets), opened with its /128 address, the
// fd00::/8 route and the policy rule; and, for any wireguard/tun device
// (the Linux one, fallback/tun's utun and wintun), the batched reader
// loop (Reader) and the batched writer (Batch).
//
// It knows nothing of FIPS packets: control/node decides what to do with
// each packet read (the dataplane fast path or the event loop) and what
// to write. Nothing here allocates per packet.
package tun

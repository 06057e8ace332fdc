package dataplane

import "time"

// Options are dataplane.* from fips.yaml plus the handshake limit
// the XDP program enforces per source.
type Options struct {
	// Mode is auto, xdp or userspace; "" is userspace (a Node built
	// without the daemon's config loads no BPF).
	Mode string
	// Interfaces to attach to; empty: those carrying the UDP transports'
	// bound addresses (every up non-loopback interface with an address
	// for an unspecified one).
	Interfaces []string
	// HandshakeBurst and HandshakeRate are node.rate_limit.handshake_*:
	// the per-source token bucket for msg1/msg2 in XDP.
	HandshakeBurst uint32
	HandshakeRate  float64
	// NoEngine keeps established traffic on the event loop
	// (dataplane.engine: false): no dataplane workers.
	NoEngine bool
	// NoECN leaves the tc programs out (dataplane.ecn: false); otherwise
	// they are attached wherever the XDP program is.
	NoECN bool
	// AFXDP redirects established frames of known links into AF_XDP
	// sockets read by dataplane workers (dataplane.afxdp), in xdp mode.
	AFXDP bool
	// XDPAttach is dataplane.xdp_attach: "" or "auto" (native, else
	// generic), "native" or "generic".
	XDPAttach string
	// XSKTransmit sends what the AF_XDP workers forward or seal through
	// the sockets' TX rings (dataplane.afxdp_transmit: xsk) instead of
	// the UDP sockets.
	XSKTransmit bool
	// AFXDPBusyPoll is how long an AF_XDP reader keeps polling its empty
	// RX ring before it parks (dataplane.afxdp_busy_poll_us); 0 parks at
	// once.
	AFXDPBusyPoll time.Duration
	// AcceptNext makes the XDP program take upstream next's FMP version 1
	// beside version 0 (node.wire_format v1 or auto); otherwise it drops
	// version-1 packets as bad_version.
	AcceptNext bool
}

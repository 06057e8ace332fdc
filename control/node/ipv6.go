package node

import (
	"net/netip"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/ipv6"
	"github.com/fips-go/fips/control/wire"
)

// The IPv6 adapter's packet path: IPv6 packets from the TUN device go to
// their fd00::/8 destination over an end-to-end session (port 256, the
// shim format); datagrams arriving on port 256 become IPv6 packets again.
// The device itself belongs to the Node (tun.go, over dataplane/tun and
// fallback/tun); this is the part the in-process harness can drive.

// IPv6Writer receives packets for the TUN device (inbound datagrams,
// ICMPv6 errors, hairpinned packets); pkt is valid only during the call.
type IPv6Writer func(pkt []byte)

// ipv6State is the adapter's per-Core state.
type ipv6State struct {
	write   IPv6Writer
	ptb     *ipv6.RateLimiter
	unreach *ipv6.RateLimiter
	buf     [65535 + 40]byte // shim or rebuilt packet
	icmp    [1280]byte
	stats   ctl.IPv6Stats
}

// EnableIPv6 turns the port-256 service on; packets for the device go to w.
func (c *Core) EnableIPv6(w IPv6Writer) error {
	c.v6 = &ipv6State{write: w, ptb: ipv6.NewRateLimiter(0, 0), unreach: ipv6.NewRateLimiter(0, 0)}
	return c.Listen(wire.FSPPortIPv6Shim, c.ipv6Inbound)
}

// IPv6Stats returns the adapter's counters.
func (c *Core) IPv6Stats() ctl.IPv6Stats {
	if c.v6 == nil {
		return ctl.IPv6Stats{}
	}
	return c.v6.stats
}

// SendIPv6 takes one packet read from the TUN device; pkt is not retained
// after the call (the caller reuses its buffer).
func (c *Core) SendIPv6(now time.Time, pkt []byte) {
	c.now = now
	v := c.v6
	if v == nil || !wire.IsIPv6(pkt) {
		if v != nil {
			v.stats.Dropped++
		}
		return
	}
	dst := wire.IPv6Dst(pkt)
	self := c.id.IPv6()
	switch {
	case dst == self:
		// Our own address: straight back up, as the kernel would.
		v.stats.Hairpin++
		v.write(pkt)
		return
	case !isFIPS(dst):
		v.stats.NotFIPS++
		c.unreachable(now, pkt)
		return
	}
	dest, ok := c.ids.LookupIPv6(dst)
	if !ok {
		// Only names (DNS) and peers teach us who is behind an address.
		v.stats.UnknownDest++
		c.unreachable(now, pkt)
		return
	}
	mtu := c.ipv6MTU(dest)
	if len(pkt) > mtu {
		v.stats.TooBig++
		if v.ptb.Allow(wire.IPv6Src(pkt), now) {
			// From the destination's address: Linux ignores a Packet Too
			// Big that claims to come from one of its own addresses.
			if out, err := ipv6.BuildPacketTooBig(v.icmp[:0], uint32(mtu), dst, pkt); err == nil {
				v.write(out)
			}
		}
		return
	}
	if ipv6.ClampMSS(pkt, ipv6.MaxMSS(c.opts.TransportMTU())) {
		v.stats.MSSClamped++
	}
	n, err := wire.CompressIPv6(v.buf[:], pkt)
	if err != nil {
		v.stats.Dropped++
		return
	}
	if err := c.sess.Send(now, dest, wire.FSPPortIPv6Shim, wire.FSPPortIPv6Shim, v.buf[:n]); err != nil {
		v.stats.Dropped++
		return
	}
	v.stats.Sent++
}

func isFIPS(a netip.Addr) bool {
	_, ok := identity.IPv6Prefix(a)
	return ok
}

func (c *Core) unreachable(now time.Time, pkt []byte) {
	v := c.v6
	if !ipv6.ShouldSendICMPError(pkt) || !v.unreach.Allow(wire.IPv6Src(pkt), now) {
		return
	}
	if out, err := ipv6.BuildDestUnreachable(v.icmp[:0], ipv6.CodeNoRoute, c.id.IPv6(), pkt); err == nil {
		v.write(out)
	}
}

// queuedUnreachable answers one IPv6 packet that waited for a lookup of
// dest which failed. It rebuilds the packet from its shim and is not
// rate limited: the pending queue already bounds how many there are.
func (c *Core) queuedUnreachable(dest identity.NodeAddr, shim []byte) {
	v := c.v6
	if v == nil {
		return
	}
	n, err := wire.DecompressIPv6(v.buf[:], shim, c.id.IPv6().As16(), dest.IPv6().As16())
	if err != nil || !ipv6.ShouldSendICMPError(v.buf[:n]) {
		return
	}
	if out, err := ipv6.BuildDestUnreachable(v.icmp[:0], ipv6.CodeNoRoute, c.id.IPv6(), v.buf[:n]); err == nil {
		v.stats.LookupUnreachable++
		v.write(out)
	}
}

// ipv6Inbound rebuilds the IPv6 packet a peer's session carried to us.
func (c *Core) ipv6Inbound(now time.Time, src identity.NodeAddr, _ uint16, shim []byte, ce bool) {
	v := c.v6
	n, err := wire.DecompressIPv6(v.buf[:], shim, src.IPv6().As16(), c.id.IPv6().As16())
	if err != nil {
		v.stats.Dropped++
		return
	}
	pkt := v.buf[:n]
	if ce && wire.MarkIPv6ECNCE(pkt) {
		v.stats.CEMarked++
	}
	if ipv6.ClampMSS(pkt, ipv6.MaxMSS(c.opts.TransportMTU())) {
		v.stats.MSSClamped++
	}
	v.stats.Received++
	v.write(pkt)
}

// ipv6MTU is the largest IPv6 packet dest can take: the node's effective
// MTU, lowered by what the path reported (PathMtuNotification through
// session MMP, or an MtuExceeded clamp).
func (c *Core) ipv6MTU(dest identity.NodeAddr) int {
	mtu := ipv6.EffectiveMTU(c.opts.TransportMTU())
	lower := func(transportMTU int) {
		if transportMTU >= 256 && transportMTU < 65535 {
			mtu = min(mtu, ipv6.EffectiveMTU(transportMTU))
		}
	}
	if pm, ok := c.sess.PathMTU(dest); ok {
		lower(int(pm))
	}
	if sm := c.smmp[dest]; sm != nil {
		lower(int(sm.link.PathMTU().Current()))
	}
	return mtu
}

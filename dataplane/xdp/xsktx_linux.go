package xdp

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/transport"
)

// resolveL2 asks the kernel how it would send to dst: the route (RTM_GETROUTE)
// gives the interface, the gateway and the preferred source; the neighbour
// table the gateway's (or dst's) MAC. Only a unicast route through an
// Ethernet interface to a neighbour in a usable state qualifies: anything
// else is left to the kernel's own send path, which resolves it. A
// link-local dst names its interface in its zone (transport.WithZoneIndex):
// the route is asked for out of that interface.
func resolveL2(dst netip.Addr) (l2Route, error) {
	var opts netlink.RouteGetOptions
	if idx := transport.ZoneIndex(dst); idx != 0 {
		opts.OifIndex = int(idx)
	}
	dst = dst.WithZone("")
	routes, err := netlink.RouteGetWithOptions(net.IP(dst.AsSlice()), &opts)
	if err != nil {
		return l2Route{}, fmt.Errorf("route to %v: %w", dst, err)
	}
	if len(routes) == 0 {
		return l2Route{}, fmt.Errorf("route to %v: %w", dst, errNoL2)
	}
	rt := routes[0]
	if rt.Type != 0 && rt.Type != unix.RTN_UNICAST {
		return l2Route{}, fmt.Errorf("route to %v of type %d: %w", dst, rt.Type, errNoL2)
	}
	if opts.OifIndex != 0 && rt.LinkIndex != opts.OifIndex {
		return l2Route{}, fmt.Errorf("route to %v%%%d leaves by interface %d: %w", dst, opts.OifIndex, rt.LinkIndex, errNoL2)
	}
	link, err := netlink.LinkByIndex(rt.LinkIndex)
	if err != nil {
		return l2Route{}, fmt.Errorf("route to %v: link %d: %w", dst, rt.LinkIndex, err)
	}
	a := link.Attrs()
	if len(a.HardwareAddr) != 6 || a.EncapType != "ether" {
		return l2Route{}, fmt.Errorf("route to %v via %s (%s): %w", dst, a.Name, a.EncapType, errNoL2)
	}
	next := dst
	if rt.Gw != nil {
		if g, ok := netip.AddrFromSlice(rt.Gw); ok {
			next = g.Unmap()
		}
	}
	src, _ := netip.AddrFromSlice(rt.Src)
	family := netlink.FAMILY_V4
	if next.Is6() {
		family = netlink.FAMILY_V6
	}
	neighs, err := netlink.NeighList(rt.LinkIndex, family)
	if err != nil {
		return l2Route{}, fmt.Errorf("neighbours on %s: %w", a.Name, err)
	}
	const usable = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE | unix.NUD_PERMANENT
	for _, nb := range neighs {
		ip, ok := netip.AddrFromSlice(nb.IP)
		if !ok || ip.Unmap() != next || nb.State&usable == 0 || len(nb.HardwareAddr) != 6 {
			continue
		}
		return l2Route{ifindex: rt.LinkIndex, src: src.Unmap(), srcMAC: a.HardwareAddr, dstMAC: nb.HardwareAddr, mtu: a.MTU}, nil
	}
	return l2Route{}, fmt.Errorf("neighbour %v on %s: %w", next, a.Name, errNoL2)
}

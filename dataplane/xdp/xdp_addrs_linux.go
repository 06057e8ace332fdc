package xdp

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// subscribeAddrs reports address changes of the host until stop closes
// (the channel closes after stop), and returns list, which reads every
// IPv4 and IPv6 address of the host, and release, which frees list's
// socket once it is no longer called. Both use netlink sockets opened
// here, so they see the network namespace of the calling thread whichever
// goroutine uses them later.
func subscribeAddrs() (<-chan netlink.AddrUpdate, chan struct{}, func() ([]netip.Addr, error), func(), error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE) // the socket opens now, in this thread's namespace
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("netlink: %w", err)
	}
	ch := make(chan netlink.AddrUpdate, 64)
	stop := make(chan struct{})
	if err := netlink.AddrSubscribeWithOptions(ch, stop, netlink.AddrSubscribeOptions{}); err != nil {
		h.Close()
		return nil, nil, nil, nil, fmt.Errorf("subscribe to address changes: %w", err)
	}
	list := func() ([]netip.Addr, error) {
		all, err := h.AddrList(nil, netlink.FAMILY_ALL)
		if err != nil {
			return nil, err
		}
		out := make([]netip.Addr, 0, len(all))
		for _, a := range all {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
		return out, nil
	}
	return ch, stop, list, h.Close, nil
}

//go:build linux

package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/fips-go/fips/control/logging"
)

// openTUN creates the device, gives it the node's address as a /128,
// routes fd00::/8 through it and brings it up.
func (n *Node) openTUN(name string, mtu int) (tun.Device, string, error) {
	if off, err := ipv6Disabled(disableIPv6Path); err == nil && off {
		return nil, "", fmt.Errorf("IPv6 is disabled on this host (%s is 1): the adapter needs it", disableIPv6Path)
	}
	dev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		return nil, "", fmt.Errorf("create TUN %q: %w", name, err)
	}
	real, err := dev.Name()
	if err != nil {
		dev.Close()
		return nil, "", err
	}
	link, err := netlink.LinkByName(real)
	if err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: %w", real, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: n.id.IPv6().AsSlice(), Mask: net.CIDRMask(128, 128)}}
	if err := netlink.AddrAdd(link, addr); err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: address %s: %w", real, n.id.IPv6(), err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: up: %w", real, err)
	}
	_, fd00, _ := net.ParseCIDR("fd00::/8")
	if err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: fd00}); err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: route fd00::/8: %w", real, err)
	}
	// As upstream: fd00::/8 is looked up in the main table at priority
	// 5265, ahead of rules a VPN or policy router may have added.
	rule := netlink.NewRule()
	rule.Family = netlink.FAMILY_V6
	rule.Dst = fd00
	rule.Table = 254 // main
	rule.Priority = 5265
	if err := netlink.RuleAdd(rule); err != nil && !errors.Is(err, syscall.EEXIST) {
		logging.WithTarget(n.log, "fips::upper::tun").Warn("cannot add the fd00::/8 policy rule", "priority", 5265, "error", err)
	} else {
		n.tunCleanup = func() { _ = netlink.RuleDel(rule) }
	}
	n.tunIndex.Store(int64(link.Attrs().Index))
	return dev, real, nil
}

// disableIPv6Path is the sysctl that turns IPv6 off for every interface.
const disableIPv6Path = "/proc/sys/net/ipv6/conf/all/disable_ipv6"

// ipv6Disabled reads a disable_ipv6 sysctl file.
func ipv6Disabled(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

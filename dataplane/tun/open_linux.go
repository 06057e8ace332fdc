//go:build linux

package tun

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	wgtun "golang.zx2c4.com/wireguard/tun"
)

// Open creates the device (wireguard/tun: the virtio-net header with TSO
// and USO offloads where the kernel has them), gives it cfg.Addr as a
// /128, brings it up, routes fd00::/8 through it and, as upstream, adds
// the policy rule that looks fd00::/8 up in the main table at priority
// 5265. A rule that cannot be added is logged and the adapter runs
// without it; Close deletes the rule.
func Open(cfg Config) (*Device, error) {
	if off, err := ipv6Disabled(disableIPv6Path); err == nil && off {
		return nil, fmt.Errorf("IPv6 is disabled on this host (%s is 1): the adapter needs it", disableIPv6Path)
	}
	dev, err := wgtun.CreateTUN(cfg.Name, cfg.MTU)
	if err != nil {
		return nil, fmt.Errorf("create TUN %q: %w", cfg.Name, err)
	}
	real, err := dev.Name()
	if err != nil {
		dev.Close()
		return nil, err
	}
	link, err := netlink.LinkByName(real)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("TUN %s: %w", real, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: cfg.Addr.AsSlice(), Mask: net.CIDRMask(128, 128)}}
	if err := netlink.AddrAdd(link, addr); err != nil {
		dev.Close()
		return nil, fmt.Errorf("TUN %s: address %s: %w", real, cfg.Addr, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		dev.Close()
		return nil, fmt.Errorf("TUN %s: up: %w", real, err)
	}
	_, fd00, _ := net.ParseCIDR("fd00::/8")
	if err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: fd00}); err != nil {
		dev.Close()
		return nil, fmt.Errorf("TUN %s: route fd00::/8: %w", real, err)
	}
	// fd00::/8 is looked up in the main table ahead of rules a VPN or
	// policy router may have added.
	rule := netlink.NewRule()
	rule.Family = netlink.FAMILY_V6
	rule.Dst = fd00
	rule.Table = PolicyTable
	rule.Priority = PolicyPriority
	var cleanup func()
	if err := netlink.RuleAdd(rule); err != nil && !errors.Is(err, syscall.EEXIST) {
		logger(cfg.Log).Warn("cannot add the fd00::/8 policy rule", "priority", PolicyPriority, "error", err)
	} else {
		cleanup = func() { _ = netlink.RuleDel(rule) }
	}
	return NewDevice(dev, real, link.Attrs().Index, cleanup), nil
}

// The policy rule Open adds: fd00::/8 in the main table, at upstream's
// priority.
const (
	PolicyPriority = 5265
	PolicyTable    = 254 // main
)

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
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

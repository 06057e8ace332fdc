package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/logging"
)

// ErrForwardingDisabled is returned by CheckIPv6Forwarding when
// net.ipv6.conf.all.forwarding is not 1.
var ErrForwardingDisabled = errors.New("IPv6 forwarding is disabled")

// CheckIPv6Forwarding reads net.ipv6.conf.all.forwarding: without it no
// packet crosses the NAT.
func CheckIPv6Forwarding() error {
	b, err := os.ReadFile("/proc/sys/net/ipv6/conf/all/forwarding")
	if err != nil {
		return fmt.Errorf("read IPv6 forwarding state: %w", err)
	}
	if string(bytes.TrimSpace(b)) != "1" {
		return ErrForwardingDisabled
	}
	return nil
}

// InterfaceIndex returns an interface's index.
func InterfaceIndex(name string) (int, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("interface %s: %w", name, err)
	}
	return l.Attrs().Index, nil
}

// NetSetup owns the pool's local route and the proxy-NDP entries on the
// LAN interface, and removes what it added (only that) at Cleanup.
type NetSetup struct {
	lan        string
	poolCIDR   string
	proxied    []netip.Addr
	routeAdded bool
	log        *slog.Logger
}

// NewNetSetup returns a NetSetup for the LAN interface and pool.
func NewNetSetup(lanInterface, poolCIDR string, log *slog.Logger) *NetSetup {
	return &NetSetup{lan: lanInterface, poolCIDR: poolCIDR, log: logging.WithTarget(log, "fips::gateway::net")}
}

// poolRoute is "local POOL dev lo" in table local, as `ip -6 route add
// local POOL dev lo` makes it: the kernel then takes packets to pool
// addresses as its own, so prerouting DNAT sees them.
func (s *NetSetup) poolRoute() (*netlink.Route, error) {
	base, bits, err := parseCIDR(s.poolCIDR)
	if err != nil {
		return nil, err
	}
	p, err := base.Prefix(bits)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidCIDR, s.poolCIDR)
	}
	lo, err := InterfaceIndex("lo")
	if err != nil {
		return nil, err
	}
	a := p.Addr().As16()
	return &netlink.Route{LinkIndex: lo, Dst: &net.IPNet{IP: a[:], Mask: net.CIDRMask(bits, 128)},
		Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST, Protocol: unix.RTPROT_BOOT,
		Family: unix.AF_INET6}, nil
}

// AddPoolRoute adds the pool's local route; one already there is left to
// whoever made it.
func (s *NetSetup) AddPoolRoute() error {
	r, err := s.poolRoute()
	if err != nil {
		return err
	}
	if err := netlink.RouteAdd(r); err != nil {
		if errors.Is(err, unix.EEXIST) {
			s.log.Debug("Pool route already exists", "cidr", s.poolCIDR)
			return nil
		}
		return fmt.Errorf("add pool route: %w", err)
	}
	s.routeAdded = true
	s.log.Info("Added local pool route", "cidr", s.poolCIDR)
	return nil
}

func (s *NetSetup) neigh(addr netip.Addr) (*netlink.Neigh, error) {
	idx, err := InterfaceIndex(s.lan)
	if err != nil {
		return nil, err
	}
	a := addr.As16()
	return &netlink.Neigh{LinkIndex: idx, Family: unix.AF_INET6, Flags: netlink.NTF_PROXY, IP: a[:]}, nil
}

// AddProxyNDP answers neighbour solicitations for addr on the LAN
// interface.
func (s *NetSetup) AddProxyNDP(addr netip.Addr) error {
	n, err := s.neigh(addr)
	if err != nil {
		return err
	}
	if err := netlink.NeighAdd(n); err != nil {
		if errors.Is(err, unix.EEXIST) {
			s.log.Debug("Proxy NDP entry already exists", "addr", addr)
			return nil
		}
		return fmt.Errorf("add proxy NDP: %w", err)
	}
	s.proxied = append(s.proxied, addr)
	s.log.Debug("Added proxy NDP entry", "addr", addr, "iface", s.lan)
	return nil
}

// RemoveProxyNDP removes addr's proxy entry; one already gone is fine.
func (s *NetSetup) RemoveProxyNDP(addr netip.Addr) {
	if n, err := s.neigh(addr); err == nil {
		if err := netlink.NeighDel(n); err != nil && !errors.Is(err, unix.ENOENT) {
			s.log.Warn("Failed to remove proxy NDP", "addr", addr, "error", err)
		}
	} else {
		s.log.Warn("Failed to remove proxy NDP", "addr", addr, "error", err)
	}
	out := s.proxied[:0]
	for _, a := range s.proxied {
		if a != addr {
			out = append(out, a)
		}
	}
	s.proxied = out
}

// Proxied is how many proxy entries this run added and still holds.
func (s *NetSetup) Proxied() int { return len(s.proxied) }

// Cleanup removes every proxy entry and the route this run added.
func (s *NetSetup) Cleanup() {
	for _, a := range append([]netip.Addr(nil), s.proxied...) {
		s.RemoveProxyNDP(a)
	}
	if !s.routeAdded {
		return
	}
	s.routeAdded = false
	r, err := s.poolRoute()
	if err == nil {
		err = netlink.RouteDel(r)
	}
	if err != nil {
		s.log.Warn("Failed to remove pool route", "error", strings.TrimSpace(err.Error()))
		return
	}
	s.log.Info("Removed pool route", "cidr", s.poolCIDR)
}

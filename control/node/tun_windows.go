//go:build windows

package node

import (
	"fmt"
	"strconv"

	"golang.zx2c4.com/wireguard/tun"
)

// openTUN creates a wintun adapter (wintun.dll must sit beside fips.exe),
// gives it the node's address as a /128 and routes fd00::/8 through it
// with netsh, as upstream does. Built and vetted in CI; not run there (no
// Windows host).
func (n *Node) openTUN(name string, mtu int) (tun.Device, string, error) {
	dev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		return nil, "", fmt.Errorf("create wintun adapter %q: %w", name, err)
	}
	real, err := dev.Name()
	if err != nil {
		dev.Close()
		return nil, "", err
	}
	iface := "interface=" + real
	return n.configureTUN(dev, real, [][]string{
		{"netsh", "interface", "ipv6", "add", "address", iface, "address=" + n.id.IPv6().String() + "/128", "store=active"},
		{"netsh", "interface", "ipv6", "set", "subinterface", real, "mtu=" + strconv.Itoa(mtu), "store=active"},
		{"netsh", "interface", "ipv6", "add", "route", "prefix=fd00::/8", iface, "store=active"},
	})
}

//go:build windows

package node

import (
	"fmt"

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
	dev, real, err = n.configureTUN(dev, real, windowsTUNCommands(real, n.id.IPv6().String(), mtu))
	if err == nil {
		n.tunCleanup = func() { _ = configCmd(windowsTUNCleanup(real)...) }
	}
	return dev, real, err
}

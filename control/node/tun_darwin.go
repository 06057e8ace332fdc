//go:build darwin

package node

import (
	"fmt"
	"strings"

	"golang.zx2c4.com/wireguard/tun"
)

// openTUN creates a utun device (macOS picks its number: tun.name is
// honoured only when it is "utun" or "utunN"), gives it the node's address
// as a /128 and routes fd00::/8 through it with ifconfig and route, as
// upstream does. Built and vetted in CI; not run there (no macOS host).
func (n *Node) openTUN(name string, mtu int) (tun.Device, string, error) {
	req := "utun"
	if strings.HasPrefix(name, "utun") {
		req = name
	}
	dev, err := tun.CreateTUN(req, mtu)
	if err != nil {
		return nil, "", fmt.Errorf("create TUN %q: %w", req, err)
	}
	real, err := dev.Name()
	if err != nil {
		dev.Close()
		return nil, "", err
	}
	return n.configureTUN(dev, real, darwinTUNCommands(real, n.id.IPv6().String(), mtu))
}

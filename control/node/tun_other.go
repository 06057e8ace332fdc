//go:build !linux && !darwin && !windows

package node

import (
	"errors"

	"golang.zx2c4.com/wireguard/tun"
)

// openTUN is not wired up on this OS.
func (n *Node) openTUN(name string, mtu int) (tun.Device, string, error) {
	return nil, "", errors.New("the TUN adapter is not supported on this OS yet")
}

//go:build !linux

package node

import (
	"errors"

	"golang.zx2c4.com/wireguard/tun"
)

// openTUN is not wired up on this OS yet (macOS utun and Windows wintun
// come with the portable fallback).
func (n *Node) openTUN(name string, mtu int) (tun.Device, string, error) {
	return nil, "", errors.New("the TUN adapter is not supported on this OS yet")
}

func (n *Node) runTUN(tun.Device) error { return errors.New("unsupported") }

func (n *Node) closeTUN() {}

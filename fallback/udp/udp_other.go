//go:build !linux

package udp

import "net"

// haveDropCounter: only Linux has SO_RXQ_OVFL.
const haveDropCounter = false

func enableDropCounting(*net.UDPConn) error { return nil }

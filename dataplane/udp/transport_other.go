//go:build !linux

package udp

import (
	"net"
	"syscall"
)

// haveDropCounter: only Linux has SO_RXQ_OVFL.
const haveDropCounter = false

func enableDropCounting(*net.UDPConn) error { return nil }

// multiSocket: elsewhere one socket serves the port (macOS hands a
// reused port's unicast datagrams to one socket, Windows has no
// balancing).
const multiSocket = false

func reusePort(string, string, syscall.RawConn) error { return nil }

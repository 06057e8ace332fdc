//go:build linux

package udp

import (
	"net"

	"golang.org/x/sys/unix"
)

// haveDropCounter: Linux reports receive-queue overflows with SO_RXQ_OVFL.
const haveDropCounter = true

// enableDropCounting asks the kernel to attach the socket's cumulative
// drop counter to received datagrams (it does so once there has been a
// drop). Older kernels lack it; that is not fatal.
func enableDropCounting(conn *net.UDPConn) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
	}); err != nil {
		return err
	}
	return serr
}

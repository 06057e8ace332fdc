//go:build linux

package udp

import (
	"net"
	"syscall"

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

// multiSocket: Linux spreads a port's datagrams over SO_REUSEPORT
// sockets by flow hash, so each peer stays on one worker.
const multiSocket = true

// reusePort is a net.ListenConfig Control setting SO_REUSEPORT.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

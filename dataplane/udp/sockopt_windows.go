//go:build windows

package udp

import (
	"errors"
	"syscall"

	"golang.org/x/sys/windows"
)

// bufLogTarget is the target of the buffer-clamp warnings (upstream's
// Windows socket setup logs none; named after its module).
const bufLogTarget = "fips::transport::udp::io::windows"

// grantedBufSizes reads back SO_RCVBUF and SO_SNDBUF.
func grantedBufSizes(c syscall.Conn) (rcv, snd int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var e1, e2 error
	if err := rc.Control(func(fd uintptr) {
		rcv, e1 = windows.GetsockoptInt(windows.Handle(fd), windows.SOL_SOCKET, windows.SO_RCVBUF)
		snd, e2 = windows.GetsockoptInt(windows.Handle(fd), windows.SOL_SOCKET, windows.SO_SNDBUF)
	}); err != nil {
		return 0, 0, err
	}
	if e1 != nil {
		return 0, 0, e1
	}
	return rcv, snd, e2
}

// isMsgSize reports the error Windows returns for a datagram larger than
// the receive buffer.
func isMsgSize(err error) bool { return errors.Is(err, windows.WSAEMSGSIZE) }

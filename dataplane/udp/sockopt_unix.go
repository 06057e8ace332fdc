//go:build unix

package udp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bufLogTarget is the target of the buffer-clamp warnings (upstream's
// Unix socket-setup module).
const bufLogTarget = "fips::transport::udp::io::unix"

// grantedBufSizes reads back SO_RCVBUF and SO_SNDBUF (Linux reports twice
// the request, its bookkeeping overhead included).
func grantedBufSizes(c syscall.Conn) (rcv, snd int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var e1, e2 error
	if err := rc.Control(func(fd uintptr) {
		rcv, e1 = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		snd, e2 = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	}); err != nil {
		return 0, 0, err
	}
	if e1 != nil {
		return 0, 0, e1
	}
	return rcv, snd, e2
}

// isMsgSize: Unix truncates oversize datagrams silently instead.
func isMsgSize(error) bool { return false }

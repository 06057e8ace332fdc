//go:build linux

package tcp

import (
	"net"

	"golang.org/x/sys/unix"
)

// maxSegment reads TCP_MAXSEG, or returns 0.
func maxSegment(tc *net.TCPConn) int {
	return sockInt(tc, func(fd int) (int, error) { return unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG) })
}

// unreadBytes is how many received bytes wait in the socket (SIOCINQ),
// or 0.
func unreadBytes(nc net.Conn) int {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return 0
	}
	return sockInt(tc, func(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.SIOCINQ) })
}

// sockInt runs get on tc's descriptor; 0 on any error.
func sockInt(tc *net.TCPConn, get func(fd int) (int, error)) int {
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var n int
	var gerr error
	if err := rc.Control(func(fd uintptr) { n, gerr = get(int(fd)) }); err != nil || gerr != nil {
		return 0
	}
	return n
}

//go:build linux

package tcp

import (
	"net"

	"golang.org/x/sys/unix"
)

// maxSegment reads TCP_MAXSEG, or returns 0.
func maxSegment(tc *net.TCPConn) int {
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var mss int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		mss, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG)
	}); err != nil || gerr != nil {
		return 0
	}
	return mss
}

// unreadBytes is how many received bytes wait in the socket (SIOCINQ),
// or 0.
func unreadBytes(nc net.Conn) int {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return 0
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var n int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		n, gerr = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	}); err != nil || gerr != nil {
		return 0
	}
	return n
}

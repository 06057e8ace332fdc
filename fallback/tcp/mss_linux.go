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

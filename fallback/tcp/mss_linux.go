//go:build linux

package tcp

import (
	"net"

	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/wire"
)

// maxSegment reads TCP_MAXSEG, or returns 0.
func maxSegment(tc *net.TCPConn) int {
	return sockInt(tc, func(fd int) (int, error) { return unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG) })
}

// waitingMsg1 reports whether the bytes waiting unread in nc's socket
// start with an FMP msg1 prefix (peeked, not consumed).
func waitingMsg1(nc net.Conn) bool {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return false
	}
	var p [wire.FMPPrefixSize]byte
	n := sockInt(tc, func(fd int) (int, error) {
		n, _, err := unix.Recvfrom(fd, p[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return n, err
	})
	return n == len(p) && isMsg1Prefix(p[:])
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

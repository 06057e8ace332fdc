//go:build linux

package mmsg

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Call runs one recvmmsg or sendmmsg (trap) on fd over the first k of
// hdrs (k ≥ 1) and returns how many messages the kernel handled, or the
// error it gave (then n is 0). done is false on EAGAIN: the caller's
// RawConn waits until the socket is ready and calls again.
func Call(trap, fd uintptr, hdrs []unix.Mmsghdr, k int) (n int, errno syscall.Errno, done bool) {
	r, _, e := unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(k), 0, 0, 0)
	switch e {
	case unix.EAGAIN:
		return 0, 0, false
	case 0:
		return int(r), 0, true
	}
	return 0, e, true
}

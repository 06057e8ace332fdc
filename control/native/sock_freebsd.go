package native

import (
	"time"

	"golang.org/x/sys/unix"
)

// FreeBSD's AF_UNIX SOCK_SEQPACKET lacks record semantics; upstream uses
// a SOCK_DGRAM pair there, as on macOS.
const (
	pairType   = unix.SOCK_DGRAM
	pairFlags  = unix.SOCK_CLOEXEC
	sendFlags  = unix.MSG_NOSIGNAL
	closeRetry = 250 * time.Millisecond
)

// peerClient: FreeBSD reports the peer's uid, not its pid; every client
// of one user shares a bound.
func peerClient(fd int) ClientID {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0
	}
	return ClientID(cred.Uid) | 1<<32
}

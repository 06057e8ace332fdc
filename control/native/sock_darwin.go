package native

import (
	"time"

	"golang.org/x/sys/unix"
)

// macOS has no AF_UNIX SOCK_SEQPACKET; a connected SOCK_DGRAM pair keeps
// message boundaries (upstream's choice there). Its close raises no
// readiness, so a blocked read retries every closeRetry to notice it.
const (
	pairType   = unix.SOCK_DGRAM
	pairFlags  = 0 // no SOCK_CLOEXEC in socketpair: set with fcntl
	sendFlags  = 0 // the Go runtime ignores SIGPIPE on non-stdio writes
	closeRetry = 250 * time.Millisecond
)

// peerClient is the connecting process's id (LOCAL_PEERPID).
func peerClient(fd int) ClientID {
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return 0
	}
	return ClientID(pid)
}

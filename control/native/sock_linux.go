package native

import (
	"time"

	"golang.org/x/sys/unix"
)

// Linux's AF_UNIX SOCK_SEQPACKET keeps message boundaries and reports a
// closed peer as end of file, which is what a flow wants (upstream's
// choice on Linux).
const (
	pairType  = unix.SOCK_SEQPACKET
	pairFlags = unix.SOCK_CLOEXEC
	sendFlags = unix.MSG_NOSIGNAL
	// closeRetry: a closed peer wakes a blocked read, so no polling.
	closeRetry time.Duration = 0
)

// peerClient is the connecting process's id (SO_PEERCRED).
func peerClient(fd int) ClientID {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0
	}
	return ClientID(cred.Pid)
}

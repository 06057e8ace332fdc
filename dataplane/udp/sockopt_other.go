//go:build !unix && !windows

package udp

import (
	"errors"
	"syscall"
)

func grantedBufSizes(syscall.Conn) (int, int, error) { return 0, 0, errors.ErrUnsupported }

func isMsgSize(error) bool { return false }

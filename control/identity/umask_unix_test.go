//go:build unix

package identity

import (
	"io/fs"
	"syscall"
)

func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

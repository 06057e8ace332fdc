//go:build unix

package identity

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens for writing, creating and truncating, with O_NOFOLLOW
// so a planted symlink fails the open instead of redirecting the write.
func openNoFollow(path string, mode fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, mode)
}

// openKeyForRead opens read-only with O_NOFOLLOW (a symlink fails the
// open) and O_NONBLOCK (a named pipe planted at the path cannot block it).
func openKeyForRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

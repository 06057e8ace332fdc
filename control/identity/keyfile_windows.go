//go:build windows

package identity

import (
	"fmt"
	"io/fs"
	"os"
)

// openNoFollow refuses an existing symlink at path and then opens it. On
// Windows the file inherits the directory's ACLs; mode bits do not apply.
func openNoFollow(path string, mode fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("refusing symlink at %s", path)
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
}

// openKeyForRead refuses an existing symlink at path and then opens it
// read-only.
func openKeyForRead(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("refusing symlink at %s", path)
	}
	return os.Open(path)
}

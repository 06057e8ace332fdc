//go:build windows

package identity

import "io/fs"

func umask() fs.FileMode { return 0 }

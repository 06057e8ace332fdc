//go:build windows

package identity

import "io/fs"

// Windows files carry ACLs, not mode bits; nothing to check.
func looseMode(fs.FileMode) bool { return false }

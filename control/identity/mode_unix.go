//go:build unix

package identity

import "io/fs"

func looseMode(m fs.FileMode) bool { return m.IsRegular() && m.Perm()&0o077 != 0 }

//go:build windows

package config

import (
	"os"
	"path/filepath"
)

// SystemConfigDir is %APPDATA%\fips, or C:\ProgramData\fips without APPDATA.
func SystemConfigDir() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "fips")
	}
	return `C:\ProgramData\fips`
}

// LegacySystemConfigDir is empty: the Windows default never moved.
func LegacySystemConfigDir() string { return "" }

// etcDir holds hosts, peers.allow and peers.deny (upstream's hosts path; upstream's
// ACL paths there are the Unix ones, which fips-go does not copy).
const etcDir = `C:\ProgramData\fips`

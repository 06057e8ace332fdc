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

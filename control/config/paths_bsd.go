//go:build darwin || freebsd

package config

import (
	"os"
	"runtime"
)

// SystemConfigDir is where the packaged fips.yaml, fips.key and hosts live;
// on macOS and FreeBSD packages install under /usr/local.
func SystemConfigDir() string { return "/usr/local/etc/fips" }

// LegacySystemConfigDir is the pre-move default, still checked for a key
// file so a node does not silently change identity after an upgrade.
func LegacySystemConfigDir() string { return "/etc/fips" }

// varRunPolicy says how /var/run/fips takes part in socket resolution: an
// existing one is used on both systems (FreeBSD's rc.d script creates it);
// a root daemon on macOS also selects it before it exists, to create it.
func varRunPolicy() (consult, create bool) {
	return true, runtime.GOOS == "darwin" && os.Geteuid() == 0
}

//go:build darwin || freebsd

package config

// SystemConfigDir is where the packaged fips.yaml, fips.key and hosts live;
// on macOS and FreeBSD packages install under /usr/local.
func SystemConfigDir() string { return "/usr/local/etc/fips" }

// LegacySystemConfigDir is the pre-move default, still checked for a key
// file so a node does not silently change identity after an upgrade.
func LegacySystemConfigDir() string { return "/etc/fips" }

// etcDir holds hosts, peers.allow and peers.deny (upstream's DEFAULT_*_PATH).
const etcDir = "/usr/local/etc/fips"

//go:build unix && !darwin && !freebsd

package config

// SystemConfigDir is where the packaged fips.yaml, fips.key and hosts live.
func SystemConfigDir() string { return "/etc/fips" }

// LegacySystemConfigDir is an older default still checked for a key file;
// empty where the default never moved.
func LegacySystemConfigDir() string { return "" }

// etcDir holds hosts, peers.allow and peers.deny (upstream's DEFAULT_*_PATH).
const etcDir = "/etc/fips"

package config

import "path/filepath"

// resolveSocket picks a default Unix socket path the way upstream does:
// /run/fips/<file> if /run/fips exists; then, where the platform uses it,
// /var/run/fips/<file> if that exists (or, for a root daemon on macOS, if
// it may be created); then $XDG_RUNTIME_DIR/fips/<file> if XDG_RUNTIME_DIR
// is an existing directory; else /tmp/fips-<file>. Selection is by
// existence, not writability.
func resolveSocket(filename string, consultVarRun, createVarRun bool, xdgRuntimeDir string, isDir func(string) bool) string {
	if isDir("/run/fips") {
		return "/run/fips/" + filename
	}
	if consultVarRun && (isDir("/var/run/fips") || (createVarRun && isDir("/var/run"))) {
		return "/var/run/fips/" + filename
	}
	if xdgRuntimeDir != "" && isDir(xdgRuntimeDir) {
		return filepath.Join(xdgRuntimeDir, "fips", filename)
	}
	return "/tmp/fips-" + filename
}

package ctl

import "path"

// Canonical runtime directories consulted by the Unix socket resolver.
const (
	RunDir    = "/run/fips"
	VarRunDir = "/var/run/fips"
	TmpDir    = "/tmp"
)

// VarRunPolicy is how /var/run/fips takes part in socket resolution.
type VarRunPolicy struct {
	// ConsultExisting: an existing /var/run/fips is a candidate (macOS,
	// FreeBSD).
	ConsultExisting bool
	// CreatePrivateDir: select /var/run/fips even before it exists, when
	// /var/run does, so the daemon creates it at bind time (a root daemon
	// on macOS).
	CreatePrivateDir bool
}

// PathEnv is the view of the host the resolver consults, injectable for
// tests. [HostPathEnv] is the real one (Unix only).
type PathEnv struct {
	IsDir     func(path string) bool
	LookupEnv func(key string) (string, bool)
	VarRun    VarRunPolicy
}

// ResolveSocketPath picks the default path of a FIPS Unix socket named
// filename, in upstream's order and by directory existence alone (not
// writability):
//
//  1. /run/fips/<filename> if /run/fips is a directory;
//  2. /var/run/fips/<filename> if the policy consults it and it is a
//     directory (or may be created, see VarRunPolicy);
//  3. $XDG_RUNTIME_DIR/fips/<filename> if $XDG_RUNTIME_DIR is a directory
//     (the fips leaf need not exist: the daemon creates it);
//  4. /tmp/fips-<filename>.
func ResolveSocketPath(filename string, env PathEnv) string {
	if env.IsDir(RunDir) {
		return path.Join(RunDir, filename)
	}
	if env.VarRun.ConsultExisting {
		mayCreate := env.VarRun.CreatePrivateDir && env.IsDir(path.Dir(VarRunDir))
		if env.IsDir(VarRunDir) || mayCreate {
			return path.Join(VarRunDir, filename)
		}
	}
	if xdg, ok := env.LookupEnv("XDG_RUNTIME_DIR"); ok && xdg != "" && env.IsDir(xdg) {
		return path.Join(xdg, "fips", filename)
	}
	return path.Join(TmpDir, "fips-"+filename)
}

// IsManagedSocketParent reports whether dir is one of the resolver's
// private runtime directories (/run/fips, /var/run/fips where consulted,
// $XDG_RUNTIME_DIR/fips), whose mode and group the daemon sets even when
// it did not create them. Any other existing directory (/tmp, an
// operator's choice) is left alone.
func IsManagedSocketParent(dir string, env PathEnv) bool {
	dir = path.Clean(dir)
	if dir == RunDir || (env.VarRun.ConsultExisting && dir == VarRunDir) {
		return true
	}
	xdg, ok := env.LookupEnv("XDG_RUNTIME_DIR")
	return ok && dir == path.Join(xdg, "fips")
}

//go:build unix

package ctl

import "os"

// DefaultSocketPath is the control socket path the daemon binds and
// clients dial when none is configured: [ResolveSocketPath] of
// "control.sock" against this host.
func DefaultSocketPath() string { return ResolveSocketPath("control.sock", HostPathEnv()) }

// HostPathEnv is the real filesystem and environment, with this OS's
// /var/run policy.
func HostPathEnv() PathEnv {
	return PathEnv{
		IsDir: func(p string) bool {
			fi, err := os.Stat(p)
			return err == nil && fi.IsDir()
		},
		LookupEnv: os.LookupEnv,
		VarRun:    defaultVarRunPolicy(),
	}
}

//go:build darwin

package ctl

import "os"

// A LaunchDaemon runs as root: it selects /var/run/fips before the
// directory exists and creates it at bind time after every boot. Non-root
// clients follow once it exists.
func defaultVarRunPolicy() VarRunPolicy {
	return VarRunPolicy{ConsultExisting: true, CreatePrivateDir: os.Geteuid() == 0}
}

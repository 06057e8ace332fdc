//go:build freebsd

package ctl

// The rc.d service creates /var/run/fips before starting the daemon.
func defaultVarRunPolicy() VarRunPolicy {
	return VarRunPolicy{ConsultExisting: true}
}

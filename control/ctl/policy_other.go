//go:build unix && !darwin && !freebsd

package ctl

// Elsewhere (Linux) /var/run/fips plays no part: /run/fips is canonical.
func defaultVarRunPolicy() VarRunPolicy { return VarRunPolicy{} }

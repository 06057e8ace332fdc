//go:build linux

package dataplane

import "github.com/fips-go/fips/dataplane/tun"

// openTUN opens the Linux device with its offloads (dataplane/tun).
func openTUN(cfg tun.Config) (*tun.Device, error) { return tun.Open(cfg) }

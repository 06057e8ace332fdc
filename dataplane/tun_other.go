//go:build !linux

package dataplane

import (
	"github.com/fips-go/fips/dataplane/tun"
	fbtun "github.com/fips-go/fips/fallback/tun"
)

// openTUN opens the portable adapter (fallback/tun: utun on macOS,
// wintun on Windows).
func openTUN(cfg tun.Config) (*tun.Device, error) { return fbtun.Open(cfg) }

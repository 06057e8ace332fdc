//go:build !darwin && !windows

package tun

import (
	"errors"

	dptun "github.com/fips-go/fips/dataplane/tun"
)

// Open is not wired up on this OS (on Linux the node opens
// dataplane/tun's device instead).
func Open(dptun.Config) (*dptun.Device, error) {
	return nil, errors.New("the TUN adapter is not supported on this OS yet")
}

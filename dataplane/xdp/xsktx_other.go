//go:build !linux

package xdp

import (
	"fmt"
	"net/netip"
)

// resolveL2 has no kernel tables to read on this OS.
func resolveL2(dst netip.Addr) (l2Route, error) {
	return l2Route{}, fmt.Errorf("route to %v: %w", dst, errNoL2)
}

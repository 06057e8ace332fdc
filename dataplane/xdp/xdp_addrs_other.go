//go:build !linux

package xdp

import (
	"errors"
	"net/netip"
)

// addrUpdate stands in for netlink.AddrUpdate: no XDP here.
type addrUpdate struct{}

// subscribeAddrs fails: address changes are followed on Linux only,
// where the XDP program runs.
func subscribeAddrs() (<-chan addrUpdate, chan struct{}, func() ([]netip.Addr, error), func(), error) {
	return nil, nil, nil, nil, errors.New("address changes are followed on Linux only")
}

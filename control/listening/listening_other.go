//go:build !linux

package listening

import (
	"context"
	"net/netip"
)

// enumerate has no /proc to read on this OS: nothing is listed, as
// upstream does.
func enumerate(netip.Addr) []socket { return nil }

// queryFirewall: the baseline firewall is nftables, Linux only.
func queryFirewall(context.Context) Classifier { return Classifier{} }

package gateway

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// ProcConntrack counts /proc/net/nf_conntrack lines naming the virtual
// address as a destination, as upstream does. A kernel without that file
// (no CONFIG_NF_CONNTRACK_PROCFS) reports an error, which the pool takes
// as no sessions.
type ProcConntrack struct{}

// maxConntrackLines bounds one read of the table.
const maxConntrackLines = 1 << 20

// ActiveSessions implements Conntrack.
func (ProcConntrack) ActiveSessions(vip netip.Addr) (uint32, error) {
	f, err := os.Open("/proc/net/nf_conntrack")
	if err != nil {
		return 0, fmt.Errorf("conntrack: %w", err)
	}
	defer f.Close()
	return countDst(bufio.NewScanner(f), vip)
}

func countDst(sc *bufio.Scanner, vip netip.Addr) (uint32, error) {
	var n uint32
	lines := 0
	for sc.Scan() && lines < maxConntrackLines {
		lines++
		if namesDst(sc.Text(), vip) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("conntrack: %w", err)
	}
	return n, nil
}

// namesDst reports whether a conntrack line has a dst= field equal to vip.
// Upstream looks for the substring "dst=<vip>" in its compressed form, but
// the kernel prints IPv6 addresses uncompressed
// (dst=fd01:0000:…:0001), so upstream never counts an IPv6 session;
// comparing parsed addresses counts them, and "dst=fd01::10" is not
// taken for fd01::1.
func namesDst(line string, vip netip.Addr) bool {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "dst="); ok {
			if a, err := netip.ParseAddr(v); err == nil && a == vip {
				return true
			}
		}
	}
	return false
}

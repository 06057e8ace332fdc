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
	target := "dst=" + vip.String()
	var n uint32
	lines := 0
	for sc.Scan() && lines < maxConntrackLines {
		lines++
		if containsField(sc.Text(), target) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("conntrack: %w", err)
	}
	return n, nil
}

// containsField is upstream's substring test made exact on the field:
// "dst=fd01::1" must not count "dst=fd01::10".
func containsField(line, field string) bool {
	for _, f := range strings.Fields(line) {
		if f == field {
			return true
		}
	}
	return false
}

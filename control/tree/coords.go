package tree

import (
	"math"
	"slices"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Distance is the tree distance between two coordinates (each ordered
// self to root): hops from each up to their deepest common ancestor. It is
// math.MaxInt when the roots differ or either coordinate is empty.
func Distance(a, b []identity.NodeAddr) int {
	if len(a) == 0 || len(b) == 0 || a[len(a)-1] != b[len(b)-1] {
		return math.MaxInt
	}
	common := 0
	for i, j := len(a)-1, len(b)-1; i >= 0 && j >= 0 && a[i] == b[j]; i, j = i-1, j-1 {
		common++
	}
	lca := common - 1 // depth of the deepest common ancestor, root = 0
	return (len(a) - 1 - lca) + (len(b) - 1 - lca)
}

// position is a node's path to the root as announced: entries carry each
// hop's declaration sequence and timestamp, addrs the same hops' addresses
// for routing.
type position struct {
	entries []wire.AncestryEntry
	addrs   []identity.NodeAddr
}

func positionOf(entries []wire.AncestryEntry) position {
	p := position{entries: entries, addrs: make([]identity.NodeAddr, len(entries))}
	for i, e := range entries {
		p.addrs[i] = e.NodeAddr
	}
	return p
}

// positionFrom copies a received ancestry (which aliases the message).
func positionFrom(a wire.Ancestry) position {
	entries := make([]wire.AncestryEntry, a.Len())
	for i := range entries {
		entries[i] = a.At(i)
	}
	return positionOf(entries)
}

func (p position) root() identity.NodeAddr { return p.addrs[len(p.addrs)-1] }

func (p position) depth() int { return len(p.addrs) - 1 }

// contains reports whether x is on the path, the node itself included.
func (p position) contains(x identity.NodeAddr) bool {
	return slices.Contains(p.addrs, x)
}

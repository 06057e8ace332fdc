package route

import (
	"slices"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/tree"
)

// Distance is the tree distance between two coordinates (tree.Distance):
// math.MaxInt when the roots differ or either is empty.
func Distance(a, b []identity.NodeAddr) int { return tree.Distance(a, b) }

// hasAncestor reports whether x is on the path above its first entry.
func hasAncestor(c []identity.NodeAddr, x identity.NodeAddr) bool {
	return len(c) > 1 && slices.Contains(c[1:], x)
}

// rootOf is the last entry, or the zero address for an empty path.
func rootOf(c []identity.NodeAddr) (identity.NodeAddr, bool) {
	if len(c) == 0 {
		return identity.NodeAddr{}, false
	}
	return c[len(c)-1], true
}

// RouteClass is upstream's diagnostic classification of a transit forward,
// from tree coordinates; the six classes partition forwarded packets.
type RouteClass uint8

// Route classes.
const (
	ClassTreeUp           RouteClass = iota + 1 // the next hop is our ancestor
	ClassTreeDown                               // our descendant, dest in its subtree
	ClassTreeDownCross                          // our descendant, dest not in its subtree
	ClassCrosslinkDescend                       // lateral peer, dest in its subtree
	ClassCrosslinkAscend                        // lateral peer, dest not in its subtree
	ClassDirectPeer                             // the next hop is the destination
)

// String is upstream's name, as in the route_* counters.
func (c RouteClass) String() string {
	switch c {
	case ClassTreeUp:
		return "tree_up"
	case ClassTreeDown:
		return "tree_down"
	case ClassTreeDownCross:
		return "tree_down_cross"
	case ClassCrosslinkDescend:
		return "crosslink_descend"
	case ClassCrosslinkAscend:
		return "crosslink_ascend"
	case ClassDirectPeer:
		return "direct_peer"
	}
	return "unknown"
}

// Classify is upstream's classify_forward: dest coordinates may be nil
// (then "not in the peer's subtree"), peer coordinates nil when unknown.
func Classify(dest, next, self identity.NodeAddr, myCoords, destCoords, peerCoords []identity.NodeAddr) RouteClass {
	if next == dest {
		return ClassDirectPeer
	}
	if hasAncestor(myCoords, next) {
		return ClassTreeUp
	}
	inSubtree := hasAncestor(destCoords, next)
	if hasAncestor(peerCoords, self) {
		if inSubtree {
			return ClassTreeDown
		}
		return ClassTreeDownCross
	}
	if inSubtree {
		return ClassCrosslinkDescend
	}
	return ClassCrosslinkAscend
}

// Step is the find_next_hop step that chose a next hop.
type Step uint8

// Steps of the priority chain that can name a next hop.
const (
	StepDirectPeer Step = iota + 1 // the destination is a sendable peer
	StepBloom                      // best bloom candidate strictly closer than us
	StepTree                       // greedy tree fallback
)

func (s Step) String() string {
	switch s {
	case StepDirectPeer:
		return "direct_peer"
	case StepBloom:
		return "bloom"
	case StepTree:
		return "tree"
	}
	return "none"
}

// Route says how FindNextHop chose: the step of the priority chain and
// upstream's route class of that choice.
type Route struct {
	Step  Step
	Class RouteClass
}

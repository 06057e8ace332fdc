package tree

import (
	"time"

	"github.com/fips-go/fips/control/identity"
)

// Notifier receives the tree transitions other subsystems must react to.
// It is called synchronously, after the transition's announces were handed
// to Env, and must not call back into the Tree.
type Notifier interface {
	TreeChanged(now time.Time, c Change)
	// ParentAnnounced reports that a TreeAnnounce naming parent as our
	// parent was just handed to Env for parent: from the moment parent
	// handles it, we are its child. A peer that learns of a new child
	// from its announce re-merges nothing until the child's next filter
	// (upstream marks no filter update on a child's announce), so a
	// filter sent before this announce is never passed on by an upstream
	// parent; the node answers by owing parent a filter (sent after the
	// announce). Called for periodic and rate-limited announces too, so a
	// lost announce is healed by the next one.
	ParentAnnounced(now time.Time, parent identity.NodeAddr)
}

// ChangeKind is the tree transition that happened.
type ChangeKind uint8

// Tree transitions, upstream's TreeDecision arms that change state.
const (
	// ChangeSwitch: a new parent (or the first one). Announced to all.
	ChangeSwitch ChangeKind = iota + 1
	// ChangeSelfRoot: no visible root is smaller than us; we became root.
	// Announced to all.
	ChangeSelfRoot
	// ChangeLoopDrop: our parent's new ancestry contained us; we dropped it
	// for an alternative parent or the root role. Announced to all.
	ChangeLoopDrop
	// ChangeAncestryUpdate: our parent re-announced and we kept it; our
	// declaration was re-signed with sequence+1. Announced to all only if
	// PathChanged.
	ChangeAncestryUpdate
	// ChangeParentLost: our parent went down (PeerDown); we took an
	// alternative or became root. Every remaining peer has an announce
	// pending, flushed by the next Tick.
	ChangeParentLost
	// ChangeChildren: a peer's accepted declaration started or stopped
	// naming us as its parent (From is that peer). Nothing about our own
	// position changed, but the set of tree peers whose filters we
	// aggregate did. Upstream does not react to this; without it a filter
	// that arrived before the TreeAnnounce making its sender our child is
	// never passed on (see BloomChanged).
	ChangeChildren
	// ChangeParentRefused (ours): our parent's new announce was refused
	// for an ancestry that contradicts a signed declaration; we dropped it
	// for an alternative parent or the root role. Announced to all.
	ChangeParentRefused
)

func (k ChangeKind) String() string {
	switch k {
	case ChangeSwitch:
		return "switch"
	case ChangeSelfRoot:
		return "self_root"
	case ChangeLoopDrop:
		return "loop_drop"
	case ChangeAncestryUpdate:
		return "ancestry_update"
	case ChangeParentLost:
		return "parent_lost"
	case ChangeChildren:
		return "children"
	case ChangeParentRefused:
		return "parent_refused"
	}
	return "unknown"
}

// Trigger is what led to a transition.
type Trigger uint8

// Triggers.
const (
	TriggerAnnounce Trigger = iota + 1 // HandleAnnounce
	TriggerPeriodic                    // Tick's periodic re-evaluation
	TriggerFirstRTT                    // FirstRTT
	TriggerPeerDown                    // PeerDown of our parent
)

func (t Trigger) String() string {
	switch t {
	case TriggerAnnounce:
		return "announce"
	case TriggerPeriodic:
		return "periodic"
	case TriggerFirstRTT:
		return "first-rtt"
	case TriggerPeerDown:
		return "peer-down"
	}
	return "unknown"
}

// BloomMark says which peers need a new outgoing bloom filter.
type BloomMark uint8

// Bloom marks.
const (
	BloomNone BloomMark = iota
	// BloomAll: mark_all_updates_needed over every active peer (the set of
	// tree peers changed).
	BloomAll
	// BloomChanged: mark_changed_peers(From, ...): only peers whose
	// outgoing filter content actually differs from what they last got.
	BloomChanged
)

// Change describes one transition. Its methods say what the node has to do,
// exactly as upstream does it.
type Change struct {
	Kind    ChangeKind
	Trigger Trigger
	// From is the peer involved: the announcing peer (TriggerAnnounce), the
	// measured peer (TriggerFirstRTT), the removed parent (TriggerPeerDown);
	// zero for TriggerPeriodic.
	From identity.NodeAddr
	// PathChanged (ChangeAncestryUpdate only): our address path to the root
	// changed (root, depth or any ancestor).
	PathChanged bool
	// Root is the root after the transition.
	Root identity.NodeAddr
	// Self is our own address.
	Self identity.NodeAddr
	// FlapDampened: this transition engaged a dampening episode.
	FlapDampened bool
}

// InvalidateViaSelf reports whether the coordinate cache must drop every
// entry whose path runs through us (invalidate_via_node(Self)).
func (c Change) InvalidateViaSelf() bool {
	switch c.Kind {
	case ChangeSwitch, ChangeLoopDrop, ChangeAncestryUpdate, ChangeParentLost, ChangeParentRefused:
		return true
	}
	return false
}

// InvalidateOtherRoots reports whether the coordinate cache must drop every
// entry not rooted at root (invalidate_other_roots(root)).
func (c Change) InvalidateOtherRoots() (root identity.NodeAddr, ok bool) {
	switch c.Kind {
	case ChangeSelfRoot, ChangeLoopDrop, ChangeParentLost, ChangeParentRefused:
		return c.Root, true
	}
	return identity.NodeAddr{}, false
}

// ResetLookupBackoff reports whether the lookup backoff must be reset.
// Upstream does not on parent loss.
func (c Change) ResetLookupBackoff() bool {
	return c.Kind != ChangeParentLost && c.Kind != ChangeChildren
}

// Bloom says which bloom updates to mark. Upstream marks none on a loop
// drop or parent loss (PeerDown marks all remaining peers on its own,
// whatever the tree did).
func (c Change) Bloom() BloomMark {
	switch c.Kind {
	case ChangeSwitch, ChangeSelfRoot, ChangeParentRefused:
		return BloomAll
	case ChangeAncestryUpdate:
		if c.PathChanged {
			return BloomChanged
		}
	case ChangeChildren:
		return BloomChanged
	}
	return BloomNone
}

package tree

import (
	"math"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// evalKind is the outcome of evaluateParent.
type evalKind uint8

const (
	evalNone          evalKind = iota
	evalMandatory              // path broken or root correction: bypasses the veto
	evalDiscretionary          // a cheaper path: only taken when not suppressed
)

// peerCosts collects the link cost of every measured active peer. The map
// is reused between calls.
func (t *Tree) peerCosts() map[identity.NodeAddr]float64 {
	clear(t.costs)
	for _, a := range t.order {
		if c, ok := t.env.LinkCost(a); ok {
			t.costs[a] = c
		}
	}
	return t.costs
}

// smallestRoot is the smallest root any peer announced.
func (t *Tree) smallestRoot() (r identity.NodeAddr, ok bool) {
	for _, a := range t.order {
		if ps := t.peers[a]; ps.accepted {
			if pr := ps.pos.root(); !ok || pr.Less(r) {
				r, ok = pr, true
			}
		}
	}
	return r, ok
}

// shouldBeRoot: no peer announces a root smaller than us.
func (t *Tree) shouldBeRoot() bool {
	r, ok := t.smallestRoot()
	return !ok || (!t.leaf && t.self.Compare(r) <= 0)
}

// peerProfiles is what an Env carrying links in upstream next's format
// also says: the profile a peer declared on its link (false: none, a
// master link). next takes only Full peers as parents (docs/next.md §8).
type peerProfiles interface {
	PeerProfile(p identity.NodeAddr) (wire.NodeProfile, bool)
}

// fullPeer reports whether p may be our parent: a master link's peer, or
// a next one that declared itself Full.
func (t *Tree) fullPeer(p identity.NodeAddr) bool {
	pp, ok := t.env.(peerProfiles)
	if !ok {
		return true
	}
	prof, declared := pp.PeerProfile(p)
	return !declared || prof == wire.ProfileFull
}

// evaluateParent picks the best parent among peers reaching the smallest
// visible root, by depth + link cost, and says whether switching to it is
// mandatory, discretionary or not warranted.
func (t *Tree) evaluateParent(costs map[identity.NodeAddr]float64) (evalKind, identity.NodeAddr) {
	var none identity.NodeAddr
	smallest, ok := t.smallestRoot()
	if !ok {
		return evalNone, none
	}
	// If we are the smallest we must be root: extending any peer's path
	// would advertise a root larger than us, which receivers reject.
	// A Leaf is exempt: it attaches under its upstream whatever the
	// addresses (next's self_is_leaf).
	if !t.leaf && t.self.Compare(smallest) <= 0 {
		return evalNone, none
	}
	var best identity.NodeAddr
	bestEff, found := 0.0, false
	for _, a := range t.order {
		ps := t.peers[a]
		if !ps.accepted || ps.pos.root() != smallest || ps.pos.contains(t.self) || !t.fullPeer(a) {
			continue
		}
		// Once any peer is measured, unmeasured peers are not candidates;
		// in a cold start (nobody measured) every peer costs 1.
		cost, ok := costs[a]
		if !ok {
			if len(costs) != 0 {
				continue
			}
			cost = 1
		}
		eff := float64(ps.pos.depth()) + cost
		// t.order is sorted, so on equal cost the smaller address is kept.
		if !found || eff < bestEff {
			best, bestEff, found = a, eff, true
		}
	}
	if !found {
		return evalNone, none
	}
	isRoot := t.IsRoot()
	if !isRoot && t.decl.parent == best {
		return evalNone, none
	}
	cur := t.peers[t.decl.parent]
	if !isRoot && (cur == nil || !cur.accepted) {
		return evalMandatory, best // our parent is gone
	}
	// The root we would have by keeping our parent: its latest position,
	// not our own coordinates, which an announce from the parent has not
	// updated yet. Upstream compares with the latter, so a parent that
	// just fell back to a worse root is followed there, and a peer still
	// on the better root is taken only at the next periodic re-evaluation
	// (up to a minute; the peer's echo is a stale re-announce). Local
	// only: what we announce is the same, just sooner.
	curRoot := t.root
	if !isRoot {
		curRoot = cur.pos.root()
	}
	if smallest.Less(curRoot) || isRoot {
		return evalMandatory, best // a smaller root, or we are root but must not be
	}
	curCost, ok := costs[t.decl.parent]
	if !ok {
		curCost = math.Inf(1)
		if len(costs) == 0 {
			curCost = 1
		}
	}
	curEff := float64(cur.pos.depth()) + curCost
	if bestEff < curEff*(1-t.hysteresis) {
		return evalDiscretionary, best
	}
	return evalNone, none
}

// decide applies the hold-down / flap veto to evaluateParent.
func (t *Tree) decide(now time.Time, costs map[identity.NodeAddr]float64) (identity.NodeAddr, bool) {
	suppressed := t.flap.suppressed(now)
	switch k, p := t.evaluateParent(costs); {
	case k == evalMandatory, k == evalDiscretionary && !suppressed:
		return p, true
	}
	return identity.NodeAddr{}, false
}

// setParent declares parent with sequence seq, stamped now, and reports
// whether this engaged flap dampening. Only an actual change counts as a
// flap; any declaration restarts the hold-down.
func (t *Tree) setParent(now time.Time, parent identity.NodeAddr, seq uint64) bool {
	changed := t.IsRoot() || t.decl.parent != parent
	t.decl = declaration{parent: parent, seq: seq, timestamp: unixSecs(now)}
	t.signed = false
	t.flap.markSwitch(now)
	if changed {
		return t.flap.recordChange(now)
	}
	return false
}

// recompute derives our coordinates from the declaration and our parent's
// ancestry. If we are not larger than the parent's root, the declaration is
// demoted to self-root in place (same sequence and timestamp). If the parent
// has no known ancestry the coordinates are left as they were.
func (t *Tree) recompute() {
	self := wire.AncestryEntry{NodeAddr: t.self, Sequence: t.decl.seq, Timestamp: t.decl.timestamp}
	if t.decl.parent != t.self {
		ps := t.peers[t.decl.parent]
		if ps == nil || !ps.accepted {
			return
		}
		if t.leaf || t.self.Compare(ps.pos.root()) > 0 {
			t.coords = positionOf(append([]wire.AncestryEntry{self}, ps.pos.entries...))
			t.root = t.coords.root()
			return
		}
		t.decl.parent = t.self
	}
	t.coords = positionOf([]wire.AncestryEntry{self})
	t.root = t.self
}

// becomeRoot declares ourselves root with sequence+1.
func (t *Tree) becomeRoot(now time.Time) {
	t.decl = declaration{parent: t.self, seq: t.decl.seq + 1, timestamp: unixSecs(now)}
	t.signed = false
	t.recompute()
}

// recover replaces a lost or looping parent: the best alternative if a
// switch is warranted (and not vetoed, when discretionary), else the root
// role, with sequence+1 either way. It reports whether the switch engaged
// flap dampening.
func (t *Tree) recover(now time.Time, costs map[identity.NodeAddr]float64) bool {
	if p, ok := t.decide(now, costs); ok {
		d := t.setParent(now, p, t.decl.seq+1)
		t.recompute()
		return d
	}
	t.decl = declaration{parent: t.self, seq: t.decl.seq + 1, timestamp: unixSecs(now)}
	t.signed = false
	t.recompute()
	return false
}

// applySwitch takes a new parent.
func (t *Tree) applySwitch(now time.Time, parent identity.NodeAddr, trig Trigger, from identity.NodeAddr) {
	seq := t.decl.seq + 1
	flapped := t.setParent(now, parent, seq)
	t.recompute() // may demote to self-root; sign afterwards
	if t.sign() != nil {
		return
	}
	t.stats.ParentSwitches++
	// Upstream's message names the trigger; its harness counts "Parent
	// switched" over all three.
	attrs := []any{"new_parent", t.name(parent), "new_seq", seq, "new_root", t.root.String(), "depth", t.coords.depth()}
	switch trig {
	case TriggerFirstRTT:
		// Upstream logs the first-RTT hook from its MMP handler.
		t.mmpLog().Info("Parent switched after first RTT measurement", append(attrs, "trigger", "first-rtt")...)
	case TriggerPeriodic:
		t.log.Info("Parent switched via periodic cost re-evaluation", append(attrs, "trigger", "periodic")...)
	default:
		t.log.Info("Parent switched, invalidated downstream coord cache entries, announcing to all peers",
			append(attrs, "trigger", trig.String())...)
	}
	if flapped {
		t.noteFlap(trig.String())
	}
	t.sendAll(now)
	t.emit(now, Change{Kind: ChangeSwitch, Trigger: trig, From: from, FlapDampened: flapped})
}

// applySelfRoot promotes us to root.
func (t *Tree) applySelfRoot(now time.Time, trig Trigger, from identity.NodeAddr) {
	t.becomeRoot(now)
	if t.sign() != nil {
		return
	}
	t.stats.ParentSwitches++
	// Upstream's three lines, one per path (the first-RTT one from its
	// MMP handler); trigger is upstream's on the latter two, ours on the
	// first.
	root := t.root.String()
	switch trig {
	case TriggerFirstRTT:
		t.mmpLog().Info("Self-promoted to root after first RTT: smallest visible NodeAddr", "new_root", root, "trigger", "first-rtt")
	case TriggerPeriodic:
		t.log.Info("Self-promoted to root in periodic reeval: smallest visible NodeAddr", "new_root", root, "trigger", "periodic")
	default:
		t.log.Info("Self-promoted to root: smallest visible NodeAddr", "new_root", root, "trigger", trig.String())
	}
	t.sendAll(now)
	t.emit(now, Change{Kind: ChangeSelfRoot, Trigger: trig, From: from})
}

// classifyAnnounce runs upstream's decision ladder after an accepted
// announce from peer from.
func (t *Tree) classifyAnnounce(now time.Time, from identity.NodeAddr) {
	costs := t.peerCosts()
	if p, ok := t.decide(now, costs); ok {
		t.applySwitch(now, p, TriggerAnnounce, from)
		return
	}
	if t.IsRoot() {
		return
	}
	if t.shouldBeRoot() {
		t.applySelfRoot(now, TriggerAnnounce, from)
		return
	}
	if t.decl.parent != from {
		return
	}
	if t.peers[from].pos.contains(t.self) {
		t.stats.LoopDetected++
		t.log.Warn("Parent ancestry contains us — loop detected, dropping parent", "parent", t.name(from))
		dampened := t.recover(now, costs)
		if t.sign() != nil {
			return
		}
		t.sendAll(now)
		if dampened {
			t.noteFlap("loop-detected")
		}
		t.emit(now, Change{Kind: ChangeLoopDrop, Trigger: TriggerAnnounce, From: from, FlapDampened: dampened})
		return
	}
	// Same parent, new ancestry: re-declare with sequence+1, and re-announce
	// only if the address path changed (root, depth or any ancestor).
	old := t.coords.addrs
	oldRoot, oldDepth := t.root, t.coords.depth()
	flapped := t.setParent(now, from, t.decl.seq+1) // never a change here
	if flapped {
		t.noteFlap("ancestry-update")
	}
	t.recompute()
	if t.sign() != nil {
		return
	}
	changed := !slices.Equal(old, t.coords.addrs)
	if changed {
		t.stats.AncestryChanged++
		t.log.Info("Parent ancestry changed, re-announcing", "parent", t.name(from),
			"old_root", oldRoot.String(), "new_root", t.root.String(),
			"old_depth", oldDepth, "new_depth", t.coords.depth())
		t.sendAll(now)
	}
	t.emit(now, Change{Kind: ChangeAncestryUpdate, Trigger: TriggerAnnounce, From: from, PathChanged: changed, FlapDampened: flapped})
}

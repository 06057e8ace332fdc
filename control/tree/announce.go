package tree

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// HandleAnnounce runs upstream's TreeAnnounce receive pipeline on msg (the
// link message, starting with 0x10) from an authenticated peer: decode;
// sender must be up; ancestry entry 0 must be the sender; signature; the
// semantic ancestry rules; freshness (sequence above the stored one); and
// (ours) no contradiction with a declaration we hold signed by a node the
// ancestry names (ancestryContradiction). A
// rejected announce returns a *RejectError and changes nothing but its
// counter (a stale one still refreshes PeerView; a contradicted one also
// withdraws the sender's position, see withdraw). An accepted one is stored,
// echoed with our announce when it advertises a worse root than ours, and
// then drives parent selection. msg is not retained.
func (t *Tree) HandleAnnounce(now time.Time, from identity.NodeAddr, msg []byte) error {
	t.stats.Received++
	ann, err := wire.ParseTreeAnnounce(msg)
	if err != nil {
		t.stats.DecodeError++
		t.log.Debug("malformed TreeAnnounce", "from", from.Short(), "error", err)
		return &RejectError{Reason: ReasonDecodeError, Peer: from, Err: err}
	}
	ps := t.peers[from]
	pk, ok := t.env.PeerKey(from)
	if ps == nil || !ok {
		t.stats.UnknownPeer++
		t.log.Debug("TreeAnnounce from unknown peer", "from", from.Short())
		return &RejectError{Reason: ReasonUnknownPeer, Peer: from}
	}
	if node := ann.Node(); node != from {
		t.stats.AddrMismatch++
		t.log.Debug("TreeAnnounce node_addr mismatch", "from", from.Short(), "declared", node.Short())
		return &RejectError{Reason: ReasonAddrMismatch, Peer: from}
	}
	if !ps.checks.Take(now, checkBudget) {
		ps.deferred = append(ps.deferred[:0], msg...)
		t.stats.VerifyDeferred++
		t.log.Debug("TreeAnnounce over the peer's signature-check budget, deferred to the tick", "from", from.Short(),
			"seq", ann.Sequence)
		return &RejectError{Reason: ReasonDeferred, Peer: from}
	}
	ps.deferred = ps.deferred[:0] // a newer announce was checked: the deferred one is older
	t.sigBuf = ann.SigningBytes(t.sigBuf[:0])
	if err := pk.Verify(t.sigBuf, ann.Signature); err != nil {
		t.stats.SigFailed++
		t.log.Warn("TreeAnnounce signature verification failed", "from", t.name(from), "error", err)
		return &RejectError{Reason: ReasonSigFailed, Peer: from, Err: err}
	}
	if err := ann.Validate(); err != nil {
		t.stats.AncestryInvalid++
		t.log.Warn("Rejected TreeAnnounce with invalid ancestry", "from", t.name(from), "error", err)
		return &RejectError{Reason: ReasonAncestryInvalid, Peer: from, Err: err}
	}

	// Upstream records the position on the peer before the freshness check.
	ps.hasPosition, ps.positionDepth = true, ann.Ancestry.Len()-1
	if ps.hasDecl && ann.Sequence <= ps.decl.seq {
		t.stats.Stale++
		t.log.Debug("TreeAnnounce not fresher than existing, ignored", "from", from.Short(), "seq", ann.Sequence)
		return &RejectError{Reason: ReasonStale, Peer: from}
	}
	decl := declaration{parent: ann.Parent, seq: ann.Sequence, timestamp: ann.Timestamp}
	if at, ok := t.ancestryContradiction(ann.Ancestry); ok {
		t.stats.AncestryContradicted++
		t.log.Warn("Refused TreeAnnounce whose ancestry contradicts a signed declaration", "from", t.name(from),
			"node", t.name(at), "seq", ann.Sequence, "root", ann.Root().Short())
		t.withdraw(now, from, decl)
		return &RejectError{Reason: ReasonAncestryContradicted, Peer: from}
	}
	wasChild := ps.accepted && ps.decl.parent == t.self
	ps.accepted, ps.hasDecl = true, true
	ps.decl = decl
	ps.pos = positionFrom(ann.Ancestry)
	t.stats.Accepted++
	t.log.Debug("processed TreeAnnounce", "from", from.Short(), "seq", ann.Sequence,
		"depth", ps.pos.depth(), "root", ps.pos.root().Short())

	// A peer on a worse root has a stale view and can attach through us:
	// push our position back. Only the better-rooted side echoes.
	if t.root.Less(ps.pos.root()) {
		if err := t.sendTo(now, from); err != nil {
			t.log.Debug("failed to re-push TreeAnnounce on root disagreement", "peer", from.Short(), "error", err)
		}
	}
	if isChild := ann.Parent == t.self; isChild != wasChild {
		t.emit(now, Change{Kind: ChangeChildren, Trigger: TriggerAnnounce, From: from})
	}
	t.classifyAnnounce(now, from)
	return nil
}

// ancestryContradiction looks for proof, among the declarations we hold
// signed by their own nodes, that an announce's ancestry is false. Only
// the sender's own entry is signed; every entry beyond it is the sender's
// word (v1 carries no per-entry signatures). An entry naming a node whose
// declaration we hold — an active peer's newest, or ours — at that very
// declaration (same sequence and timestamp) must be followed by the parent
// that declaration names, or end the ancestry if it is a root
// declaration. A node signs one parent per sequence (upstream and fips-go
// bump the sequence before every re-declaration), so an honest ancestry,
// however stale, never fails this: an older or newer declaration of that
// node is not compared. It returns the node whose declaration the
// ancestry contradicts.
func (t *Tree) ancestryContradiction(a wire.Ancestry) (identity.NodeAddr, bool) {
	n := a.Len()
	for i := 1; i < n; i++ {
		e := a.At(i)
		var d declaration
		if e.NodeAddr == t.self {
			d = t.decl
		} else if ps := t.peers[e.NodeAddr]; ps != nil && ps.hasDecl {
			d = ps.decl
		} else {
			continue
		}
		if d.seq != e.Sequence || d.timestamp != e.Timestamp {
			continue
		}
		next := e.NodeAddr // a root entry: its declared parent is itself
		if i+1 < n {
			next = a.At(i + 1).NodeAddr
		}
		if d.parent != next {
			return e.NodeAddr, true
		}
	}
	return identity.NodeAddr{}, false
}

// withdraw stores decl, the newest declaration peer signed, as the
// reference for freshness but drops the peer's position: it is no parent,
// child or next-hop candidate until an announce of it is accepted. If it
// was our parent we take an alternative or become root (sequence+1) and
// announce to all, as on a loop drop.
func (t *Tree) withdraw(now time.Time, peer identity.NodeAddr, decl declaration) {
	ps := t.peers[peer]
	wasChild := ps.accepted && ps.decl.parent == t.self
	wasParent := !t.IsRoot() && t.decl.parent == peer
	ps.accepted, ps.hasDecl, ps.decl, ps.pos = false, true, decl, position{}
	if wasChild {
		t.emit(now, Change{Kind: ChangeChildren, Trigger: TriggerAnnounce, From: peer})
	}
	if !wasParent {
		return
	}
	t.log.Warn("Parent's TreeAnnounce refused, dropping parent", "parent", t.name(peer))
	dampened := t.recover(now, t.peerCosts())
	if t.sign() != nil {
		return
	}
	t.sendAll(now)
	if dampened {
		t.noteFlap("parent-refused")
	}
	t.emit(now, Change{Kind: ChangeParentRefused, Trigger: TriggerAnnounce, From: peer, FlapDampened: dampened})
}

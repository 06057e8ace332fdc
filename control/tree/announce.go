package tree

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// HandleAnnounce runs upstream's TreeAnnounce receive pipeline on msg (the
// link message, starting with 0x10) from an authenticated peer: decode;
// sender must be up; ancestry entry 0 must be the sender; signature; the
// semantic ancestry rules; freshness (sequence above the stored one). A
// rejected announce returns a *RejectError and changes nothing but its
// counter (a stale one still refreshes PeerView). An accepted one is stored,
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
	if ps.accepted && ann.Sequence <= ps.decl.seq {
		t.stats.Stale++
		t.log.Debug("TreeAnnounce not fresher than existing, ignored", "from", from.Short(), "seq", ann.Sequence)
		return &RejectError{Reason: ReasonStale, Peer: from}
	}
	wasChild := ps.accepted && ps.decl.parent == t.self
	ps.accepted = true
	ps.decl = declaration{parent: ann.Parent, seq: ann.Sequence, timestamp: ann.Timestamp}
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

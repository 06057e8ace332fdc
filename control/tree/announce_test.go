package tree

import (
	"errors"
	"slices"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Our own announce is well formed, signed by us and carries our coordinates.
func TestOwnAnnounceIsValid(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peer(1)
	if len(f.env.sent) != 1 || f.env.sent[0].to != a.NodeAddr() {
		t.Fatalf("PeerUp sent %v", f.env.sent)
	}
	check := func(msg []byte, wantSeq uint64) {
		t.Helper()
		ann, err := wire.ParseTreeAnnounce(msg)
		if err != nil {
			t.Fatal(err)
		}
		if err := ann.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := f.id.PublicKey().Verify(ann.SigningBytes(nil), ann.Signature); err != nil {
			t.Fatal(err)
		}
		if ann.Sequence != wantSeq || ann.Node() != f.tr.Self() {
			t.Fatalf("seq %d node %s", ann.Sequence, ann.Node().Short())
		}
		var addrs []identity.NodeAddr
		for i := range ann.Ancestry.Len() {
			addrs = append(addrs, ann.Ancestry.At(i).NodeAddr)
		}
		if !slices.Equal(addrs, f.tr.Coords()) {
			t.Fatalf("ancestry %v, coords %v", addrs, f.tr.Coords())
		}
		if e := ann.Ancestry.At(0); e.Sequence != ann.Sequence || e.Timestamp != ann.Timestamp {
			t.Fatalf("own entry %+v vs declaration seq %d ts %d", e, ann.Sequence, ann.Timestamp)
		}
	}
	check(f.env.sent[0].msg, 1)
	if ts := f.tr.Snapshot(); !ts.IsRoot || ts.DeclarationSequence != 1 || !ts.DeclarationSigned {
		t.Fatalf("initial snapshot %+v", ts)
	}

	// Attach under a synthetic root through a: seq 2, ancestry [self, a, root].
	root := addrOf(0)
	f.advance(1e9)
	f.mustAccept(a.NodeAddr(), childOf(t, a, 1, root))
	last := f.env.sent[len(f.env.sent)-1]
	check(last.msg, 2)
	if last.root != root || f.tr.Depth() != 2 {
		t.Fatalf("root %s depth %d", last.root.Short(), f.tr.Depth())
	}
}

func TestRejectsBadSignature(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peer(1)
	// A's valid signature over another declaration.
	other, _ := a.Sign(wire.AppendDeclaration(nil, a.NodeAddr(), a.NodeAddr(), 99, 88), seeded(3))
	msg := encodeAnnounce(t, 5, 2000, a.NodeAddr(), []wire.AncestryEntry{{NodeAddr: a.NodeAddr(), Sequence: 5, Timestamp: 2000}}, other[:])
	err := f.deliver(a.NodeAddr(), msg)
	if !errors.Is(err, ReasonSigFailed) {
		t.Fatalf("got %v", err)
	}
	// A zeroed signature is no signature either.
	msg = encodeAnnounce(t, 5, 2000, a.NodeAddr(), []wire.AncestryEntry{{NodeAddr: a.NodeAddr()}}, make([]byte, 64))
	if err := f.deliver(a.NodeAddr(), msg); !errors.Is(err, ReasonSigFailed) {
		t.Fatalf("got %v", err)
	}
	st := f.tr.Stats()
	if st.SigFailed != 2 || st.Accepted != 0 || st.Received != 2 {
		t.Fatalf("stats %+v", st)
	}
	if _, ok := f.tr.PeerCoords(a.NodeAddr()); ok {
		t.Fatal("state changed")
	}
	if v, _ := f.tr.PeerView(a.NodeAddr()); v.HasTreePosition {
		t.Fatal("position recorded")
	}
}

func TestRejectsStale(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peerAbove(1)
	msg := rootAnnounce(t, a, 5)
	f.mustAccept(a.NodeAddr(), msg)
	seq := f.tr.Sequence()
	for _, m := range [][]byte{msg, rootAnnounce(t, a, 4)} {
		if err := f.deliver(a.NodeAddr(), m); !errors.Is(err, ReasonStale) {
			t.Fatalf("got %v", err)
		}
	}
	if st := f.tr.Stats(); st.Stale != 2 || st.Accepted != 1 {
		t.Fatalf("stats %+v", st)
	}
	if f.tr.Sequence() != seq {
		t.Fatal("stale announce changed our declaration")
	}
	f.mustAccept(a.NodeAddr(), rootAnnounce(t, a, 6))
}

// The declaring node must be the sender, checked before the signature.
func TestRejectsAddrMismatch(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peer(1)
	bogus := addrOf(200)
	sig, _ := a.Sign(make([]byte, 48), seeded(1))
	msg := encodeAnnounce(t, 5, 2000, bogus, []wire.AncestryEntry{{NodeAddr: bogus, Sequence: 5, Timestamp: 2000}}, sig[:])
	err := f.deliver(a.NodeAddr(), msg)
	var re *RejectError
	if !errors.As(err, &re) || re.Reason != ReasonAddrMismatch || re.Peer != a.NodeAddr() {
		t.Fatalf("got %v", err)
	}
	if st := f.tr.Stats(); st.AddrMismatch != 1 || st.SigFailed != 0 || st.Accepted != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A signed announce whose advertised root is not the path minimum is
// ignored without touching our state or the peer's recorded position.
func TestRejectsInconsistentRoot(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peer(1)
	f.mustAccept(a.NodeAddr(), childOf(t, a, 1, addrOf(0, 5)))
	before := f.tr.Snapshot()
	view, _ := f.tr.PeerView(a.NodeAddr())

	fakeParent, fakeRoot := addrOf(0), addrOf(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)
	msg := signedAnnounce(t, a, fakeParent, 99, 12345, fakeParent, fakeRoot)
	err := f.deliver(a.NodeAddr(), msg)
	if !errors.Is(err, ReasonAncestryInvalid) || !errors.Is(err, wire.ErrValue) {
		t.Fatalf("got %v", err)
	}
	f.logged(" WARN fips::node::tree: Rejected TreeAnnounce with invalid ancestry from=" + a.NodeAddr().ShortHex() + " error=")
	after := f.tr.Snapshot()
	if after.Root != before.Root || after.Depth != before.Depth || after.Stats.Accepted != before.Stats.Accepted {
		t.Fatalf("state changed: %+v -> %+v", before, after)
	}
	if v, _ := f.tr.PeerView(a.NodeAddr()); v != view {
		t.Fatalf("peer view changed %+v -> %+v", view, v)
	}

	// The other semantic rules: a root with a parent entry, a non-root
	// without one, entry 1 not the declared parent.
	for _, m := range [][]byte{
		signedAnnounce(t, a, a.NodeAddr(), 100, 1, addrOf(0)),
		signedAnnounce(t, a, addrOf(0), 101, 1),
		signedAnnounce(t, a, addrOf(0), 102, 1, addrOf(0, 1), addrOf(0)),
	} {
		if err := f.deliver(a.NodeAddr(), m); !errors.Is(err, ReasonAncestryInvalid) {
			t.Fatalf("got %v", err)
		}
	}
	if f.tr.Stats().AncestryInvalid != 4 {
		t.Fatalf("stats %+v", f.tr.Stats())
	}
}

func TestRejectsUnknownPeer(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	stranger := testIdentity(t, 77)
	if err := f.deliver(stranger.NodeAddr(), rootAnnounce(t, stranger, 1)); !errors.Is(err, ReasonUnknownPeer) {
		t.Fatalf("got %v", err)
	}
	// Up in the Tree but without a key from the node: still unknown.
	f.tr.PeerUp(f.now, stranger.NodeAddr())
	if err := f.deliver(stranger.NodeAddr(), rootAnnounce(t, stranger, 1)); !errors.Is(err, ReasonUnknownPeer) {
		t.Fatalf("got %v", err)
	}
	// And after PeerDown the peer is unknown again.
	a := f.peer(1)
	f.tr.PeerDown(f.now, a.NodeAddr())
	if err := f.deliver(a.NodeAddr(), rootAnnounce(t, a, 1)); !errors.Is(err, ReasonUnknownPeer) {
		t.Fatalf("got %v", err)
	}
	if f.tr.Stats().UnknownPeer != 3 {
		t.Fatalf("stats %+v", f.tr.Stats())
	}
}

func TestRejectsMalformed(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peer(1)
	good := rootAnnounce(t, a, 1)
	bad := [][]byte{
		nil,
		good[:50],
		good[:len(good)-1],
		append([]byte{0x20}, good[1:]...),       // wrong type
		append([]byte{0x10, 0x02}, good[2:]...), // version
		append(slices.Clone(good[:34]), 0, 0),   // count 0, short
		append(slices.Clone(good[:34]), make([]byte, 66)...), // count 0
	}
	for i, m := range bad {
		err := f.deliver(a.NodeAddr(), m)
		var re *RejectError
		if !errors.As(err, &re) || re.Reason != ReasonDecodeError || re.Err == nil {
			t.Fatalf("case %d: got %v", i, err)
		}
	}
	if st := f.tr.Stats(); st.DecodeError != uint64(len(bad)) || st.Received != uint64(len(bad)) {
		t.Fatalf("stats %+v", st)
	}
	// Trailing bytes are ignored, as upstream does.
	f.mustAccept(a.NodeAddr(), append(slices.Clone(good), 1, 2, 3))
}

// A restarted peer (PeerDown, PeerUp) starts afresh: its sequence restarting
// at 1 is accepted, not stale (port note 13: full removal). Per-peer state
// does not outlive PeerDown.
func TestPeerRestartIsFullRemoval(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peerAbove(1)
	f.mustAccept(a.NodeAddr(), rootAnnounce(t, a, 10))
	f.tr.PeerDown(f.now, a.NodeAddr())
	f.tr.PeerUp(f.now, a.NodeAddr())
	if v, _ := f.tr.PeerView(a.NodeAddr()); v.HasTreePosition {
		t.Fatal("position survived the restart")
	}
	f.mustAccept(a.NodeAddr(), rootAnnounce(t, a, 1))

	for i := range 50 {
		p := f.peer(uint64(100 + i))
		f.mustAccept(p.NodeAddr(), rootAnnounce(t, p, 1))
		f.tr.PeerDown(f.now, p.NodeAddr())
	}
	f.tr.PeerDown(f.now, a.NodeAddr())
	if len(f.tr.peers) != 0 || len(f.tr.order) != 0 {
		t.Fatalf("%d peers left", len(f.tr.peers))
	}
	// PeerUp of a peer that is already up keeps its state and re-sends.
	b := f.peerAbove(300)
	f.mustAccept(b.NodeAddr(), rootAnnounce(t, b, 3))
	f.tr.PeerUp(f.now, b.NodeAddr())
	if _, ok := f.tr.PeerCoords(b.NodeAddr()); !ok {
		t.Fatal("PeerUp of an up peer dropped its state")
	}
	if err := f.deliver(b.NodeAddr(), rootAnnounce(t, b, 3)); !errors.Is(err, ReasonStale) {
		t.Fatalf("got %v", err)
	}
}

package tree

import (
	"errors"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// FuzzHandleAnnounce feeds arbitrary bytes from a known peer. With resign
// set, a message that parses is first given a valid signature by that
// peer, so the semantic checks and the decision ladder get exercised. It
// must never panic, must reject with a *RejectError, and must keep our own
// state consistent.
func FuzzHandleAnnounce(f *testing.F) {
	fx := newFixture(f, DefaultConfig())
	a := fx.peer(1)
	f.Add(rootAnnounce(f, a, 1), false)
	f.Add(childOf(f, a, 2, addrOf(0)), false)
	f.Add(childOf(f, a, 3, addrOf(0, 1), addrOf(0)), true)
	f.Add(signedAnnounce(f, a, fx.tr.Self(), 4, 5, fx.tr.Self(), addrOf(0)), true)
	f.Add([]byte{0x10, 0x01}, false)
	f.Add(make([]byte, 100), true)

	self := testIdentity(f, 1000)
	peer := a
	f.Fuzz(func(t *testing.T, data []byte, resign bool) {
		env := &fakeEnv{keys: map[identity.NodeAddr]identity.PublicKey{peer.NodeAddr(): peer.PublicKey()},
			costs: map[identity.NodeAddr]float64{}}
		now := t0
		env.now = &now
		tr := New(now, self, DefaultConfig(), env, nil, seeded(1))
		tr.PeerUp(now, peer.NodeAddr())
		// A first, valid position so later input meets existing state.
		if err := tr.HandleAnnounce(now, peer.NodeAddr(), childOf(t, peer, 1, addrOf(0, 2), addrOf(0))); err != nil {
			t.Fatal(err)
		}
		if resign {
			if ann, err := wire.ParseTreeAnnounce(data); err == nil && ann.Node() == peer.NodeAddr() {
				sig, err := peer.Sign(ann.SigningBytes(nil), seeded(2))
				if err != nil {
					t.Fatal(err)
				}
				copy(ann.Signature, sig[:]) // aliases data
			}
		}
		now = now.Add(time.Second)
		err := tr.HandleAnnounce(now, peer.NodeAddr(), data)
		if err != nil {
			var re *RejectError
			if !errors.As(err, &re) || re.Reason < ReasonDecodeError || re.Reason > ReasonStale {
				t.Fatalf("untyped error %v", err)
			}
		}
		tr.Tick(now.Add(time.Second))
		checkInvariants(t, tr)
	})
}

// checkInvariants: our coordinates run from us to our root, the root is
// their minimum, and the announce we would send is valid.
func checkInvariants(t *testing.T, tr *Tree) {
	t.Helper()
	c := tr.Coords()
	if len(c) == 0 || c[0] != tr.Self() || c[len(c)-1] != tr.Root() {
		t.Fatalf("coords %v root %s", c, tr.Root().Short())
	}
	for _, x := range c {
		if x.Less(tr.Root()) {
			t.Fatalf("root %s is not the minimum of %v", tr.Root().Short(), c)
		}
	}
	if tr.IsRoot() != (len(c) == 1) {
		t.Fatalf("is_root %v with coords %v", tr.IsRoot(), c)
	}
	ann, err := wire.ParseTreeAnnounce(tr.msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ann.Validate(); err != nil {
		t.Fatalf("own announce invalid: %v", err)
	}
}

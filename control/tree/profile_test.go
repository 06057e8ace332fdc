package tree

import (
	"log/slog"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// profiledEnv is fakeEnv whose peers in prof declared a next profile.
type profiledEnv struct {
	*fakeEnv
	prof map[identity.NodeAddr]wire.NodeProfile
}

func (e profiledEnv) PeerProfile(p identity.NodeAddr) (wire.NodeProfile, bool) {
	v, ok := e.prof[p]
	return v, ok
}

// A peer that declared a non-Full profile on a next link is never our
// parent, however cheap its path (docs/next.md §8); a Full one and a
// master link's peer (no profile) are candidates as before.
func TestNonFullPeersAreNoParents(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	env := profiledEnv{f.env, map[identity.NodeAddr]wire.NodeProfile{}}
	f.tr = New(f.now, f.id, DefaultConfig(), env, slog.New(slog.DiscardHandler), seeded(1))
	leaf, nonRouting, full := f.peer(1), f.peer(2), f.peer(3)
	env.prof[leaf.NodeAddr()] = wire.ProfileLeaf
	env.prof[nonRouting.NodeAddr()] = wire.ProfileNonRouting
	env.prof[full.NodeAddr()] = wire.ProfileFull
	root := addrOf(0)
	f.env.costs[leaf.NodeAddr()] = 1
	f.env.costs[nonRouting.NodeAddr()] = 1
	f.env.costs[full.NodeAddr()] = 9
	f.mustAccept(leaf.NodeAddr(), childOf(t, leaf, 1, root))
	f.mustAccept(nonRouting.NodeAddr(), childOf(t, nonRouting, 1, root))
	if f.parent() != f.tr.Self() {
		t.Fatalf("parent %s from non-Full peers only", f.parent().Short())
	}
	f.mustAccept(full.NodeAddr(), childOf(t, full, 1, root))
	if f.parent() != full.NodeAddr() {
		t.Fatalf("parent %s, want the Full peer", f.parent().Short())
	}
	// Without a declared profile (a master link) the cheap peer wins.
	delete(env.prof, leaf.NodeAddr())
	f.advance(time.Duration(DefaultConfig().HoldDownSecs+1) * time.Second)
	f.mustAccept(leaf.NodeAddr(), childOf(t, leaf, 2, root))
	if f.parent() != leaf.NodeAddr() {
		t.Fatalf("parent %s, want the master peer", f.parent().Short())
	}
}

// next's Leaf: it sends no TreeAnnounce, and attaches under its upstream
// even when its own address is the smaller (a node of another profile
// stays root there, since extending the peer's path would announce a
// root larger than itself); with no peer it is its own root.
func TestLeafAttachesAndAnnouncesNothing(t *testing.T) {
	for _, leaf := range []bool{false, true} {
		f := newFixture(t, DefaultConfig())
		f.tr.SetLeaf(leaf)
		if !f.tr.IsRoot() {
			t.Fatalf("leaf %v: not its own root alone", leaf)
		}
		up := f.peerAbove(1)
		f.mustAccept(up.NodeAddr(), rootAnnounce(t, up, 1))
		f.advance(time.Minute)
		f.tr.Tick(f.now)
		sent := f.env.sentTo(up.NodeAddr())
		if !leaf {
			if !f.tr.IsRoot() || sent == 0 {
				t.Fatalf("full node: root %v, %d announces", f.tr.IsRoot(), sent)
			}
			continue
		}
		if sent != 0 {
			t.Errorf("a leaf sent %d TreeAnnounces", sent)
		}
		if f.parent() != up.NodeAddr() || f.tr.Root() != up.NodeAddr() || f.tr.Depth() != 1 {
			t.Fatalf("leaf: parent %s root %s depth %d, want under its upstream", f.parent().Short(), f.tr.Root().Short(), f.tr.Depth())
		}
		if c := f.tr.Coords(); len(c) != 2 || c[0] != f.tr.Self() || c[1] != up.NodeAddr() {
			t.Errorf("leaf coords %v", c)
		}
	}
}

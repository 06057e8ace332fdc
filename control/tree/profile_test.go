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

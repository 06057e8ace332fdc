package bloom

import (
	"slices"
	"testing"

	"github.com/fips-go/fips/control/identity"
)

// A peer made a leaf dependent (next's NonRouting or Leaf peer) is in
// every filter we send, though it is no tree peer and sent no filter; the
// peers whose filters changed are owed an announce; clearing it, or the
// peer going down, takes it out again. show_bloom lists it.
func TestLeafDependentsInOutgoingFilters(t *testing.T) {
	s := newState(newFakeEnv())
	up, leaf := addr(1), addr(2)
	s.PeerUp(t0, up)
	s.PeerUp(t0, leaf)
	if f := s.OutgoingFilter(up); f.Contains(leaf) {
		t.Fatal("a plain non-tree peer is in our filter")
	}
	s.SetLeafDependent(t0, leaf, true)
	if f := s.OutgoingFilter(up); !f.Contains(leaf) || !f.Contains(self) {
		t.Fatal("the leaf dependent is not in the filter for our upstream")
	}
	snap := s.Snapshot(up, false)
	if snap.LeafDependentCount != 1 || !slices.Equal(snap.LeafDependents, []identity.NodeAddr{leaf}) {
		t.Fatalf("snapshot leaf dependents %d %v", snap.LeafDependentCount, snap.LeafDependents)
	}
	s.SetLeafDependent(t0, addr(9), true) // not a peer: ignored
	if got := s.LeafDependents(); len(got) != 1 {
		t.Fatalf("dependents %v", got)
	}
	s.PeerDown(t0, leaf)
	if f := s.OutgoingFilter(up); f.Contains(leaf) || len(s.LeafDependents()) != 0 {
		t.Fatal("a leaf dependent that went down is still advertised")
	}
	s.PeerUp(t0, leaf)
	s.SetLeafDependent(t0, leaf, true)
	s.SetLeafDependent(t0, leaf, false)
	if f := s.OutgoingFilter(up); f.Contains(leaf) {
		t.Fatal("a cleared leaf dependent is still advertised")
	}
}

package tree

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
)

func TestDistance(t *testing.T) {
	r, a, b, c, d := addrOf(0), addrOf(1), addrOf(2), addrOf(3), addrOf(4)
	p := func(x ...identity.NodeAddr) []identity.NodeAddr { return x }
	for _, tc := range []struct {
		x, y []identity.NodeAddr
		want int
	}{
		{p(r), p(r), 0},
		{p(a, r), p(a, r), 0},
		{p(a, r), p(b, r), 2},           // siblings
		{p(c, a, r), p(a, r), 1},        // ancestor
		{p(c, a, r), p(d, b, r), 4},     // cousins
		{p(c, a, r), p(r), 2},           // to the root
		{p(a, r), p(a, b), math.MaxInt}, // different roots
		{nil, p(r), math.MaxInt},
	} {
		if got := Distance(tc.x, tc.y); got != tc.want {
			t.Errorf("Distance(%v, %v) = %d, want %d", tc.x, tc.y, got, tc.want)
		}
		if got := Distance(tc.y, tc.x); got != tc.want {
			t.Errorf("Distance not symmetric for %v, %v", tc.x, tc.y)
		}
	}
}

// routingFixture: we are X under A under root R; B is a child of A (our
// sibling), C a child of R, E a child of us.
func routingFixture(t *testing.T) (f *fixture, a, b, c, e *identity.Identity) {
	f = newFixture(t, DefaultConfig())
	a, b, c, e = f.peer(1), f.peer(2), f.peer(3), f.peer(4)
	root := addrOf(0)
	f.attach(a, 1, root)
	f.mustAccept(b.NodeAddr(), childOf(t, b, 1, a.NodeAddr(), root))
	f.mustAccept(c.NodeAddr(), childOf(t, c, 1, root))
	f.mustAccept(e.NodeAddr(), childOf(t, e, 1, f.tr.Self(), a.NodeAddr(), root))
	if f.parent() != a.NodeAddr() {
		t.Fatal("setup: parent moved")
	}
	return
}

func TestFindNextHop(t *testing.T) {
	f, a, b, c, e := routingFixture(t)
	root, self := addrOf(0), f.tr.Self()
	dst := addrOf(0, 9, 9)
	all := func(identity.NodeAddr) bool { return true }
	p := func(x ...identity.NodeAddr) []identity.NodeAddr { return x }
	for _, tc := range []struct {
		name string
		dest []identity.NodeAddr
		want identity.NodeAddr
		ok   bool
	}{
		{"below sibling", p(dst, b.NodeAddr(), a.NodeAddr(), root), b.NodeAddr(), true},
		{"below C", p(dst, c.NodeAddr(), root), c.NodeAddr(), true},
		{"below child", p(dst, e.NodeAddr(), self, a.NodeAddr(), root), e.NodeAddr(), true},
		{"ourselves", f.tr.Coords(), identity.NodeAddr{}, false},
		{"other root", p(dst, addrOf(0, 0, 1)), identity.NodeAddr{}, false},
		{"empty", nil, identity.NodeAddr{}, false},
	} {
		got, ok := f.tr.FindNextHop(tc.dest, all)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: got %s %v, want %s %v", tc.name, got.Short(), ok, tc.want.Short(), tc.ok)
		}
	}
	// The root itself: A and C are both one hop away; the smaller wins.
	want := a.NodeAddr()
	if c.NodeAddr().Less(want) {
		want = c.NodeAddr()
	}
	if got, ok := f.tr.FindNextHop(p(root), nil); !ok || got != want {
		t.Errorf("tie: got %s, want %s", got.Short(), want.Short())
	}
	// canSend is asked about the winner only.
	var asked []identity.NodeAddr
	got, ok := f.tr.FindNextHop(p(dst, b.NodeAddr(), a.NodeAddr(), root), func(x identity.NodeAddr) bool {
		asked = append(asked, x)
		return false
	})
	if ok || !slices.Equal(asked, []identity.NodeAddr{b.NodeAddr()}) {
		t.Errorf("blocked winner: got %s %v, asked %v", got.Short(), ok, asked)
	}
}

func TestTreePeersAndViews(t *testing.T) {
	f, a, b, c, e := routingFixture(t)
	for _, tc := range []struct {
		id                  *identity.Identity
		tree, parent, child bool
		depth               int
	}{
		{a, true, true, false, 1},
		{b, false, false, false, 2},
		{c, false, false, false, 1},
		{e, true, false, true, 3},
	} {
		v, ok := f.tr.PeerView(tc.id.NodeAddr())
		if !ok || f.tr.IsTreePeer(tc.id.NodeAddr()) != tc.tree || v.IsParent != tc.parent || v.IsChild != tc.child ||
			!v.HasTreePosition || v.Depth != tc.depth {
			t.Errorf("%s: view %+v tree %v", tc.id.NodeAddr().Short(), v, f.tr.IsTreePeer(tc.id.NodeAddr()))
		}
	}
	if _, ok := f.tr.PeerView(addrOf(7)); ok {
		t.Error("view of a stranger")
	}
	if pc, ok := f.tr.PeerCoords(b.NodeAddr()); !ok || len(pc) != 3 || pc[0] != b.NodeAddr() {
		t.Errorf("peer coords %v", pc)
	}
}

func TestSnapshot(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	raw, err := json.Marshal(f.tr.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	// upstream's show_tree keys, less root_npub and parent_display_name,
	// which the node resolves.
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"declaration_sequence", "declaration_signed", "depth", "is_root", "my_coords", "my_node_addr",
		"parent", "peer_tree_count", "peers", "root", "stats"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v", keys)
	}
	self := f.tr.Self().String()
	if m["my_node_addr"] != self || m["parent"] != self || m["root"] != self || m["depth"] != 0.0 ||
		m["declaration_sequence"] != 1.0 || m["declaration_signed"] != true || m["is_root"] != true ||
		string(mustJSON(t, m["peers"])) != "[]" || string(mustJSON(t, m["my_coords"])) != `["`+self+`"]` {
		t.Fatalf("snapshot %s", raw)
	}
	// The stats object renders in upstream's (alphabetical) key order,
	// with fips-go's ancestry_contradicted and verify_deferred in their
	// places.
	stats := string(mustJSON(t, f.tr.Stats()))
	wantStats := `{"accepted":0,"addr_mismatch":0,"ancestry_changed":0,"ancestry_contradicted":0,"ancestry_invalid":0,"decode_error":0,` +
		`"flap_dampened":0,"loop_detected":0,"outbound_sign_failed":0,"parent_losses":0,"parent_switches":0,` +
		`"rate_limited":0,"received":0,"send_failed":0,"sent":0,"sig_failed":0,"stale":0,"unknown_peer":0,"verify_deferred":0}`
	if stats != wantStats {
		t.Fatalf("stats %s", stats)
	}

	// Peers: ours and a peer on another root (distance usize::MAX).
	a := f.peer(1)
	o := f.peerAbove(50)
	f.attach(a, 1, addrOf(0))
	f.mustAccept(o.NodeAddr(), rootAnnounce(t, o, 1))
	s := f.tr.Snapshot()
	if s.PeerTreeCount != 2 || len(s.Peers) != 2 || s.Parent != a.NodeAddr() || s.Depth != 2 {
		t.Fatalf("snapshot %+v", s)
	}
	for _, p := range s.Peers {
		switch p.NodeAddr {
		case a.NodeAddr():
			if p.DistanceToUs != 1 || p.Depth != 1 || p.Root != addrOf(0) {
				t.Errorf("parent entry %+v", p)
			}
		case o.NodeAddr():
			if p.DistanceToUs != math.MaxUint64 || p.Depth != 0 || !slices.Equal(p.Coords, []identity.NodeAddr{o.NodeAddr()}) {
				t.Errorf("other-root entry %+v", p)
			}
		}
	}
	if !slices.IsSortedFunc(s.Peers, func(x, y PeerSnapshot) int { return x.NodeAddr.Compare(y.NodeAddr) }) {
		t.Error("peers not in address order")
	}
	if !strings.Contains(string(mustJSON(t, s)), `"distance_to_us":18446744073709551615`) {
		t.Error("usize::MAX not rendered")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each transition's effects, as upstream applies them.
func TestChangeEffects(t *testing.T) {
	self, root, from := addrOf(5), addrOf(0), addrOf(7)
	for _, tc := range []struct {
		c          Change
		via, other bool
		reset      bool
		bloom      BloomMark
	}{
		{Change{Kind: ChangeSwitch}, true, false, true, BloomAll},
		{Change{Kind: ChangeSelfRoot, Root: self}, false, true, true, BloomAll},
		{Change{Kind: ChangeLoopDrop, Root: root}, true, true, true, BloomNone},
		{Change{Kind: ChangeAncestryUpdate, PathChanged: true, From: from}, true, false, true, BloomChanged},
		{Change{Kind: ChangeAncestryUpdate}, true, false, true, BloomNone},
		{Change{Kind: ChangeParentLost, Root: root}, true, true, false, BloomNone},
	} {
		tc.c.Self = self
		r, ok := tc.c.InvalidateOtherRoots()
		if tc.c.InvalidateViaSelf() != tc.via || ok != tc.other || (ok && r != tc.c.Root) ||
			tc.c.ResetLookupBackoff() != tc.reset || tc.c.Bloom() != tc.bloom {
			t.Errorf("%v: via %v other %v reset %v bloom %v", tc.c.Kind, tc.c.InvalidateViaSelf(), ok,
				tc.c.ResetLookupBackoff(), tc.c.Bloom())
		}
		if tc.c.Kind.String() == "unknown" {
			t.Errorf("kind %d has no name", tc.c.Kind)
		}
	}
}

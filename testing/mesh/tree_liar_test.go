package mesh

import (
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Issue 27 item 4 on whole nodes: a liar among real Cores sends its
// peers, over its authenticated links, a TreeAnnounce signed by itself
// that claims a real node (the hub) as its parent at the hub's current
// declaration, with a root no node has above it. The liar's neighbours
// are all linked to the hub, so each holds the hub's own signed
// declaration, refuses the announce and counts it: the fake root reaches
// nobody, fips-go or upstream behind them, the tree stays on the real
// root and datagrams still cross the mesh.
func TestTreeLiarNamingTheHubContained(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upstream bool // the nodes not linked to the liar behave as upstream's
	}{{"fips-go", false}, {"mixed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			testTreeLiar(t, tc.upstream)
		})
	}
}

func testTreeLiar(t *testing.T, upstream bool) {
	net := newMixedNet(27)
	// Keys first: the root and the hub decide who runs what.
	ids := make([]*identity.Identity, 8)
	for i := range ids {
		id, err := identity.Generate(net.keys)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	root := ids[0].NodeAddr()
	for _, id := range ids {
		if id.NodeAddr().Less(root) {
			root = id.NodeAddr()
		}
	}
	// The hub: a node that is not the root; the liar links to it and to
	// its two ring neighbours.
	hubIdx := slices.IndexFunc(ids, func(id *identity.Identity) bool { return id.NodeAddr() != root })
	near := []int{hubIdx, (hubIdx + 1) % 8, (hubIdx + 7) % 8}
	honest := make([]*Node, 8)
	for i, id := range ids {
		im := implFipsGo
		if upstream && !slices.Contains(near, i) {
			im = implUpstream
		}
		net.impls = append(net.impls, im)
		honest[i] = net.AddNodeWithIdentity(id)
	}
	// A ring with two chords: every node has a second path.
	for i := range honest {
		net.Connect(honest[i], honest[(i+1)%len(honest)], 3*time.Millisecond, 0)
	}
	net.Connect(honest[0], honest[4], 3*time.Millisecond, 0)
	net.Connect(honest[2], honest[6], 3*time.Millisecond, 0)
	hub := honest[hubIdx]
	linked := []*Node{honest[near[0]], honest[near[1]], honest[near[2]]}
	liar := net.add(t, implFipsGo, &root)
	for _, n := range linked {
		net.Connect(liar, n, 3*time.Millisecond, 0)
	}
	all := append(slices.Clone(honest), liar)
	if _, ok := net.RunUntil(func() bool { ok, _ := converged(all); return ok }, 5*time.Minute); !ok {
		_, why := converged(all)
		t.Fatalf("not converged: %s", why)
	}
	net.Run(10 * time.Second)

	// The lie: sequence far above the liar's own, so its Tree's later
	// (true) announces are stale to its peers.
	var zero identity.NodeAddr
	_, hubSeq, hubTs := hub.Core.Tree().Declaration()
	_, seq, _ := liar.Core.Tree().Declaration()
	seq += 1000
	ts := uint64(net.Now().Unix())
	entries := []wire.AncestryEntry{
		{NodeAddr: liar.ID.NodeAddr(), Sequence: seq, Timestamp: ts},
		{NodeAddr: hub.ID.NodeAddr(), Sequence: hubSeq, Timestamp: hubTs},
		{NodeAddr: zero, Sequence: 1, Timestamp: ts},
	}
	sig, err := liar.ID.Sign(wire.AppendDeclaration(nil, liar.ID.NodeAddr(), hub.ID.NodeAddr(), seq, ts), nil)
	if err != nil {
		t.Fatal(err)
	}
	ann := wire.TreeAnnounce{Sequence: seq, Timestamp: ts, Parent: hub.ID.NodeAddr(), Ancestry: wire.AncestryOf(entries...), Signature: sig[:]}
	msg := make([]byte, ann.Len())
	if _, err := ann.MarshalTo(msg); err != nil {
		t.Fatal(err)
	}
	for _, n := range linked {
		p := liar.Core.Peers().Peer(n.ID.NodeAddr())
		if p == nil {
			t.Fatalf("liar not linked to %s", n.ID.NodeAddr().Short())
		}
		if err := liar.Core.Peers().SendLink(net.Now(), p, 0, msg); err != nil {
			t.Fatal(err)
		}
	}
	net.Run(30 * time.Second)

	for _, n := range honest {
		tr := n.Core.Tree()
		if tr.Root() != root {
			t.Fatalf("node %s has root %s, want %s", n.ID.NodeAddr().Short(), tr.Root().Short(), root.Short())
		}
		if p, ok := tr.Parent(); ok && p == liar.ID.NodeAddr() {
			t.Fatalf("node %s keeps the liar as parent", n.ID.NodeAddr().Short())
		}
	}
	if ok, why := converged(honest); !ok {
		t.Fatalf("honest nodes: %s", why)
	}
	for _, n := range linked {
		if c := n.Core.Tree().Stats().AncestryContradicted; c != 1 {
			t.Errorf("node %s counted %d contradictions, want 1", n.ID.NodeAddr().Short(), c)
		}
		if _, ok := n.Core.Tree().PeerCoords(liar.ID.NodeAddr()); ok {
			t.Errorf("node %s holds a position for the liar", n.ID.NodeAddr().Short())
		}
	}

	// Datagrams still cross the mesh, both ways, between the hub's far side
	// and a node of the other half.
	x, y := honest[(hubIdx+4)%8], hub
	x.Core.LearnIdentity(y.ID.PublicKey())
	y.Core.LearnIdentity(x.ID.PublicKey())
	for _, pair := range [][2]*Node{{x, y}, {y, x}} {
		from, to := pair[0], pair[1]
		to.Received = nil
		if _, ok := net.RunUntil(func() bool {
			_ = from.Core.Send(net.Now(), to.ID.NodeAddr(), 1, 1, []byte("after the lie"))
			return len(to.Received) > 0
		}, time.Minute); !ok {
			t.Fatalf("%s never reached %s", from.ID.NodeAddr().Short(), to.ID.NodeAddr().Short())
		}
	}
}

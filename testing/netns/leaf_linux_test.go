//go:build linux

package netns

import (
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// TestNextLeafNode: a line A – B – L of nodes speaking upstream next's
// format, L with node.leaf_only (next's Leaf) and the smallest address
// of the three. L declares Leaf on its link, sends no TreeAnnounce and
// does not make itself root, though a Full node with its address would
// be the root of all: it attaches under B, and A and B keep their own
// root. Sessions reach L by name both ways through B.
func TestNextLeafNode(t *testing.T) {
	m := New(t, Options{IPv6: true, NodeConfig: "  wire_format: v1\n"})
	a, b, l := m.AddNode("a"), m.AddNode("b"), m.AddNode("l")
	for l.ID.NodeAddr().Compare(a.ID.NodeAddr()) > 0 || l.ID.NodeAddr().Compare(b.ID.NodeAddr()) > 0 {
		id, err := identity.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		l.ID = id
	}
	m.Link(a, b)
	m.Link(b, l)
	l.NodeConfig = "  leaf_only: true\n"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("A:\n%s\nB:\n%s\nL:\n%s", a.Logs(), b.Logs(), l.Logs())
		}
	})
	m.Start()
	root := a.NodeAddr()
	if b.NodeAddr() < root {
		root = b.NodeAddr()
	}
	var tv TreeView
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if tv, err = l.Tree(); err == nil && tv.Root == root && tv.Depth >= 1 && tv.MyCoords[1] == b.NodeAddr() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("L's tree: %+v (err %v), want under B with root %s", tv, err, root)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range []*Node{a, b} {
		if got, err := n.Tree(); err != nil || got.Root != root {
			t.Fatalf("%s's root %s (%v), want %s: the leaf took no part", n.Name, got.Root, err, root)
		}
	}
	if got := showPeerFormats(t, b)[l.Npub()]; got != "v1/leaf" {
		t.Errorf("B's link to L: %q, want v1/leaf", got)
	}
	var st struct {
		Stats struct {
			Sent uint64 `json:"sent"`
		} `json:"stats"`
	}
	if err := l.Call("show_tree", nil, &st); err != nil || st.Stats.Sent != 0 {
		t.Errorf("L sent %d TreeAnnounces (%v)", st.Stats.Sent, err)
	}
	addrL := resolve(t, m, a, l)
	addrA := resolve(t, m, l, a)
	// L sends B a filter, but it is no tree peer, so what spreads is B's
	// own filter with L as a leaf dependent (next's rule): A's filter from
	// B comes to hold two nodes.
	deadline = time.Now().Add(30 * time.Second)
	for {
		var bl struct {
			PeerFilters []struct {
				EstimatedCount *float64 `json:"estimated_count"`
			} `json:"peer_filters"`
		}
		if err := a.Call("show_bloom", nil, &bl); err == nil && len(bl.PeerFilters) == 1 &&
			bl.PeerFilters[0].EstimatedCount != nil && *bl.PeerFilters[0].EstimatedCount > 1.5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's filter from B never held L: %+v", bl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var deps struct {
		LeafDependents []string `json:"leaf_dependents"`
	}
	if err := b.Call("show_bloom", nil, &deps); err != nil || len(deps.LeafDependents) != 1 || deps.LeafDependents[0] != l.NodeAddr() {
		t.Errorf("B's leaf dependents %v (%v), want L", deps.LeafDependents, err)
	}
	waitReply(t, m, a, addrL, 20*time.Second)
	waitReply(t, m, l, addrA, 20*time.Second)
	for _, d := range []struct {
		from string
		to   *Node
	}{{"a", l}, {"l", a}} {
		out, err := m.Exec(d.from, "ping", "-6", "-c", "5", "-i", "0.2", "-W", "2", d.to.Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "5 received") {
			t.Fatalf("ping6 %s → %s by name: %v\n%s", d.from, d.to.Name, err, out)
		}
	}
}

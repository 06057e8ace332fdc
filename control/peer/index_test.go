package peer

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// registered is the set of receiver indices the Manager routes by.
func registered(m *Manager) map[uint32]bool {
	out := map[uint32]bool{}
	for k := range m.byIndex {
		out[k.idx] = true
	}
	return out
}

// sameIndices fails unless what node reported through IndexObserver is
// exactly what its Manager routes by, and was reported in order.
func sameIndices(t *testing.T, nodes ...*simNode) {
	t.Helper()
	for _, n := range nodes {
		if len(n.indexErrs) > 0 {
			t.Fatalf("%s: %v", n.id.NodeAddr().Short(), n.indexErrs)
		}
		want := registered(n.m)
		if !maps.Equal(want, n.indices) && !(len(want) == 0 && len(n.indices) == 0) {
			t.Fatalf("%s: observer has %x, manager routes by %x", n.id.NodeAddr().Short(),
				slices.Sorted(maps.Keys(n.indices)), slices.Sorted(maps.Keys(want)))
		}
	}
}

func indexSet(idx ...uint32) map[uint32]bool {
	out := map[uint32]bool{}
	for _, i := range idx {
		out[i] = true
	}
	return out
}

// TestIndexObserverLifecycle: a link's index is reported when it comes
// up, a rekey adds the new index and keeps the old one for the drain
// window, the drain's end removes the old one, and teardown removes
// everything — with an index filter in the network (xdp_fips's links map)
// that never drops a frame of a live session.
func TestIndexObserverLifecycle(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RekeyAfter, cfg.RekeyJitter = 30*time.Second, 0
	n := newSimNet(t, 7)
	n.filter = true
	a, b := n.add(1, cfg), n.add(2, cfg)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	sameIndices(t, a, b)
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	if !maps.Equal(a.indices, indexSet(pa.OurIndex())) || !maps.Equal(b.indices, indexSet(pb.OurIndex())) {
		t.Fatalf("after link up: a %x (our %x), b %x (our %x)", slices.Sorted(maps.Keys(a.indices)), pa.OurIndex(),
			slices.Sorted(maps.Keys(b.indices)), pb.OurIndex())
	}

	oldA := pa.OurIndex()
	const tick = 100 * time.Millisecond
	for pa.OurIndex() == oldA {
		if n.now.Sub(time.Unix(1_700_000_000, 0)) > 10*time.Minute {
			t.Fatal("no rekey after 10 simulated minutes")
		}
		n.advance(tick, tick)
		sameIndices(t, a, b)
	}
	if !pa.Draining() {
		t.Fatal("cut over, but not draining")
	}
	if !a.indices[oldA] || !a.indices[pa.OurIndex()] {
		t.Fatalf("during the drain a reports %x, want old %x and new %x", slices.Sorted(maps.Keys(a.indices)), oldA, pa.OurIndex())
	}
	for pa.Draining() || pb.Draining() {
		n.advance(tick, tick)
		sameIndices(t, a, b)
	}
	if a.indices[oldA] {
		t.Fatalf("old index %x still reported after the drain", oldA)
	}
	for i := range 50 {
		if err := a.m.SendLink(n.now, pa, 0, lookupMsg(i)); err != nil {
			t.Fatal(err)
		}
	}
	n.deliver()
	if len(b.msgs) != 50 {
		t.Fatalf("b got %d of 50 frames after the rekey", len(b.msgs))
	}
	a.m.Disconnect(n.now, pa, 0, false)
	n.deliver()
	sameIndices(t, a, b)
	if len(a.indices) != 0 || len(b.indices) != 0 {
		t.Fatalf("after teardown: a %x, b %x", slices.Sorted(maps.Keys(a.indices)), slices.Sorted(maps.Keys(b.indices)))
	}
	if n.filtered != 0 {
		t.Errorf("the index filter dropped %d frames of live sessions", n.filtered)
	}
}

// TestIndexObserverUnderLoss: rekeys from both sides under loss and
// reordering keep the reported set equal to the routing table at every
// step, and the filter drops no data frame a live session could open.
func TestIndexObserverUnderLoss(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RekeyAfter = 20 * time.Second
	n := newSimNet(t, 99)
	a, b := n.add(1, cfg), n.add(2, cfg)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	n.filter, n.loss, n.reorder = true, 0.05, true
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	const tick = 100 * time.Millisecond
	sent := 0
	for a.m.Stats().RekeyCutovers < 8 || b.m.Stats().RekeyCutovers < 8 {
		if n.now.Sub(time.Unix(1_700_000_000, 0)) > 2*time.Hour {
			t.Fatalf("only %d/%d cutovers", a.m.Stats().RekeyCutovers, b.m.Stats().RekeyCutovers)
		}
		if pa != a.m.Peer(b.id.NodeAddr()) || pb != b.m.Peer(a.id.NodeAddr()) {
			t.Fatal("link replaced during rekeys")
		}
		sent++
		if err := a.m.SendLink(n.now, pa, 0, lookupMsg(sent)); err != nil {
			t.Fatal(err)
		}
		n.advance(tick, tick)
		sameIndices(t, a, b)
	}
	// Frames to an index that drained away are what the filter is for;
	// with a 5 s drain window and 100 ms delivery there are none.
	if n.filtered != 0 {
		t.Errorf("filter dropped %d frames", n.filtered)
	}
	t.Logf("%d data frames, %d/%d cutovers, %d dropped by the network", sent, a.m.Stats().RekeyCutovers, b.m.Stats().RekeyCutovers, n.dropped)
}

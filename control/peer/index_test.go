package peer

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// registered is the set of receiver indices the Manager routes by, or
// has reported ahead for a v1 handshake (preIndex).
func registered(m *Manager) map[uint32]bool {
	out := map[uint32]bool{}
	for k := range m.byIndex {
		out[k.idx] = true
	}
	for k := range m.preIndexed {
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

// TestV1IndexReportedAtMsg2: a v1 responder reports its index when it
// sends msg2, before msg3 (the initiator sends under it right after
// msg3, and an XDP program must not drop those frames), withdraws it
// when the handshake expires, and a v1 link through rekeys keeps the
// observer's set equal to what the manager routes by, with the index
// filter dropping no frame.
func TestV1IndexReportedAtMsg2(t *testing.T) {
	cfg := v1Config(WireV1)
	cfg.RekeyAfter, cfg.RekeyJitter = 30*time.Second, 0
	n := newSimNet(t, 17)
	n.filter = true
	a, b := n.add(1, cfg), n.add(2, cfg)
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	m1 := n.queue[0]
	n.queue = n.queue[:0]
	b.m.HandlePacket(n.now, 1, m1.from, m1.data)
	h, err := wire.ParseFMPv1Handshake(n.queue[0].data)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(b.indices, indexSet(h.SenderIndex)) {
		t.Fatalf("after msg2 b reports %x, want its index %x", slices.Sorted(maps.Keys(b.indices)), h.SenderIndex)
	}
	sameIndices(t, b)
	n.queue = n.queue[:0] // msg2 lost, and the resent msg1s
	n.cut[[2]transport.Addr{a.addr, b.addr}] = true
	n.advance(cfg.HandshakeTimeout+time.Second, time.Second)
	delete(n.cut, [2]transport.Addr{a.addr, b.addr})
	if len(b.indices) != 0 || len(a.indices) != 0 {
		t.Fatalf("after the handshake expired: a %x, b %x", slices.Sorted(maps.Keys(a.indices)), slices.Sorted(maps.Keys(b.indices)))
	}
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, a, b)
	sameIndices(t, a, b)
	pa := a.m.Peer(b.id.NodeAddr())
	first := pa.OurIndex()
	for end := n.now.Add(5 * time.Minute); n.now.Before(end); {
		n.advance(100*time.Millisecond, 100*time.Millisecond)
		sameIndices(t, a, b)
	}
	if pa.OurIndex() == first {
		t.Fatal("no rekey in 5 simulated minutes")
	}
	if n.filtered != 0 {
		t.Fatalf("the index filter dropped %d frames", n.filtered)
	}
}

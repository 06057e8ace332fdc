package bloom

import (
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

const ms = time.Millisecond

var self = addr(0)

func newState(env Env) *State { return New(self, DefaultConfig(), env, nil) }

func mustAccept(t *testing.T, s *State, from identity.NodeAddr, msg []byte) {
	t.Helper()
	if err := s.HandleFilterAnnounce(t0, from, msg); err != nil {
		t.Fatalf("announce from %s rejected: %v", from.Short(), err)
	}
}

func wantReject(t *testing.T, err error, r Reason) {
	t.Helper()
	var re *RejectError
	if !errors.As(err, &re) || re.Reason != r || !errors.Is(err, r.Err()) {
		t.Fatalf("got %v, want reason %v", err, r)
	}
}

func TestAcceptsSubCapFilter(t *testing.T) {
	s := newState(newFakeEnv())
	p := addr(1)
	s.PeerUp(t0, p)
	f := NewFilter()
	for i := 0; i < 50; i++ {
		f.Insert(addr(1000 + i))
	}
	mustAccept(t, s, p, announce(t, 1, f))
	info, _ := s.Peer(p)
	got, ok := s.InboundFilter(p)
	if !info.HasFilter || info.FilterSequence != 1 || !ok || !got.Equal(&f) || !info.ReceivedAt.Equal(t0) {
		t.Fatalf("stored %+v", info)
	}
	st := s.Stats()
	if st.Received != 1 || st.Accepted != 1 || st.FillExceeded != 0 {
		t.Fatalf("stats %+v", st)
	}
	if !s.MayReach(p, addr(1000)) || s.MayReach(p, addr(5000)) || s.MayReach(addr(9), addr(1000)) {
		t.Fatal("MayReach")
	}
}

func TestFPRCapRejectsAllOnes(t *testing.T) {
	s := newState(newFakeEnv())
	p := addr(1)
	s.PeerUp(t0, p)
	err := s.HandleFilterAnnounce(t0, p, announceK(t, 1, 5, allOnes()))
	wantReject(t, err, ReasonFillExceeded)
	info, _ := s.Peer(p)
	if info.HasFilter || info.FilterSequence != 0 {
		t.Fatalf("poison stored: %+v", info)
	}
	if st := s.Stats(); st.FillExceeded != 1 || st.Accepted != 0 || st.Received != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A rejected filter keeps the previous filter and sequence; a later
// compliant one at the rejected sequence is accepted.
func TestFPRCapKeepsPreviousFilterAndSequence(t *testing.T) {
	s := newState(newFakeEnv())
	p := addr(1)
	s.PeerUp(t0, p)
	good := filterOf(addr(10), addr(11))
	mustAccept(t, s, p, announce(t, 1, good))

	wantReject(t, s.HandleFilterAnnounce(t0, p, announceK(t, 2, 5, allOnes())), ReasonFillExceeded)
	info, _ := s.Peer(p)
	kept, _ := s.InboundFilter(p)
	if info.FilterSequence != 1 || !kept.Equal(&good) {
		t.Fatalf("after rejection: seq %d, filter changed=%v", info.FilterSequence, !kept.Equal(&good))
	}
	if !s.MayReach(p, addr(10)) || s.MayReach(p, addr(999)) {
		t.Fatal("poison must not make everything reachable")
	}
	if !s.OverCap(p) || s.OverCap(addr(9)) {
		t.Fatal("OverCap: the refusal is not remembered, or an unknown peer is over the cap")
	}
	// A stale over-cap announce is refused as stale: it says nothing new.
	next := filterOf(addr(12))
	mustAccept(t, s, p, announce(t, 2, next))
	if s.OverCap(p) {
		t.Fatal("OverCap still set after an accepted filter")
	}
	wantReject(t, s.HandleFilterAnnounce(t0, p, announceK(t, 2, 5, allOnes())), ReasonStale)
	if s.OverCap(p) {
		t.Fatal("a stale announce set OverCap")
	}
	if info, _ := s.Peer(p); info.FilterSequence != 2 {
		t.Fatalf("seq %d", info.FilterSequence)
	}
	if st := s.Stats(); st.FillExceeded != 1 || st.Accepted != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSequenceNotAdvancedAllowsRecovery(t *testing.T) {
	s := newState(newFakeEnv())
	p := addr(1)
	s.PeerUp(t0, p)
	wantReject(t, s.HandleFilterAnnounce(t0, p, announceK(t, 1, 5, allOnes())), ReasonFillExceeded)
	mustAccept(t, s, p, announce(t, 1, filterOf(addr(5))))
	if info, _ := s.Peer(p); !info.HasFilter || info.FilterSequence != 1 {
		t.Fatalf("%+v", info)
	}
}

// rawAnnounce builds a FilterAnnounce link message byte by byte (0x20,
// sequence LE, hash count, size class 1, 1024 filter bytes) with the
// first setBits bits set, independently of the wire encoder.
func rawAnnounce(seq uint64, k uint8, setBits int) []byte {
	b := make([]byte, 11+FilterBytes)
	b[0] = 0x20
	for i := 0; i < 8; i++ {
		b[1+i] = byte(seq >> (8 * i))
	}
	b[9], b[10] = k, 1
	for i := 0; i < setBits; i++ {
		b[11+i/8] |= 1 << (i % 8)
	}
	return b
}

// Issue 27 item 8: the FPR cap used to be computed with the sender's hash
// count, so k=255 made a filter with 99.35% of its bits set pass
// (0.9935^255 = 0.19 under the 0.20 cap). v1 fixes k=5: any other k is refused as
// non-v1 and counted, and the cap is computed at k=5, so a filter an
// upstream node sends (k=5, under the cap) is still accepted.
func TestSenderHashCountCannotLiftFPRCap(t *testing.T) {
	s := newState(newFakeEnv())
	p := addr(1)
	s.PeerUp(t0, p)
	poison := FilterBits * 9935 / 10000 // fpr 0.19 at k=255, 0.968 at k=5
	if f := float64(poison) / FilterBits; math.Pow(f, 255) > 0.20 || math.Pow(f, 5) < 0.9 {
		t.Fatalf("test filter miscomputed: fill %v", f)
	}
	for i, k := range []uint8{255, 3, 6} {
		wantReject(t, s.HandleFilterAnnounce(t0, p, rawAnnounce(uint64(i+1), k, poison)), ReasonNonV1)
	}
	// A sparse filter with another k is refused too: v1 fixes k.
	wantReject(t, s.HandleFilterAnnounce(t0, p, rawAnnounce(4, 7, 10)), ReasonNonV1)
	if info, _ := s.Peer(p); info.HasFilter || info.FilterSequence != 0 {
		t.Fatalf("poison stored: %+v", info)
	}
	if s.MayReach(p, addr(4242)) {
		t.Fatal("poison makes everything reachable")
	}
	// The same fill at k=5 is over the cap; a genuine sparse k=5 filter
	// (what upstream sends) is accepted.
	wantReject(t, s.HandleFilterAnnounce(t0, p, rawAnnounce(5, 5, poison)), ReasonFillExceeded)
	mustAccept(t, s, p, rawAnnounce(5, 5, FilterBits*6/10)) // fpr 0.078
	genuine := NewFilter()
	genuine.Insert(addr(77))
	mustAccept(t, s, p, announce(t, 6, genuine))
	if !s.MayReach(p, addr(77)) {
		t.Fatal("genuine member not found")
	}
	if st := s.Stats(); st.NonV1 != 4 || st.FillExceeded != 1 || st.Accepted != 2 || st.Received != 7 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStaleRejected(t *testing.T) {
	s := newState(newFakeEnv())
	p := addr(1)
	s.PeerUp(t0, p)
	wantReject(t, s.HandleFilterAnnounce(t0, p, announce(t, 0, filterOf(addr(3)))), ReasonStale)
	mustAccept(t, s, p, announce(t, 5, filterOf(addr(3))))
	wantReject(t, s.HandleFilterAnnounce(t0, p, announce(t, 5, filterOf(addr(4)))), ReasonStale)
	err := s.HandleFilterAnnounce(t0, p, announce(t, 4, filterOf(addr(4))))
	wantReject(t, err, ReasonStale)
	var re *RejectError
	errors.As(err, &re)
	if re.Sequence != 4 || re.Current != 5 {
		t.Fatalf("%+v", re)
	}
	if s.MayReach(p, addr(4)) || !s.MayReach(p, addr(3)) {
		t.Fatal("stale filter stored")
	}
	if st := s.Stats(); st.Stale != 3 || st.Accepted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestUnknownPeerAndDecodeErrors(t *testing.T) {
	s := newState(newFakeEnv())
	p := addr(1)
	wantReject(t, s.HandleFilterAnnounce(t0, p, announce(t, 1, filterOf(addr(3)))), ReasonUnknownPeer)
	// Decode comes before the peer check, as upstream.
	wantReject(t, s.HandleFilterAnnounce(t0, p, []byte{0x20}), ReasonDecode)
	s.PeerUp(t0, p)

	good := announce(t, 1, filterOf(addr(3)))
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string]struct {
		msg  []byte
		kind error
	}{
		"empty":        {nil, wire.ErrTruncated},
		"header only":  {good[:11], wire.ErrTruncated},
		"short filter": {good[:len(good)-1], wire.ErrTruncated},
		"trailing":     {append(append([]byte(nil), good...), 0), wire.ErrLength},
		"wrong type":   {mut(func(b []byte) []byte { b[0] = 0x10; return b }), wire.ErrType},
		"hash count 0": {mut(func(b []byte) []byte { b[9] = 0; return b }), wire.ErrValue},
		"class 0":      {mut(func(b []byte) []byte { b[10] = 0; return b[:11+512] }), wire.ErrValue},
		"class 2":      {mut(func(b []byte) []byte { b[10] = 2; return append(b, make([]byte, 1024)...) }), wire.ErrValue},
		"class 4":      {mut(func(b []byte) []byte { b[10] = 4; return b }), wire.ErrValue},
	}
	for name, c := range cases {
		err := s.HandleFilterAnnounce(t0, p, c.msg)
		wantReject(t, err, ReasonDecode)
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: %v is not %v", name, err, c.kind)
		}
	}
	st := s.Stats()
	if st.DecodeError != uint64(len(cases))+1 || st.UnknownPeer != 1 || st.Accepted != 0 || st.Invalid != 0 || st.NonV1 != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st.Received != st.DecodeError+st.UnknownPeer {
		t.Fatalf("received %d", st.Received)
	}
	mustAccept(t, s, p, good)
}

func TestDebounceAndCoalescing(t *testing.T) {
	p, q := addr(1), addr(2)
	env := newFakeEnv(p, q)
	s := newState(env)
	s.PeerUp(t0, p)
	s.PeerUp(t0, q)
	s.Tick(t0)
	if got := env.take(); len(got) != 2 {
		t.Fatalf("first tick sent %d", len(got))
	}
	// q announces twice within the debounce: p's filter changes twice.
	mustAccept(t, s, q, announce(t, 1, filterOf(addr(20))))
	s.Tick(t0.Add(100 * ms))
	mustAccept(t, s, q, announce(t, 2, filterOf(addr(20), addr(21))))
	s.Tick(t0.Add(499 * ms))
	if got := env.take(); len(got) != 0 {
		t.Fatalf("sent within debounce: %d", len(got))
	}
	if info, _ := s.Peer(p); !info.Pending {
		t.Fatal("p should be pending")
	}
	s.Tick(t0.Add(500 * ms))
	got := env.take()
	want := filterOf(self, addr(20), addr(21))
	if len(got) != 1 || got[0].to != p || !got[0].f.Equal(&want) || got[0].seq != 3 {
		t.Fatalf("coalesced send: %+v", got)
	}
	s.Tick(t0.Add(2 * time.Second))
	if got := env.take(); len(got) != 0 {
		t.Fatalf("nothing pending, sent %d", len(got))
	}
	// A change after the debounce has long passed goes on the next tick.
	mustAccept(t, s, q, announce(t, 3, filterOf(addr(22))))
	s.Tick(t0.Add(3 * time.Second))
	if got := env.take(); len(got) != 1 || got[0].to != p || got[0].seq != 4 {
		t.Fatalf("%+v", got)
	}
	if s.Stats().DebounceSuppressed != 0 || s.Stats().Sent != 4 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

// One node-global counter, incremented per announce sent, in address order.
func TestSequenceIsNodeGlobal(t *testing.T) {
	env := newFakeEnv()
	s := newState(env)
	peers := []identity.NodeAddr{addr(3), addr(1), addr(2)}
	for _, p := range peers {
		s.PeerUp(t0, p)
	}
	s.Tick(t0)
	got := env.take()
	if len(got) != 3 || s.Sequence() != 3 {
		t.Fatalf("%d sends, sequence %d", len(got), s.Sequence())
	}
	for i, m := range got {
		if m.seq != uint64(i+1) {
			t.Fatalf("send %d seq %d", i, m.seq)
		}
		if i > 0 && !got[i-1].to.Less(m.to) {
			t.Fatal("not in address order")
		}
		base := filterOf(self)
		if !m.f.Equal(&base) {
			t.Fatal("lone node sends only itself")
		}
	}
}

func TestSendFailureStaysPending(t *testing.T) {
	p := addr(1)
	env := newFakeEnv()
	env.fail[p] = true
	s := newState(env)
	s.PeerUp(t0, p)
	s.Tick(t0)
	if info, _ := s.Peer(p); !info.Pending || info.Sent {
		t.Fatalf("%+v", info)
	}
	if st := s.Stats(); st.SendFailed != 1 || st.Sent != 0 || s.Sequence() != 1 {
		t.Fatalf("stats %+v seq %d", st, s.Sequence())
	}
	env.fail[p] = false
	s.Tick(t0.Add(1 * ms)) // no debounce: nothing was recorded as sent
	got := env.take()
	if len(got) != 1 || got[0].seq != 2 {
		t.Fatalf("%+v", got)
	}
	if _, ok := s.LastSentFilter(p); !ok {
		t.Fatal("not recorded")
	}
}

func TestMarkChangedOnlyChangedPeers(t *testing.T) {
	a, b, c, m := addr(1), addr(2), addr(3), addr(4) // a, b, c tree peers; m mesh
	env := newFakeEnv(a, b, c)
	s := newState(env)
	for _, p := range []identity.NodeAddr{a, b, c, m} {
		s.PeerUp(t0, p)
	}
	s.Tick(t0)
	env.take()

	pending := func() (out []identity.NodeAddr) {
		for _, p := range []identity.NodeAddr{a, b, c, m} {
			if info, _ := s.Peer(p); info.Pending {
				out = append(out, p)
			}
		}
		return
	}
	// A filter from a: every other peer's outgoing filter changes; a's does not.
	mustAccept(t, s, a, announce(t, 1, filterOf(addr(10))))
	if got := pending(); len(got) != 3 || got[0] != b {
		t.Fatalf("pending %v", got)
	}
	s.Tick(t0.Add(time.Second))
	env.take()
	// A filter from the mesh peer changes nobody's outgoing filter.
	mustAccept(t, s, m, announce(t, 1, filterOf(addr(30))))
	if got := pending(); len(got) != 0 {
		t.Fatalf("pending after mesh filter %v", got)
	}
	// Same content again from a: nothing changes.
	mustAccept(t, s, a, announce(t, 2, filterOf(addr(10))))
	if got := pending(); len(got) != 0 {
		t.Fatalf("pending after identical filter %v", got)
	}
	// MarkChanged with nothing changed marks nobody; an unsent peer is marked.
	s.MarkChanged(t0, a)
	if got := pending(); len(got) != 0 {
		t.Fatalf("pending %v", got)
	}
	// c leaves the tree (an ancestry change): MarkChanged marks the peers
	// whose filter loses c's contribution, not c itself (its own filter
	// never held its contribution) nor the excluded a.
	mustAccept(t, s, c, announce(t, 1, filterOf(addr(40))))
	s.Tick(t0.Add(5 * time.Second))
	env.take()
	delete(env.tree, c)
	s.MarkChanged(t0.Add(5*time.Second), a)
	got := pending()
	if len(got) != 2 || got[0] != b || got[1] != m {
		t.Fatalf("pending after c left the tree %v (want b, m; a excluded, c unchanged)", got)
	}
}

func TestMarkChangedNeverSent(t *testing.T) {
	s := newState(newFakeEnv())
	p1, p2 := addr(1), addr(2)
	s.PeerUp(t0, p1)
	s.PeerUp(t0, p2)
	s.MarkChanged(t0, addr(99))
	for _, p := range []identity.NodeAddr{p1, p2} {
		if info, _ := s.Peer(p); !info.Pending {
			t.Fatal("never-sent peer not marked")
		}
	}
}

// MarkPeer owes one peer an announce even when its filter is unchanged
// (the same filter, with the next sequence, after the debounce); other
// peers and unknown ones are untouched.
func TestMarkPeerResendsUnchanged(t *testing.T) {
	env := newFakeEnv()
	s := newState(env)
	p1, p2 := addr(1), addr(2)
	s.PeerUp(t0, p1)
	s.PeerUp(t0, p2)
	s.Tick(t0)
	first := env.take()
	s.MarkPeer(t0, p1)
	s.MarkPeer(t0, addr(99))
	if info, _ := s.Peer(p2); info.Pending {
		t.Fatal("another peer marked")
	}
	s.Tick(t0.Add(100 * time.Millisecond))
	if got := env.take(); len(got) != 0 {
		t.Fatalf("sent inside the debounce: %v", got)
	}
	s.Tick(t0.Add(500 * time.Millisecond))
	got := env.take()
	if len(got) != 1 || got[0].to != p1 || !got[0].f.Equal(&first[0].f) || got[0].seq <= first[1].seq {
		t.Fatalf("after the debounce: %+v", got)
	}
}

func TestMarkChangedExcludesSource(t *testing.T) {
	env := newFakeEnv()
	s := newState(env)
	p := addr(1)
	s.PeerUp(t0, p)
	s.Tick(t0)
	env.take()
	s.MarkChanged(t0, p)
	if info, _ := s.Peer(p); info.Pending {
		t.Fatal("source marked")
	}
}

func TestPeerDownClearsAndRemarks(t *testing.T) {
	a, b := addr(1), addr(2)
	env := newFakeEnv(a, b)
	s := newState(env)
	s.PeerUp(t0, a)
	s.PeerUp(t0, b)
	mustAccept(t, s, a, announce(t, 7, filterOf(addr(10))))
	s.Tick(t0)
	env.take()
	s.PeerDown(t0, a)
	if _, ok := s.Peer(a); ok || s.MayReach(a, addr(10)) || s.PeerCount() != 1 {
		t.Fatal("peer state survived PeerDown")
	}
	if info, _ := s.Peer(b); !info.Pending {
		t.Fatal("remaining peer not re-marked")
	}
	s.Tick(t0.Add(500 * ms))
	got := env.take()
	base := filterOf(self)
	if len(got) != 1 || !got[0].f.Equal(&base) {
		t.Fatalf("b should now get only ourselves: %+v", got)
	}
	// a comes back: a fresh sequence space and no debounce.
	s.PeerUp(t0.Add(600*ms), a)
	mustAccept(t, s, a, announce(t, 1, filterOf(addr(10))))
	s.Tick(t0.Add(600 * ms))
	got = env.take()
	if len(got) == 0 || got[0].to != a {
		t.Fatalf("a not sent immediately: %+v", got)
	}
	s.PeerDown(t0, addr(42)) // unknown: ignored
}

func TestPeerUpKeepsExistingState(t *testing.T) {
	env := newFakeEnv()
	s := newState(env)
	p := addr(1)
	s.PeerUp(t0, p)
	mustAccept(t, s, p, announce(t, 3, filterOf(addr(10))))
	s.Tick(t0)
	env.take()
	s.PeerUp(t0, p)
	info, _ := s.Peer(p)
	if !info.Pending || info.FilterSequence != 3 || !s.MayReach(p, addr(10)) || s.PeerCount() != 1 {
		t.Fatalf("%+v", info)
	}
}

func TestNonTreeFiltersStoredNotPropagated(t *testing.T) {
	tp, mesh := addr(1), addr(2)
	env := newFakeEnv(tp)
	s := newState(env)
	s.PeerUp(t0, tp)
	s.PeerUp(t0, mesh)
	foreign := addr(500)
	mustAccept(t, s, mesh, announce(t, 1, filterOf(foreign)))
	mustAccept(t, s, tp, announce(t, 1, filterOf(addr(600))))
	if !s.MayReach(mesh, foreign) {
		t.Fatal("mesh filter not stored")
	}
	s.Tick(t0)
	for _, m := range env.take() {
		if m.f.Contains(foreign) {
			t.Fatalf("mesh peer's filter propagated to %s", m.to.Short())
		}
		// The mesh peer gets our tree view; the tree peer gets only us.
		var want Filter
		if m.to == mesh {
			want = filterOf(self, addr(600))
		} else {
			want = filterOf(self)
		}
		if !m.f.Equal(&want) {
			t.Fatalf("filter to %s", m.to.Short())
		}
	}
	// Once the mesh peer joins the tree, its filter is merged.
	env.tree[mesh] = true
	if f := s.OutgoingFilter(tp); !f.Contains(foreign) {
		t.Fatal("tree peer's filter not merged")
	}
}

// The prefix/suffix batch computation is bit-identical to computing each
// target on its own, for random filters, tree roles and target sets.
func TestBatchMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 40; round++ {
		env := newFakeEnv()
		s := newState(env)
		n := rng.IntN(12)
		for i := 0; i < n; i++ {
			p := addr(1 + rng.IntN(1000))
			s.PeerUp(t0, p)
			if rng.IntN(4) > 0 {
				env.tree[p] = true
			}
			if rng.IntN(5) > 0 {
				f := NewFilter()
				for j := rng.IntN(40); j > 0; j-- {
					f.Insert(addr(10000 + rng.IntN(5000)))
				}
				if s.peers[p].seq == 0 {
					mustAccept(t, s, p, announce(t, 1, f))
				}
			}
		}
		for _, ps := range s.order {
			ps.target = rng.IntN(3) > 0
		}
		s.computeOutgoing()
		for _, ps := range s.order {
			if !ps.target {
				continue
			}
			want := s.OutgoingFilter(ps.addr)
			if !ps.out.Equal(&want) {
				t.Fatalf("round %d: batch filter for %s differs from per-peer", round, ps.addr.Short())
			}
		}
	}
}

func TestMeshSizeEstimate(t *testing.T) {
	s := newState(newFakeEnv())
	if _, ok := s.MeshSizeEstimate(); ok {
		t.Fatal("estimate without filters")
	}
	a, b, c := addr(1), addr(2), addr(3)
	s.PeerUp(t0, a)
	s.PeerUp(t0, b)
	s.PeerUp(t0, c) // no filter: contributes nothing
	mk := func(lo, hi int) Filter {
		f := NewFilter()
		for i := lo; i < hi; i++ {
			f.Insert(addr(1000 + i))
		}
		return f
	}
	// Each filter counted once: 1 + 5 + 3.
	mustAccept(t, s, a, announce(t, 1, mk(0, 5)))
	mustAccept(t, s, b, announce(t, 1, mk(100, 103)))
	if n, ok := s.MeshSizeEstimate(); !ok || n < 8 || n > 10 {
		t.Fatalf("estimate %d %v, want ~9", n, ok)
	}
	// Overlap is deduplicated: a = 0..9, b = 3..12 → 13 distinct + self.
	mustAccept(t, s, a, announce(t, 2, mk(0, 9)))
	mustAccept(t, s, b, announce(t, 2, mk(3, 12)))
	if n, ok := s.MeshSizeEstimate(); !ok || n < 11 || n > 15 {
		t.Fatalf("estimate %d %v, want ~13", n, ok)
	}
	// Known counts, split across peers with overlap.
	for _, total := range []int{10, 100, 1000} {
		mustAccept(t, s, a, announce(t, uint64(total), mk(0, total*2/3)))
		mustAccept(t, s, b, announce(t, uint64(total), mk(total/3, total)))
		n, ok := s.MeshSizeEstimate()
		want := float64(total + 1)
		if !ok || math.Abs(float64(n)-want) > 1+0.03*want {
			t.Fatalf("total %d: estimate %d %v", total, n, ok)
		}
	}
	// Union over the cap: refused, even though each filter passed.
	mustAccept(t, s, a, announce(t, 5000, mk(0, 1700)))
	mustAccept(t, s, b, announce(t, 5000, mk(1700, 3400)))
	if _, ok := s.MeshSizeEstimate(); ok {
		t.Fatal("estimate of an over-cap union")
	}
}

// An estimate survives losing the parent when a cross-link carries the
// same upward coverage.
func TestMeshSizeStableAcrossParentDrop(t *testing.T) {
	s := newState(newFakeEnv())
	parent, cross := addr(1), addr(2)
	s.PeerUp(t0, parent)
	s.PeerUp(t0, cross)
	up := make([]identity.NodeAddr, 12)
	for i := range up {
		up[i] = addr(2000 + i)
	}
	mustAccept(t, s, parent, announce(t, 1, filterOf(up...)))
	mustAccept(t, s, cross, announce(t, 1, filterOf(append(up, addr(3000), addr(3001))...)))
	before, ok1 := s.MeshSizeEstimate()
	s.PeerDown(t0, parent)
	after, ok2 := s.MeshSizeEstimate()
	if !ok1 || !ok2 || before-after > 2 || after > before {
		t.Fatalf("before %d after %d", before, after)
	}
}

func TestSelfWarnRateLimited(t *testing.T) {
	rec := &logRecorder{}
	cfg := DefaultConfig()
	cfg.MaxInboundFPR = 1e-20 // our lone address (5 bits) is over this
	env := newFakeEnv()
	s := New(self, cfg, env, slog.New(rec))
	p := addr(1)
	s.PeerUp(t0, p)
	const msg = "Outgoing filter above FPR cap — aggregation drift or missed ingress?"
	for i := 0; i < 130; i++ {
		s.MarkAll(t0)
		s.Tick(t0.Add(time.Duration(i) * time.Second))
	}
	// Warned at 0 s, 60 s and 120 s.
	if n := rec.count(slog.LevelWarn, msg); n != 3 {
		t.Fatalf("%d warnings", n)
	}
	if len(env.take()) != 130 {
		t.Fatal("sends")
	}
}

func TestRejectLogsAndErrorText(t *testing.T) {
	rec := &logRecorder{}
	s := New(self, DefaultConfig(), newFakeEnv(), slog.New(rec))
	p := addr(1)
	s.PeerUp(t0, p)
	err := s.HandleFilterAnnounce(t0, p, announceK(t, 1, 5, allOnes()))
	if rec.count(slog.LevelWarn, "FilterAnnounce above FPR cap — rejected") != 1 || err.Error() == "" {
		t.Fatal("fill-exceeded warning")
	}
	for r := ReasonDecode; r <= ReasonFillExceeded; r++ {
		if r.Err() == nil || r.String() == "" {
			t.Fatal(r)
		}
	}
	if Reason(0).Err() != nil || Reason(0).String() != "Reason(0)" {
		t.Fatal("zero reason")
	}
}

func TestSnapshot(t *testing.T) {
	parent, child := addr(1), addr(2)
	env := newFakeEnv(parent, child)
	s := newState(env)
	snap := s.Snapshot(parent, false)
	if snap.OwnNodeAddr != self || snap.LeafDependents == nil || len(snap.PeerFilters) != 0 ||
		snap.UptreeFillRatio != nil || snap.UptreeEstimatedCount != nil || snap.Sequence != 0 {
		t.Fatalf("%+v", snap)
	}
	s.PeerUp(t0, parent)
	s.PeerUp(t0, child)
	mustAccept(t, s, child, announce(t, 4, filterOf(addr(50), addr(51))))
	s.Tick(t0)
	snap = s.Snapshot(parent, false)
	if len(snap.PeerFilters) != 2 || snap.Sequence != 2 || snap.Stats.Accepted != 1 {
		t.Fatalf("%+v", snap)
	}
	pr, cr := snap.PeerFilters[0], snap.PeerFilters[1]
	if pr.Peer != parent || pr.HasFilter || pr.Filter != nil {
		t.Fatalf("parent row %+v", pr)
	}
	if cr.Peer != child || !cr.HasFilter || cr.FilterSequence != 4 || cr.Filter == nil ||
		cr.Filter.EstimatedCount == nil || math.Round(*cr.Filter.EstimatedCount) != 2 || cr.Filter.SetBits == 0 {
		t.Fatalf("child row %+v", cr)
	}
	// Uptree: what we sent the parent is ourselves plus the child's subtree.
	if snap.UptreeFillRatio == nil || snap.UptreeEstimatedCount == nil || math.Round(*snap.UptreeEstimatedCount) != 3 {
		t.Fatalf("uptree %v %v", snap.UptreeFillRatio, snap.UptreeEstimatedCount)
	}
	if r := s.Snapshot(parent, true); r.UptreeFillRatio != nil {
		t.Fatal("root has no uptree")
	}
}

// Steady-state paths do not allocate.
func TestNoAllocs(t *testing.T) {
	env := &countingEnv{tree: map[identity.NodeAddr]bool{}}
	s := newState(env)
	var peers []identity.NodeAddr
	for i := 1; i <= 16; i++ {
		p := addr(i)
		peers = append(peers, p)
		env.tree[p] = i%4 != 0
		s.PeerUp(t0, p)
	}
	msgs := make([][]byte, 0, 64)
	for i := 0; i < 64; i++ {
		msgs = append(msgs, announce(t, uint64(i+1), filterOf(addr(100+i), addr(200+i))))
	}
	now := t0
	s.Tick(now)
	i := 0
	if n := testing.AllocsPerRun(50, func() {
		now = now.Add(time.Second)
		if err := s.HandleFilterAnnounce(now, peers[i%16], msgs[i/16%64]); err != nil {
			t.Fatal(err)
		}
		i++
		s.Tick(now)
		s.MarkAll(now)
		s.Tick(now.Add(600 * ms))
		_ = s.MayReach(peers[3], addr(105))
		_, _ = s.MeshSizeEstimate()
	}); n != 0 {
		t.Fatalf("%v allocs per run", n)
	}
	if env.sends == 0 {
		t.Fatal("nothing sent")
	}
}

type countingEnv struct {
	tree  map[identity.NodeAddr]bool
	sends int
}

func (e *countingEnv) SendFilterAnnounce(identity.NodeAddr, []byte) error { e.sends++; return nil }
func (e *countingEnv) IsTreePeer(p identity.NodeAddr) bool                { return e.tree[p] }

// NextSend says when Tick next has something to send: now for a pending
// peer never sent one, the end of the debounce for one that was, nothing
// when no peer is pending.
func TestNextSend(t *testing.T) {
	p, q := addr(1), addr(2)
	env := newFakeEnv(p, q)
	s := newState(env)
	if _, ok := s.NextSend(); ok {
		t.Fatal("due with no peers")
	}
	s.PeerUp(t0, p)
	if at, ok := s.NextSend(); !ok || at.After(t0) {
		t.Fatalf("never-sent pending peer: %v %v, want due at once", at, ok)
	}
	s.Tick(t0)
	env.take()
	if at, ok := s.NextSend(); ok {
		t.Fatalf("due at %v with nothing pending", at)
	}
	s.PeerUp(t0.Add(100*ms), q)
	s.Tick(t0.Add(100 * ms))
	env.take()
	mustAccept(t, s, q, announce(t, 1, filterOf(addr(20)))) // p owed a new filter
	at, ok := s.NextSend()
	if !ok || !at.Equal(t0.Add(500*ms)) {
		t.Fatalf("next send %v %v, want the end of p's debounce %v", at, ok, t0.Add(500*ms))
	}
	s.Tick(at.Add(-time.Millisecond))
	if got := env.take(); len(got) != 0 {
		t.Fatalf("sent %d before the debounce passed", len(got))
	}
	s.Tick(at)
	if got := env.take(); len(got) != 1 || got[0].to != p {
		t.Fatalf("at the end of the debounce: %+v", got)
	}
}

// TestPassOnFull: a tree peer's filter refused over the cap is passed on
// as a full filter to the other peers (PassOnFull, the default) and the
// change is sent; a non-tree peer's is not; with upstream's behaviour the
// refused filter drops out of the aggregate. An accepted filter from the
// peer ends it.
func TestPassOnFull(t *testing.T) {
	parent, child, other := addr(1), addr(2), addr(3)
	for _, pass := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.PassOnFull = pass
		env := newFakeEnv(parent, child)
		s := New(self, cfg, env, nil)
		for _, p := range []identity.NodeAddr{parent, child, other} {
			s.PeerUp(t0, p)
		}
		mustAccept(t, s, child, announce(t, 1, filterOf(addr(20))))
		mustAccept(t, s, parent, announce(t, 1, filterOf(addr(10))))
		s.Tick(t0)
		env.take()
		wantReject(t, s.HandleFilterAnnounce(t0.Add(time.Second), parent, announceK(t, 2, 5, allOnes())), ReasonFillExceeded)
		toChild := s.OutgoingFilter(child)
		if got := toChild.CountOnes() == FilterBits; got != pass {
			t.Fatalf("pass on %v: filter to the child full = %v", pass, got)
		}
		if !pass && (!toChild.Contains(self) || !toChild.Contains(addr(10))) {
			t.Fatal("upstream's behaviour: the parent's last accepted filter stays in the aggregate")
		}
		toParent := s.OutgoingFilter(parent)
		if toParent.CountOnes() == FilterBits || !toParent.Contains(addr(20)) {
			t.Fatal("the parent's own fullness came back to it")
		}
		s.Tick(t0.Add(time.Second))
		var sentToChild bool
		for _, m := range env.take() {
			sentToChild = sentToChild || (m.to == child && m.f.CountOnes() == FilterBits)
		}
		if sentToChild != pass {
			t.Fatalf("pass on %v: a full filter sent to the child = %v", pass, sentToChild)
		}
		// The non-tree peer over the cap changes nothing.
		wantReject(t, s.HandleFilterAnnounce(t0, other, announceK(t, 1, 5, allOnes())), ReasonFillExceeded)
		if f := s.OutgoingFilter(parent); f.CountOnes() == FilterBits {
			t.Fatal("a non-tree peer's fullness passed on")
		}
		mustAccept(t, s, parent, announce(t, 3, filterOf(addr(11))))
		if f := s.OutgoingFilter(child); f.CountOnes() == FilterBits || !f.Contains(addr(11)) {
			t.Fatal("still full after the parent's next filter was accepted")
		}
	}
}

// With PassOnFull a peer's step over the cap warns once; while it stays
// over, the refusals are debug, and a full filter we pass on is not
// reported as aggregation drift. Upstream's behaviour warns every time.
func TestPassOnFullWarnsOncePerPeer(t *testing.T) {
	const rejected = "FilterAnnounce above FPR cap — rejected"
	const drift = "Outgoing filter above FPR cap — aggregation drift or missed ingress?"
	parent, child := addr(1), addr(2)
	for _, pass := range []bool{true, false} {
		rec := &logRecorder{}
		cfg := DefaultConfig()
		cfg.PassOnFull = pass
		s := New(self, cfg, newFakeEnv(parent, child), slog.New(rec))
		s.PeerUp(t0, parent)
		s.PeerUp(t0, child)
		for seq := uint64(1); seq <= 3; seq++ {
			s.HandleFilterAnnounce(t0, parent, announceK(t, seq, 5, allOnes()))
			s.Tick(t0.Add(time.Duration(seq) * time.Second))
		}
		want := 3
		if pass {
			want = 1
		}
		if n := rec.count(slog.LevelWarn, rejected); n != want {
			t.Errorf("pass on %v: %d refusal warnings, want %d", pass, n, want)
		}
		if n := rec.count(slog.LevelWarn, drift); n != 0 {
			t.Errorf("pass on %v: %d drift warnings", pass, n)
		}
		mustAccept(t, s, parent, announce(t, 4, filterOf(addr(10))))
		s.HandleFilterAnnounce(t0, parent, announceK(t, 5, 5, allOnes()))
		if n := rec.count(slog.LevelWarn, rejected); n != want+1 {
			t.Errorf("pass on %v: over the cap again after an accepted filter: %d warnings, want %d", pass, n, want+1)
		}
	}
}

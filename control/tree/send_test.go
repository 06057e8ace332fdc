package tree

import (
	"errors"
	"testing"
	"time"
)

// At most one announce per peer per 500 ms; the rest wait for a tick after
// the interval.
func TestAnnounceRateLimit(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peer(1) // sent at t0
	f.advance(100 * time.Millisecond)
	f.attach(a, 1, addrOf(0)) // switch: announce to all, limited
	if n := f.env.sentTo(a.NodeAddr()); n != 1 || f.tr.Stats().RateLimited != 1 {
		t.Fatalf("sent %d stats %+v", n, f.tr.Stats())
	}
	f.advance(300 * time.Millisecond)
	f.tr.Tick(f.now)
	if f.env.sentTo(a.NodeAddr()) != 1 {
		t.Fatal("pending flushed inside the interval")
	}
	f.advance(100 * time.Millisecond) // 500 ms after the first send
	f.tr.Tick(f.now)
	if f.env.sentTo(a.NodeAddr()) != 2 {
		t.Fatal("pending not flushed after the interval")
	}
	last := f.env.sent[len(f.env.sent)-1]
	if last.seq != f.tr.Sequence() || last.root != addrOf(0) {
		t.Fatalf("flushed a stale announce: %+v", last)
	}
	f.advance(time.Second)
	f.tr.Tick(f.now)
	if f.env.sentTo(a.NodeAddr()) != 2 {
		t.Fatal("sent again with nothing pending")
	}
}

// A failed send is counted, keeps nothing pending and does not start the
// interval.
func TestSendFailure(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	f.env.failSend = true
	a := f.peer(1)
	if st := f.tr.Stats(); st.SendFailed != 1 || st.Sent != 0 {
		t.Fatalf("stats %+v", st)
	}
	f.env.failSend = false
	f.tr.PeerUp(f.now, a.NodeAddr()) // same instant: not rate limited
	if st := f.tr.Stats(); st.Sent != 1 || st.RateLimited != 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := f.tr.sendTo(f.now, addrOf(9)); !errors.Is(err, ErrPeerNotFound) {
		t.Fatalf("got %v", err)
	}
}

// An announce advertising a worse root than ours is answered with ours at
// once; an equal or better one is not.
func TestEchoOnWorseRoot(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peer(1)
	b := f.peerAbove(40)
	c := f.peer(60)
	root := addrOf(0)
	f.attach(a, 1, root)
	f.advance(time.Second)

	f.mustAccept(b.NodeAddr(), rootAnnounce(t, b, 1)) // b's root is b > root
	if f.env.sentTo(b.NodeAddr()) != 2 {
		t.Fatal("no echo on a worse root")
	}
	if last := f.env.sent[len(f.env.sent)-1]; last.to != b.NodeAddr() || last.root != root {
		t.Fatalf("echo %+v", last)
	}
	sent := f.env.sentTo(c.NodeAddr())
	f.mustAccept(c.NodeAddr(), childOf(t, c, 1, addrOf(0, 4), root)) // same root
	if f.env.sentTo(c.NodeAddr()) != sent {
		t.Fatal("echo on an equal root")
	}
}

// The upstream scenario: a child that lost its parent's attaching announce
// sits as a self-root; its announce provokes the root's echo and it
// re-attaches without waiting for the periodic re-broadcast.
func TestAnnounceRepushedOnRootDisagreement(t *testing.T) {
	s := newSimNet(t, 2, 300, DefaultConfig())
	s.connect(0, 1)
	s.run(3)
	s.verify()
	ri := 0
	if !s.nodes[0].tr.IsRoot() {
		ri = 1
	}
	root, child := s.nodes[ri], s.nodes[1-ri]

	// Force the child back to self-root and make it forget the root.
	s.step(time.Second)
	child.tr.becomeRoot(s.now)
	child.tr.peers[root.addr()].accepted = false
	child.tr.peers[root.addr()].hasDecl = false
	if err := child.tr.sign(); err != nil {
		t.Fatal(err)
	}
	sentBefore := root.tr.Stats().Sent
	if err := child.tr.sendTo(s.now, root.addr()); err != nil {
		t.Fatal(err)
	}
	s.drain()
	if root.tr.Stats().Sent <= sentBefore {
		t.Fatal("root did not re-push")
	}
	if child.tr.IsRoot() || child.tr.Root() != root.addr() {
		t.Fatal("child did not re-attach")
	}
}

// Every reeval interval, with two or more peers, the announce is re-sent
// to all even when nothing changed; never with a single peer.
func TestPeriodicRebroadcast(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peerAbove(1)
	for range 70 {
		f.advance(time.Second)
		f.tr.Tick(f.now)
	}
	if f.env.sentTo(a.NodeAddr()) != 1 {
		t.Fatal("re-broadcast with one peer")
	}
	b := f.peerAbove(100)
	sa, sb := f.env.sentTo(a.NodeAddr()), f.env.sentTo(b.NodeAddr())
	seq := f.tr.Sequence()
	for i := 1; i <= 125; i++ {
		f.advance(time.Second)
		f.tr.Tick(f.now)
		want := 0
		switch {
		case i >= 121:
			want = 3
		case i >= 61:
			want = 2
		case i >= 1:
			want = 1
		}
		if f.env.sentTo(a.NodeAddr())-sa != want || f.env.sentTo(b.NodeAddr())-sb != want {
			t.Fatalf("after %d s: sent %d/%d, want %d", i, f.env.sentTo(a.NodeAddr())-sa, f.env.sentTo(b.NodeAddr())-sb, want)
		}
	}
	if f.tr.Sequence() != seq || len(f.env.changes) != 0 {
		t.Fatal("re-broadcast changed state")
	}

	// Disabled with a zero interval.
	cfg := DefaultConfig()
	cfg.ReevalIntervalSecs = 0
	g := newFixture(t, cfg)
	g.peerAbove(1)
	g.peerAbove(100)
	n := len(g.env.sent)
	for range 100 {
		g.advance(time.Second)
		g.tr.Tick(g.now)
	}
	if len(g.env.sent) != n {
		t.Fatal("re-broadcast with reeval disabled")
	}
}

// The periodic re-evaluation switches parents on changed link costs.
func TestPeriodicReevaluation(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a, b := f.peer(1), f.peer(2)
	root := addrOf(0)
	f.env.costs[a.NodeAddr()], f.env.costs[b.NodeAddr()] = 1, 1
	f.attach(a, 1, root)
	f.mustAccept(b.NodeAddr(), childOf(t, b, 1, root))
	f.advance(time.Second)
	f.tr.Tick(f.now) // first re-evaluation: nothing better
	if f.parent() != a.NodeAddr() {
		t.Fatal("switched on equal cost")
	}
	f.env.costs[a.NodeAddr()] = 10
	for range 59 {
		f.advance(time.Second)
		f.tr.Tick(f.now)
	}
	if f.parent() != a.NodeAddr() {
		t.Fatal("re-evaluated early")
	}
	f.advance(time.Second)
	f.tr.Tick(f.now)
	if f.parent() != b.NodeAddr() {
		t.Fatal("periodic re-evaluation did not switch")
	}
	if c := f.env.changes[len(f.env.changes)-1]; c.Kind != ChangeSwitch || c.Trigger != TriggerPeriodic {
		t.Fatalf("change %+v", c)
	}
}

// ParentAnnounced follows every announce handed to Env for our parent —
// the one a switch sends, a rate-limited one when it is flushed, periodic
// re-broadcasts — and no announce to any other peer (issue 24: the node
// sends its filter after it, so an upstream parent merges it).
func TestParentAnnounced(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a := f.peerAbove(1)
	b := f.peerAbove(100)
	if len(f.env.parentAnnounced) != 0 {
		t.Fatal("notified while root")
	}
	f.advance(100 * time.Millisecond)
	f.attach(a, 1, addrOf(0)) // announces to a and b wait for the interval
	if len(f.env.parentAnnounced) != 0 {
		t.Fatalf("notified before the announce left: %d", len(f.env.parentAnnounced))
	}
	f.advance(400 * time.Millisecond)
	f.tr.Tick(f.now)
	if got := f.env.parentAnnounced; len(got) != 1 || got[0] != a.NodeAddr() {
		t.Fatalf("after the flush: %v", got)
	}
	if f.env.sentTo(b.NodeAddr()) != 2 {
		t.Fatal("the child-side peer got no announce")
	}
	// Re-broadcasts: each is followed, and only for a.
	rebroadcasts := func() int { return f.env.sentTo(a.NodeAddr()) }
	before := rebroadcasts()
	for range 121 {
		f.advance(time.Second)
		f.tr.Tick(f.now)
	}
	got := f.env.parentAnnounced
	if sent := rebroadcasts() - before; sent < 2 || len(got)-1 != sent {
		t.Fatalf("%d re-broadcasts to the parent, %d notifications after the flush", sent, len(got)-1)
	}
	for _, p := range got {
		if p != a.NodeAddr() {
			t.Fatalf("notified for %s", p.Short())
		}
	}

	// A failed send notifies nothing.
	n := len(got)
	f.env.failSend = true
	f.advance(time.Second)
	_ = f.tr.sendTo(f.now, a.NodeAddr())
	if len(f.env.parentAnnounced) != n {
		t.Fatal("notified for a failed send")
	}
}

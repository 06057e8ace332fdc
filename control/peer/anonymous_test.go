package peer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAnonymousDialLinks: a v1 node dials an address naming no key; the
// key msg2 reveals is taken, the link comes up as a v1 outbound one, the
// leg showed no expected peer while in flight, and a second dial to the
// linked address does nothing.
func TestAnonymousDialLinks(t *testing.T) {
	n := newSimNet(t, 31)
	a, b := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireV1))
	if !a.m.DialsAnonymously() {
		t.Fatal("a v1 node does not dial anonymously")
	}
	if err := a.m.DialAnonymous(n.now, a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	a.m.Connections(func(c Connection) {
		if !c.Anonymous || c.Expected != ([32]byte{}) {
			t.Errorf("leg in flight: anonymous %v, expected %x", c.Anonymous, c.Expected)
		}
	})
	n.deliver()
	linked(t, a, b)
	if p := a.m.Peer(b.id.NodeAddr()); !p.V1() || p.Direction != Outbound {
		t.Fatalf("peer: v1 %v, %s", p.V1(), p.Direction)
	}
	if s := a.m.Stats(); s.AnonymousDials != 1 || s.Msg2WrongIdentity != 0 {
		t.Fatalf("anonymous dials %d, wrong identity %d", s.AnonymousDials, s.Msg2WrongIdentity)
	}
	if err := a.m.DialAnonymous(n.now, a.candidate(b)); err != nil || a.m.ConnectionCount() != 0 || a.m.Stats().AnonymousDials != 1 {
		t.Fatalf("redial of a linked address: err %v, legs %d", err, a.m.ConnectionCount())
	}
}

// TestAnonymousAcceptsOnlyOnAnonymousLegs: a msg2 from a key nobody
// named completes an anonymous leg, while the same kind of answer to a
// keyed dial is still msg2_wrong_identity.
func TestAnonymousAcceptsOnlyOnAnonymousLegs(t *testing.T) {
	n := newSimNet(t, 32)
	a, b, c := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireV1)), n.add(3, v1Config(WireV1))
	// Keyed: a dials b, c answers.
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	m1 := n.queue[0].data
	n.queue = n.queue[:0]
	c.m.HandlePacket(n.now, 1, a.addr, m1)
	forged := n.queue[len(n.queue)-1]
	n.queue = n.queue[:0]
	a.m.HandlePacket(n.now, 1, c.addr, forged.data)
	if s := a.m.Stats(); s.Msg2WrongIdentity != 1 || a.m.PeerCount() != 0 {
		t.Fatalf("keyed leg: wrong identity %d, peers %d", s.Msg2WrongIdentity, a.m.PeerCount())
	}
	// Anonymous: a dials b's address, c answers: c it is.
	d := n.add(4, v1Config(WireV1))
	if err := d.m.DialAnonymous(n.now, d.candidate(b)); err != nil {
		t.Fatal(err)
	}
	m1 = n.queue[len(n.queue)-1].data
	n.queue = n.queue[:0]
	c.m.HandlePacket(n.now, 1, d.addr, m1)
	n.deliver()
	if s := d.m.Stats(); s.Msg2WrongIdentity != 0 || d.m.Peer(c.id.NodeAddr()) == nil {
		t.Fatalf("anonymous leg: wrong identity %d, linked to c %v", s.Msg2WrongIdentity, d.m.Peer(c.id.NodeAddr()) != nil)
	}
	linked(t, d, c)
}

// TestAnonymousACLApplies: the ACL judges the key msg2 revealed: a
// denied one is refused (msg2_acl_denied, logged as an outbound
// handshake) and nothing links on either side.
func TestAnonymousACLApplies(t *testing.T) {
	n := newSimNet(t, 33)
	a, b := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireV1))
	acl := &ACL{}
	acl.deny, _ = ParseACL(strings.NewReader(b.id.Npub()+"\n"), nil, func(int, string, error) {})
	a.m.SetACL(acl)
	if err := a.m.DialAnonymous(n.now, a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	n.advance(time.Minute, time.Second)
	if s := a.m.Stats(); s.Msg2ACLDenied != 1 || a.m.PeerCount() != 0 || b.m.PeerCount() != 0 {
		t.Fatalf("acl denied %d, peers %d/%d", s.Msg2ACLDenied, a.m.PeerCount(), b.m.PeerCount())
	}
	if a.m.ConnectionCount() != 0 {
		t.Errorf("legs left: %d", a.m.ConnectionCount())
	}
}

// TestAnonymousSelfAndLimits: an anonymous dial that reaches our own
// key is dropped; anonymous dials in flight are bounded and refusals
// counted; a v0 node does not dial anonymously; max_peers refuses a new
// peer learned at msg2.
func TestAnonymousSelfAndLimits(t *testing.T) {
	n := newSimNet(t, 34)
	cfg := v1Config(WireV1)
	cfg.MaxAnonymous, cfg.MaxDiscoveredPerHost = 2, 0
	a := n.add(1, cfg)
	// Our own msg1, answered by ourselves.
	if err := a.m.DialAnonymous(n.now, a.candidate(a)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	if a.m.PeerCount() != 0 || a.m.ConnectionCount() != 0 || !strings.Contains(a.logs.String(), "Discovered self via shared-media beacon") {
		t.Fatalf("self: peers %d, legs %d", a.m.PeerCount(), a.m.ConnectionCount())
	}
	// Bound: three silent addresses, two dials.
	b, c, d := n.add(2, v1Config(WireV1)), n.add(3, v1Config(WireV1)), n.add(4, v1Config(WireV1))
	for _, to := range []*simNode{b, c} {
		if err := a.m.DialAnonymous(n.now, a.candidate(to)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.m.DialAnonymous(n.now, a.candidate(d)); !errors.Is(err, ErrAnonymousLimit) || a.m.Stats().AnonymousDialLimited != 1 {
		t.Fatalf("third dial: %v, limited %d", err, a.m.Stats().AnonymousDialLimited)
	}
	n.queue = n.queue[:0] // the dials go unanswered
	// v0: refused.
	v0 := n.add(5, v1Config(WireV0))
	if v0.m.DialsAnonymously() {
		t.Error("a v0 node dials anonymously")
	}
	if err := v0.m.DialAnonymous(n.now, v0.candidate(b)); !errors.Is(err, ErrAnonymousFormat) {
		t.Errorf("v0 dial: %v", err)
	}
	// max_peers: e already has one peer and allows one.
	cfg = v1Config(WireV1)
	cfg.MaxPeers = 1
	e := n.add(6, cfg)
	f := n.add(7, v1Config(WireV1))
	if err := e.m.Dial(n.now, f.id.PublicKey(), e.candidate(f)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, e, f)
	g := n.add(8, v1Config(WireV1))
	if err := e.m.DialAnonymous(n.now, e.candidate(g)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	if e.m.Peer(g.id.NodeAddr()) != nil || e.m.Stats().AnonymousPeerLimit != 1 {
		t.Fatalf("max_peers: linked %v, refused %d", e.m.Peer(g.id.NodeAddr()) != nil, e.m.Stats().AnonymousPeerLimit)
	}
}

// TestAnonymousCrossesKnownPeer: an anonymous dial that reaches a peer
// already linked is settled as crossed dials (as next does): one link,
// the same session on both sides.
func TestAnonymousCrossesKnownPeer(t *testing.T) {
	n := newSimNet(t, 35)
	a, b := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireV1))
	if err := b.m.Dial(n.now, a.id.PublicKey(), b.candidate(a)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, a, b)
	// b is also reachable at a second address, which a dials.
	other := Candidate{Transport: 1, Addr: simAddr(102)}
	n.nodes[other.Addr] = b
	if err := a.m.DialAnonymous(n.now, other); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	n.advance(time.Minute, time.Second)
	linked(t, a, b)
	if a.m.PeerCount() != 1 || b.m.PeerCount() != 1 || a.m.Stats().CrossConnections != 1 {
		t.Fatalf("peers %d/%d, crossed %d", a.m.PeerCount(), b.m.PeerCount(), a.m.Stats().CrossConnections)
	}
	if !hasLinkMsgFlow(t, n, a, b) {
		t.Fatal("no link messages after the crossing")
	}
}

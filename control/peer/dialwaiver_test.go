package peer

import (
	"testing"
	"time"
)

// TestCrossedDialsWithAcceptConnectionsOff: two nodes whose transports
// refuse strangers dial each other at once. Each takes the other's msg1
// because its own dial to that address is in flight (upstream master's
// and next's waiver), so they link, over either format; before, each
// refused the other and no link could ever form.
func TestCrossedDialsWithAcceptConnectionsOff(t *testing.T) {
	for _, f := range []WireFormat{WireV0, WireV1, WireAuto} {
		for seed := uint64(40); seed < 44; seed++ {
			n := newSimNet(t, seed)
			n.reorder = true
			a, b := n.add(1, v1Config(f)), n.add(2, v1Config(f))
			a.accept, b.accept = false, false
			dialBoth(t, n, a, b)
			n.advance(3*time.Second, 100*time.Millisecond)
			linked(t, a, b)
			if a.m.Stats().Msg1DialWaiver+b.m.Stats().Msg1DialWaiver == 0 {
				t.Errorf("%v seed %d: no msg1 taken by the dial waiver", f, seed)
			}
			if !hasLinkMsgFlow(t, n, a, b) {
				t.Fatalf("%v seed %d: link carries nothing", f, seed)
			}
		}
	}
}

// TestDialWaiverOnlyForTheDialledKey: with accept_connections off, a
// msg1 from the address we are dialling but from another key is dropped
// after the DH (IK at msg1, XX at msg3) and links nothing; a stranger's
// msg1 from an address we are not dialling is refused before any crypto.
func TestDialWaiverOnlyForTheDialledKey(t *testing.T) {
	for _, f := range []WireFormat{WireV0, WireV1} {
		n := newSimNet(t, 50)
		a, b, c := n.add(1, v1Config(f)), n.add(2, v1Config(f)), n.add(3, v1Config(f))
		b.accept = false
		n.setCut(a, b, true) // b's dial to a is in flight and unanswered
		if err := b.m.Dial(n.now, a.id.PublicKey(), b.candidate(a)); err != nil {
			t.Fatal(err)
		}
		n.deliver()
		n.queue = nil
		// c dials b; its packets reach b from a's address.
		if err := c.m.Dial(n.now, b.id.PublicKey(), c.candidate(b)); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			q := n.queue
			n.queue = nil
			for _, p := range q {
				switch {
				case p.to == b.addr:
					b.m.HandlePacket(n.now, 1, a.addr, p.data)
				case p.to == a.addr && p.from == b.addr:
					c.m.HandlePacket(n.now, 1, b.addr, p.data) // b's answer to "a" reaches c
				}
			}
		}
		if b.m.Stats().Msg1IdentityMismatch != 1 || b.m.PeerCount() != 0 {
			t.Errorf("%v: identity_mismatch %d peers %d", f, b.m.Stats().Msg1IdentityMismatch, b.m.PeerCount())
		}
		// From an address b is not dialling: refused before crypto.
		d := n.add(4, v1Config(f))
		if err := d.m.Dial(n.now, b.id.PublicKey(), d.candidate(b)); err != nil {
			t.Fatal(err)
		}
		n.setCut(a, b, false)
		before := b.m.Stats().Msg1NotAccepting
		n.deliver()
		if b.m.Stats().Msg1NotAccepting != before+1 || b.m.Peer(d.id.NodeAddr()) != nil {
			t.Errorf("%v: stranger admitted: not_accepting %d→%d", f, before, b.m.Stats().Msg1NotAccepting)
		}
	}
}

// dialBoth has a and b dial each other at once and delivers.
func dialBoth(t *testing.T, n *simNet, a, b *simNode) {
	t.Helper()
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	if err := b.m.Dial(n.now, a.id.PublicKey(), b.candidate(a)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
}

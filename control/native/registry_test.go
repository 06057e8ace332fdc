package native

import (
	"errors"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

func testKey(t testing.TB, b byte) identity.PublicKey {
	t.Helper()
	var s [32]byte
	s[31] = b
	sk, err := identity.SecretKeyFromBytes(s[:])
	if err != nil {
		t.Fatal(err)
	}
	return sk.PublicKey()
}

func testLimits() Limits { return Limits{PerFlow: 4, Backlog: 2, MaxFlows: 8, PerClient: 8} }

var t0 = time.Unix(1000, 0)

func TestRegistryPortHasOneOwner(t *testing.T) {
	r := NewRegistry(testLimits())
	if p, err := r.Listen(1, 4242, make(chan Arrival, 4)); err != nil || p != 4242 {
		t.Fatal(p, err)
	}
	if _, err := r.Listen(1, 4242, make(chan Arrival, 4)); !errors.Is(err, ErrPortTaken) {
		t.Errorf("second listen: %v", err)
	}
	if _, _, err := r.Connect(1, testKey(t, 1), 5000, 4242, make(chan []byte, 4), t0); !errors.Is(err, ErrPortTaken) {
		t.Errorf("connect from a listener's port: %v", err)
	}
	if _, err := r.Listen(1, 256, make(chan Arrival, 4)); !errors.Is(err, ErrPortStandard) {
		t.Errorf("listen 256: %v", err)
	}
	if r.Counters.RefusedPorts != 2 {
		t.Errorf("refused ports %d", r.Counters.RefusedPorts)
	}
}

func TestRegistryEphemeralAndRelease(t *testing.T) {
	r := NewRegistry(testLimits())
	seen := map[uint16]bool{}
	for range 4 {
		p, _, err := r.Connect(1, testKey(t, 1), 5000, 0, make(chan []byte, 4), t0)
		if err != nil || p < PortEphemeralMin || seen[p] {
			t.Fatalf("port %d, %v", p, err)
		}
		seen[p] = true
	}
	p, _, _ := r.Connect(1, testKey(t, 1), 5000, 4242, make(chan []byte, 4), t0)
	if !r.Release(FlowKey{Peer: testKey(t, 1).NodeAddr(), Remote: 5000, Local: p}) || r.PortCount() != 4 {
		t.Fatalf("release: ports %d", r.PortCount())
	}
	if _, err := r.Listen(1, 4242, make(chan Arrival, 1)); err != nil {
		t.Errorf("freed port: %v", err)
	}
	if r.Counters.FlowsOpened != 5 || r.Counters.FlowsClosed != 1 {
		t.Errorf("counters %+v", r.Counters)
	}
}

// TestRegistryBounds: the node's flow ceiling, the per-client bound, the
// backlog and the per-flow queues each refuse and are counted.
func TestRegistryBounds(t *testing.T) {
	l := testLimits()
	l.PerClient = 3
	r := NewRegistry(l)
	pk := testKey(t, 1)
	for i := range 3 {
		if _, _, err := r.Connect(7, pk, uint16(5000+i), 0, make(chan []byte, 4), t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Connect(7, pk, 6000, 0, make(chan []byte, 4), t0); !errors.Is(err, ErrClientLimit) || Errno(err) != "EMFILE" {
		t.Fatalf("client 7's 4th flow: %v", err)
	}
	if _, err := r.Listen(7, 0, make(chan Arrival, 1)); !errors.Is(err, ErrClientLimit) {
		t.Fatalf("client 7's listener: %v", err)
	}
	// Another client is not held back by client 7.
	for i := range 3 {
		if _, _, err := r.Connect(8, pk, uint16(7000+i), 0, make(chan []byte, 4), t0); err != nil {
			t.Fatal(err)
		}
	}
	arr := make(chan Arrival, 8)
	if _, err := r.Listen(9, 4242, arr); err != nil {
		t.Fatal(err)
	}
	// 6 flows of 8 held: two arrivals fit, the next is the node's ceiling.
	for _, b := range []byte{2, 4} {
		if o := r.Deliver(testKey(t, b).NodeAddr(), testKey(t, b), 5000, 4242, []byte("a"), t0); o.Kind != Announced {
			t.Fatalf("arrival: %v", o)
		}
	}
	if o := r.Deliver(testKey(t, 3).NodeAddr(), testKey(t, 3), 5000, 4242, []byte("b"), t0); o.Reason != DropTooManyFlows {
		t.Fatalf("arrival past max_flows: %v", o)
	}
	if _, _, err := r.Connect(10, pk, 9000, 0, make(chan []byte, 4), t0); !errors.Is(err, ErrTooManyFlows) {
		t.Fatalf("connect past max_flows: %v", err)
	}
	c := r.Counters
	if c.RefusedClientLimit != 2 || c.RefusedTooMany != 1 || c.DropTooManyFlows != 1 {
		t.Errorf("counters %+v", c)
	}
	if r.ClientCount(7) != 3 || r.ClientCount(9) != 3 {
		t.Errorf("client counts %d %d", r.ClientCount(7), r.ClientCount(9))
	}
}

func TestRegistryBacklogAndPendingQueue(t *testing.T) {
	r := NewRegistry(testLimits())
	arr := make(chan Arrival, 8)
	r.Listen(1, 4242, arr)
	for b := byte(1); b <= 2; b++ {
		if o := r.Deliver(testKey(t, b).NodeAddr(), testKey(t, b), 5000, 4242, []byte{b}, t0); o.Kind != Announced {
			t.Fatal(o)
		}
	}
	if o := r.Deliver(testKey(t, 3).NodeAddr(), testKey(t, 3), 5000, 4242, nil, t0); o.Reason != DropBacklogFull {
		t.Fatalf("third pending: %v", o)
	}
	// The first pending flow holds PerFlow datagrams (its opener included).
	k1 := testKey(t, 1)
	for range 3 {
		if o := r.Deliver(k1.NodeAddr(), k1, 5000, 4242, []byte("x"), t0); o.Kind != Held {
			t.Fatal(o)
		}
	}
	if o := r.Deliver(k1.NodeAddr(), k1, 5000, 4242, []byte("x"), t0); o.Reason != DropPendingQueueFull {
		t.Fatalf("fifth held: %v", o)
	}
	a := <-arr
	sink := make(chan []byte, 4)
	acc, err := r.Accept(a.Flow, sink, t0)
	if err != nil || len(acc.Held) != 4 || acc.PubKey != k1 || string(acc.Held[0]) != "\x01" {
		t.Fatalf("accept: %+v, %v", acc, err)
	}
	// Established: the queue is the client's; unread, it drops its own.
	for range 4 {
		if o := r.Deliver(k1.NodeAddr(), k1, 5000, 4242, []byte("y"), t0); o.Kind != Delivered {
			t.Fatal(o)
		}
	}
	if o := r.Deliver(k1.NodeAddr(), k1, 5000, 4242, []byte("y"), t0); o.Reason != DropFlowQueueFull {
		t.Fatalf("unread flow: %v", o)
	}
	if o := r.Deliver(k1.NodeAddr(), k1, 5000, 9999, nil, t0); o.Reason != DropNoPort {
		t.Fatal(o)
	}
	c := r.Counters
	if c.DropBacklogFull != 1 || c.DropPendingQueueFull != 1 || c.DropFlowQueueFull != 1 || c.DropNoPort != 1 ||
		c.FlowsAccepted != 1 || c.ReceivedDatagrams != 2+3+4 {
		t.Errorf("counters %+v", c)
	}
	// The other pending flow expires; the listener's release keeps the
	// accepted flow.
	if n := r.Expire(t0.Add(PendingDeadline)); n != 1 || r.Counters.FlowsExpired != 1 {
		t.Fatalf("expired %d", n)
	}
	r.ReleaseListener(4242)
	if r.FlowCount() != 1 || r.PortCount() != 0 || len(r.Listeners()) != 0 {
		t.Fatalf("after the listener: %d flows, %d ports", r.FlowCount(), r.PortCount())
	}
	if _, _, err := r.Connect(1, k1, 5000, 4242, make(chan []byte, 1), t0); !errors.Is(err, ErrFlowTaken) {
		t.Fatalf("connect onto a surviving flow's key: %v", err)
	}
	fs := r.Flows()
	if len(fs) != 1 || !fs[0].Established || fs[0].Queued != 4 {
		t.Errorf("flows %+v", fs)
	}
}

func TestRegistryArrivalQueueFull(t *testing.T) {
	r := NewRegistry(testLimits())
	r.Listen(1, 4242, make(chan Arrival)) // a task that never takes one
	k := testKey(t, 1)
	if o := r.Deliver(k.NodeAddr(), k, 5000, 4242, nil, t0); o.Reason != DropArrivalQueueFull || r.FlowCount() != 0 {
		t.Fatalf("%v, %d flows", o, r.FlowCount())
	}
}

package node

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/udp"
)

// loopNode is a Node running its event loop and, unless NoEngine, the
// dataplane engine on a real UDP transport bound to 127.0.0.1: the
// daemon's packet path without a namespace. Its IPv6 adapter is on
// without a device: what it would write to the TUN is recorded.
type loopNode struct {
	t    testing.TB
	n    *Node
	u    *udp.Transport
	addr string // the transport's bound address

	stop func()
	done chan struct{}

	mu sync.Mutex
	// seen counts delivered stream packets by sequence number (dst port
	// streamPort); warm counts the rest.
	seen map[uint32]int
	warm int
}

// testLogEnv, set, sends the loopback nodes' debug logs to stderr.
const testLogEnv = "FIPS_TEST_LOG"

// Destination ports of the test traffic.
const (
	warmPort   = 9
	streamPort = 10
)

// startLoopNode starts a node with the given options (Transports and
// StaticPeers are filled in here, Identity unless set) peered statically
// with the already running peers, and waits until its transport is bound.
func startLoopNode(t testing.TB, o Options, peers ...*loopNode) *loopNode {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv(testLogEnv) != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	uo := udp.Defaults()
	uo.BindAddr = "127.0.0.1:0"
	u, err := udp.New(1, "", uo, log)
	if err != nil {
		t.Fatal(err)
	}
	if o.Identity == nil {
		if o.Identity, err = identity.Generate(nil); err != nil {
			t.Fatal(err)
		}
	}
	o.Log, o.Transports = log, []transport.Transport{u}
	if o.Peer == (peer.Config{}) {
		o.Peer = peer.DefaultConfig()
	}
	for _, p := range peers {
		o.StaticPeers = append(o.StaticPeers, StaticPeer{PublicKey: p.n.Identity().PublicKey(),
			Addresses: []PeerAddress{{Transport: "udp", Addr: p.addr}}, AutoReconnect: true})
	}
	n, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln := &loopNode{t: t, n: n, u: u, done: make(chan struct{}), seen: map[uint32]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(ln.done)
		if err := n.Run(ctx); err != nil {
			t.Errorf("node run: %v", err)
		}
	}()
	ln.stop = func() {
		cancel()
		select {
		case <-ln.done:
		case <-time.After(10 * time.Second):
			t.Errorf("node did not stop within 10 s")
		}
	}
	t.Cleanup(ln.stop)
	if !waitFor(5*time.Second, func() bool { return u.State() == transport.StateUp }) {
		t.Fatalf("UDP transport not up: %s", u.State())
	}
	ln.addr = u.LocalAddr()
	if _, err := ln.do(func(time.Time) any {
		return n.core.EnableIPv6(ln.record)
	}); err != nil {
		t.Fatal(err)
	}
	return ln
}

// record is the node's IPv6 writer (on its loop).
func (ln *loopNode) record(pkt []byte) {
	if len(pkt) < 40+8+4 || pkt[6] != 17 {
		return
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	switch binary.BigEndian.Uint16(pkt[42:44]) {
	case streamPort:
		ln.seen[binary.BigEndian.Uint32(pkt[48:52])]++
	case warmPort:
		ln.warm++
	}
}

// warmCount is how many warm-up packets the node delivered.
func (ln *loopNode) warmCount() int {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.warm
}

// do runs f on the node's loop.
func (ln *loopNode) do(f func(now time.Time) any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := ln.n.Do(ctx, f)
	if e, ok := v.(error); ok && err == nil {
		err = e
	}
	return v, err
}

// send hands pkts to the node as its TUN would, in one burst.
func (ln *loopNode) send(pkts ...[]byte) {
	ln.t.Helper()
	if _, err := ln.do(func(now time.Time) any {
		for _, p := range pkts {
			ln.n.core.SendIPv6(now, p)
		}
		return nil
	}); err != nil {
		ln.t.Fatalf("send: %v", err)
	}
}

// udp6 is an IPv6/UDP packet from → to's address, to port, carrying seq
// and padded to size bytes of payload.
func udp6(from, to *loopNode, port uint16, seq uint32, size int) []byte {
	size = max(size, 4)
	p := make([]byte, 40+8+size)
	p[0] = 0x60
	l := 8 + size
	binary.BigEndian.PutUint16(p[4:], uint16(l))
	p[6], p[7] = 17, 64
	s, d := from.n.Identity().IPv6().As16(), to.n.Identity().IPv6().As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	binary.BigEndian.PutUint16(p[40:], 40000)
	binary.BigEndian.PutUint16(p[42:], port)
	binary.BigEndian.PutUint16(p[44:], uint16(l))
	binary.BigEndian.PutUint32(p[48:], seq)
	return p
}

// loopChain starts A—B—C on loopback (C first, then B peered with C,
// then A peered with B), teaches A C's key, and waits until warm-up
// packets A→C are delivered: a session is up and B forwards.
func loopChain(t testing.TB, o Options) (a, b, c *loopNode) {
	t.Helper()
	c = startLoopNode(t, o)
	b = startLoopNode(t, o, c)
	a = startLoopNode(t, o, b)
	a.n.LearnIdentity(c.n.Identity().PublicKey())
	warm := udp6(a, c, warmPort, 0, 100)
	if !waitFor(30*time.Second, func() bool {
		a.send(warm)
		return c.warmCount() >= 20
	}) {
		t.Fatalf("A→C warm-up: C delivered %d packets", c.warmCount())
	}
	return a, b, c
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// streamCount is how many distinct stream packets the node delivered.
func (ln *loopNode) streamCount() int {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return len(ln.seen)
}

// engine is the node's show_status dataplane.engine, read on its loop.
func (ln *loopNode) engine() ctl.EngineView {
	ln.t.Helper()
	v, err := ln.do(func(time.Time) any { return ln.n.engineView() })
	if err != nil {
		ln.t.Fatal(err)
	}
	return v.(ctl.EngineView)
}

package node

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
)

// linkTo makes a configured peer of b for a (b's UDP address).
func linkTo(t *testing.T, b *Node) StaticPeer {
	t.Helper()
	return StaticPeer{PublicKey: b.Identity().PublicKey(), AutoReconnect: true,
		Addresses: []PeerAddress{{Transport: "udp", Addr: b.transports[1].LocalAddr(), Priority: 100}}}
}

// run starts n and returns its stop function.
func run(t *testing.T, n *Node) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	await(t, 5*time.Second, "node running", func() bool { return n.State() == StateRunning })
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestEngineForwardsTransitOnLoopback: three nodes on loopback UDP, a—b—c
// with no a—c link. 2,000 sequenced datagrams from a to a port on c
// arrive once each and in order (≥ 99%: loopback UDP drops what a busy
// machine lets overflow), and b's dataplane workers — not its event loop
// — forwarded nearly all of them. Run under -race (make test's
// race target covers ./control/...), it also checks that the workers and
// the loop share the link, session and forwarding state safely; goleak
// that engine start and stop leave no goroutine.
func TestEngineForwardsTransitOnLoopback(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := peer.DefaultConfig()
	cfg.RetryBase, cfg.RetryMax = 20*time.Millisecond, 80*time.Millisecond
	b := loopbackNode(t, Options{Peer: cfg})
	c := loopbackNode(t, Options{Peer: cfg})
	var mu sync.Mutex
	var got []uint32
	var probes int
	if err := c.core.Listen(1000, func(_ time.Time, _ identity.NodeAddr, _ uint16, payload []byte, _ bool) {
		mu.Lock()
		if seq := binary.BigEndian.Uint32(payload); seq == 0 {
			probes++ // the handshake's probes, queued and flushed at any time
		} else {
			got = append(got, seq)
		}
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	stopB := run(t, b)
	defer stopB()
	c.opts.StaticPeers = []StaticPeer{linkTo(t, b)}
	stopC := run(t, c)
	defer stopC()
	a := loopbackNode(t, Options{Peer: cfg, StaticPeers: []StaticPeer{linkTo(t, b)}})
	stopA := run(t, a)
	defer stopA()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	do := func(n *Node, f func(now time.Time) any) any {
		v, err := n.Do(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	await(t, 10*time.Second, "b linked to a and c", func() bool {
		return do(b, func(time.Time) any { return b.peers.PeerCount() }).(int) == 2
	})
	dest := c.Identity().NodeAddr()
	do(a, func(time.Time) any { a.core.LearnIdentity(c.Identity().PublicKey()); return nil })
	send := func(seq uint32) error {
		var p [64]byte
		binary.BigEndian.PutUint32(p[:], seq)
		err, _ := do(a, func(now time.Time) any { return a.core.Send(now, dest, 1000, 1000, p[:]) }).(error)
		return err
	}
	// The first datagram waits for a lookup and the session handshake.
	await(t, 10*time.Second, "a session from a to c", func() bool {
		_ = send(0)
		mu.Lock()
		defer mu.Unlock()
		return probes > 0
	})
	e0 := b.eng.Stats().Forwarded.Load()
	const n = 2000
	for i := range n {
		if err := send(uint32(i + 1)); err != nil {
			t.Fatalf("send %d: %v", i+1, err)
		}
		if i%50 == 49 { // paced: loopback UDP drops what a burst overflows
			time.Sleep(time.Millisecond)
		}
	}
	// Loopback UDP may drop what overflows a socket buffer on a busy
	// machine: wait for the last datagram (or nearly all).
	await(t, 10*time.Second, "the datagrams at c", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= n || (len(got) >= n*99/100 && got[len(got)-1] == n)
	})
	mu.Lock()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("datagram %d at c has sequence %d after %d: duplicated or reordered", i, got[i], got[i-1])
		}
	}
	t.Logf("%d of %d datagrams at c, in order", len(got), n)
	mu.Unlock()
	fw := b.eng.Stats().Forwarded.Load() - e0
	// engineView reads the loop's own counters: ask the loop for it.
	vctx, vcancel := context.WithTimeout(context.Background(), 5*time.Second)
	view, verr := b.Do(vctx, func(time.Time) any { return b.engineView() })
	vcancel()
	if verr != nil {
		t.Fatalf("b's engine view: %v", verr)
	}
	t.Logf("b's workers forwarded %d of %d datagrams; b's engine: %+v", fw, n, view)
	if fw < n*95/100 {
		t.Errorf("b's workers forwarded %d of %d datagrams", fw, n)
	}
	var routed uint64
	do(b, func(now time.Time) any {
		b.publish(now)
		routed = b.Snapshot().RouteStats.Forwarding.ForwardedPackets
		return nil
	})
	if routed < n {
		t.Errorf("b's show_routing forwarded_packets %d, want ≥ %d (workers' forwards counted in)", routed, n)
	}
}

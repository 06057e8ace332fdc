package node

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	wgtun "golang.zx2c4.com/wireguard/tun"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane/tun"
	"github.com/fips-go/fips/dataplane/udp"
)

// memTUN is an in-memory adapter: packets given to inject are what the
// node reads; what the node writes is counted (and the last one kept),
// without allocating.
type memTUN struct {
	in     chan []byte
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	written atomic.Uint64
	last    [2048]byte
	lastLen int
}

func newMemTUN() *memTUN { return &memTUN{in: make(chan []byte, 64), closed: make(chan struct{})} }

func (d *memTUN) File() *os.File             { return nil }
func (d *memTUN) MTU() (int, error)          { return 1500, nil }
func (d *memTUN) Name() (string, error)      { return "mem0", nil }
func (d *memTUN) Events() <-chan wgtun.Event { return nil }
func (d *memTUN) BatchSize() int             { return 1 }
func (d *memTUN) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

func (d *memTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	select {
	case p := <-d.in:
		sizes[0] = copy(bufs[0][offset:], p)
		return 1, nil
	case <-d.closed:
		return 0, os.ErrClosed
	}
}

func (d *memTUN) Write(bufs [][]byte, offset int) (int, error) {
	d.mu.Lock()
	for _, b := range bufs {
		d.lastLen = copy(d.last[:], b[offset:])
	}
	d.mu.Unlock()
	d.written.Add(uint64(len(bufs)))
	return len(bufs), nil
}

// tunNode is a loopback node with the engine, a memTUN adapter and a
// tick long enough that no timer runs during a measurement.
func tunNode(t *testing.T, dev *memTUN, peers ...StaticPeer) *Node {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	uo := udp.Defaults()
	uo.BindAddr = "127.0.0.1:0"
	u, err := udp.New(1, "", uo, log)
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := peer.DefaultConfig()
	cfg.RetryBase, cfg.RetryMax = 20*time.Millisecond, 80*time.Millisecond
	n, err := New(Options{Identity: id, Log: log, Transports: []transport.Transport{u}, Peer: cfg,
		TickInterval: 10 * time.Second, StaticPeers: peers,
		TUN: TUNOptions{Enabled: true, MTU: 1500, Open: func(tun.Config) (*tun.Device, error) {
			return tun.NewDevice(dev, "mem0", 0, nil), nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ipv6UDP is an IPv6/UDP packet from src to dst with a payload of n
// bytes, checksum left 0 (nothing on the path checks it).
func ipv6UDP(src, dst identity.NodeAddr, n int) []byte {
	p := make([]byte, wire.IPv6HeaderSize+8+n)
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], uint16(8+n))
	p[6], p[7] = 17, 64
	s, d := src.IPv6().As16(), dst.IPv6().As16()
	copy(p[8:24], s[:])
	copy(p[24:40], d[:])
	binary.BigEndian.PutUint16(p[40:], 40000)
	binary.BigEndian.PutUint16(p[42:], 40001)
	binary.BigEndian.PutUint16(p[44:], uint16(8+n))
	return p
}

// TestEngineTUNPathsAllocateNothing: A and C linked over loopback UDP,
// each with an in-memory adapter. Once the session is up, a packet read
// from A's adapter is compressed, sealed twice and sent by A's TUN worker
// (the egress path), and C's UDP worker opens both layers and writes it
// to C's adapter (the local delivery path): 0 allocations per packet
// across the whole process, both paths included — the count covers every
// goroutine while the measured sends run, and the tick is long enough
// that no timer runs meanwhile.
func TestEngineTUNPathsAllocateNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	devA, devC := newMemTUN(), newMemTUN()
	c := tunNode(t, devC)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	start := func(n *Node) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
		await(t, 5*time.Second, "node running", func() bool { return n.State() == StateRunning })
	}
	start(c)
	a := tunNode(t, devA, linkTo(t, c))
	start(a)
	do := func(n *Node, f func(time.Time) any) any {
		v, err := n.Do(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	do(a, func(time.Time) any { a.core.LearnIdentity(c.Identity().PublicKey()); return nil })
	src, dst := a.Identity().NodeAddr(), c.Identity().NodeAddr()
	pkt := ipv6UDP(src, dst, 1000)
	// The first packets go through the loop: session handshake, then the
	// coordinate warmup; wait until A's worker takes them.
	await(t, 10*time.Second, "a's TUN packets sealed by its worker", func() bool {
		devA.in <- pkt
		time.Sleep(2 * time.Millisecond)
		return a.eng.IPv6().Originated.Load() > 10
	})
	w := a.eng.NewReaderWorker()
	defer w.Close()
	buf := make([]byte, len(pkt))
	send := func() {
		copy(buf, pkt)
		if !w.SendTUN(buf) {
			t.Fatal("a's egress left the packet to the loop")
		}
		w.Flush()
	}
	for range 100 { // warm the workers' buffers and queues
		send()
	}
	await(t, 5*time.Second, "c's warm-up deliveries", func() bool { return c.eng.IPv6().Received.Load() >= 100 })
	d0, r0 := devC.written.Load(), c.eng.IPv6().Received.Load()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	const runs = 2000
	allocs := testing.AllocsPerRun(runs, send)
	// Loopback UDP drops what overflows C's socket buffer (AllocsPerRun
	// sends as fast as it can); what C's workers deliver must all reach
	// its adapter. Under the race detector C's workers run several times
	// slower than A's sends, so far more overflows: there the paths only
	// have to run.
	least := uint64(runs / 2)
	if raceBuild {
		least = runs / 50
	}
	var d, r uint64
	deadline := time.Now().Add(10 * time.Second)
	for d, r = devC.written.Load()-d0, c.eng.IPv6().Received.Load()-r0; d != r || r < least; d, r = devC.written.Load()-d0, c.eng.IPv6().Received.Load()-r0 {
		if time.Now().After(deadline) {
			t.Fatalf("c's deliveries: %d received by its workers, %d written to its adapter (want equal, ≥ %d)", r, d, least)
		}
		time.Sleep(5 * time.Millisecond)
	}
	runtime.ReadMemStats(&ms1)
	got := devC.written.Load() - d0
	total := ms1.Mallocs - ms0.Mallocs
	t.Logf("%d packets A→C through the workers (AllocsPerRun's warm-up run included), %d written to C's adapter; "+
		"%.2f allocations per packet (AllocsPerRun), %d mallocs in the whole process meanwhile; c's engine: delivered %d",
		runs, got, allocs, total, c.eng.Stats().Delivered.Load())
	if raceBuild {
		return // the race detector allocates by itself; the paths still ran under it
	}
	if allocs != 0 {
		t.Errorf("%.2f allocations per packet through A's egress and C's local delivery, want 0", allocs)
	}
	if total > runs/20 {
		t.Errorf("%d mallocs in the process during %d packets, want ~0 (≤ %d for runtime noise)", total, runs, runs/20)
	}
	devC.mu.Lock()
	ok := devC.lastLen == len(pkt) && string(devC.last[40:devC.lastLen]) == string(pkt[40:])
	devC.mu.Unlock()
	if !ok {
		t.Error("the packet C's adapter got is not the one A's adapter read")
	}
}

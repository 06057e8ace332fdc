package dataplane

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/tun"
)

// The IPv6 adapter's device as the node drives it: opened here (the OS's
// adapter, or one the caller substitutes), written by the loop through
// its own batch and by the workers through theirs (local.go), and read
// by one reader goroutine that is a worker: what it can send for a
// published session it seals itself (Worker.SendTUN), the rest it hands
// the loop (Loop.TUN).

// TUNWriteBatch bounds the packets held for one device write (each has
// a 64 KiB buffer, as GRO coalesces into the first of a flow); workers
// hold half as many.
const TUNWriteBatch = 64

// TUNOpener opens an adapter in place of the OS's (dataplane/tun on
// Linux, fallback/tun elsewhere): an embedder's own, or a test's.
type TUNOpener interface {
	OpenTUN(tun.Config) (*tun.Device, error)
}

// TUNOpenerFunc is a function as a TUNOpener.
type TUNOpenerFunc func(tun.Config) (*tun.Device, error)

// OpenTUN implements TUNOpener.
func (f TUNOpenerFunc) OpenTUN(c tun.Config) (*tun.Device, error) { return f(c) }

// TUNConfig is what the adapter is opened with.
type TUNConfig struct {
	Name string     // the interface name asked for
	MTU  int        // its MTU
	Addr netip.Addr // the node's fd00::/8 address
	Log  *slog.Logger
	// Open replaces the OS's adapter when set.
	Open TUNOpener
}

// TUN is an open adapter.
type TUN struct {
	dev *tun.Device
	w   *tun.Batch // the loop's writes
	// bufs hold the copies of packets handed to the loop.
	bufs *transport.BufferPool
}

// OpenTUN opens and configures the adapter.
func OpenTUN(c TUNConfig) (*TUN, error) {
	var open TUNOpener = TUNOpenerFunc(openTUN)
	if c.Open != nil {
		open = c.Open
	}
	dev, err := open.OpenTUN(tun.Config{Name: c.Name, MTU: c.MTU, Addr: c.Addr, Log: c.Log})
	if err != nil {
		return nil, err
	}
	// Packets come off the device at most MTU long (offloaded runs are
	// split into segments): a copy for the loop fits an MTU-sized buffer.
	size := min(max(c.MTU, 1280), tun.MaxPacket)
	return &TUN{dev: dev, w: tun.NewBatch(dev.Dev, TUNWriteBatch), bufs: transport.NewBufferPool(size)}, nil
}

// Name is the interface's name as the OS gave it; Index its index (0
// unknown).
func (t *TUN) Name() string { return t.dev.Name }

// Index: see Name.
func (t *TUN) Index() int { return t.dev.Index }

// Close undoes the adapter's configuration and closes it, which ends
// its reader.
func (t *TUN) Close() error { return t.dev.Close() }

// Write queues a packet for the device (the loop only); false when the
// batch could not take it.
func (t *TUN) Write(pkt []byte) bool { return t.w.Add(pkt) }

// Flush writes what Write queued (the loop only).
func (t *TUN) Flush() error { return t.w.Flush() }

// AttachTUN gives the workers the device to deliver into.
func (e *Engine) AttachTUN(t *TUN) { e.tun.Store(t) }

// Run reads the device until it closes or ctx ends: each packet goes to
// the reader's worker when eng (nil: none) has a published session and
// route for it, else a copy to loop.TUN. Blocking there while the loop is
// behind pushes back into the device queue (and TCP's own pacing)
// instead of dropping.
func (t *TUN) Run(ctx context.Context, eng *Engine, loop Loop) error {
	var w *Worker
	if eng != nil {
		w = eng.NewReaderWorker()
		defer w.Close()
	}
	r := tun.NewReader(t.dev.Dev, func(pkt []byte, read int64) {
		slot := flowSlotIPv6(pkt)
		if w != nil && !w.fenced(slot) && w.SendTUN(pkt) {
			return
		}
		u := TUNUpcall{Read: read}
		if w != nil {
			u.Fence = w.handOff(slot) // later packets to that node wait for this one to leave the loop
		}
		var ok bool
		if u.Buf, u.Pkt, ok = t.bufs.Copy(pkt); !ok {
			// Longer than the MTU (a device that does not split): a
			// copy of its own, outside the pool.
			u.Buf = &transport.Buffer{B: append([]byte(nil), pkt...)}
			u.Pkt = u.Buf.B
		}
		if !loop.TUN(u) {
			u.Buf.Release()
			u.Fence.Done()
		}
	}, func() {
		if w != nil {
			w.Flush()
		}
	})
	return r.Run(ctx)
}

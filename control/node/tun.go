package node

import (
	"context"
	"sync/atomic"

	"github.com/fips-go/fips/dataplane"
	"github.com/fips-go/fips/dataplane/tun"
)

// What the node does with the IPv6 adapter's packets. The device and its
// packet I/O live in dataplane/tun (Linux, offloads) and fallback/tun
// (macOS utun, Windows wintun); opening it is chosen per OS in
// tun_linux.go and tun_other.go.

// tunWriteBatch bounds the packets held for one device write (each has
// a 64 KiB buffer, as GRO coalesces into the first of a flow).
const tunWriteBatch = 64

// runTUN wires the device to the core: packets the kernel routes into it
// go to the dataplane fast path or the event loop; packets for it are
// written from the loop and the workers.
func (n *Node) runTUN(dev *tun.Device) error {
	// The writer runs on the event loop only. Packets for the device are
	// batched and written when the loop has drained what was queued (or
	// the batch is full). On Linux wireguard/tun coalesces the batch's
	// TCP and UDP segments into GRO super-packets (the device has the
	// virtio-net header and offloads), so a burst costs a few writes, not
	// one per packet; elsewhere it writes them one by one.
	wb := tun.NewBatch(dev.Dev, tunWriteBatch)
	if err := n.core.EnableIPv6(func(pkt []byte) {
		if !wb.Add(pkt) {
			n.tunWriteErrors++
		}
	}); err != nil {
		return err
	}
	n.tunFlush = func() {
		if err := wb.Flush(); err != nil {
			n.tunWriteErrors++
		}
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		var w *dataplane.Worker
		if n.eng != nil {
			w = n.eng.NewLocalWorker()
			defer w.Close()
		}
		r := tun.NewReader(dev.Dev, func(pkt []byte, read int64) { n.tunRead(w, pkt, read) }, func() {
			if w != nil {
				w.Flush()
			}
		})
		// The device closes in shutdown, after the transports and the
		// dataplane; that ends the reader.
		_ = r.Run(context.Background())
	}()
	return nil
}

// tunRead takes one packet read from the device (writable, valid during
// the call): the fast path's when w has a published session and route
// for it, the loop's otherwise.
func (n *Node) tunRead(w *dataplane.Worker, pkt []byte, read int64) {
	if w != nil && !w.Fenced() && n.fastSend(w, w.Clock(), pkt) {
		return
	}
	var fence *atomic.Uint64
	if w != nil {
		fence = w.HandOff() // later packets wait for this one to leave the loop
	}
	// Pooled copies: the loop returns each after SendIPv6.
	b, _ := n.tunBufs.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	*b = append((*b)[:0], pkt...)
	// Blocking when the loop is behind pushes back into the device queue
	// (and TCP's own pacing) instead of dropping.
	select {
	case n.tunIn <- tunPacket{b: b, read: read, fence: fence}:
	case <-n.stopped:
		n.tunDrops.Add(1)
		n.tunBufs.Put(b)
		if fence != nil {
			fence.Add(1)
		}
	}
}

// tunPacket is a packet read from the device and when it was read (Unix
// ns), for the loop's queue management.
type tunPacket struct {
	b    *[]byte
	read int64
	// fence is the reader's worker's count the loop advances once it has
	// handled the packet (dataplane.Worker.HandOff); nil without one.
	fence *atomic.Uint64
}

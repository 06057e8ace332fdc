package node

import (
	"errors"
	"time"

	"golang.zx2c4.com/wireguard/tun"

	"github.com/fips-go/fips/dataplane"
)

// The packet loop between a wireguard/tun device and the core, the same
// on every OS that has an adapter; opening and configuring the device is
// per OS (tun_linux.go, tun_darwin.go, tun_windows.go).

// tunOffset is the headroom wireguard/tun needs in front of each packet
// (the virtio-net header on Linux, the address family on macOS).
const tunOffset = 16

// runTUN wires the device to the core: packets the kernel routes into it
// go to the event loop; packets for it are written from the loop.
func (n *Node) runTUN(dev tun.Device) error {
	// The writer runs on the event loop only. Packets for the device are
	// batched and written when the loop has drained what was queued (or
	// the batch is full). On Linux wireguard/tun coalesces the batch's
	// TCP and UDP segments into GRO super-packets (the device has the
	// virtio-net header and offloads), so a burst costs a few writes, not
	// one per packet; elsewhere it writes them one by one.
	w := newTUNBatch(dev, tunWriteBatch)
	if err := n.core.EnableIPv6(func(pkt []byte) {
		if !w.add(pkt) {
			n.tunWriteErrors++
		}
	}); err != nil {
		return err
	}
	n.tunFlush = func() {
		if err := w.flush(); err != nil {
			n.tunWriteErrors++
		}
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		batch := dev.BatchSize()
		bufs := make([][]byte, batch)
		for i := range bufs {
			bufs[i] = make([]byte, tunOffset+65535)
		}
		sizes := make([]int, batch)
		var w *dataplane.Worker
		if n.eng != nil {
			w = n.eng.NewLocalWorker()
			defer w.Close()
		}
		for {
			cnt, err := dev.Read(bufs, sizes, tunOffset)
			read := time.Now().UnixNano()
			for i := range cnt {
				if w != nil && n.fastSend(w, w.Clock(), bufs[i][tunOffset:tunOffset+sizes[i]]) {
					continue
				}
				// Pooled copies: the loop returns each after SendIPv6.
				pkt, _ := n.tunBufs.Get().(*[]byte)
				if pkt == nil {
					pkt = new([]byte)
				}
				*pkt = append((*pkt)[:0], bufs[i][tunOffset:tunOffset+sizes[i]]...)
				// Blocking when the loop is behind pushes back into the
				// device queue (and TCP's own pacing) instead of dropping.
				select {
				case n.tunIn <- tunPacket{b: pkt, read: read}:
				case <-n.stopped:
					n.tunDrops.Add(1)
					n.tunBufs.Put(pkt)
				}
			}
			if w != nil {
				w.Flush()
			}
			if err != nil {
				if errors.Is(err, tun.ErrTooManySegments) {
					continue
				}
				return // closed
			}
		}
	}()
	return nil
}

// tunPacket is a packet read from the device and when it was read (Unix
// ns), for the loop's queue management.
type tunPacket struct {
	b    *[]byte
	read int64
}

// tunWriteBatch bounds the packets held for one device write (each has
// a 64 KiB buffer, as GRO coalesces into the first of a flow).
const tunWriteBatch = 64

// tunBatch collects packets for one tun.Device.Write. Not safe for
// concurrent use: the event loop owns it.
type tunBatch struct {
	dev   tun.Device
	store [][]byte // tunOffset headroom + 64 KiB each
	bufs  [][]byte // the packets held, slices of store
	err   error    // a flush reserve made failed
}

func newTUNBatch(dev tun.Device, n int) *tunBatch {
	b := &tunBatch{dev: dev, store: make([][]byte, n), bufs: make([][]byte, 0, n)}
	for i := range b.store {
		b.store[i] = make([]byte, tunOffset+65535)
	}
	return b
}

// add copies pkt into the batch, writing the batch first when it is
// full. It reports false for a packet too large for the device or a
// failed write.
func (b *tunBatch) add(pkt []byte) bool {
	if len(pkt) > 65535 {
		return false
	}
	ok := true
	if len(b.bufs) == cap(b.bufs) {
		ok = b.flush() == nil
	}
	buf := b.store[len(b.bufs)]
	copy(buf[tunOffset:], pkt)
	b.bufs = append(b.bufs, buf[:tunOffset+len(pkt)])
	return ok
}

// reserve is the buffer the next packet is to be built in (after
// tunOffset headroom: 65535 bytes), writing the batch first when it is
// full; commit then holds its first n bytes.
func (b *tunBatch) reserve() []byte {
	if len(b.bufs) == cap(b.bufs) {
		b.err = b.flush()
	}
	return b.store[len(b.bufs)][tunOffset:]
}

// commit holds the packet built in the reserved buffer; false when the
// write that made room for it failed.
func (b *tunBatch) commit(n int) bool {
	buf := b.store[len(b.bufs)]
	b.bufs = append(b.bufs, buf[:tunOffset+n])
	ok := b.err == nil
	b.err = nil
	return ok
}

// flush writes what is held.
func (b *tunBatch) flush() error {
	if len(b.bufs) == 0 {
		return nil
	}
	_, err := b.dev.Write(b.bufs, tunOffset)
	clear(b.bufs)
	b.bufs = b.bufs[:0]
	return err
}

package tun

import wgtun "golang.zx2c4.com/wireguard/tun"

// Batch collects packets for one device Write. A Batch belongs to one
// goroutine; several batches may write one device concurrently
// (wireguard/tun serialises its writes). On Linux the device coalesces a
// batch's TCP and UDP segments into GRO super-packets, so a burst costs
// a few writes, not one per packet; elsewhere it writes them one by one.
type Batch struct {
	dev   wgtun.Device
	store [][]byte // Offset headroom + MaxPacket each
	bufs  [][]byte // the packets held, slices of store
	err   error    // a flush Reserve made failed
}

// NewBatch is a batch of up to n packets for dev (each gets a 64 KiB
// buffer, as GRO coalesces into the first packet of a flow).
func NewBatch(dev wgtun.Device, n int) *Batch {
	b := &Batch{dev: dev, store: make([][]byte, n), bufs: make([][]byte, 0, n)}
	for i := range b.store {
		b.store[i] = make([]byte, Offset+MaxPacket)
	}
	return b
}

// Add copies pkt into the batch, writing the batch first when it is
// full. It reports false for a packet too large for the device or a
// failed write.
func (b *Batch) Add(pkt []byte) bool {
	if len(pkt) > MaxPacket {
		return false
	}
	ok := true
	if len(b.bufs) == cap(b.bufs) {
		ok = b.Flush() == nil
	}
	buf := b.store[len(b.bufs)]
	copy(buf[Offset:], pkt)
	b.bufs = append(b.bufs, buf[:Offset+len(pkt)])
	return ok
}

// Reserve is the buffer the next packet is to be built in (after Offset
// headroom: MaxPacket bytes), writing the batch first when it is full;
// Commit then holds its first n bytes.
func (b *Batch) Reserve() []byte {
	if len(b.bufs) == cap(b.bufs) {
		b.err = b.Flush()
	}
	return b.store[len(b.bufs)][Offset:]
}

// Commit holds the packet built in the reserved buffer; false when the
// write that made room for it failed.
func (b *Batch) Commit(n int) bool {
	buf := b.store[len(b.bufs)]
	b.bufs = append(b.bufs, buf[:Offset+n])
	ok := b.err == nil
	b.err = nil
	return ok
}

// Len is how many packets are held.
func (b *Batch) Len() int { return len(b.bufs) }

// Flush writes what is held.
func (b *Batch) Flush() error {
	if len(b.bufs) == 0 {
		return nil
	}
	_, err := b.dev.Write(b.bufs, Offset)
	clear(b.bufs)
	b.bufs = b.bufs[:0]
	return err
}

package node

import (
	"context"

	"github.com/fips-go/fips/dataplane"
)

// What the node does with the IPv6 adapter's packets. The device, its
// reader and the workers' half of the adapter live in dataplane
// (tunpath.go, local.go) over dataplane/tun and fallback/tun.

// runTUN wires the device to the core: packets the kernel routes into it
// go to the dataplane fast path or the event loop (dataplane.TUN.Run);
// packets for it are written from the loop and the workers.
func (n *Node) runTUN(dev *dataplane.TUN) error {
	// The loop's writes are batched and written when the loop has
	// drained what was queued (or the batch is full). On Linux
	// wireguard/tun coalesces the batch's TCP and UDP segments into GRO
	// super-packets (the device has the virtio-net header and offloads),
	// so a burst costs a few writes, not one per packet; elsewhere it
	// writes them one by one.
	if err := n.core.EnableIPv6(func(pkt []byte) {
		if !dev.Write(pkt) {
			n.tunWriteErrors++
		}
	}); err != nil {
		return err
	}
	if n.eng != nil {
		n.eng.AttachTUN(dev)
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		// The device closes in shutdown, after the transports and the
		// dataplane; that ends the reader.
		_ = dev.Run(context.Background(), n.eng, inbox{n})
	}()
	return nil
}

// flushTUN writes what the loop batched for the device.
func (n *Node) flushTUN() {
	if n.tun == nil {
		return
	}
	if err := n.tun.Flush(); err != nil {
		n.tunWriteErrors++
	}
}

//go:build linux

package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/tun"
)

// tunOffset is the headroom wireguard/tun needs in front of each packet
// (its virtio-net header on Linux).
const tunOffset = 16

// openTUN creates the device, gives it the node's address as a /128,
// routes fd00::/8 through it and brings it up.
func (n *Node) openTUN(name string, mtu int) (tun.Device, string, error) {
	if off, err := ipv6Disabled(disableIPv6Path); err == nil && off {
		return nil, "", fmt.Errorf("IPv6 is disabled on this host (%s is 1): the adapter needs it", disableIPv6Path)
	}
	dev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		return nil, "", fmt.Errorf("create TUN %q: %w", name, err)
	}
	real, err := dev.Name()
	if err != nil {
		dev.Close()
		return nil, "", err
	}
	link, err := netlink.LinkByName(real)
	if err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: %w", real, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: n.id.IPv6().AsSlice(), Mask: net.CIDRMask(128, 128)}}
	if err := netlink.AddrAdd(link, addr); err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: address %s: %w", real, n.id.IPv6(), err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: up: %w", real, err)
	}
	_, fd00, _ := net.ParseCIDR("fd00::/8")
	if err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: fd00}); err != nil {
		dev.Close()
		return nil, "", fmt.Errorf("TUN %s: route fd00::/8: %w", real, err)
	}
	// As upstream: fd00::/8 is looked up in the main table at priority
	// 5265, ahead of rules a VPN or policy router may have added.
	rule := netlink.NewRule()
	rule.Family = netlink.FAMILY_V6
	rule.Dst = fd00
	rule.Table = 254 // main
	rule.Priority = 5265
	if err := netlink.RuleAdd(rule); err != nil && !errors.Is(err, syscall.EEXIST) {
		n.log.Warn("cannot add the fd00::/8 policy rule", "priority", 5265, "error", err)
	} else {
		n.tunRule = rule
	}
	n.tunIndex.Store(int64(link.Attrs().Index))
	return dev, real, nil
}

// disableIPv6Path is the sysctl that turns IPv6 off for every interface.
const disableIPv6Path = "/proc/sys/net/ipv6/conf/all/disable_ipv6"

// ipv6Disabled reads a disable_ipv6 sysctl file.
func ipv6Disabled(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

// closeTUN removes the policy rule (the device takes its address and
// route with it).
func (n *Node) closeTUN() {
	if r, ok := n.tunRule.(*netlink.Rule); ok && r != nil {
		_ = netlink.RuleDel(r)
	}
}

// runTUN wires the device to the core: packets the kernel routes into it
// go to the event loop; packets for it are written from the loop.
func (n *Node) runTUN(dev tun.Device) error {
	// The writer runs on the event loop only. Packets for the device are
	// batched and written when the loop has drained what was queued (or
	// the batch is full): wireguard/tun coalesces the batch's TCP and UDP
	// segments into GRO super-packets (the device has the virtio-net
	// header and offloads), so a burst costs a few writes, not one per
	// packet.
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
		for {
			cnt, err := dev.Read(bufs, sizes, tunOffset)
			for i := range cnt {
				// Pooled copies: the loop returns each after SendIPv6.
				pkt, _ := n.tunBufs.Get().(*[]byte)
				if pkt == nil {
					pkt = new([]byte)
				}
				*pkt = append((*pkt)[:0], bufs[i][tunOffset:tunOffset+sizes[i]]...)
				select {
				case n.tunIn <- pkt:
				default:
					n.tunDrops.Add(1)
					n.tunBufs.Put(pkt)
				}
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

// tunWriteBatch bounds the packets held for one device write (each has
// a 64 KiB buffer, as GRO coalesces into the first of a flow).
const tunWriteBatch = 64

// tunBatch collects packets for one tun.Device.Write. Not safe for
// concurrent use: the event loop owns it.
type tunBatch struct {
	dev   tun.Device
	store [][]byte // tunOffset headroom + 64 KiB each
	bufs  [][]byte // the packets held, slices of store
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

//go:build linux

package node

import (
	"errors"
	"fmt"
	"net"
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
	// The writer runs on the event loop only: one buffer and one batch
	// slice serve every packet.
	wbuf := make([]byte, tunOffset+65535)
	wbatch := make([][]byte, 1)
	if err := n.core.EnableIPv6(func(pkt []byte) {
		if len(pkt) > 65535 {
			return
		}
		copy(wbuf[tunOffset:], pkt)
		wbatch[0] = wbuf[:tunOffset+len(pkt)]
		if _, err := dev.Write(wbatch, tunOffset); err != nil {
			n.tunWriteErrors++
		}
	}); err != nil {
		return err
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

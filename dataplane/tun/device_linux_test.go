//go:build linux

package tun

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fips-go/fips/testing/nsthread"
	"github.com/vishvananda/netlink"
)

// inNetns runs the rest of the test on a locked OS thread inside a fresh
// network namespace (root). The namespace goes away with its last
// reference at cleanup, and whatever the test made in it with it.
func inNetns(t *testing.T) {
	t.Helper()
	nsthread.Lock(t)
	nsthread.New(t)
}

// policyRule is the fd00::/8 rule at upstream's priority, if present.
func policyRule(t *testing.T) *netlink.Rule {
	t.Helper()
	rules, err := netlink.RuleList(netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rules {
		if r.Priority == PolicyPriority && r.Dst != nil && r.Dst.String() == "fd00::/8" {
			return &rules[i]
		}
	}
	return nil
}

// udp6 is an IPv6 UDP packet with a valid checksum.
func udp6(src, dst netip.AddrPort, payload []byte) []byte {
	p := make([]byte, 48+len(payload))
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], uint16(8+len(payload)))
	p[6], p[7] = 17, 64
	s, d := src.Addr().As16(), dst.Addr().As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	u := p[40:]
	binary.BigEndian.PutUint16(u[0:], src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(payload)))
	copy(u[8:], payload)
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(p[8:40])
	sum += uint32(len(u)) + 17
	add(u)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	c := ^uint16(sum)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return p
}

// The real device in a namespace of the test's own: Open gives it the
// /128, brings it up, routes fd00::/8 through it and adds the policy
// rule; a Reader sees what the kernel routes into it, a Batch's writes
// reach the kernel's sockets; Close removes the rule and the device.
func TestOpenConfiguresTheDevice(t *testing.T) {
	inNetns(t)
	self := netip.MustParseAddr("fd12:3456:789a::1")
	d, err := Open(Config{Name: "fipst0", MTU: 1280, Addr: self})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			d.Close()
		}
	}()
	link, err := netlink.LinkByName("fipst0")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "fipst0" || d.Index != link.Attrs().Index || d.Index == 0 {
		t.Fatalf("device %q index %d, link index %d", d.Name, d.Index, link.Attrs().Index)
	}
	if link.Attrs().Flags&net.FlagUp == 0 || link.Attrs().MTU != 1280 {
		t.Errorf("link flags %v mtu %d", link.Attrs().Flags, link.Attrs().MTU)
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range addrs {
		ones, _ := a.Mask.Size()
		if a.IP.Equal(self.AsSlice()) && ones == 128 {
			found = true
		}
	}
	if !found {
		t.Errorf("no %s/128 among %v", self, addrs)
	}
	routes, err := netlink.RouteList(link, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	found = false
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == "fd00::/8" {
			found = true
		}
	}
	if !found {
		t.Errorf("no fd00::/8 route through the device: %v", routes)
	}
	if r := policyRule(t); r == nil || r.Table != PolicyTable {
		t.Errorf("policy rule: %+v", r)
	}

	// Kernel → device → Reader.
	got := make(chan []byte, 16)
	r := NewReader(d.Dev, func(p []byte, _ int64) {
		select {
		case got <- bytes.Clone(p):
		default:
		}
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	peer := netip.MustParseAddrPort("[fd00::2]:9")
	c, err := net.DialUDP("udp6", nil, net.UDPAddrFromAddrPort(peer))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("to the mesh")); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for waiting := true; waiting; {
		select {
		case p := <-got:
			// Anything else the kernel sends (MLD, solicitations) is skipped.
			if len(p) >= 48 && p[0]>>4 == 6 && p[6] == 17 && bytes.Equal(p[24:40], peer.Addr().AsSlice()) {
				if !bytes.HasSuffix(p, []byte("to the mesh")) {
					t.Fatalf("read % x", p)
				}
				waiting = false
			}
		case <-deadline:
			t.Fatal("the datagram routed into the device was not read")
		}
	}

	// Batch → device → kernel socket.
	l, err := net.ListenUDP("udp6", net.UDPAddrFromAddrPort(netip.AddrPortFrom(self, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	to := l.LocalAddr().(*net.UDPAddr).AddrPort()
	b := NewBatch(d.Dev, 4)
	for i := range 3 {
		if !b.Add(udp6(peer, to, []byte{'m', 'e', 's', 'h', byte('0' + i)})) {
			t.Fatalf("add %d refused", i)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	buf := make([]byte, 64)
	for i := range 3 {
		_ = l.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, from, err := l.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("datagram %d written to the device: %v", i, err)
		}
		if want := []byte{'m', 'e', 's', 'h', byte('0' + i)}; !bytes.Equal(buf[:n], want) || from.Port() != 9 {
			t.Fatalf("datagram %d: %q from %v", i, buf[:n], from)
		}
	}

	// Close ends the reader, deletes the rule and the device.
	closed = true
	if err := d.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("reader after close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader did not end with the device")
	}
	if r := policyRule(t); r != nil {
		t.Errorf("the policy rule outlived Close: %+v", r)
	}
	if _, err := netlink.LinkByName("fipst0"); err == nil {
		t.Error("the device outlived Close")
	}
}

// A device that cannot be created is an error naming it.
func TestOpenRefusesABadName(t *testing.T) {
	inNetns(t)
	_, err := Open(Config{Name: "a-name-longer-than-ifnamsiz", MTU: 1280, Addr: netip.MustParseAddr("fd00::1")})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`create TUN "a-name-longer-than-ifnamsiz"`)) {
		t.Fatalf("open with a 27-byte name: %v", err)
	}
}

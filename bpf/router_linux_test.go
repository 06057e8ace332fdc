package bpf

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/fips-go/fips/testing/nsthread"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// router mounts three namespaces on a locked OS thread: a (10.1.0.2) and b
// (10.2.0.2) route through r (10.1.0.1 on ra, 10.2.0.1 on rb, forwarding
// on). The thread is left in r; enter switches it.
type router struct {
	a, b, r netns.NsHandle
	ra, rb  int // r's ifindexes toward a and b
}

func (rt *router) enter(t *testing.T, ns netns.NsHandle) {
	t.Helper()
	if err := netns.Set(ns); err != nil {
		t.Fatalf("enter netns: %v", err)
	}
}

func newRouter(t *testing.T) *router {
	t.Helper()
	nsthread.Lock(t)
	rt := &router{}
	rt.a, rt.b, rt.r = nsthread.New(t), nsthread.New(t), nsthread.New(t) // the thread ends in r
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	up := func(name string, cidrs ...string) netlink.Link {
		t.Helper()
		l, err := netlink.LinkByName(name)
		must(err)
		for _, cidr := range cidrs {
			addr, err := netlink.ParseAddr(cidr)
			must(err)
			addr.Flags = unix.IFA_F_NODAD // usable at once
			must(netlink.AddrAdd(l, addr))
		}
		must(netlink.LinkSetUp(l))
		return l
	}
	route := func(l netlink.Link, gw string) {
		t.Helper()
		must(netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP(gw)}))
	}
	for _, p := range []struct {
		name, peer string
		ns         netns.NsHandle
	}{{"ra", "ar", rt.a}, {"rb", "br", rt.b}} {
		must(netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.name}, PeerName: p.peer}))
		peer, err := netlink.LinkByName(p.peer)
		must(err)
		must(netlink.LinkSetNsFd(peer, int(p.ns)))
	}
	rt.ra = up("ra", "10.1.0.1/24", "fd01::1/64").Attrs().Index
	rt.rb = up("rb", "10.2.0.1/24", "fd02::1/64").Attrs().Index
	must(os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644))
	must(os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("1"), 0o644))
	rt.enter(t, rt.a)
	l := up("ar", "10.1.0.2/24", "fd01::2/64")
	route(l, "10.1.0.1")
	route(l, "fd01::1")
	rt.enter(t, rt.b)
	l = up("br", "10.2.0.2/24", "fd02::2/64")
	route(l, "10.2.0.1")
	route(l, "fd02::1")
	rt.enter(t, rt.r)
	return rt
}

// udpSocket opens a UDP socket in the thread's current namespace, bound to
// laddr, reporting the received TOS / traffic class byte.
func udpSocket(t *testing.T, laddr string) *net.UDPConn {
	t.Helper()
	ap := mustAddrPort(t, laddr)
	network, level, opt := "udp4", unix.IPPROTO_IP, unix.IP_RECVTOS
	if ap.Addr().Is6() {
		network, level, opt = "udp6", unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS
	}
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(ap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, 1) }); err != nil || serr != nil {
		t.Fatalf("receive TOS: %v %v", err, serr)
	}
	return c
}

// recvTOS reads one datagram and its outer TOS byte.
func recvTOS(t *testing.T, c *net.UDPConn) ([]byte, uint8) {
	t.Helper()
	buf, oob := make([]byte, 2048), make([]byte, 128)
	if err := c.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0 {
			return buf[:n], m.Data[0]
		}
		if m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS && len(m.Data) >= 4 {
			return buf[:n], uint8(binary.NativeEndian.Uint32(m.Data))
		}
	}
	t.Fatal("no IP_TOS / IPV6_TCLASS control message")
	return nil, 0
}

// TestRouterPassesOthersFIPS mounts, over IPv4 and IPv6, a node that is also a router, in
// wildcard-bind mode: the XDP program on its interface toward a, with the
// local-address check (its own addresses), and the tc programs on its
// interface toward b. Junk and msg1 floods from a's port 2121 to b's port
// 2121 are routed through r: they must reach b whole (not dropped as
// fmp_short / rate_limited) and without an ECT(0) mark from r's egress
// program, counted as pass/not_local and egress/forwarded. r's own
// traffic is still handled: junk to r's address is dropped, r's own
// datagrams from port 2121 leave marked ECT(0).
func TestRouterPassesOthersFIPS(t *testing.T) {
	rt := newRouter(t)
	obj, err := Load(Options{Interfaces: []int{rt.ra}, Mode: AttachAuto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { obj.Close() })
	if err := obj.SetConfig([]uint16{2121}, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := obj.SetLocalAddrs(addrs(t, "10.1.0.1", "10.2.0.1", "fd01::1", "fd02::1")); err != nil {
		t.Fatal(err)
	}
	tc, err := LoadTC()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	if err := tc.SetConfig([]uint16{2121}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Attach(rt.rb); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		own, any, toB, toR string
		ipHdr              uint64
	}{
		{"10.2.0.1:2121", "0.0.0.0:2121", "10.2.0.2:2121", "10.1.0.1:2121", 20},
		{"[fd02::1]:2121", "[::]:2121", "[fd02::2]:2121", "[fd01::1]:2121", 40},
	} {
		routedThrough(t, rt, obj, tc, f.own, f.any, f.toB, f.toR, f.ipHdr)
	}
}

// routedThrough sends from a to b through r and from r itself, over one
// address family, and checks what arrived and the counters. The thread
// is in r before and after.
func routedThrough(t *testing.T, rt *router, obj *Objects, tc *TCObjects, ownAddr, anyAddr, bAddr, rAddr string, ipHdr uint64) {
	t.Helper()
	own := udpSocket(t, ownAddr) // r's node socket
	rt.enter(t, rt.b)
	bs := udpSocket(t, anyAddr)
	rt.enter(t, rt.a)
	as := udpSocket(t, anyAddr)
	rt.enter(t, rt.r)
	xBefore, tBefore := stats(t, obj), tcStats(t, tc)

	toB := net.UDPAddrFromAddrPort(mustAddrPort(t, bAddr))
	sent := [][]byte{{'j'}, {1, 2, 3}, msg1(t), msg1(t), msg1(t), msg1(t)} // fmp_short junk, then a msg1 flood over burst 1
	var bytesSent uint64
	for _, p := range sent {
		if _, err := as.WriteToUDP(p, toB); err != nil {
			t.Fatal(err)
		}
		bytesSent += 14 + ipHdr + 8 + uint64(len(p))
		got, tos := recvTOS(t, bs)
		if string(got) != string(p) {
			t.Fatalf("%s: b received %x, want %x", bAddr, got, p)
		}
		if tos&3 != 0 {
			t.Errorf("%s: forwarded datagram arrived with ECN %d: r's egress program marked another host's traffic", bAddr, tos&3)
		}
	}
	// r's own traffic: its datagram to b is marked, junk to r is dropped.
	if _, err := own.WriteToUDP([]byte("own"), toB); err != nil {
		t.Fatal(err)
	}
	if _, tos := recvTOS(t, bs); tos&3 != 2 {
		t.Errorf("%s: r's own datagram arrived with ECN %d, want ECT(0)", ownAddr, tos&3)
	}
	if _, err := as.WriteToUDP([]byte{'j'}, net.UDPAddrFromAddrPort(mustAddrPort(t, rAddr))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for stats(t, obj)[VerdictDrop][ReasonFMPShort].Packets == xBefore[VerdictDrop][ReasonFMPShort].Packets && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	x := delta(xBefore, stats(t, obj))
	if c := x[[2]uint32{uint32(VerdictPass), uint32(ReasonNotLocal)}]; c.Packets != uint64(len(sent)) || c.Bytes != bytesSent {
		t.Errorf("%s: pass/not_local moved %+v, want %d packets %d bytes; all deltas %s", bAddr, c, len(sent), bytesSent, fmtDelta(x))
	}
	if c := x[[2]uint32{uint32(VerdictDrop), uint32(ReasonFMPShort)}]; c.Packets != 1 {
		t.Errorf("%s: drop/fmp_short moved %d, want 1 (the junk to r itself); all deltas %s", rAddr, c.Packets, fmtDelta(x))
	}
	for k, c := range x {
		if Verdict(k[0]) == VerdictDrop && Reason(k[1]) != ReasonFMPShort {
			t.Errorf("%s: dropped %d packets as %s", bAddr, c.Packets, Reason(k[1]))
		}
	}
	ts := tcStats(t, tc)
	if d := ts[TCEgress][TCReasonForwarded].Packets - tBefore[TCEgress][TCReasonForwarded].Packets; d != uint64(len(sent)) {
		t.Errorf("%s: egress/forwarded moved %d, want %d", bAddr, d, len(sent))
	}
	if d := ts[TCEgress][TCReasonMarked].Packets - tBefore[TCEgress][TCReasonMarked].Packets; d != 1 {
		t.Errorf("%s: egress/marked moved %d, want 1 (r's own datagram)", ownAddr, d)
	}
}

func mustAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

func addrs(t *testing.T, ss ...string) []netip.Addr {
	t.Helper()
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		a, err := netip.ParseAddr(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = a
	}
	return out
}

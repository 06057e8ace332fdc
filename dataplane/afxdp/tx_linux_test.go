package afxdp

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestTxQueueSendsFramesTheKernelAccepts: frames built by Header and
// sent through a TX ring on b arrive at a UDP socket on a (the kernel
// verifies their IP and UDP checksums), in order, across flushes that
// recycle the TX frames; asking for more frames than the pool holds
// without flushing is refused and counted.
func TestTxQueueSendsFramesTheKernelAccepts(t *testing.T) {
	a, b, _ := veth(t)
	la, err := netlink.LinkByIndex(a)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := netlink.LinkByIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	// Only a holds addresses: frames from b's (unassigned) 10.9.0.2 and
	// fd09::2 would be martians were they local.
	for _, c := range []struct {
		l    netlink.Link
		addr string
	}{{la, "10.9.0.1/24"}, {la, "fd09::1/64"}} {
		addr, err := netlink.ParseAddr(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		addr.Flags = unix.IFA_F_NODAD
		if err := netlink.AddrAdd(c.l, addr); err != nil {
			t.Fatal(err)
		}
	}
	// Until a has carrier, its IPv6 address stays tentative (even with
	// NODAD) and the kernel drops what is sent to it: wait for that, not
	// for a time (under load the link watcher can take seconds).
	usableV6(t, la, netip.MustParseAddr("fd09::1"))
	// The kernel announces the address before it inserts its local
	// route: wait for the route too, or the first datagrams are dropped.
	localRouteV6(t, netip.MustParseAddr("fd09::1"))
	s, err := Open(Options{Ifindex: b, Queue: 0, Frames: 16, TxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	q := s.NewTxQueue()
	if q == nil {
		t.Fatal("no TX queue on a socket with TxFrames")
	}
	for _, fam := range []struct{ src, dst string }{{"10.9.0.2:40000", "10.9.0.1:2121"}, {"[fd09::2]:40000", "[fd09::1]:2121"}} {
		src, dst := netip.MustParseAddrPort(fam.src), netip.MustParseAddrPort(fam.dst)
		uc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(dst))
		if err != nil {
			t.Fatal(err)
		}
		h, err := NewHeader(lb.Attrs().HardwareAddr, la.Attrs().HardwareAddr, src, dst, 2)
		if err != nil {
			t.Fatal(err)
		}
		const total, batch = 300, 40
		buf := make([]byte, 2048)
		for sent := 0; sent < total; {
			for i := 0; i < batch && sent < total; i, sent = i+1, sent+1 {
				addr, f, ok := q.Frame()
				if !ok {
					t.Fatalf("no TX frame for datagram %d", sent)
				}
				n := 100 + sent
				p := f[h.Len() : h.Len()+n]
				for j := range p {
					p[j] = byte(sent + j)
				}
				h.Finish(f, n)
				q.Submit(addr, h.Len()+n)
			}
			if got := q.Flush(); got == 0 {
				t.Fatal("Flush queued nothing")
			}
			// Read this batch back before sending the next: the socket
			// buffer is small.
			for k := (sent - 1) / batch * batch; k < sent; k++ {
				uc.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, from, err := uc.ReadFromUDPAddrPort(buf)
				if err != nil {
					st, _ := s.Statistics()
					snmp, _ := os.ReadFile("/proc/thread-self/net/snmp")
					snmp6, _ := os.ReadFile("/proc/thread-self/net/snmp6")
					dev, _ := os.ReadFile("/proc/thread-self/net/dev")
					addrs, _ := netlink.AddrList(la, netlink.FAMILY_ALL)
					var flags []string
					for _, a := range addrs {
						flags = append(flags, fmt.Sprintf("%s flags %#x", a.IPNet, a.Flags))
					}
					routes, _ := netlink.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
					t.Fatalf("%v datagram %d: %v; %+v\n%s\n%s\n%s\naddresses of %s: %v\nIPv6 routes, every table: %v",
						dst, k, err, st, snmp, nonZero(snmp6), dev, la.Attrs().Name, flags, routes)
				}
				want := make([]byte, 100+k)
				for j := range want {
					want[j] = byte(k + j)
				}
				if from.Addr().Unmap() != src.Addr() || from.Port() != src.Port() || !bytes.Equal(buf[:n], want) {
					t.Fatalf("%v datagram %d: %d bytes from %v", dst, k, n, from)
				}
			}
		}
		uc.Close()
	}
	st, err := s.Statistics()
	if err != nil || st.Transmitted != 600 || st.TxInvalidDescs != 0 || st.TxKickErrors != 0 {
		t.Fatalf("statistics %+v, %v: want 600 transmitted", st, err)
	}
	// Every frame taken, none flushed: the 65th is refused and counted.
	var held []uint64
	for {
		addr, _, ok := q.Frame()
		if !ok {
			break
		}
		held = append(held, addr)
	}
	if len(held) != 64 {
		t.Fatalf("took %d frames, want the pool's 64", len(held))
	}
	for _, a := range held {
		q.Unused(a)
	}
	if st, _ := s.Statistics(); st.TxPoolEmpty != 1 {
		t.Fatalf("tx_pool_empty %d, want 1", st.TxPoolEmpty)
	}
	if _, _, ok := q.Frame(); !ok {
		t.Fatal("a frame given back is not reusable")
	}
}

// TestOpenRefusesBadTxFrames: TxFrames not a power of two in range.
func TestOpenRefusesBadTxFrames(t *testing.T) {
	for _, n := range []int{1, 15, 100, 1 << 17, -1} {
		if _, err := Open(Options{Ifindex: 1, TxFrames: n}); err == nil {
			t.Errorf("TxFrames %d accepted", n)
		}
	}
}

// usableV6 waits (up to 20 s) until l holds addr without the tentative
// flag: the address list, then the kernel's address notifications.
func usableV6(t *testing.T, l netlink.Link, addr netip.Addr) {
	t.Helper()
	updates, done := make(chan netlink.AddrUpdate, 16), make(chan struct{})
	defer close(done)
	if err := netlink.AddrSubscribe(updates, done); err != nil {
		t.Fatal(err)
	}
	usable := func(ip net.IP, flags int) bool {
		a, ok := netip.AddrFromSlice(ip)
		return ok && a == addr && flags&unix.IFA_F_TENTATIVE == 0
	}
	as, err := netlink.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if usable(a.IP, a.Flags) {
			return
		}
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case u := <-updates:
			if u.NewAddr && u.LinkIndex == l.Attrs().Index && usable(u.LinkAddress.IP, u.Flags) {
				return
			}
		case <-timeout:
			t.Fatalf("%v on %s still tentative or absent after 20 s: %+v", addr, l.Attrs().Name, as)
		}
	}
}

// localRouteV6 waits, on route notifications, until the local table
// holds addr's /128 local route.
func localRouteV6(t *testing.T, addr netip.Addr) {
	t.Helper()
	updates, done := make(chan netlink.RouteUpdate, 16), make(chan struct{})
	defer close(done)
	if err := netlink.RouteSubscribe(updates, done); err != nil {
		t.Fatal(err)
	}
	isLocal := func(r netlink.Route) bool {
		if r.Type != unix.RTN_LOCAL || r.Dst == nil {
			return false
		}
		a, ok := netip.AddrFromSlice(r.Dst.IP)
		ones, _ := r.Dst.Mask.Size()
		return ok && a == addr && ones == 128
	}
	rs, err := netlink.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Table: unix.RT_TABLE_LOCAL}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if isLocal(r) {
			return
		}
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case u := <-updates:
			if u.Type == unix.RTM_NEWROUTE && isLocal(u.Route) {
				return
			}
		case <-timeout:
			t.Fatalf("no local route for %v after 20 s: %v", addr, rs)
		}
	}
}

// nonZero keeps the lines of a /proc/net/snmp6 dump whose value is not 0.
func nonZero(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] != "0" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

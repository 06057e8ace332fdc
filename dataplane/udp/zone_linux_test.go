//go:build linux

package udp

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/transport"
)

// rawSockaddr6 is an AF_INET6 sockaddr as the kernel fills one in on
// receive: network-order port, host-order scope.
func rawSockaddr6(a string, port uint16, scope uint32) unix.RawSockaddrInet6 {
	sa := unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: netip.MustParseAddr(a).As16(), Scope_id: scope}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], port)
	return sa
}

// A link-local source keeps the interface it came in on (sin6_scope_id)
// as its zone: without it the reply cannot be sent (issue 24, upstream's
// fix/udp-preserve-scope-id). Any other source converts as before.
func TestSockaddrScope(t *testing.T) {
	for _, c := range []struct {
		addr  string
		scope uint32
		want  string
	}{
		{"fe80::1", 42, "[fe80::1%42]:4871"},
		{"fe80::1", 0, "[fe80::1]:4871"},
		{"febf:ffff::1", 7, "[febf:ffff::1%7]:4871"}, // fe80::/10 ends here
		{"fec0::1", 7, "[fec0::1]:4871"},
		{"2001:db8::1", 0, "[2001:db8::1]:4871"},
		{"2001:db8::1", 9, "[2001:db8::1]:4871"}, // the kernel reports 0; a scope on it would be noise
		{"::ffff:192.0.2.1", 0, "192.0.2.1:4871"},
	} {
		sa := rawSockaddr6(c.addr, 4871, c.scope)
		got := sockaddrToAddrPort(&sa)
		if got.String() != c.want {
			t.Errorf("%s scope %d: %s, want %s", c.addr, c.scope, got, c.want)
		}
	}
	sa4 := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{192, 168, 8, 238}}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:], 2121)
	if got := sockaddrToAddrPort((*unix.RawSockaddrInet6)(unsafe.Pointer(&sa4))); got.String() != "192.168.8.238:2121" {
		t.Errorf("IPv4: %s", got)
	}
	other := unix.RawSockaddrInet6{Family: unix.AF_UNIX}
	if got := sockaddrToAddrPort(&other); got.IsValid() {
		t.Errorf("AF_UNIX: %s", got)
	}
	// Scoped and unscoped twins are different addresses (what made the
	// dropped scope silent: both print alike without it).
	s42, s0 := rawSockaddr6("fe80::1", 1, 42), rawSockaddr6("fe80::1", 1, 0)
	if sockaddrToAddrPort(&s42) == sockaddrToAddrPort(&s0) {
		t.Error("scoped and unscoped fe80::1 compare equal")
	}
}

// A send sets sin6_scope_id from the zone, and what a send writes reads
// back as the same address.
func TestSockaddrRoundTrip(t *testing.T) {
	c6, c4 := &Conn{v6: true}, &Conn{}
	for _, c := range []struct {
		ap    string
		scope uint32
	}{
		{"[fe80::1%3]:2121", 3},
		{"[fe80::1]:2121", 0},
		{"[2001:db8::1]:2121", 0},
		{"192.0.2.1:2121", 0},
	} {
		ap := transport.AddrFromIP(netip.MustParseAddrPort(c.ap)).IP
		var sa unix.RawSockaddrInet6
		if n := c6.putSockaddr(&sa, ap); n != unix.SizeofSockaddrInet6 || sa.Family != unix.AF_INET6 || sa.Scope_id != c.scope {
			t.Errorf("%s: len %d family %d scope %d, want scope %d", c.ap, n, sa.Family, sa.Scope_id, c.scope)
		}
		if back := sockaddrToAddrPort(&sa); back != ap {
			t.Errorf("%s: read back as %s", ap, back)
		}
	}
	// An interface name (not the form an Addr carries) still sends on
	// that interface.
	var sa unix.RawSockaddrInet6
	c6.putSockaddr(&sa, netip.MustParseAddrPort("[fe80::1%lo]:1"))
	if sa.Scope_id != 1 {
		t.Errorf("fe80::1%%lo: scope %d, want lo's index 1", sa.Scope_id)
	}
	// An IPv4 socket takes IPv4 only, without scope.
	var sa4 unix.RawSockaddrInet6
	if n := c4.putSockaddr(&sa4, netip.MustParseAddrPort("[fe80::1%3]:1")); n != 0 {
		t.Errorf("IPv6 on an IPv4 socket: len %d", n)
	}
}

// The conversions run per datagram: no allocation once the interface's
// zone has been seen.
func TestSockaddrScopeDoesNotAllocate(t *testing.T) {
	c6 := &Conn{v6: true}
	sa := rawSockaddr6("fe80::1", 2121, 5)
	ap := sockaddrToAddrPort(&sa)
	var out unix.RawSockaddrInet6
	if a := testing.AllocsPerRun(100, func() {
		ap = sockaddrToAddrPort(&sa)
		c6.putSockaddr(&out, ap)
	}); a != 0 {
		t.Fatalf("%.1f allocations per scoped receive and send", a)
	}
	if out.Scope_id != 5 {
		t.Fatalf("scope %d", out.Scope_id)
	}
}

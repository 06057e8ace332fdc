package transport

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// loopback is an interface every host has, for conversions that look
// names up.
func loopback(t testing.TB) net.Interface {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 && i.Index > 0 {
			return i
		}
	}
	t.Fatal("no loopback interface")
	return net.Interface{}
}

// A link-local address carries its interface as the decimal index, and
// only a link-local address carries one.
func TestWithZoneIndex(t *testing.T) {
	ll := netip.MustParseAddr("fe80::1")
	for _, c := range []struct {
		in   string
		idx  uint32
		want string
	}{
		{"fe80::1", 3, "fe80::1%3"},
		{"fe80::1", 4294967295, "fe80::1%4294967295"},
		{"fe80::1", 0, "fe80::1"},
		{"fe80::1%eth0", 0, "fe80::1"},
		{"fe80::1%eth0", 7, "fe80::1%7"},
		{"2001:db8::1", 3, "2001:db8::1"},
		{"fd00::1", 3, "fd00::1"},
		{"::ffff:169.254.0.1", 3, "169.254.0.1"},
		{"::ffff:192.0.2.1", 3, "192.0.2.1"},
		{"192.0.2.1", 3, "192.0.2.1"},
		{"ff02::1", 3, "ff02::1"}, // never a source, never a destination
	} {
		if got := WithZoneIndex(netip.MustParseAddr(c.in), c.idx); got.String() != c.want {
			t.Errorf("WithZoneIndex(%s, %d) = %s, want %s", c.in, c.idx, got, c.want)
		}
	}
	// Scoped and unscoped twins differ, and so do two scopes: the same
	// fe80:: address on two links is two hosts.
	a3, b3, a4 := WithZoneIndex(ll, 3), WithZoneIndex(ll, 3), WithZoneIndex(ll, 4)
	if a3 != b3 || a3 == ll || a3 == a4 {
		t.Errorf("equality: %s == %s: %v, == %s: %v, == %s: %v", a3, b3, a3 == b3, ll, a3 == ll, a4, a3 == a4)
	}
	if got := ZoneIndex(a3); got != 3 {
		t.Errorf("ZoneIndex(%s) = %d", a3, got)
	}
	// Past the template cache's bound it still works (allocating).
	for i := uint32(1); i <= maxZoneTemplates+10; i++ {
		if z := WithZoneIndex(ll, 100000+i); ZoneIndex(z) != 100000+i {
			t.Fatalf("index %d: %s", 100000+i, z)
		}
	}
}

func TestZoneIndex(t *testing.T) {
	lo := loopback(t)
	for _, c := range []struct {
		in   string
		want uint32
	}{
		{"fe80::1", 0},
		{"192.0.2.1", 0},
		{"fe80::1%3", 3},
		{"fe80::1%003", 3},
		{"fe80::1%0", 0},
		{"fe80::1%4294967295", 4294967295},
		{"fe80::1%4294967296", 0}, // not a number that fits: a name, and no interface has it
		{"fe80::1%" + lo.Name, uint32(lo.Index)},
		{"fe80::1%no-such-if0", 0},
		{"fe80::1%-1", 0},
	} {
		if got := ZoneIndex(netip.MustParseAddr(c.in)); got != c.want {
			t.Errorf("ZoneIndex(%s) = %d, want %d", c.in, got, c.want)
		}
	}
}

// AddrFromIP makes every address in the one form a received datagram's
// source has, so a link matches the packets it receives; it prints as
// upstream prints a scoped SocketAddrV6.
func TestAddrFromIPZones(t *testing.T) {
	lo := loopback(t)
	idx := strconv.Itoa(lo.Index)
	for in, want := range map[string]string{
		"[fe80::1%" + lo.Name + "]:2121":  "[fe80::1%" + idx + "]:2121",
		"[fe80::1%3]:2121":                "[fe80::1%3]:2121",
		"[fe80::1%03]:2121":               "[fe80::1%3]:2121",
		"[fe80::1%0]:2121":                "[fe80::1]:2121",
		"[fe80::1]:2121":                  "[fe80::1]:2121",
		"[2001:db8::1%3]:2121":            "[2001:db8::1]:2121",
		"[2001:db8::1%" + lo.Name + "]:1": "[2001:db8::1]:1",
		"[fe80::1%no-such-if0]:2121":      "[fe80::1%no-such-if0]:2121", // kept: sends to it fail
		"192.0.2.1:2121":                  "192.0.2.1:2121",
	} {
		a := AddrFromIP(netip.MustParseAddrPort(in))
		if a.String() != want {
			t.Errorf("AddrFromIP(%s) = %s, want %s", in, a, want)
		}
		if again := AddrFromIP(a.IP); again != a {
			t.Errorf("AddrFromIP(%s) = %s, not a fixed point", a, again)
		}
	}
	byName := AddrFromIP(netip.MustParseAddrPort("[fe80::1%" + lo.Name + "]:2121"))
	byIndex := AddrFromIP(netip.AddrPortFrom(WithZoneIndex(netip.MustParseAddr("fe80::1"), uint32(lo.Index)), 2121))
	if byName != byIndex {
		t.Errorf("%s by name != %s by index", byName, byIndex)
	}
}

func TestScopeAddr(t *testing.T) {
	lo := loopback(t)
	idx := strconv.Itoa(lo.Index)
	loBind := WithZoneIndex(netip.MustParseAddr("fe80::9"), uint32(lo.Index))
	for _, c := range []struct {
		in, bind string
		want     string // "" : an error containing fails
		fails    string
	}{
		{in: "fe80::1%" + lo.Name, want: "fe80::1%" + idx},
		{in: "fe80::1%" + idx, want: "fe80::1%" + idx},
		{in: "fe80::1%0" + idx, want: "fe80::1%" + idx},
		{in: "fe80::1%no-such-if0", fails: `no interface "no-such-if0"`},
		{in: "fe80::1%4000000000", fails: `no interface "4000000000"`},
		{in: "fe80::1%0", fails: `no interface "0"`},
		{in: "fe80::1", fails: "fe80::1 is link-local: name the interface it is reached on, as in [fe80::1%eth0]"},
		{in: "fe80::1", bind: "::", fails: "is link-local"},
		{in: "fe80::1", bind: "fe80::9%" + lo.Name, want: "fe80::1%" + idx},
		{in: "fe80::1", bind: loBind.String(), want: "fe80::1%" + idx},
		{in: "fe80::1%" + lo.Name, bind: "fe80::9%99999", want: "fe80::1%" + idx},
		{in: "2001:db8::1%" + lo.Name, fails: "2001:db8::1: only a link-local address (fe80::/10) takes an interface (%" + lo.Name + ")"},
		{in: "::ffff:192.0.2.1%3", fails: "only a link-local address"},
		{in: "2001:db8::1", bind: "fe80::9%" + lo.Name, want: "2001:db8::1"},
		{in: "192.0.2.1", want: "192.0.2.1"},
		{in: "::ffff:192.0.2.1", want: "::ffff:192.0.2.1"}, // the resolvers unmap
	} {
		var bind netip.Addr
		if c.bind != "" {
			bind = netip.MustParseAddr(c.bind)
		}
		got, err := ScopeAddr(netip.MustParseAddr(c.in), bind)
		switch {
		case c.fails != "" && (err == nil || !errors.Is(err, ErrInvalidAddress) || !strings.Contains(err.Error(), c.fails)):
			t.Errorf("ScopeAddr(%s, %s) = %s, %v; want an ErrInvalidAddress with %q", c.in, c.bind, got, err, c.fails)
		case c.fails == "" && (err != nil || got.String() != c.want):
			t.Errorf("ScopeAddr(%s, %s) = %s, %v; want %s", c.in, c.bind, got, err, c.want)
		}
	}
}

// Go's net package is handed interface names: a number it does not know
// as a name makes it reread every interface on every send.
func TestNetAddrPort(t *testing.T) {
	lo := loopback(t)
	for in, want := range map[string]string{
		"[fe80::1%" + strconv.Itoa(lo.Index) + "]:1": "[fe80::1%" + lo.Name + "]:1",
		"[fe80::1%" + lo.Name + "]:1":                "[fe80::1%" + lo.Name + "]:1",
		"[fe80::1%4000000000]:1":                     "[fe80::1%4000000000]:1",
		"[fe80::1]:1":                                "[fe80::1]:1",
		"192.0.2.1:1":                                "192.0.2.1:1",
	} {
		if got := NetAddrPort(netip.MustParseAddrPort(in)); got.String() != want {
			t.Errorf("NetAddrPort(%s) = %s, want %s", in, got, want)
		}
	}
}

// The conversions a packet goes through do not allocate once its
// interface has been seen.
func TestZoneConversionsDoNotAllocate(t *testing.T) {
	lo := loopback(t)
	ll := netip.MustParseAddr("fe80::1")
	named := netip.AddrPortFrom(ll.WithZone(lo.Name), 2121)
	numbered := netip.AddrPortFrom(WithZoneIndex(ll, uint32(lo.Index)), 2121)
	var sink netip.AddrPort
	var n uint32
	for name, f := range map[string]func(){
		"WithZoneIndex":        func() { sink = netip.AddrPortFrom(WithZoneIndex(ll, uint32(lo.Index)), 1) },
		"ZoneIndex":            func() { n += ZoneIndex(numbered.Addr()) },
		"ZoneIndex by name":    func() { n += ZoneIndex(named.Addr()) },
		"AddrFromIP by index":  func() { sink = AddrFromIP(numbered).IP },
		"AddrFromIP by name":   func() { sink = AddrFromIP(named).IP },
		"NetAddrPort":          func() { sink = NetAddrPort(numbered) },
		"AddrFromIP, no zone":  func() { sink = AddrFromIP(netip.AddrPortFrom(ll, 1)).IP },
		"WithZoneIndex global": func() { sink = netip.AddrPortFrom(WithZoneIndex(netip.IPv6Loopback(), 3), 1) },
	} {
		f()
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %.1f allocations", name, a)
		}
	}
	_, _ = sink, n
}

// The interface table is reread on a miss at most once a second, so a
// stream of packets naming no interface does not reread it per packet.
func TestIfaceCacheRereads(t *testing.T) {
	reads := 0
	c := &ifaceCache{list: func() ([]net.Interface, error) {
		reads++
		return []net.Interface{{Index: 5, Name: "veth5"}}, nil
	}}
	if idx, ok := c.index("veth5"); !ok || idx != 5 || reads != 1 {
		t.Fatalf("index(veth5) = %d, %v after %d reads", idx, ok, reads)
	}
	for range 100 {
		if _, ok := c.index("veth6"); ok {
			t.Fatal("veth6 found")
		}
		if name, ok := c.name(5); !ok || name != "veth5" {
			t.Fatalf("name(5) = %q, %v", name, ok)
		}
	}
	if reads != 1 {
		t.Errorf("%d reads for 100 misses within a second", reads)
	}
	// A stale table is reread.
	t0 := c.cur.Load()
	t0.read = t0.read.Add(-2 * ifaceMissRefresh)
	if _, ok := c.index("veth6"); ok || reads != 2 {
		t.Errorf("miss on a table older than a second: %d reads", reads)
	}
}

// FuzzZone: whatever address text configuration or a resolver hands over,
// the conversions do not panic, ScopeAddr returns an address in the form
// an Addr carries (a numeric zone on a link-local address only) or an
// ErrInvalidAddress, and AddrFromIP is idempotent.
func FuzzZone(f *testing.F) {
	for _, s := range []string{"fe80::1%3", "fe80::1%lo", "fe80::1", "2001:db8::1%eth0", "fe80::1%0", "fe80::1%00003",
		"fe80::1%4294967295", "fe80::1%99999999999", "::ffff:169.254.1.1", "192.0.2.1", "fe80::1%%", "fe80::1%é"} {
		f.Add(s, uint32(3))
	}
	f.Fuzz(func(t *testing.T, s string, idx uint32) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return
		}
		z := WithZoneIndex(a, idx)
		if z.Zone() != "" && (ZoneIndex(z) != idx || !z.IsLinkLocalUnicast() || z.Zone() != strconv.FormatUint(uint64(idx), 10)) {
			t.Fatalf("WithZoneIndex(%s, %d) = %s", a, idx, z)
		}
		for _, bind := range []netip.Addr{{}, WithZoneIndex(netip.MustParseAddr("fe80::9"), 1)} {
			got, err := ScopeAddr(a, bind)
			if err != nil {
				if !errors.Is(err, ErrInvalidAddress) {
					t.Fatalf("ScopeAddr(%s): %v", a, err)
				}
				continue
			}
			if zone := got.Zone(); zone != "" {
				if n, ok := zoneNumber(zone); !ok || n == 0 || zone != strconv.FormatUint(uint64(n), 10) || !got.IsLinkLocalUnicast() {
					t.Fatalf("ScopeAddr(%s) = %s", a, got)
				}
			}
			if got.WithZone("") != a.WithZone("") {
				t.Fatalf("ScopeAddr(%s) = %s: another address", a, got)
			}
		}
		ap := AddrFromIP(netip.AddrPortFrom(a, 1))
		if again := AddrFromIP(ap.IP); again != ap {
			t.Fatalf("AddrFromIP(%s) = %s", ap, again)
		}
		_ = NetAddrPort(ap.IP)
	})
}

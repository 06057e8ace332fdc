package transport

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Zones. A link-local IPv6 address (fe80::/10) names a host only together
// with the interface it is reached through: the same address can be on
// several links. An Addr carries that interface as the IP address's zone,
// always as the decimal interface index ("[fe80::1%3]:2121"): that is the
// sin6_scope_id the kernel reports with every datagram from a link-local
// source, so the address a link was configured with and the source of the
// packets it receives compare equal, and it is how upstream prints a
// scoped address. Only link-local addresses carry a zone (the kernel
// ignores the scope of any other), so "2001:db8::1" is one address
// whichever interface its packets arrive on.
//
// Interface names ("fe80::1%eth0", as operators write them and as Go's
// net package reports them) are turned into their index where an Addr is
// made: AddrFromIP, ScopeAddr.

// maxZoneTemplates bounds the cache of per-index zone handles;
// WithZoneIndex allocates for indexes past it.
const maxZoneTemplates = 1024

// zoneTemplates maps an interface index to the unspecified address zoned
// with it: WithZoneIndex copies the zone string out of it (no allocation),
// and holding it keeps the zone's interned handle alive so making the
// zone again finds it. Copy on write; read without locking.
var (
	zoneTemplates   atomic.Pointer[map[uint32]netip.Addr]
	zoneTemplatesMu sync.Mutex
)

// WithZoneIndex returns a, unmapped, with zone idx when a is a link-local
// IPv6 address and idx is not 0, else without zone: the form an Addr
// carries. It does not allocate once idx has been seen.
func WithZoneIndex(a netip.Addr, idx uint32) netip.Addr {
	a = a.Unmap()
	if idx == 0 || !a.Is6() || !a.IsLinkLocalUnicast() {
		return a.WithZone("")
	}
	if m := zoneTemplates.Load(); m != nil {
		if t, ok := (*m)[idx]; ok {
			return a.WithZone(t.Zone())
		}
	}
	return a.WithZone(zoneTemplate(idx).Zone())
}

// zoneTemplate finds or adds idx's template (past the bound, makes one
// that is not kept).
func zoneTemplate(idx uint32) netip.Addr {
	zoneTemplatesMu.Lock()
	defer zoneTemplatesMu.Unlock()
	old := zoneTemplates.Load()
	n := 0
	if old != nil {
		if t, ok := (*old)[idx]; ok {
			return t
		}
		n = len(*old)
	}
	t := netip.IPv6Unspecified().WithZone(strconv.FormatUint(uint64(idx), 10))
	if n >= maxZoneTemplates {
		return t
	}
	m := make(map[uint32]netip.Addr, n+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[idx] = t
	zoneTemplates.Store(&m)
	return t
}

// ZoneIndex is the interface index a's zone names: the zone itself when
// it is a number, else the index of the interface of that name; 0 when a
// has no zone or no interface has that name.
func ZoneIndex(a netip.Addr) uint32 {
	z := a.Zone()
	if z == "" {
		return 0
	}
	if n, ok := zoneNumber(z); ok {
		return n
	}
	idx, _ := interfaces.index(z)
	return idx
}

// NetAddrPort is ap as Go's net package wants it: a zone as the
// interface's name (net takes a number it does not know as a name and
// rereads every interface to look for it, on every send), or as the
// number when no interface has that index now. Allocation-free once the
// interface has been seen.
func NetAddrPort(ap netip.AddrPort) netip.AddrPort {
	a := ap.Addr()
	n, ok := zoneNumber(a.Zone())
	if !ok {
		return ap
	}
	if name, ok := interfaces.name(n); ok {
		return netip.AddrPortFrom(a.WithZone(name), ap.Port())
	}
	return ap
}

// zoneNumber parses a decimal zone (an interface index; 0 is none)
// without allocating.
func zoneNumber(z string) (uint32, bool) {
	if z == "" || len(z) > 10 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(z); i++ {
		c := z[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

// canonicalZone returns a as an Addr carries it (see WithZoneIndex), its
// zone, if any, as an interface index; ok is false when the zone of a
// link-local address names no interface (a is returned unchanged).
func canonicalZone(a netip.Addr) (netip.Addr, bool) {
	z := a.Zone()
	if z == "" {
		return a, true
	}
	if !a.Is6() || a.Is4In6() || !a.IsLinkLocalUnicast() {
		return a.Unmap().WithZone(""), true
	}
	if n, ok := zoneNumber(z); ok {
		if z[0] != '0' {
			return a, true // as WithZoneIndex makes it: already canonical
		}
		return WithZoneIndex(a, n), true
	}
	idx, ok := interfaces.index(z)
	if !ok {
		return a, false
	}
	return WithZoneIndex(a, idx), true
}

// ScopeAddr checks a peer's IP address as configured, and returns it as an
// Addr carries it. A zone ("fe80::1%eth0" or "fe80::1%3") must name an
// interface that exists, and belongs on a link-local address only. A
// link-local address without one takes bind's zone (a transport bound to a
// link-local address reaches only that link), and is refused otherwise:
// the kernel cannot tell which link to send it on. Errors wrap
// ErrInvalidAddress.
func ScopeAddr(a, bind netip.Addr) (netip.Addr, error) {
	z := a.Zone()
	ll := a.Is6() && !a.Is4In6() && a.IsLinkLocalUnicast()
	switch {
	case z != "" && !ll:
		return netip.Addr{}, fmt.Errorf("%w: %s: only a link-local address (fe80::/10) takes an interface (%%%s)", ErrInvalidAddress, a.WithZone(""), z)
	case z != "":
		c, ok := canonicalZone(a)
		if !ok || !interfaces.exists(ZoneIndex(c)) {
			return netip.Addr{}, fmt.Errorf("%w: %s: no interface %q", ErrInvalidAddress, a, z)
		}
		return c, nil
	case ll:
		if bi := ZoneIndex(bind); bi != 0 {
			return WithZoneIndex(a, bi), nil
		}
		return netip.Addr{}, fmt.Errorf("%w: %s is link-local: name the interface it is reached on, as in [%s%%eth0]", ErrInvalidAddress, a, a)
	}
	return a, nil
}

// interfaces caches the host's interface names and indexes for the zone
// conversions that need them (interface names in configuration, Go's
// net package, the portable receive path): reread at most once a second
// on a miss and when older than a minute, as Go's own zone cache is.
var interfaces ifaceCache

type ifaceCache struct {
	mu  sync.Mutex
	cur atomic.Pointer[ifaceTable]
	// list reads the interfaces (net.Interfaces; replaced in tests).
	list func() ([]net.Interface, error)
}

type ifaceTable struct {
	byName  map[string]uint32
	byIndex map[uint32]string
	read    time.Time
}

const (
	ifaceMaxAge      = time.Minute
	ifaceMissRefresh = time.Second
)

// lookup finds an entry with f, rereading the table when it is stale, or
// on a miss when it was last read more than a second ago.
func (c *ifaceCache) lookup(f func(*ifaceTable) bool) bool {
	t := c.cur.Load()
	if t != nil {
		if age := time.Since(t.read); age < ifaceMaxAge {
			if f(t) {
				return true
			}
			if age < ifaceMissRefresh {
				return false
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t2 := c.cur.Load(); t2 != t && t2 != nil {
		return f(t2) // another goroutine reread it meanwhile
	}
	list := c.list
	if list == nil {
		list = net.Interfaces
	}
	ifs, err := list()
	if err != nil {
		return t != nil && f(t)
	}
	nt := &ifaceTable{byName: make(map[string]uint32, len(ifs)), byIndex: make(map[uint32]string, len(ifs)), read: time.Now()}
	for _, i := range ifs {
		if i.Index > 0 && i.Name != "" {
			nt.byName[i.Name] = uint32(i.Index)
			nt.byIndex[uint32(i.Index)] = i.Name
		}
	}
	c.cur.Store(nt)
	return f(nt)
}

func (c *ifaceCache) index(name string) (idx uint32, ok bool) {
	ok = c.lookup(func(t *ifaceTable) bool { idx, ok = t.byName[name]; return ok })
	return idx, ok
}

func (c *ifaceCache) name(idx uint32) (name string, ok bool) {
	ok = c.lookup(func(t *ifaceTable) bool { name, ok = t.byIndex[idx]; return ok })
	return name, ok
}

func (c *ifaceCache) exists(idx uint32) bool {
	_, ok := c.name(idx)
	return ok
}

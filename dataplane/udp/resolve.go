package udp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/fips-go/fips/control/transport"
)

const (
	// dnsCacheTTL is how long a host name's resolution is reused (upstream: 60 s).
	dnsCacheTTL = 60 * time.Second
	// dnsCacheMax bounds the cache; peers are configured, so this is generous.
	dnsCacheMax = 256
)

type cacheEntry struct {
	ap      netip.AddrPort
	expires time.Time
}

// resolver resolves "host:port" strings with a small TTL cache for host
// names. Numeric addresses bypass it.
type resolver struct {
	network string // "ip", "ip4" or "ip6": what the socket can reach
	// bind is the socket's address: its zone, when bound to a link-local
	// address, is the link a zoneless link-local peer is on.
	bind   netip.Addr
	now    func() time.Time
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)

	mu    sync.Mutex
	cache map[string]cacheEntry
}

func newResolver(bind netip.AddrPort) *resolver {
	return &resolver{
		network: lookupFamily(bind),
		bind:    bind.Addr(),
		now:     time.Now,
		lookup:  net.DefaultResolver.LookupNetIP,
		cache:   make(map[string]cacheEntry),
	}
}

// lookupFamily is the address family worth asking DNS for, given the
// bound address: an IPv4 socket cannot send to IPv6 and the reverse.
func lookupFamily(bind netip.AddrPort) string {
	a := bind.Addr()
	switch {
	case a.Is4():
		return "ip4"
	case a.IsUnspecified():
		return "ip"
	default:
		return "ip6"
	}
}

// reachable refuses an address of the family the socket cannot send to:
// an IPv6 address on an IPv4-bound socket (every IPv4 bind, and an
// outbound-only transport, which binds 0.0.0.0:0), an IPv4 address on one
// bound to a specific IPv6 address. Host names are looked up in the right
// family already.
func (r *resolver) reachable(a netip.Addr) error {
	switch {
	case r.network == "ip4" && a.Is6():
		return fmt.Errorf("%w: %s is an IPv6 address but this transport's socket is IPv4 only (bound to an IPv4 address, or outbound-only)", transport.ErrInvalidAddress, a)
	case r.network == "ip6" && a.Is4():
		return fmt.Errorf("%w: %s is an IPv4 address but this transport's socket is bound to a specific IPv6 address", transport.ErrInvalidAddress, a)
	}
	return nil
}

func (r *resolver) resolve(ctx context.Context, s string) (netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w: %v", s, transport.ErrInvalidAddress, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || host == "" {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w: want host:port with a numeric port", s, transport.ErrInvalidAddress)
	}
	if port == 0 {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w: port 0 is not a destination (want 1 to 65535)", s, transport.ErrInvalidAddress)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip, err = transport.ScopeAddr(ip, r.bind); err != nil {
			return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w", s, err)
		}
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		if err := transport.CheckDestination(ap); err != nil {
			return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w", s, err)
		}
		if err := r.reachable(ap.Addr()); err != nil {
			return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w", s, err)
		}
		return ap, nil
	}

	now := r.now()
	r.mu.Lock()
	e, ok := r.cache[s]
	r.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.ap, nil
	}

	ips, err := r.lookup(ctx, r.network, host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w: %v", s, transport.ErrInvalidAddress, err)
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w: no addresses", s, transport.ErrInvalidAddress)
	}
	ip, err := transport.ScopeAddr(ips[0], r.bind)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w", s, err)
	}
	ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))

	r.mu.Lock()
	defer r.mu.Unlock()
	if _, present := r.cache[s]; !present && len(r.cache) >= dnsCacheMax {
		for k, v := range r.cache {
			if !now.Before(v.expires) {
				delete(r.cache, k)
			}
		}
		for k := range r.cache {
			if len(r.cache) < dnsCacheMax {
				break
			}
			delete(r.cache, k)
		}
	}
	r.cache[s] = cacheEntry{ap: ap, expires: now.Add(dnsCacheTTL)}
	return ap, nil
}

// cached reports the number of cached entries, for tests.
func (r *resolver) cached() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cache)
}

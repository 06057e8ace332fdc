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
	now     func() time.Time
	lookup  func(ctx context.Context, network, host string) ([]netip.Addr, error)

	mu    sync.Mutex
	cache map[string]cacheEntry
}

func newResolver(network string) *resolver {
	return &resolver{
		network: network,
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

func (r *resolver) resolve(ctx context.Context, s string) (netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w: %v", s, transport.ErrInvalidAddress, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || host == "" {
		return netip.AddrPort{}, fmt.Errorf("udp: resolve %q: %w: want host:port with a numeric port", s, transport.ErrInvalidAddress)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
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
	ap := netip.AddrPortFrom(ips[0].Unmap(), uint16(port))

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

package node

import (
	"container/list"
	"net/netip"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// identityCache maps NodeAddrs to the keys seen for them (peers, DNS,
// configuration) so lookup proofs can be verified and sessions opened. A
// bounded LRU without TTL, as upstream's node.cache.identity_size.
type identityCache struct {
	max     int
	order   *list.List // front = most recent
	entries map[identity.NodeAddr]*list.Element
	// byPrefix finds a NodeAddr from the 15 bytes an fd00::/8 address
	// carries (the last NodeAddr byte does not fit in the address).
	byPrefix map[[15]byte]identity.NodeAddr
	evicted  uint64
}

func newIdentityCache(max int) *identityCache {
	return &identityCache{max: max, order: list.New(), entries: map[identity.NodeAddr]*list.Element{},
		byPrefix: map[[15]byte]identity.NodeAddr{}}
}

type idEntry struct {
	pk       identity.PublicKey
	addr     identity.NodeAddr
	lastSeen time.Time
}

// Add records (or refreshes) a key.
func (c *identityCache) Add(now time.Time, pk identity.PublicKey) {
	a := pk.NodeAddr()
	if e, ok := c.entries[a]; ok {
		e.Value.(*idEntry).lastSeen = now
		c.order.MoveToFront(e)
		return
	}
	c.entries[a] = c.order.PushFront(&idEntry{pk: pk, addr: a, lastSeen: now})
	c.byPrefix[[15]byte(a[:15])] = a
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		old := last.Value.(*idEntry).addr
		delete(c.entries, old)
		if c.byPrefix[[15]byte(old[:15])] == old {
			delete(c.byPrefix, [15]byte(old[:15]))
		}
		c.evicted++
	}
}

// each calls f for every entry, most recent first.
func (c *identityCache) each(f func(*idEntry)) {
	for e := c.order.Front(); e != nil; e = e.Next() {
		f(e.Value.(*idEntry))
	}
}

// Lookup implements route.Identities.
func (c *identityCache) Lookup(a identity.NodeAddr) (identity.PublicKey, bool) {
	e, ok := c.entries[a]
	if !ok {
		return identity.PublicKey{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*idEntry).pk, true
}

// Has reports whether a's key is held, without refreshing it.
func (c *identityCache) Has(a identity.NodeAddr) bool {
	_, ok := c.entries[a]
	return ok
}

// Len is the number of keys held.
func (c *identityCache) Len() int { return c.order.Len() }

// LookupIPv6 finds the node behind a FIPS address.
func (c *identityCache) LookupIPv6(ip netip.Addr) (identity.NodeAddr, bool) {
	p, ok := identity.IPv6Prefix(ip)
	if !ok {
		return identity.NodeAddr{}, false
	}
	a, ok := c.byPrefix[p]
	return a, ok
}

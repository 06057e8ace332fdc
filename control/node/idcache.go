package node

import (
	"container/list"

	"github.com/fips-go/fips/control/identity"
)

// identityCache maps NodeAddrs to the keys seen for them (peers, DNS,
// configuration) so lookup proofs can be verified and sessions opened. A
// bounded LRU without TTL, as upstream's node.cache.identity_size.
type identityCache struct {
	max     int
	order   *list.List // front = most recent
	entries map[identity.NodeAddr]*list.Element
	evicted uint64
}

func newIdentityCache(max int) *identityCache {
	return &identityCache{max: max, order: list.New(), entries: map[identity.NodeAddr]*list.Element{}}
}

// Add records (or refreshes) a key.
func (c *identityCache) Add(pk identity.PublicKey) {
	a := pk.NodeAddr()
	if e, ok := c.entries[a]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.entries[a] = c.order.PushFront(pk)
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(identity.PublicKey).NodeAddr())
		c.evicted++
	}
}

// Lookup implements route.Identities.
func (c *identityCache) Lookup(a identity.NodeAddr) (identity.PublicKey, bool) {
	e, ok := c.entries[a]
	if !ok {
		return identity.PublicKey{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(identity.PublicKey), true
}

// Len is the number of keys held.
func (c *identityCache) Len() int { return c.order.Len() }

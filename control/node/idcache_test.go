package node

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

func TestIdentityCacheIsABoundedLRU(t *testing.T) {
	c := newIdentityCache(3)
	now := time.Unix(1000, 0)
	var keys []identity.PublicKey
	for range 4 {
		id, err := identity.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, id.PublicKey())
	}
	for _, k := range keys[:3] {
		c.Add(now, k)
	}
	// Touch the oldest so the second becomes the eviction victim.
	if _, ok := c.Lookup(keys[0].NodeAddr()); !ok {
		t.Fatal("lookup miss")
	}
	c.Add(now, keys[3])
	if c.Len() != 3 || c.evicted != 1 {
		t.Fatalf("len %d evicted %d", c.Len(), c.evicted)
	}
	if _, ok := c.Lookup(keys[1].NodeAddr()); ok {
		t.Error("least recently used entry survived")
	}
	for _, k := range []identity.PublicKey{keys[0], keys[2], keys[3]} {
		if got, ok := c.Lookup(k.NodeAddr()); !ok || got != k {
			t.Errorf("entry %s lost", k.NodeAddr().Short())
		}
	}
	// Re-adding refreshes last-seen without growing.
	later := now.Add(time.Minute)
	c.Add(later, keys[0])
	n := 0
	c.each(func(e *idEntry) {
		n++
		if e.addr == keys[0].NodeAddr() && !e.lastSeen.Equal(later) {
			t.Error("last seen not refreshed")
		}
	})
	if n != 3 {
		t.Errorf("each visited %d", n)
	}
}

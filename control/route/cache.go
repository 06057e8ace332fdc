package route

import (
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// CoordCache maps destinations to their tree coordinates (upstream
// CoordCache): bounded, each entry expiring TTL after its last write or
// routing use. A full cache evicts an expired entry if there is one, else
// the least recently used. It is part of a Router and shares its
// goroutine.
//
// Every write and every routing touch sets last_used = now and
// expires_at = now + TTL, so the recency list is also the expiry order: its
// tail is the least recently used entry and, when anything has expired, an
// expired one.
type CoordCache struct {
	entries    map[identity.NodeAddr]*cacheEntry
	head, tail *cacheEntry // head: most recently written or touched
	max        int
	ttlMs      int64

	evictedLRU     uint64
	evictedExpired uint64
	purged         uint64
}

type cacheEntry struct {
	addr       identity.NodeAddr
	coords     []identity.NodeAddr
	created    int64 // Unix ms
	lastUsed   int64
	expiresAt  int64
	pathMTU    uint16
	hasMTU     bool
	prev, next *cacheEntry
}

// CacheEntry is a copy of one cache entry.
type CacheEntry struct {
	Coords     []identity.NodeAddr // self first, root last
	CreatedMs  int64               // Unix ms of the first insert
	LastUsedMs int64               // Unix ms of the last write or routing use
	ExpiresMs  int64               // expired when now > ExpiresMs
	PathMTU    uint16              // from a LookupResponse; 0 when none
}

// NewCoordCache returns an empty cache (size at least 1).
func NewCoordCache(size int, ttl time.Duration) *CoordCache {
	if size < 1 {
		size = 1
	}
	return &CoordCache{entries: make(map[identity.NodeAddr]*cacheEntry, min(size, 1024)), max: size, ttlMs: ttl.Milliseconds()}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// satSub is a−b floored at 0 (upstream saturating_sub on Unix ms).
func satSub(a, b int64) int64 {
	if a < b {
		return 0
	}
	return a - b
}

func (e *cacheEntry) expired(now int64) bool { return now > e.expiresAt }

func (c *CoordCache) unlink(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (c *CoordCache) pushFront(e *cacheEntry) {
	e.next = c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

func (c *CoordCache) touch(e *cacheEntry, now int64) {
	e.lastUsed = now
	e.expiresAt = now + c.ttlMs
	if c.head != e {
		c.unlink(e)
		c.pushFront(e)
	}
}

func (c *CoordCache) remove(e *cacheEntry) {
	c.unlink(e)
	delete(c.entries, e.addr)
}

// Insert records coords for addr (copied; an empty list is ignored). A
// non-zero pathMTU is stored with them (upstream insert_with_path_mtu);
// zero leaves an existing entry's path MTU alone (upstream insert).
func (c *CoordCache) Insert(now time.Time, addr identity.NodeAddr, coords []identity.NodeAddr, pathMTU uint16) {
	c.insert(ms(now), addr, coords, pathMTU)
}

func (c *CoordCache) insert(now int64, addr identity.NodeAddr, coords []identity.NodeAddr, pathMTU uint16) {
	c.insertOwned(now, addr, slices.Clone(coords), pathMTU)
}

// insertOwned is insert for a slice the cache may keep.
func (c *CoordCache) insertOwned(now int64, addr identity.NodeAddr, coords []identity.NodeAddr, pathMTU uint16) {
	if len(coords) == 0 {
		return
	}
	if e, ok := c.entries[addr]; ok {
		e.coords = coords
		if pathMTU != 0 {
			e.pathMTU, e.hasMTU = pathMTU, true
		}
		c.touch(e, now)
		return
	}
	if len(c.entries) >= c.max && c.tail != nil {
		if c.tail.expired(now) {
			c.evictedExpired++
		} else {
			c.evictedLRU++
		}
		c.remove(c.tail)
	}
	e := &cacheEntry{addr: addr, coords: coords, created: now, lastUsed: now, expiresAt: now + c.ttlMs}
	if pathMTU != 0 {
		e.pathMTU, e.hasMTU = pathMTU, true
	}
	c.entries[addr] = e
	c.pushFront(e)
}

// Get returns a copy of addr's coordinates unless missing or expired,
// without refreshing the entry (upstream get).
func (c *CoordCache) Get(now time.Time, addr identity.NodeAddr) ([]identity.NodeAddr, bool) {
	co, ok := c.get(ms(now), addr)
	return slices.Clone(co), ok
}

func (c *CoordCache) get(now int64, addr identity.NodeAddr) ([]identity.NodeAddr, bool) {
	e, ok := c.entries[addr]
	if !ok || e.expired(now) {
		return nil, false
	}
	return e.coords, true
}

// GetAndTouch is the routing read (upstream get_and_touch): an expired
// entry is removed and reported missing; a live one has its TTL
// refreshed. The returned slice is a copy.
func (c *CoordCache) GetAndTouch(now time.Time, addr identity.NodeAddr) ([]identity.NodeAddr, bool) {
	co, ok := c.getAndTouch(ms(now), addr)
	return slices.Clone(co), ok
}

func (c *CoordCache) getAndTouch(now int64, addr identity.NodeAddr) ([]identity.NodeAddr, bool) {
	e, ok := c.entries[addr]
	if !ok {
		return nil, false
	}
	if e.expired(now) {
		c.remove(e)
		return nil, false
	}
	c.touch(e, now)
	return e.coords, true
}

// Entry returns addr's entry, expired or not (upstream get_entry).
func (c *CoordCache) Entry(addr identity.NodeAddr) (CacheEntry, bool) {
	e, ok := c.entries[addr]
	if !ok {
		return CacheEntry{}, false
	}
	return e.view(), true
}

func (e *cacheEntry) view() CacheEntry {
	v := CacheEntry{Coords: slices.Clone(e.coords), CreatedMs: e.created, LastUsedMs: e.lastUsed, ExpiresMs: e.expiresAt}
	if e.hasMTU {
		v.PathMTU = e.pathMTU
	}
	return v
}

// Contains reports a live entry for addr.
func (c *CoordCache) Contains(now time.Time, addr identity.NodeAddr) bool {
	_, ok := c.get(ms(now), addr)
	return ok
}

// Remove drops addr's entry (upstream, on PathBroken) and reports whether
// there was one.
func (c *CoordCache) Remove(addr identity.NodeAddr) bool {
	e, ok := c.entries[addr]
	if ok {
		c.remove(e)
	}
	return ok
}

// Len counts entries, expired ones not yet purged included.
func (c *CoordCache) Len() int { return len(c.entries) }

// Max is the capacity.
func (c *CoordCache) Max() int { return c.max }

// TTL is the entry lifetime after a write or routing use.
func (c *CoordCache) TTL() time.Duration { return time.Duration(c.ttlMs) * time.Millisecond }

// Clear drops every entry.
func (c *CoordCache) Clear() {
	clear(c.entries)
	c.head, c.tail = nil, nil
}

// removeIf drops the entries pred selects and returns how many.
func (c *CoordCache) removeIf(pred func(*cacheEntry) bool) int {
	n := 0
	for e := c.head; e != nil; {
		next := e.next
		if pred(e) {
			c.remove(e)
			n++
		}
		e = next
	}
	return n
}

// InvalidateViaNode drops every entry whose path contains x, the entry's
// own address included (upstream invalidate_via_node; called with our own
// address whenever our tree position changes).
func (c *CoordCache) InvalidateViaNode(x identity.NodeAddr) int {
	return c.removeIf(func(e *cacheEntry) bool { return slices.Contains(e.coords, x) })
}

// InvalidateOtherRoots drops every entry whose root is not root (upstream
// invalidate_other_roots; on becoming root, loop drop and parent loss).
func (c *CoordCache) InvalidateOtherRoots(root identity.NodeAddr) int {
	return c.removeIf(func(e *cacheEntry) bool { r, _ := rootOf(e.coords); return r != root })
}

// PurgeExpired drops expired entries and returns how many.
func (c *CoordCache) PurgeExpired(now time.Time) int { return c.purgeExpired(ms(now)) }

func (c *CoordCache) purgeExpired(now int64) int {
	n := 0
	for c.tail != nil && c.tail.expired(now) {
		c.remove(c.tail)
		n++
	}
	// A clock stepped back can leave an expired entry behind a live one in
	// the recency list; the tail check above is exact otherwise.
	c.purged += uint64(n)
	return n
}

// CacheStats is upstream's CacheStats.
type CacheStats struct {
	Entries    int     `json:"entries"`
	MaxEntries int     `json:"max_entries"`
	Expired    int     `json:"expired"`
	AvgAgeMs   int64   `json:"avg_age_ms"`
	FillRatio  float64 `json:"fill_ratio"`
}

// Stats summarises the cache at now.
func (c *CoordCache) Stats(now time.Time) CacheStats {
	n := ms(now)
	s := CacheStats{Entries: len(c.entries), MaxEntries: c.max}
	var total int64
	for e := c.head; e != nil; e = e.next {
		if e.expired(n) {
			s.Expired++
		}
		total += satSub(n, e.created)
	}
	if s.Entries > 0 {
		s.AvgAgeMs = total / int64(s.Entries)
	}
	if c.max > 0 {
		s.FillRatio = float64(s.Entries) / float64(c.max)
	}
	return s
}

// CacheSnapshot is what show_cache reports.
type CacheSnapshot struct {
	Count        int              `json:"count"`
	MaxEntries   int              `json:"max_entries"`
	FillRatio    float64          `json:"fill_ratio"`
	DefaultTTLMs int64            `json:"default_ttl_ms"`
	Expired      int              `json:"expired"`
	AvgAgeMs     int64            `json:"avg_age_ms"`
	Entries      []CacheEntryView `json:"entries"` // live entries by address, never nil
}

// CacheEntryView is one live entry in CacheSnapshot.
type CacheEntryView struct {
	NodeAddr    identity.NodeAddr   `json:"node_addr"`
	DisplayName string              `json:"display_name"` // left empty; the node fills it
	IPv6Addr    string              `json:"ipv6_addr"`
	Depth       int                 `json:"depth"`
	Coords      []identity.NodeAddr `json:"coords"`
	AgeMs       int64               `json:"age_ms"`
	LastUsedMs  int64               `json:"last_used_ms"`       // Unix ms
	PathMTU     *uint16             `json:"path_mtu,omitempty"` // only when learned from a lookup
}

// Snapshot is the show_cache view at now.
func (c *CoordCache) Snapshot(now time.Time) CacheSnapshot {
	n := ms(now)
	st := c.Stats(now)
	s := CacheSnapshot{Count: st.Entries, MaxEntries: st.MaxEntries, FillRatio: st.FillRatio,
		DefaultTTLMs: c.ttlMs, Expired: st.Expired, AvgAgeMs: st.AvgAgeMs, Entries: []CacheEntryView{}}
	for e := c.head; e != nil; e = e.next {
		if e.expired(n) {
			continue
		}
		v := CacheEntryView{NodeAddr: e.addr, IPv6Addr: e.addr.IPv6().String(), Depth: len(e.coords) - 1,
			Coords: slices.Clone(e.coords), AgeMs: satSub(n, e.created), LastUsedMs: e.lastUsed}
		if e.hasMTU {
			m := e.pathMTU
			v.PathMTU = &m
		}
		s.Entries = append(s.Entries, v)
	}
	slices.SortFunc(s.Entries, func(a, b CacheEntryView) int { return a.NodeAddr.Compare(b.NodeAddr) })
	return s
}

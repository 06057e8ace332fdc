package route

import (
	"encoding/json"
	"testing"
	"time"
)

func at(msec int64) time.Time { return t0.Add(time.Duration(msec) * time.Millisecond) }

func TestCacheBasicAndExpiryBoundary(t *testing.T) {
	c := NewCoordCache(100, time.Second)
	a, r := addr(1), addr(0)
	c.Insert(at(0), a, path(a, r), 0)
	if got, ok := c.Get(at(0), a); !ok || len(got) != 2 || got[0] != a {
		t.Fatalf("get: %v %v", got, ok)
	}
	if !c.Contains(at(1000), a) {
		t.Fatal("expired at exactly expires_at (upstream: now > expires_at)")
	}
	if c.Contains(at(1001), a) {
		t.Fatal("alive after expires_at")
	}
	if c.Len() != 1 {
		t.Fatal("read-only get removed the entry")
	}
	// Get returns a copy.
	got, _ := c.Get(at(0), a)
	got[0] = addr(9)
	if again, _ := c.Get(at(0), a); again[0] != a {
		t.Fatal("Get exposed internal storage")
	}
	// Empty coordinates are ignored.
	c.Insert(at(0), addr(2), nil, 0)
	if c.Len() != 1 {
		t.Fatal("empty coordinates stored")
	}
}

func TestCacheUpdateKeepsCreatedAndPathMTU(t *testing.T) {
	c := NewCoordCache(100, time.Second)
	a, b, r := addr(1), addr(2), addr(0)
	c.Insert(at(0), a, path(a, r), 1280)
	c.Insert(at(500), a, path(a, b, r), 0)
	e, ok := c.Entry(a)
	if !ok || len(e.Coords) != 3 || e.CreatedMs != ms(at(0)) || e.LastUsedMs != ms(at(500)) || e.ExpiresMs != ms(at(1500)) {
		t.Fatalf("entry %+v", e)
	}
	if e.PathMTU != 1280 {
		t.Fatalf("plain insert cleared the path MTU: %d", e.PathMTU)
	}
	c.Insert(at(600), a, path(a, r), 1400)
	if e, _ := c.Entry(a); e.PathMTU != 1400 {
		t.Fatalf("path MTU not updated: %d", e.PathMTU)
	}
	c.Insert(at(0), b, path(b, r), 0)
	if e, _ := c.Entry(b); e.PathMTU != 0 {
		t.Fatal("regular insert set a path MTU")
	}
}

func TestCacheLRUEviction(t *testing.T) {
	c := NewCoordCache(2, 10*time.Second)
	a1, a2, a3, r := addr(1), addr(2), addr(3), addr(0)
	c.Insert(at(0), a1, path(a1, r), 0)
	c.Insert(at(100), a2, path(a2, r), 0)
	c.GetAndTouch(at(200), a1) // a2 is now least recently used
	c.Insert(at(300), a3, path(a3, r), 0)
	if c.Contains(at(300), a2) || !c.Contains(at(300), a1) || !c.Contains(at(300), a3) {
		t.Fatal("wrong entry evicted")
	}
	if c.evictedLRU != 1 || c.evictedExpired != 0 {
		t.Fatalf("evictions %d/%d", c.evictedLRU, c.evictedExpired)
	}
	// Read-only Get does not protect an entry.
	c.Get(at(400), a1)
	c.Insert(at(500), a2, path(a2, r), 0)
	if c.Contains(at(500), a1) {
		t.Fatal("Get refreshed recency")
	}
}

func TestCacheEvictExpiredFirst(t *testing.T) {
	c := NewCoordCache(2, 100*time.Millisecond)
	a1, a2, a3, r := addr(1), addr(2), addr(3), addr(0)
	c.Insert(at(0), a1, path(a1, r), 0)
	c.Insert(at(50), a2, path(a2, r), 0)
	c.Insert(at(150), a3, path(a3, r), 0)
	if c.Contains(at(150), a1) || !c.Contains(at(150), a2) || !c.Contains(at(150), a3) {
		t.Fatal("expired entry not the one evicted")
	}
	if c.evictedExpired != 1 {
		t.Fatalf("expired evictions %d", c.evictedExpired)
	}
}

func TestCachePurgeExpired(t *testing.T) {
	c := NewCoordCache(100, 100*time.Millisecond)
	r := addr(0)
	c.Insert(at(0), addr(1), path(addr(1), r), 0)
	c.Insert(at(50), addr(2), path(addr(2), r), 0)
	c.Insert(at(200), addr(3), path(addr(3), r), 0)
	if n := c.PurgeExpired(at(151)); n != 2 || c.Len() != 1 || !c.Contains(at(151), addr(3)) {
		t.Fatalf("purged %d, len %d", n, c.Len())
	}
}

func TestCacheGetAndTouchRemovesExpired(t *testing.T) {
	c := NewCoordCache(100, 100*time.Millisecond)
	a := addr(1)
	c.Insert(at(0), a, path(a, addr(0)), 0)
	if _, ok := c.GetAndTouch(at(200), a); ok || c.Len() != 0 {
		t.Fatal("expired entry served or kept")
	}
}

func TestCacheInvalidation(t *testing.T) {
	c := NewCoordCache(100, time.Second)
	r, other := addr(0), addr(9)
	c.Insert(at(0), addr(1), path(addr(1), r), 0)
	c.Insert(at(0), addr(5), path(addr(5), addr(3), addr(1), r), 0)
	c.Insert(at(0), addr(6), path(addr(6), addr(4), r), 0)
	c.Insert(at(0), addr(7), path(addr(7), other), 0)
	if n := c.InvalidateViaNode(addr(3)); n != 1 || c.Len() != 3 {
		t.Fatalf("interior: removed %d", n)
	}
	if n := c.InvalidateViaNode(addr(1)); n != 1 { // its own address
		t.Fatalf("self depth: removed %d", n)
	}
	if n := c.InvalidateViaNode(addr(99)); n != 0 {
		t.Fatalf("absent: removed %d", n)
	}
	if n := c.InvalidateOtherRoots(r); n != 1 || c.Contains(at(0), addr(7)) || !c.Contains(at(0), addr(6)) {
		t.Fatalf("other roots: removed %d", n)
	}
	if !c.Remove(addr(6)) || c.Remove(addr(6)) || c.Len() != 0 {
		t.Fatal("Remove")
	}
}

func TestCacheStatsAndSnapshot(t *testing.T) {
	c := NewCoordCache(100, 100*time.Millisecond)
	r := addr(0)
	c.Insert(at(0), addr(2), path(addr(2), r), 0)
	c.Insert(at(50), addr(1), path(addr(1), r), 1280)
	c.Insert(at(60), addr(3), path(addr(3), addr(1), r), 0)
	st := c.Stats(at(150))
	if st.Entries != 3 || st.MaxEntries != 100 || st.Expired != 1 || st.AvgAgeMs != (150+100+90)/3 || st.FillRatio != 0.03 {
		t.Fatalf("stats %+v", st)
	}
	s := c.Snapshot(at(150))
	if s.Count != 3 || s.Expired != 1 || s.DefaultTTLMs != 100 || len(s.Entries) != 2 {
		t.Fatalf("snapshot %+v", s)
	}
	if s.Entries[0].NodeAddr != addr(1) || s.Entries[1].NodeAddr != addr(3) {
		t.Fatal("entries not sorted by address")
	}
	if s.Entries[0].PathMTU == nil || *s.Entries[0].PathMTU != 1280 || s.Entries[1].PathMTU != nil || s.Entries[1].Depth != 2 {
		t.Fatalf("entry fields %+v %+v", s.Entries[0], s.Entries[1])
	}
	if s.Entries[0].IPv6Addr != addr(1).IPv6().String() || s.Entries[0].LastUsedMs != ms(at(50)) || s.Entries[0].AgeMs != 100 {
		t.Fatalf("entry %+v", s.Entries[0])
	}
	b, err := json.Marshal(NewCoordCache(5, time.Second).Snapshot(at(0)))
	if err != nil || string(b) != `{"count":0,"max_entries":5,"fill_ratio":0,"default_ttl_ms":1000,"expired":0,"avg_age_ms":0,"entries":[]}` {
		t.Fatalf("empty snapshot JSON %s %v", b, err)
	}
}

// The Router's Tick purges expired cache entries and counts them.
func TestTickPurgesCache(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CoordCacheTTL = time.Second
	f := newFixture(t, cfg)
	f.r.Cache().Insert(t0, addr(1), path(addr(1), f.self), 0)
	f.r.Tick(t0.Add(time.Second))
	if f.r.Cache().Len() != 1 {
		t.Fatal("purged early")
	}
	f.r.Tick(t0.Add(1001 * time.Millisecond))
	if f.r.Cache().Len() != 0 || f.r.Stats().Limits.CachePurgedExpired != 1 {
		t.Fatal("not purged")
	}
}

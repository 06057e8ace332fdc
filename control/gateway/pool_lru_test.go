package gateway

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// scanLRU is the reclaim choice as it was made before the heap: a scan of
// every mapping for the least recently referenced one without sessions
// that is not Active (of client only, when own), ties by virtual address.
func scanLRU(p *Pool, client netip.Addr, own bool) *Mapping {
	var lru *Mapping
	for _, m := range p.mappings {
		if m.Sessions > 0 || m.State == Active || (own && m.Client != client) {
			continue
		}
		if lru == nil || m.LastReferenced.Before(lru.LastReferenced) ||
			(m.LastReferenced.Equal(lru.LastReferenced) && m.VirtualIP.Less(lru.VirtualIP)) {
			lru = m
		}
	}
	return lru
}

// TestPoolReclaimUnderFloodMatchesScan: a full 65,535-address pool whose
// mappings belong to a handful of clients, some carrying sessions, some
// draining, re-referenced at random (equal timestamps included), takes a
// flood of fresh names from several clients. Every allocation that has to
// reclaim reclaims exactly the mapping the old full scan would have —
// the pool's least recently referenced reclaimable one, or at its share
// the client's own — and mappings with sessions are never taken.
func TestPoolReclaimUnderFloodMatchesScan(t *testing.T) {
	p, c := newTestPool(t, "fd01::/112", 60, 60)
	p.maxPerClient = 13107 // 65,535 / 5: the four LAN clients are at their share
	rng := rand.New(rand.NewPCG(27, 27))
	clients := []netip.Addr{netip.MustParseAddr("192.168.1.10"), netip.MustParseAddr("192.168.1.11"),
		netip.MustParseAddr("192.168.1.12"), netip.MustParseAddr("192.168.1.13"), {}}
	fresh := freshNodes()
	var nodes []NodeAddr
	for i := range p.Status().Total {
		if i%3 == 0 {
			c.Advance(time.Millisecond) // every third allocation shares its predecessor's timestamp
		}
		n := fresh()
		if _, _, _, err := p.AllocateFor(clients[i%len(clients)], n, mesh(1), "x.fips"); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	// Sessions on one mapping in 50 (Active, pinned), then time on so
	// that a Tick drains a quarter of the rest.
	ct := fakeConntrack{}
	for i, n := range nodes {
		if i%50 == 0 {
			ct[p.mappings[n].VirtualIP] = 1
		}
	}
	p.Tick(c.Now(), ct)
	c.Advance(61 * time.Second)
	for _, n := range nodes[:len(nodes)/4] {
		if m := p.mappings[n]; m.Sessions == 0 {
			m.LastReferenced = c.Now().Add(-time.Hour) // stale: the Tick below drains these
			p.reindex(m, false)
		}
	}
	p.Tick(c.Now(), ct)
	pinned := map[netip.Addr]bool{}
	for v := range ct {
		pinned[v] = true
	}
	evictions, own := 0, 0
	for round := range 300 {
		c.Advance(time.Duration(rng.IntN(2)) * time.Millisecond)
		// Re-reference a random live mapping now and then.
		if round%4 == 0 {
			n := nodes[rng.IntN(len(nodes))]
			if _, ok := p.mappings[n]; ok {
				p.AllocateFor(netip.Addr{}, n, mesh(1), "x.fips")
			}
		}
		client := clients[rng.IntN(len(clients))]
		var want []netip.Addr
		if client.IsValid() && p.perClient[client] >= p.maxPerClient {
			if m := scanLRU(p, client, true); m != nil {
				want = append(want, m.VirtualIP)
				own++
			}
		}
		if len(p.available)+len(want) == 0 {
			if m := scanLRU(p, netip.Addr{}, false); m != nil {
				want = append(want, m.VirtualIP)
			}
		}
		n := fresh()
		_, _, removed, err := p.AllocateFor(client, n, mesh(1), "x.fips")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		nodes = append(nodes, n)
		if len(removed) != len(want) {
			t.Fatalf("round %d: reclaimed %v, the scan would reclaim %v", round, removed, want)
		}
		for i, ev := range removed {
			if ev.VirtualIP != want[i] {
				t.Fatalf("round %d: reclaimed %s, the scan would reclaim %s", round, ev.VirtualIP, want[i])
			}
			if pinned[ev.VirtualIP] {
				t.Fatalf("round %d: reclaimed %s, which carries sessions", round, ev.VirtualIP)
			}
			evictions++
		}
	}
	if st := p.Status(); st.Evicted != uint64(evictions) || evictions < 300 || own == 0 || st.Free != 0 {
		t.Fatalf("status %+v after %d reclaims (%d of a client's own)", st, evictions, own)
	}
}

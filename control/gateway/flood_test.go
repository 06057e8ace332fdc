package gateway

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Issue 27 item 6: any LAN client's <npub>.fips query allocated a pool
// address, with no per-client bound and, once the pool was full, refusal
// for everyone. The flood here is crafted as DNS queries for fresh names
// (the fake daemon answers each with its own mesh address), from one
// client and then from many; a legitimate client's working mapping must
// survive, its next query must be answered, and the counters must say
// what happened.

// meshFor is the fake daemon's answer for a name: a distinct fd00::/8
// address per name.
func meshFor(name string) string {
	h := fnv.New128a()
	h.Write([]byte(strings.ToLower(name)))
	b := h.Sum(nil)
	b[0], b[15] = 0xfd, 0
	return net.IP(b).String()
}

func TestGatewayDNSFloodBoundedPerClient(t *testing.T) {
	up := startUpstream(t, func(q *dns.Msg) []datagram {
		n := q.Question[0].Name
		return []datagram{{msg: answer(q, n, meshFor(n))}}
	})
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	const perClient = 64
	p, err := NewPool(PoolOptions{CIDR: "fd01::/120", TTLSecs: 60, GraceSecs: 60, MaxPerClient: perClient, Now: clock.Now, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var removed []Event
	res := &Resolver{Upstream: up.addr(), TTL: 60, Log: quiet(), Timeout: 2 * time.Second,
		Alloc: func(c netip.Addr, n NodeAddr, m netip.Addr, name string) (netip.Addr, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			v, isNew, rm, err := p.AllocateFor(c, n, m, name)
			removed = append(removed, rm...)
			return v, isNew, err
		}}
	ask := func(client netip.Addr, name string) (netip.Addr, int) {
		t.Helper()
		m := new(dns.Msg)
		if err := m.Unpack(res.HandleFrom(context.Background(), query(1, name, dns.TypeAAAA), client)); err != nil {
			t.Fatal(err)
		}
		if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
			return netip.Addr{}, m.Rcode
		}
		v, _ := netip.AddrFromSlice(m.Answer[0].(*dns.AAAA).AAAA)
		return v, m.Rcode
	}

	// The legitimate client's mapping, in use (conntrack sees a session).
	legit := netip.MustParseAddr("fd99::b")
	vip, rc := ask(legit, "good.fips")
	if !vip.IsValid() {
		t.Fatalf("legitimate query: rcode %d", rc)
	}
	ct := fakeConntrack{vip: 1}
	p.Tick(clock.Now(), ct)

	// One client asks for 2,000 fresh names: every query is answered, but
	// it never holds more than its share, giving up its own oldest.
	flooder := netip.MustParseAddr("fd99::666")
	for i := range 2000 {
		clock.Advance(time.Millisecond)
		if v, rc := ask(flooder, fmt.Sprintf("npub%d.fips", i)); !v.IsValid() {
			t.Fatalf("flood query %d: rcode %d", i, rc)
		}
	}
	if got := p.perClient[flooder]; got != perClient {
		t.Fatalf("flooding client holds %d mappings, want %d", got, perClient)
	}
	st := p.Status()
	if st.Evicted != 2000-perClient || st.Refused != 0 {
		t.Fatalf("after one client's flood: %+v, want evicted %d", st, 2000-perClient)
	}

	// 400 clients, one fresh name each, overfill the 255-address pool:
	// idle mappings are reclaimed, least recently referenced first, and the
	// one in use is not.
	for i := range 400 {
		clock.Advance(time.Millisecond)
		c := netip.AddrFrom16([16]byte{0xfd, 0x98, 14: byte(i >> 8), 15: byte(i)})
		if v, rc := ask(c, fmt.Sprintf("many%d.fips", i)); !v.IsValid() {
			t.Fatalf("many-client query %d: rcode %d", i, rc)
		}
		p.Tick(clock.Now(), ct)
	}
	if m, ok := p.Lookup(vip); !ok || m.DNSName != "good.fips" || m.State != Active {
		t.Fatalf("legitimate mapping lost: %+v %v", m, ok)
	}
	// Its next query is answered too, with a new address.
	if v, rc := ask(legit, "other.fips"); !v.IsValid() || v == vip {
		t.Fatalf("legitimate client's new name: %v rcode %d", v, rc)
	}
	st = p.Status()
	if st.Free != 0 || st.Refused != 0 || st.ClientRefused != 0 || st.Evicted < 2000-perClient+400-(255-1-perClient) {
		t.Errorf("status %+v", st)
	}
	if uint64(len(removed)) != st.Evicted {
		t.Errorf("%d MappingRemoved events for %d evictions", len(removed), st.Evicted)
	}
	for _, ev := range removed {
		if ev.VirtualIP == vip {
			t.Errorf("legitimate mapping's address removed: %+v", ev)
		}
	}
}

// TestGatewayClientShareAllInUseRefused: a client whose every mapping has
// sessions gets no more (counted), and keeps them.
func TestGatewayClientShareAllInUseRefused(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	p, err := NewPool(PoolOptions{CIDR: "fd01::/120", TTLSecs: 60, GraceSecs: 60, MaxPerClient: 2, Now: clock.Now, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	c := netip.MustParseAddr("192.0.2.7")
	ct := fakeConntrack{}
	for i := range byte(2) {
		v, _, _, err := p.AllocateFor(c, node(i+1), mesh(i+1), "x.fips")
		if err != nil {
			t.Fatal(err)
		}
		ct[v] = 1
	}
	p.Tick(clock.Now(), ct)
	if _, _, rm, err := p.AllocateFor(c, node(9), mesh(9), "y.fips"); err == nil || len(rm) != 0 {
		t.Fatalf("third mapping: err %v, removed %v", err, rm)
	}
	if st := p.Status(); st.ClientRefused != 1 || st.Evicted != 0 || st.Active != 2 {
		t.Fatalf("status %+v", st)
	}
}

package gateway

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeUpstream is a DNS server on loopback that answers each query with
// the datagrams script returns, from its own socket (or, for forged ones,
// another).
type fakeUpstream struct {
	conn, foreign *net.UDPConn
	wg            sync.WaitGroup
	mu            sync.Mutex
	seen          []*dns.Msg
}

type datagram struct {
	msg     *dns.Msg
	foreign bool
}

func startUpstream(t *testing.T, script func(q *dns.Msg) []datagram) *fakeUpstream {
	t.Helper()
	c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	f, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	u := &fakeUpstream{conn: c, foreign: f}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		buf := make([]byte, 4096)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil {
				continue
			}
			u.mu.Lock()
			u.seen = append(u.seen, q)
			u.mu.Unlock()
			for _, d := range script(q) {
				b, _ := d.msg.Pack()
				src := c
				if d.foreign {
					src = f
				}
				_, _ = src.WriteToUDP(b, from)
			}
		}
	}()
	t.Cleanup(func() { c.Close(); f.Close(); u.wg.Wait() })
	return u
}

func (u *fakeUpstream) addr() netip.AddrPort { return u.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (u *fakeUpstream) queries() []*dns.Msg {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*dns.Msg(nil), u.seen...)
}

// answer is the daemon's reply: NOERROR with one AAAA.
func answer(q *dns.Msg, name, addr string) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Question = []dns.Question{{Name: dns.Fqdn(name), Qtype: dns.TypeAAAA, Qclass: dns.ClassINET}}
	m.Answer = []dns.RR{&dns.AAAA{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 60},
		AAAA: net.ParseIP(addr)}}
	return m
}

type harness struct {
	res    *Resolver
	pool   *Pool
	mu     sync.Mutex
	events []Event
}

func newHarness(t *testing.T, up netip.AddrPort) *harness {
	t.Helper()
	p, _ := newTestPool(t, "fd01::/112", 60, 30)
	h := &harness{pool: p}
	h.res = &Resolver{Upstream: up, TTL: 60, Log: quiet(), Timeout: 2 * time.Second,
		Alloc: anyClient(p),
		Created: func(_ context.Context, ev Event) {
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		}}
	return h
}

func query(id uint16, name string, qtype uint16) []byte {
	m := new(dns.Msg)
	m.Id = id
	m.RecursionDesired = true
	m.Question = []dns.Question{{Name: dns.Fqdn(name), Qtype: qtype, Qclass: dns.ClassINET}}
	b, _ := m.Pack()
	return b
}

func (h *harness) ask(t *testing.T, id uint16, name string, qtype uint16) *dns.Msg {
	t.Helper()
	b := h.res.Handle(context.Background(), query(id, name, qtype))
	if b == nil {
		t.Fatalf("no answer to %s", name)
	}
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		t.Fatal(err)
	}
	if m.Id != id || !m.Response || !m.RecursionAvailable {
		t.Fatalf("reply header %+v, want id %d, QR and RA", m.MsgHdr, id)
	}
	return m
}

func aaaa(t *testing.T, m *dns.Msg) netip.Addr {
	t.Helper()
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
		t.Fatalf("reply %v, want one answer", m)
	}
	a, ok := m.Answer[0].(*dns.AAAA)
	if !ok {
		t.Fatalf("answer %v is not AAAA", m.Answer[0])
	}
	v, _ := netip.AddrFromSlice(a.AAAA.To16())
	return v
}

const npubName = "npub1testnode.fips"

// The healthy path: the daemon's mesh address comes back as a pool
// address with the configured TTL; a second query reuses it and creates
// no second mapping.
func TestResolverAllocatesAndReuses(t *testing.T) {
	u := startUpstream(t, func(q *dns.Msg) []datagram {
		return []datagram{{msg: answer(q, q.Question[0].Name, "fd00::1")}}
	})
	h := newHarness(t, u.addr())
	m := h.ask(t, 0x1234, "NPUB1TestNode.FIPS", dns.TypeAAAA)
	v := aaaa(t, m)
	if v != netip.MustParseAddr("fd01::1") || m.Answer[0].Header().Ttl != 60 || m.Question[0].Name != "NPUB1TestNode.FIPS." {
		t.Fatalf("answer %v", m)
	}
	if again := aaaa(t, h.ask(t, 7, npubName, dns.TypeAAAA)); again != v {
		t.Fatalf("second query %v, want %v reused", again, v)
	}
	if len(h.events) != 1 || h.events[0] != (Event{Kind: MappingCreated, VirtualIP: v, MeshAddr: netip.MustParseAddr("fd00::1")}) {
		t.Fatalf("events %v, want one MappingCreated", h.events)
	}
	mi := h.pool.Mappings(time.Now())
	if len(mi) != 1 || mi[0].DNSName != "npub1testnode.fips" {
		t.Fatalf("mappings %+v", mi)
	}
	qs := u.queries()
	if len(qs) != 2 || qs[0].Id == 0x1234 || qs[0].Question[0].Qtype != dns.TypeAAAA {
		t.Fatalf("upstream saw %v: want AAAA queries under fresh IDs", qs)
	}
}

// Any type but AAAA/ANY is asked upstream as AAAA, allocates, and is
// answered NODATA with an SOA carrying the TTL.
func TestResolverNodataForA(t *testing.T) {
	u := startUpstream(t, func(q *dns.Msg) []datagram {
		return []datagram{{msg: answer(q, q.Question[0].Name, "fd00::2")}}
	})
	h := newHarness(t, u.addr())
	m := h.ask(t, 9, npubName, dns.TypeA)
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 || len(m.Ns) != 1 || m.Question[0].Qtype != dns.TypeA {
		t.Fatalf("A reply %v, want NODATA", m)
	}
	soa, ok := m.Ns[0].(*dns.SOA)
	if !ok || soa.Minttl != 60 || soa.Ns != "gateway.fips." || soa.Mbox != "nobody.fips." {
		t.Fatalf("authority %v", m.Ns)
	}
	if u.queries()[0].Question[0].Qtype != dns.TypeAAAA || len(h.events) != 1 {
		t.Fatal("A query was not resolved as AAAA upstream")
	}
	if v := aaaa(t, h.ask(t, 10, npubName, dns.TypeANY)); v != netip.MustParseAddr("fd01::1") {
		t.Fatalf("ANY answered %v", v)
	}
}

func TestResolverRefusesOtherNames(t *testing.T) {
	u := startUpstream(t, func(*dns.Msg) []datagram { return nil })
	h := newHarness(t, u.addr())
	for _, n := range []string{"example.com", "fips", "notfips"} {
		if m := h.ask(t, 3, n, dns.TypeAAAA); m.Rcode != dns.RcodeRefused || len(m.Question) != 1 {
			t.Errorf("%s: %v, want REFUSED", n, m)
		}
	}
	if len(u.queries()) != 0 {
		t.Fatal("a non-.fips name was forwarded")
	}
	// No question at all is refused too; garbage is not answered.
	empty := new(dns.Msg)
	empty.Id = 5
	b, _ := empty.Pack()
	m := new(dns.Msg)
	if err := m.Unpack(h.res.Handle(context.Background(), b)); err != nil || m.Rcode != dns.RcodeRefused {
		t.Fatalf("empty question: %v %v", m, err)
	}
	if h.res.Handle(context.Background(), []byte{1, 2, 3}) != nil {
		t.Fatal("garbage answered")
	}
}

// Upstream errors pass through with the client's question; answers that
// are no mesh address, or no AAAA, are SERVFAIL and allocate nothing.
func TestResolverUpstreamFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply func(q *dns.Msg) *dns.Msg
		rcode int
	}{
		{"nxdomain", func(q *dns.Msg) *dns.Msg { m := new(dns.Msg); m.SetRcode(q, dns.RcodeNameError); return m }, dns.RcodeNameError},
		{"not mesh", func(q *dns.Msg) *dns.Msg { return answer(q, q.Question[0].Name, "2001:db8::1") }, dns.RcodeServerFailure},
		{"no aaaa", func(q *dns.Msg) *dns.Msg { m := new(dns.Msg); m.SetReply(q); return m }, dns.RcodeServerFailure},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := startUpstream(t, func(q *dns.Msg) []datagram { return []datagram{{msg: c.reply(q)}} })
			h := newHarness(t, u.addr())
			m := h.ask(t, 11, npubName, dns.TypeA)
			if m.Rcode != c.rcode || len(m.Question) != 1 || m.Question[0].Qtype != dns.TypeA {
				t.Fatalf("reply %v, want rcode %d with the client's question", m, c.rcode)
			}
			if len(h.events) != 0 || h.pool.Status().Free != 65535 {
				t.Fatal("a failed lookup allocated")
			}
		})
	}
}

// Datagrams that do not answer the query sent — another ID, another
// name, a query rather than a response, another source — are discarded
// and the genuine answer still used.
func TestResolverDiscardsForgeries(t *testing.T) {
	u := startUpstream(t, func(q *dns.Msg) []datagram {
		wrongID := answer(q, q.Question[0].Name, "fd00::bad")
		wrongID.Id++
		notResp := answer(q, q.Question[0].Name, "fd00::bad")
		notResp.Response = false
		return []datagram{
			{msg: answer(q, q.Question[0].Name, "fd00::bad"), foreign: true},
			{msg: wrongID},
			{msg: answer(q, "other.fips", "fd00::bad")},
			{msg: notResp},
			{msg: answer(q, q.Question[0].Name, "fd00::1")},
		}
	})
	h := newHarness(t, u.addr())
	aaaa(t, h.ask(t, 12, npubName, dns.TypeAAAA))
	if len(h.events) != 1 || h.events[0].MeshAddr != netip.MustParseAddr("fd00::1") {
		t.Fatalf("events %v, want the genuine fd00::1", h.events)
	}
}

func TestResolverTimeoutAndExhaustion(t *testing.T) {
	u := startUpstream(t, func(*dns.Msg) []datagram { return nil })
	h := newHarness(t, u.addr())
	h.res.Timeout = 100 * time.Millisecond
	if m := h.ask(t, 13, npubName, dns.TypeAAAA); m.Rcode != dns.RcodeServerFailure {
		t.Fatalf("silent upstream: %v, want SERVFAIL", m)
	}

	u2 := startUpstream(t, func(q *dns.Msg) []datagram {
		return []datagram{{msg: answer(q, q.Question[0].Name, "fd00::"+q.Question[0].Name[:1])}}
	})
	p, _ := newTestPool(t, "fd01::/127", 60, 30) // one address
	r := &Resolver{Upstream: u2.addr(), TTL: 5, Log: quiet(), Alloc: anyClient(p)}
	h2 := &harness{res: r, pool: p}
	aaaa(t, h2.ask(t, 1, "a.fips", dns.TypeAAAA))
	if m := h2.ask(t, 2, "b.fips", dns.TypeAAAA); m.Rcode != dns.RcodeServerFailure {
		t.Fatalf("full pool: %v, want SERVFAIL", m)
	}
	if p.Status().Refused != 1 {
		t.Fatalf("refusals %d, want 1", p.Status().Refused)
	}
}

// Serve over a real socket, as a LAN client reaches it, and stops when
// its context ends.
func TestResolverServe(t *testing.T) {
	u := startUpstream(t, func(q *dns.Msg) []datagram {
		return []datagram{{msg: answer(q, q.Question[0].Name, "fd00::1")}}
	})
	h := newHarness(t, u.addr())
	pc, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.res.Serve(ctx, pc) }()
	c := new(dns.Client)
	q := new(dns.Msg)
	q.SetQuestion(npubName+".", dns.TypeAAAA)
	m, _, err := c.Exchange(q, pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	if v := aaaa(t, m); v != netip.MustParseAddr("fd01::1") {
		t.Fatalf("served %v", v)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// FuzzResolverHandle: any datagram is answered with a well-formed reply
// carrying its ID, or not at all, and never panics. The upstream is a
// closed port, so .fips names fail fast.
func FuzzResolverHandle(f *testing.F) {
	f.Add(query(1, "a.fips", dns.TypeAAAA))
	f.Add(query(2, "example.com", dns.TypeA))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	p, err := NewPool(PoolOptions{CIDR: "fd01::/120", Log: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	r := &Resolver{Upstream: netip.MustParseAddrPort("[::1]:9"), Log: quiet(), Alloc: anyClient(p), Timeout: 50 * time.Millisecond}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := r.Handle(context.Background(), b)
		if out == nil {
			return
		}
		m := new(dns.Msg)
		if err := m.Unpack(out); err != nil {
			t.Fatalf("reply does not parse: %v", err)
		}
		if len(b) >= 2 && m.Id != uint16(b[0])<<8|uint16(b[1]) {
			t.Fatalf("reply ID %d", m.Id)
		}
	})
}

// anyClient is p.Allocate as a Resolver's Alloc, ignoring the client.
func anyClient(p *Pool) func(netip.Addr, NodeAddr, netip.Addr, string) (netip.Addr, bool, error) {
	return func(_ netip.Addr, n NodeAddr, m netip.Addr, name string) (netip.Addr, bool, error) {
		return p.Allocate(n, m, name)
	}
}

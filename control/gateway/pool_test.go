package gateway

import (
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// fakeConntrack answers session counts from a map.
type fakeConntrack map[netip.Addr]uint32

func (f fakeConntrack) ActiveSessions(v netip.Addr) (uint32, error) { return f[v], nil }

type failingConntrack struct{}

func (failingConntrack) ActiveSessions(netip.Addr) (uint32, error) {
	return 0, errors.New("no /proc/net/nf_conntrack")
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestPool(t *testing.T, cidr string, ttl, grace uint64) (*Pool, *fakeClock) {
	t.Helper()
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	p, err := NewPool(PoolOptions{CIDR: cidr, TTLSecs: ttl, GraceSecs: grace, Now: c.Now, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func node(b byte) NodeAddr { var n NodeAddr; n[0] = b; return n }

func mesh(b byte) netip.Addr { var a [16]byte; a[0], a[15] = 0xfd, b; return netip.AddrFrom16(a) }

func TestPoolSizes(t *testing.T) {
	for _, c := range []struct {
		cidr  string
		total int
	}{{"fd01::/120", 255}, {"fd01::/126", 3}, {"fd01::/112", 65535}, {"fd01::/96", 65535}, {"fd01::/128", 0}} {
		p, _ := newTestPool(t, c.cidr, 60, 60)
		if s := p.Status(); s.Total != c.total || s.Free != c.total {
			t.Errorf("%s: status %+v, want total and free %d", c.cidr, s, c.total)
		}
	}
}

func TestPoolBadCIDR(t *testing.T) {
	for _, c := range []struct {
		cidr string
		want error
	}{{"not-a-cidr", ErrInvalidCIDR}, {"fd01::", ErrInvalidCIDR}, {"fd01::/abc", ErrInvalidCIDR},
		{"10.0.0.0/8", ErrInvalidCIDR}, {"fd01::%1/112", ErrInvalidCIDR}, {"fd01::/0", ErrInvalidPrefix},
		{"fd01::/129", ErrInvalidPrefix}, {"fd01::/-1", ErrInvalidCIDR}, {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/112", ErrInvalidCIDR}} {
		if _, err := NewPool(PoolOptions{CIDR: c.cidr, Log: quiet()}); !errors.Is(err, c.want) {
			t.Errorf("%q: %v, want %v", c.cidr, err, c.want)
		}
	}
}

func TestPoolAllocateReuseExhaust(t *testing.T) {
	p, _ := newTestPool(t, "fd01::/126", 60, 60)
	v1, isNew, err := p.Allocate(node(1), mesh(1), "a.fips")
	if err != nil || !isNew || v1 != netip.MustParseAddr("fd01::1") {
		t.Fatalf("first allocation %v new=%v err=%v, want fd01::1 new", v1, isNew, err)
	}
	again, isNew, err := p.Allocate(node(1), mesh(1), "a.fips")
	if err != nil || isNew || again != v1 {
		t.Fatalf("same destination again: %v new=%v err=%v, want %v reused", again, isNew, err, v1)
	}
	for i := byte(2); i <= 3; i++ {
		if _, _, err := p.Allocate(node(i), mesh(i), "x.fips"); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = p.Allocate(node(4), mesh(4), "d.fips")
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.InUse != 3 || err.Error() != "pool exhausted (3 addresses in use)" {
		t.Fatalf("fourth allocation in a 3-address pool: %v", err)
	}
	_, _, _ = p.Allocate(node(5), mesh(5), "e.fips")
	if s := p.Status(); s.Refused != 2 || s.Free != 0 || s.Allocated != 3 {
		t.Fatalf("status %+v, want 2 refused, 0 free, 3 allocated", s)
	}
	m, ok := p.Lookup(v1)
	if !ok || m.MeshAddr != mesh(1) || m.NodeAddr != node(1) || m.DNSName != "a.fips" {
		t.Fatalf("lookup %v: %+v %v", v1, m, ok)
	}
	if _, ok := p.Lookup(netip.MustParseAddr("fd01::ff")); ok {
		t.Fatal("lookup of an unallocated address succeeded")
	}
}

// An allocated mapping never used drains once its TTL passes and is freed
// once the grace period passes, its address going back to the pool's end.
func TestPoolAllocatedDrainsAndFrees(t *testing.T) {
	p, c := newTestPool(t, "fd01::/126", 1, 1)
	ct := fakeConntrack{}
	vip, _, _ := p.Allocate(node(1), mesh(1), "a.fips")
	if ev := p.Tick(c.Now(), ct); len(ev) != 0 {
		t.Fatalf("tick before TTL: %v", ev)
	}
	c.Advance(2 * time.Second)
	if ev := p.Tick(c.Now(), ct); len(ev) != 0 || p.Status().Draining != 1 {
		t.Fatalf("tick after TTL: events %v status %+v, want draining", ev, p.Status())
	}
	// A DNS re-query refreshes the clock but, as upstream, does not
	// un-drain: only traffic does.
	if _, isNew, _ := p.Allocate(node(1), mesh(1), "a.fips"); isNew {
		t.Fatal("re-query of a draining mapping allocated anew")
	}
	c.Advance(2 * time.Second)
	ev := p.Tick(c.Now(), ct)
	if len(ev) != 1 || ev[0] != (Event{Kind: MappingRemoved, VirtualIP: vip, MeshAddr: mesh(1)}) {
		t.Fatalf("tick after grace: %v", ev)
	}
	if s := p.Status(); s.Free != 3 || s.Allocated+s.Active+s.Draining != 0 {
		t.Fatalf("after reclaim %+v", s)
	}
	// FIFO reuse: the next allocation takes fd01::2, not the freed ::1.
	if v, _, _ := p.Allocate(node(2), mesh(2), "b.fips"); v != netip.MustParseAddr("fd01::2") {
		t.Fatalf("next allocation %v, want fd01::2", v)
	}
}

func TestPoolActiveTrafficNeverReclaimed(t *testing.T) {
	p, c := newTestPool(t, "fd01::/120", 1, 1)
	vip, _, _ := p.Allocate(node(1), mesh(1), "a.fips")
	ct := fakeConntrack{vip: 2}
	for i := 0; i < 10; i++ {
		if ev := p.Tick(c.Now(), ct); len(ev) != 0 {
			t.Fatalf("tick %d reclaimed a mapping with traffic", i)
		}
		if s := p.Status(); s.Active != 1 {
			t.Fatalf("tick %d: %+v, want active", i, s)
		}
		c.Advance(5 * time.Second)
	}
	info := p.Mappings(c.Now())
	if len(info) != 1 || info[0].Sessions != 2 || info[0].State != Active || info[0].AgeSecs != 50 || info[0].LastRefSecs != 5 {
		t.Fatalf("mapping info %+v", info)
	}
}

// Draining with traffic again recovers to Active; the next drain gets a
// fresh grace window.
func TestPoolDrainRecoverRedrain(t *testing.T) {
	p, c := newTestPool(t, "fd01::/120", 1, 5)
	vip, _, _ := p.Allocate(node(1), mesh(1), "a.fips")
	ct := fakeConntrack{vip: 1}
	p.Tick(c.Now(), ct)
	c.Advance(2 * time.Second)
	ct[vip] = 0
	p.Tick(c.Now(), ct)
	if p.Status().Draining != 1 {
		t.Fatal("idle past TTL did not drain")
	}
	c.Advance(2 * time.Second)
	ct[vip] = 3
	p.Tick(c.Now(), ct)
	if p.Status().Active != 1 {
		t.Fatal("traffic did not recover the draining mapping")
	}
	c.Advance(2 * time.Second)
	ct[vip] = 0
	p.Tick(c.Now(), ct)
	if p.Status().Draining != 1 {
		t.Fatal("second drain did not start")
	}
	c.Advance(4 * time.Second)
	if ev := p.Tick(c.Now(), ct); len(ev) != 0 {
		t.Fatal("reclaimed before the fresh grace window ended")
	}
	c.Advance(2 * time.Second)
	if ev := p.Tick(c.Now(), ct); len(ev) != 1 {
		t.Fatalf("not reclaimed after the fresh grace window: %v", ev)
	}
}

// A conntrack that cannot be read counts as no sessions, as upstream.
func TestPoolConntrackErrorIsIdle(t *testing.T) {
	p, c := newTestPool(t, "fd01::/120", 1, 1)
	p.Allocate(node(1), mesh(1), "a.fips")
	c.Advance(2 * time.Second)
	p.Tick(c.Now(), failingConntrack{})
	c.Advance(2 * time.Second)
	if ev := p.Tick(c.Now(), failingConntrack{}); len(ev) != 1 {
		t.Fatalf("events %v, want the mapping reclaimed", ev)
	}
}

func TestNodeAddrFromMesh(t *testing.T) {
	n, ok := NodeAddrFromMesh(netip.MustParseAddr("fd00::1"))
	if !ok || n[14] != 1 || n[0] != 0 || n[15] != 0 {
		t.Fatalf("fd00::1 → %v %v", n, ok)
	}
	for _, s := range []string{"2001:db8::1", "::ffff:10.0.0.1", "fe80::1"} {
		if _, ok := NodeAddrFromMesh(netip.MustParseAddr(s)); ok {
			t.Errorf("%s accepted as a mesh address", s)
		}
	}
	if got := n.String(); got != "0000000000000000000000000000"+"0100" {
		t.Errorf("String %q", got)
	}
}

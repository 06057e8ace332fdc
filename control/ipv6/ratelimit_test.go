package ipv6

import (
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Unix(1700000000, 0)

func a(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestRateLimiterPerSource(t *testing.T) {
	r := NewRateLimiter(0, 0)
	x, y := a("fd00::1"), a("fd00::2")
	if !r.Allow(x, t0) || !r.Allow(y, t0) {
		t.Fatal("first sends refused")
	}
	if r.Allow(x, t0) || r.Allow(y, t0.Add(99*time.Millisecond)) {
		t.Fatal("rapid resend allowed")
	}
	if !r.Allow(x, t0.Add(100*time.Millisecond)) {
		t.Fatal("send after interval refused")
	}
	// A refusal does not extend the window.
	if !r.Allow(y, t0.Add(100*time.Millisecond)) {
		t.Fatal("refusal extended window")
	}
	if s := r.Stats(); s.Refused != 2 || s.Tracked != 2 || s.Evicted != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRateLimiterCustomInterval(t *testing.T) {
	r := NewRateLimiter(50*time.Millisecond, 0)
	x := a("fd00::1")
	r.Allow(x, t0)
	if r.Allow(x, t0.Add(49*time.Millisecond)) || !r.Allow(x, t0.Add(60*time.Millisecond)) {
		t.Fatal("custom interval not honoured")
	}
}

func TestRateLimiterExpiry(t *testing.T) {
	r := NewRateLimiter(0, 0)
	r.Allow(a("fd00::1"), t0)
	r.Allow(a("fd00::2"), t0)
	r.Allow(a("fd00::3"), t0.Add(9*time.Second))
	if r.Len() != 3 {
		t.Fatalf("len %d", r.Len())
	}
	r.Allow(a("fd00::4"), t0.Add(10*time.Second))
	if r.Len() != 2 || r.Stats().Expired != 2 {
		t.Fatalf("stats %+v", r.Stats())
	}
}

func TestRateLimiterBounded(t *testing.T) {
	r := NewRateLimiter(0, 3)
	for i := range 5 {
		ip := netip.AddrFrom16([16]byte{0xfd, 15: byte(i)})
		if !r.Allow(ip, t0.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatal("refused")
		}
		if r.Len() > 3 {
			t.Fatalf("len %d", r.Len())
		}
	}
	s := r.Stats()
	if s.Evicted != 2 || s.Tracked != 3 {
		t.Fatalf("stats %+v", s)
	}
	// The oldest two were evicted: they are allowed again at once; the
	// newest is still limited.
	if !r.Allow(netip.AddrFrom16([16]byte{0xfd, 15: 0}), t0.Add(5*time.Millisecond)) {
		t.Fatal("evicted source still limited")
	}
	if r.Allow(netip.AddrFrom16([16]byte{0xfd, 15: 4}), t0.Add(5*time.Millisecond)) {
		t.Fatal("newest source not limited")
	}
}

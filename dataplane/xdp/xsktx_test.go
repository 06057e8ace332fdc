package xdp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/afxdp"
)

// fakeSender is a transport.Sender that counts what it was given.
type fakeSender struct {
	reserved, flushed, closed int
	buf                       [2048]byte
}

func (f *fakeSender) Reserve(_ transport.Addr, n int) ([]byte, error) {
	f.reserved++
	return f.buf[:n], nil
}
func (f *fakeSender) Flush() { f.flushed++ }
func (f *fakeSender) Close() { f.closed++ }

// TestXSKSenderFallsBackAndBoundsItsCache: destinations the kernel tables
// do not resolve (or resolve to an interface without an AF_XDP socket)
// go through the UDP sender, counted as no_route, each looked up once per
// miss interval; the destination cache stops at maxXSKDests (counted as
// cache_full) and makes room again once its entries expire.
func TestXSKSenderFallsBackAndBoundsItsCache(t *testing.T) {
	fb := &fakeSender{}
	lookups := 0
	s := &xskSender{fallback: fb, port: 2121, queues: map[int]*afxdp.TxQueue{},
		resolve: func(dst netip.Addr) (l2Route, error) {
			lookups++
			if dst.Is4() && dst.As4()[3] == 1 {
				// Resolved, but to an interface that has no socket here.
				return l2Route{ifindex: 7, src: netip.MustParseAddr("10.0.0.9"), srcMAC: make([]byte, 6), dstMAC: make([]byte, 6), mtu: 1500}, nil
			}
			return l2Route{}, errNoL2
		},
		dests: map[netip.AddrPort]*xskDest{}, counts: &xskTxCounts{}}
	to := func(i int) transport.Addr {
		return transport.AddrFromIP(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 2121))
	}
	for range 3 {
		if b, err := s.Reserve(to(1), 100); err != nil || len(b) != 100 {
			t.Fatalf("Reserve: %d bytes, %v", len(b), err)
		}
		if _, err := s.Reserve(to(2), 100); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	if fb.reserved != 6 || fb.flushed != 1 || s.counts.noRoute.Load() != 6 || s.counts.frames.Load() != 0 {
		t.Fatalf("fallback reserved %d flushed %d; no_route %d frames %d", fb.reserved, fb.flushed, s.counts.noRoute.Load(), s.counts.frames.Load())
	}
	if lookups != 2 || s.counts.resolves.Load() != 2 {
		t.Fatalf("%d lookups (%d counted) for two destinations within the miss interval, want 2", lookups, s.counts.resolves.Load())
	}
	// Fill the cache.
	for i := 3; len(s.dests) < maxXSKDests; i++ {
		if _, err := s.Reserve(to(i), 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Reserve(to(1<<20), 10); err != nil {
		t.Fatal(err)
	}
	if s.counts.cacheFull.Load() != 1 || len(s.dests) != maxXSKDests {
		t.Fatalf("cache_full %d with %d cached, want 1 and %d", s.counts.cacheFull.Load(), len(s.dests), maxXSKDests)
	}
	// Once every entry has expired, a new destination makes room.
	s.now += int64(xskMissTTL + time.Millisecond)
	if _, err := s.Reserve(to(1<<20), 10); err != nil {
		t.Fatal(err)
	}
	if s.counts.cacheFull.Load() != 1 || len(s.dests) != 1 {
		t.Fatalf("after expiry: cache_full %d, %d cached; want 1 and 1", s.counts.cacheFull.Load(), len(s.dests))
	}
	s.Close()
	if fb.closed != 1 {
		t.Fatalf("fallback closed %d times", fb.closed)
	}
	var v ctl.XSKTxView
	s.counts.addTo(&v)
	if v.FallbackNoRoute == 0 || v.FallbackCacheFull != 1 || v.Resolves == 0 {
		t.Fatalf("view %+v", v)
	}
}

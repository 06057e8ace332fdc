package route

import (
	"errors"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

var someFSP = []byte{0x00, 0x00, 0x04, 0x00, 1, 2, 3, 4}

// transit sets up us as root with peers a (src side) and b (dest side),
// dest's coordinates cached under b.
func transit(t *testing.T) (f *fixture, a, b, dest identity.NodeAddr) {
	f = newFixture(t, DefaultConfig())
	a, b, dest = addr(0x10), addr(0x20), addr(0x99)
	f.child(a)
	f.child(b)
	f.r.Cache().Insert(t0, dest, path(dest, b, f.self), 0)
	return
}

func TestForwardingDecodeError(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	for _, msg := range [][]byte{nil, {0x00}, make([]byte, 35), append([]byte{0x30}, make([]byte, 40)...)} {
		if _, err := f.r.HandleSessionDatagram(t0, addr(1), false, msg); !errors.Is(err, ErrDecode) {
			t.Fatalf("%x: %v", msg, err)
		}
	}
	s := f.r.Stats().Forwarding
	if s.DecodeErrorPackets != 4 || s.ReceivedPackets != 4 || s.DecodeErrorBytes != 0+0+34+40 || s.ReceivedBytes != s.DecodeErrorBytes {
		t.Fatalf("%+v", s)
	}
}

func TestForwardingLocalDeliveryIgnoresTTL(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	src := addr(0x10)
	for _, ttl := range []uint8{0, 1, 64} {
		msg := datagram(t, ttl, 1400, src, f.self, someFSP)
		d, err := f.r.HandleSessionDatagram(t0, addr(0x11), true, msg)
		if err != nil || d == nil {
			t.Fatalf("ttl %d: %v %v", ttl, d, err)
		}
		if d.Src != src || d.From != addr(0x11) || d.TTL != ttl || d.PathMTU != 1400 || !d.CE || string(d.Payload) != string(someFSP) {
			t.Fatalf("delivery %+v", d)
		}
	}
	s := f.r.Stats().Forwarding
	if s.DeliveredPackets != 3 || s.DeliveredBytes != 3*(35+uint64(len(someFSP))) || s.TTLExhaustedPackets != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestForwardingTTL(t *testing.T) {
	f, a, b, dest := transit(t)
	for _, ttl := range []uint8{0, 1} {
		if _, err := f.r.HandleSessionDatagram(t0, a, false, datagram(t, ttl, 0xffff, a, dest, someFSP)); !errors.Is(err, ErrTTLExhausted) {
			t.Fatalf("ttl %d: %v", ttl, err)
		}
	}
	if len(f.links.sent) != 0 {
		t.Fatal("ttl 0/1 forwarded or signalled")
	}
	if s := f.r.Stats().Forwarding; s.TTLExhaustedPackets != 2 || s.TTLExhaustedBytes != 2*(35+8) {
		t.Fatalf("%+v", s)
	}
	if _, err := f.r.HandleSessionDatagram(t0, a, false, datagram(t, 2, 0xffff, a, dest, someFSP)); err != nil {
		t.Fatal(err)
	}
	out := f.links.take()
	if len(out) != 1 || out[0].to != b {
		t.Fatalf("sent %+v", out)
	}
	if d := parseDG(t, out[0].msg); d.TTL != 1 || d.Src != a || d.Dest != dest || string(d.Payload) != string(someFSP) {
		t.Fatalf("forwarded %+v", d)
	}
}

func TestForwardingPathMTUAndCE(t *testing.T) {
	f, a, b, dest := transit(t)
	cases := []struct {
		in       uint16
		link     int
		want     uint16
		ceIn     bool
		congest  bool
		wantCE   bool
		detected uint64
	}{
		{0xffff, 1280, 1280, false, false, false, 0},
		{1000, 1280, 1000, true, false, true, 0},
		{1500, 0, 1500, false, true, true, 1}, // unknown link MTU: not folded
		{1400, 1280, 1280, true, true, true, 2},
	}
	for i, tc := range cases {
		f.links.peers[b].mtu = tc.link
		f.links.peers[b].congested = tc.congest
		if _, err := f.r.HandleSessionDatagram(t0, a, tc.ceIn, datagram(t, 64, tc.in, a, dest, someFSP)); err != nil {
			t.Fatal(err)
		}
		out := f.links.take()
		d := parseDG(t, out[0].msg)
		if d.PathMTU != tc.want || out[0].ce != tc.wantCE || d.TTL != 63 {
			t.Fatalf("case %d: path_mtu %d ce %v ttl %d", i, d.PathMTU, out[0].ce, d.TTL)
		}
		if got := f.r.Stats().Congestion.CongestionDetected; got != tc.detected {
			t.Fatalf("case %d: congestion_detected %d", i, got)
		}
	}
	s := f.r.Stats()
	if s.Congestion.CEForwarded != 3 || s.Forwarding.ForwardedPackets != 4 || s.Forwarding.ForwardedBytes != 4*(36+8) {
		t.Fatalf("%+v", s)
	}
	if s.Forwarding.RouteTreeDown != 4 {
		t.Fatalf("route classes %+v", s.Forwarding)
	}
}

func TestForwardingRouteClassesPartitionForwarded(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	root, parent, child, lateral := addr(0x01), addr(0x0A), addr(0x14), addr(0x1E)
	f.topo.coords = path(f.self, parent, root)
	f.links.add(parent)
	f.topo.peerCoords[parent] = path(parent, root)
	f.links.add(child)
	f.topo.peerCoords[child] = path(child, f.self, parent, root)
	f.links.add(lateral)
	f.topo.peerCoords[lateral] = path(lateral, addr(0x02), root)
	src := parent
	dests := map[identity.NodeAddr][]identity.NodeAddr{
		addr(0x80): path(addr(0x80), root),                        // up: parent closer
		addr(0x81): path(addr(0x81), child, f.self, parent, root), // down via tree
		addr(0x82): path(addr(0x82), lateral, addr(0x02), root),   // bloom via lateral, in its subtree
		child:      nil,                                           // direct peer
	}
	for d, c := range dests {
		if c != nil {
			f.r.Cache().Insert(t0, d, c, 0)
		}
	}
	f.flt.add(lateral, addr(0x82))
	for _, d := range sortedKeys(dests) {
		if _, err := f.r.HandleSessionDatagram(t0, src, false, datagram(t, 64, 0xffff, src, d, someFSP)); err != nil {
			t.Fatalf("%v: %v", d, err)
		}
	}
	s := f.r.Stats().Forwarding
	if s.RouteTreeUp != 1 || s.RouteTreeDown != 1 || s.RouteCrosslinkDescend != 1 || s.RouteDirectPeer != 1 {
		t.Fatalf("%+v", s)
	}
	if sum := s.RouteTreeUp + s.RouteTreeDown + s.RouteTreeDownCross + s.RouteCrosslinkDescend + s.RouteCrosslinkAscend + s.RouteDirectPeer; sum != s.ForwardedPackets {
		t.Fatalf("classes sum %d, forwarded %d", sum, s.ForwardedPackets)
	}
}

func setupPayload(t *testing.T, src, dst []identity.NodeAddr) []byte {
	return marshal(t, wire.SessionSetup{SrcCoords: wire.CoordsOf(src...), DestCoords: wire.CoordsOf(dst...), Handshake: make([]byte, wire.XKMsg1Size)})
}

func TestCoordCacheWarming(t *testing.T) {
	src, dst, root := addr(0x01), addr(0x02), addr(0xF0)
	srcC, dstC := path(src, root), path(dst, addr(0x03), root)
	ack := marshal(t, wire.SessionAck{SrcCoords: wire.CoordsOf(srcC...), DestCoords: wire.CoordsOf(dstC...), Handshake: make([]byte, wire.XKMsg2Size)})
	cp := marshal(t, wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP, PayloadLen: 20}, SrcCoords: wire.CoordsOf(srcC...), DestCoords: wire.CoordsOf(dstC...), Ciphertext: make([]byte, 36)})
	cpSrcOnly := marshal(t, wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP, PayloadLen: 20}, SrcCoords: wire.CoordsOf(srcC...), Ciphertext: make([]byte, 36)})
	noCP := marshal(t, wire.FSPEncrypted{Header: wire.FSPHeader{PayloadLen: 20}, Ciphertext: make([]byte, 36)})
	cases := []struct {
		name             string
		payload          []byte
		wantSrc, wantDst bool
	}{
		{"session_setup", setupPayload(t, srcC, dstC), true, true},
		{"session_ack", ack, true, true},
		{"encrypted_with_coords", cp, true, true},
		{"encrypted_src_coords_only", cpSrcOnly, true, false},
		{"encrypted_no_coords", noCP, false, false},
	}
	for _, tc := range cases {
		for _, ttl := range []uint8{0, 64} { // warming is not gated on the TTL
			f := newFixture(t, DefaultConfig())
			f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, ttl, 0xffff, src, dst, tc.payload))
			gotS, okS := f.r.Cache().Get(t0, src)
			gotD, okD := f.r.Cache().Get(t0, dst)
			if okS != tc.wantSrc || okD != tc.wantDst {
				t.Fatalf("%s ttl %d: src %v dst %v", tc.name, ttl, okS, okD)
			}
			if okS && len(gotS) != 2 || okD && len(gotD) != 3 {
				t.Fatalf("%s: coords %v %v", tc.name, gotS, gotD)
			}
			if m := f.r.Stats().Forwarding.WarmMalformedPackets; m != 0 {
				t.Fatalf("%s: warm_malformed %d", tc.name, m)
			}
		}
	}
}

// Addressed to us, the setup still warms: the source under its address,
// the destination coordinates under our own (upstream quirk).
func TestCoordCacheWarmingLocalDeliveryTTLZero(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	src, root := addr(0x01), addr(0xF0)
	d, err := f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, 0, 0xffff, src, f.self, setupPayload(t, path(src, root), path(f.self, root))))
	if err != nil || d == nil {
		t.Fatal(err)
	}
	if c, ok := f.r.Cache().Get(t0, src); !ok || c[1] != root {
		t.Fatal("source coordinates not warmed")
	}
	if !f.r.Cache().Contains(t0, f.self) {
		t.Fatal("own address not cached (upstream caches the destination coordinates under it)")
	}
}

// Upstream's warming parses handshakes leniently: any version nibble, and
// payload_len and trailing bytes are ignored.
func TestCoordCacheWarmingLenientHandshake(t *testing.T) {
	src, dst, root := addr(0x01), addr(0x02), addr(0xF0)
	p := setupPayload(t, path(src, root), path(dst, root))
	p[0] = 0x31 // version 3, phase 1
	p[2], p[3] = 0, 0
	p = append(p, 0xEE, 0xEE)
	f := newFixture(t, DefaultConfig())
	f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, 64, 0xffff, src, dst, p))
	if !f.r.Cache().Contains(t0, src) || !f.r.Cache().Contains(t0, dst) {
		t.Fatal("lenient setup not warmed")
	}
	// A truncated handshake is not.
	f = newFixture(t, DefaultConfig())
	p = setupPayload(t, path(src, root), path(dst, root))
	f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, 64, 0xffff, src, dst, p[:len(p)-1]))
	if f.r.Cache().Len() != 0 {
		t.Fatal("truncated setup warmed")
	}
}

// Upstream test_coord_cache_warming_short_inner_payload_is_dropped_not_panic.
func TestCoordCacheWarmingShortInnerPayload(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	src, dst := addr(0x01), addr(0x02)
	for extra := range 8 {
		p := make([]byte, 4+extra)
		p[1] = byte(wire.FSPFlagCP)
		f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, 1, 0xffff, src, dst, p))
	}
	for n := 12; n <= 27; n++ {
		p := make([]byte, n)
		p[1] = byte(wire.FSPFlagCP)
		f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, 1, 0xffff, src, dst, p))
	}
	s := f.r.Stats().Forwarding
	if f.r.Cache().Len() != 0 || s.TTLExhaustedPackets != 24 || s.WarmMalformedPackets != 24 || s.WarmMalformedBytes != 1212 || s.WarmMalformedBytes != s.ReceivedBytes {
		t.Fatalf("cache %d, %+v", f.r.Cache().Len(), s)
	}
	// U together with CP, or a non-zero version, is malformed too.
	p := make([]byte, 40)
	p[1] = byte(wire.FSPFlagCP | wire.FSPFlagU)
	f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, 1, 0xffff, src, dst, p))
	p[0], p[1] = 0x10, byte(wire.FSPFlagCP)
	f.r.HandleSessionDatagram(t0, addr(0xAA), false, datagram(t, 1, 0xffff, src, dst, p))
	if f.r.Stats().Forwarding.WarmMalformedPackets != 26 {
		t.Fatal("U+CP or version 1 not counted as malformed")
	}
}

// Warming at one hop lets the next datagram be routed.
func TestForwardingWithCacheWarmingEnablesRouting(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	a, b, dest := addr(0x10), addr(0x20), addr(0x99)
	f.child(a)
	f.child(b)
	dg := datagram(t, 64, 0xffff, a, dest, someFSP)
	if _, err := f.r.HandleSessionDatagram(t0, a, false, dg); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("want no route, got %v", err)
	}
	f.links.take()
	setup := datagram(t, 64, 0xffff, a, dest, setupPayload(t, path(a, f.self), path(dest, b, f.self)))
	if _, err := f.r.HandleSessionDatagram(t0, a, false, setup); err != nil {
		t.Fatal(err)
	}
	if out := f.links.take(); len(out) != 1 || out[0].to != b {
		t.Fatalf("setup not forwarded to b: %+v", out)
	}
	if _, err := f.r.HandleSessionDatagram(t0, a, false, dg); err != nil {
		t.Fatal(err)
	}
}

func signalOf(t *testing.T, s sent, self, toward identity.NodeAddr) []byte {
	t.Helper()
	d := parseDG(t, s.msg)
	if d.Src != self || d.Dest != toward || d.TTL != 64 || d.PathMTU != 0xffff || s.ce {
		t.Fatalf("signal datagram %+v ce %v", d, s.ce)
	}
	return d.Payload
}

func TestForwardingNoRouteCoordsRequired(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	src, unknown := addr(0x10), addr(0xFF)
	f.child(src)
	if _, err := f.r.HandleSessionDatagram(t0, src, false, datagram(t, 64, 0xffff, src, unknown, someFSP)); !errors.Is(err, ErrNoRoute) {
		t.Fatal(err)
	}
	out := f.links.take()
	if len(out) != 1 || out[0].to != src {
		t.Fatalf("sent %+v", out)
	}
	cr, err := wire.ParseCoordsRequired(signalOf(t, out[0], f.self, src))
	if err != nil || cr.DestAddr != unknown || cr.Reporter != f.self {
		t.Fatalf("%+v %v", cr, err)
	}
	if s := f.r.Stats().Forwarding; s.DropNoRoutePackets != 1 || s.DropNoRouteBytes != 35+8 {
		t.Fatalf("%+v", s)
	}
}

func TestForwardingNoRoutePathBroken(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	src, dest, gone := addr(0x10), addr(0x99), addr(0x50)
	f.child(src)
	f.r.Cache().Insert(t0, dest, path(dest, gone, f.self), 0) // gone is no peer: no progress
	f.r.HandleSessionDatagram(t0, src, false, datagram(t, 64, 0xffff, src, dest, someFSP))
	out := f.links.take()
	if len(out) != 1 {
		t.Fatalf("sent %d", len(out))
	}
	pb, err := wire.ParsePathBroken(signalOf(t, out[0], f.self, src))
	if err != nil || pb.DestAddr != dest || pb.Reporter != f.self || pb.LastKnownCoords.Len() != 3 || pb.LastKnownCoords.At(1) != gone {
		t.Fatalf("%+v %v", pb, err)
	}
}

func TestForwardingErrorSignalRateLimit(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	src, d1, d2 := addr(0x10), addr(0xF1), addr(0xF2)
	f.child(src)
	send := func(at time.Time, d identity.NodeAddr) int {
		f.r.HandleSessionDatagram(at, src, false, datagram(t, 64, 0xffff, src, d, someFSP))
		return len(f.links.take())
	}
	if send(t0, d1) != 1 {
		t.Fatal("first signal not sent")
	}
	if send(t0.Add(99*time.Millisecond), d1) != 0 {
		t.Fatal("second signal within 100 ms")
	}
	if send(t0.Add(99*time.Millisecond), d2) != 1 {
		t.Fatal("the limit is per destination")
	}
	if send(t0.Add(100*time.Millisecond), d1) != 1 {
		t.Fatal("signal after 100 ms suppressed")
	}
	if s := f.r.Stats(); s.Limits.ErrorRateLimited != 1 || s.Forwarding.DropNoRoutePackets != 4 {
		t.Fatalf("%+v", s)
	}
	// Limiter entries age out on Tick.
	f.r.Tick(t0.Add(10200 * time.Millisecond))
	if f.r.errLimiter.Len() != 0 {
		t.Fatalf("limiter entries left: %d", f.r.errLimiter.Len())
	}
}

func TestForwardingErrorSignalNoReverseRoute(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	src, unknown := addr(0x10), addr(0xFF)
	f.r.HandleSessionDatagram(t0, src, false, datagram(t, 64, 0xffff, src, unknown, someFSP))
	if len(f.links.sent) != 0 || f.r.Stats().Limits.ErrorNoReverseRoute != 1 {
		t.Fatal("signal sent without a route to the source")
	}
}

func TestForwardingErrorSignalLimiterBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxErrorLimiterEntries = 2
	f := newFixture(t, cfg)
	src := addr(0x10)
	f.child(src)
	for i := range 3 {
		f.r.HandleSessionDatagram(t0, src, false, datagram(t, 64, 0xffff, src, addr(0xF0+byte(i)), someFSP))
	}
	if len(f.links.take()) != 2 || f.r.Stats().Limits.ErrorLimiterFull != 1 {
		t.Fatal("limiter not bounded")
	}
	// Once the old entries are stale there is room again.
	f.r.HandleSessionDatagram(t0.Add(10*time.Second), src, false, datagram(t, 64, 0xffff, src, addr(0xF5), someFSP))
	if len(f.links.take()) != 1 {
		t.Fatal("stale entries not swept when full")
	}
}

func TestForwardingMtuExceeded(t *testing.T) {
	f, a, b, dest := transit(t)
	f.links.sendErr = func(p identity.NodeAddr, msg []byte) error {
		if p == b {
			return mtuLimit(1280)(p, msg)
		}
		return nil
	}
	big := make([]byte, 1300)
	_, err := f.r.HandleSessionDatagram(t0, a, false, datagram(t, 64, 0xffff, a, dest, big))
	var me *transport.MTUError
	if !errors.Is(err, ErrMTUExceeded) || !errors.As(err, &me) {
		t.Fatalf("got %v", err)
	}
	out := f.links.take()
	if len(out) != 1 || out[0].to != a {
		t.Fatalf("sent %+v", out)
	}
	mx, err := wire.ParseMtuExceeded(signalOf(t, out[0], f.self, a))
	if err != nil || mx.DestAddr != dest || mx.Reporter != f.self || mx.MTU != 1280 {
		t.Fatalf("%+v %v", mx, err)
	}
	if s := f.r.Stats().Forwarding; s.DropMTUExceededPackets != 1 || s.DropMTUExceededBytes != 35+1300 || s.ForwardedPackets != 0 {
		t.Fatalf("%+v", s)
	}
	// Shares the per-destination limiter with the routing signals.
	f.r.HandleSessionDatagram(t0.Add(50*time.Millisecond), a, false, datagram(t, 64, 0xffff, a, dest, big))
	if len(f.links.take()) != 0 {
		t.Fatal("MtuExceeded not rate limited")
	}
}

func TestForwardingSendError(t *testing.T) {
	f, a, _, dest := transit(t)
	boom := errors.New("boom")
	f.links.sendErr = func(identity.NodeAddr, []byte) error { return boom }
	_, err := f.r.HandleSessionDatagram(t0, a, false, datagram(t, 64, 0xffff, a, dest, someFSP))
	if !errors.Is(err, ErrSend) || !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if s := f.r.Stats().Forwarding; s.DropSendErrorPackets != 1 || s.DropSendErrorBytes != 43 {
		t.Fatalf("%+v", s)
	}
}

func TestSendDatagram(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	b, dest := addr(0x20), addr(0x99)
	f.child(b).mtu = 1400
	if err := f.r.SendDatagram(t0, dest, someFSP); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("got %v", err)
	}
	f.r.Cache().Insert(t0, dest, path(dest, b, f.self), 0)
	mtu, err := f.r.SendDatagramPathMTU(t0, dest, someFSP)
	if err != nil || mtu != 1400 {
		t.Fatal(mtu, err)
	}
	out := f.links.take()
	d := parseDG(t, out[0].msg)
	if out[0].to != b || out[0].ce || d.TTL != 64 || d.PathMTU != 1400 || d.Src != f.self || d.Dest != dest {
		t.Fatalf("%+v", d)
	}
	if s := f.r.Stats().Forwarding; s.OriginatedPackets != 1 || s.OriginatedBytes != 36+8 || s.ForwardedPackets != 0 {
		t.Fatalf("%+v", s)
	}
	// Too big for our own first hop: an error, no signal.
	f.links.sendErr = mtuLimit(1400)
	if err := f.r.SendDatagram(t0, dest, make([]byte, 1400)); !errors.Is(err, ErrMTUExceeded) || len(f.links.sent) != 0 {
		t.Fatalf("got %v", err)
	}
}

// Learn warms the cache from what a dataplane worker forwarded exactly as
// HandleSessionDatagram does, and does nothing else: no forwarding, no
// counters; garbage is ignored.
func TestLearnWarmsOnly(t *testing.T) {
	src, dst, root := addr(0x01), addr(0x02), addr(0xF0)
	srcC, dstC := path(src, root), path(dst, addr(0x03), root)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    bool
	}{
		{"session_setup", setupPayload(t, srcC, dstC), true},
		{"encrypted_no_coords", marshal(t, wire.FSPEncrypted{Header: wire.FSPHeader{PayloadLen: 20}, Ciphertext: make([]byte, 36)}), false},
	} {
		f := newFixture(t, DefaultConfig())
		f.r.Learn(t0, datagram(t, 64, 0xffff, src, dst, tc.payload))
		if f.r.Cache().Contains(t0, src) != tc.want || f.r.Cache().Contains(t0, dst) != tc.want {
			t.Errorf("%s: src %v dst %v cached, want %v", tc.name, f.r.Cache().Contains(t0, src), f.r.Cache().Contains(t0, dst), tc.want)
		}
		if s := f.r.Stats().Forwarding; s != (ForwardingStats{}) {
			t.Errorf("%s: Learn counted %+v", tc.name, s)
		}
	}
	f := newFixture(t, DefaultConfig())
	f.r.Learn(t0, []byte{0, 1, 2})
	f.r.Learn(t0, nil)
	if f.r.Cache().Len() != 0 {
		t.Error("garbage warmed the cache")
	}
}

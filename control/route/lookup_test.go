package route

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

func lookupRequest(t *testing.T, id uint64, target, origin identity.NodeAddr, ttl uint8) []byte {
	return marshal(t, wire.LookupRequest{RequestID: id, Target: target, Origin: origin, TTL: ttl, MinMTU: 1280, OriginCoords: wire.CoordsOf(origin, addr(0))})
}

// signedResponse is a response by signer for target with coords.
func signedResponse(t *testing.T, signer *identity.Identity, id uint64, target identity.NodeAddr, coords []identity.NodeAddr, pathMTU uint16) []byte {
	r := wire.LookupResponse{RequestID: id, Target: target, PathMTU: pathMTU, TargetCoords: wire.CoordsOf(coords...)}
	sig, err := signer.Sign(r.ProofBytes(nil), newSeeded(99))
	if err != nil {
		t.Fatal(err)
	}
	r.Proof = sig[:]
	return marshal(t, r)
}

func TestLookupRequestDecodeError(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	for _, m := range [][]byte{nil, {0x30, 0, 0, 0, 0}, make([]byte, 60)} {
		if err := f.r.HandleLookupRequest(t0, addr(0xAA), m); !errors.Is(err, ErrDecode) {
			t.Fatalf("%x: %v", m, err)
		}
	}
	if s := f.r.Stats().Lookup; s.ReqDecodeError != 3 || s.ReqReceived != 3 || len(f.r.recent) != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestLookupRequestDedupAndExpiry(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	req := lookupRequest(t, 999, addr(0xBB), addr(0xCC), 5)
	if err := f.r.HandleLookupRequest(t0, addr(0xAA), req); !errors.Is(err, ErrNoPeers) {
		t.Fatal(err)
	}
	if err := f.r.HandleLookupRequest(t0.Add(10*time.Second), addr(0xAA), req); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate at the edge of the window: %v", err)
	}
	if len(f.r.recent) != 1 || f.r.Stats().Lookup.ReqDuplicate != 1 {
		t.Fatal("dedup state")
	}
	// Past the 10 s window the id is forgotten (the forward limiter,
	// 2 s per target, lets it through again too).
	if err := f.r.HandleLookupRequest(t0.Add(10*time.Second+time.Millisecond), addr(0xAA), req); errors.Is(err, ErrDuplicate) {
		t.Fatal("expired id still deduplicated")
	}
	f.r.Tick(t0.Add(21 * time.Second))
	if s := f.r.Snapshot(t0); s.RecentRequests != 0 || len(f.r.recentOrder) != 0 {
		t.Fatalf("recent requests not purged by Tick: %d", s.RecentRequests)
	}
}

func TestLookupRequestDedupCacheFull(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LookupMaxRecent = 2
	f := newFixture(t, cfg)
	for id := range uint64(3) {
		f.r.HandleLookupRequest(t0, addr(0xAA), lookupRequest(t, id, addr(0xB0+byte(id)), addr(0xCC), 5))
	}
	if f.r.Stats().Lookup.ReqDedupCacheFull != 1 || len(f.r.recent) != 2 {
		t.Fatal("dedup table not bounded")
	}
}

func TestLookupRequestTargetIsSelf(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	from := addr(0x10)
	f.child(from).mtu = 1350
	f.topo.coords = path(f.self, addr(0x01))
	if err := f.r.HandleLookupRequest(t0, from, lookupRequest(t, 777, f.self, addr(0xCC), 5)); err != nil {
		t.Fatal(err)
	}
	out := f.links.take()
	if len(out) != 1 || out[0].to != from {
		t.Fatalf("sent %+v", out)
	}
	resp, err := wire.ParseLookupResponse(out[0].msg)
	if err != nil {
		t.Fatal(err)
	}
	if resp.RequestID != 777 || resp.Target != f.self || resp.PathMTU != 1350 || resp.TargetCoords.Len() != 2 || resp.TargetCoords.At(1) != addr(0x01) {
		t.Fatalf("%+v", resp)
	}
	if err := f.id.PublicKey().Verify(resp.ProofBytes(nil), resp.Proof); err != nil {
		t.Fatalf("proof: %v", err)
	}
	if s := f.r.Stats().Lookup; s.ReqTargetIsUs != 1 || s.ReqForwarded != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestLookupRequestTTLZeroNotForwarded(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, target := addr(0x10), addr(0xBB)
	f.child(p)
	f.flt.add(p, target)
	if err := f.r.HandleLookupRequest(t0, addr(0xAA), lookupRequest(t, 666, target, addr(0xCC), 0)); !errors.Is(err, ErrTTLExhausted) {
		t.Fatal(err)
	}
	if len(f.links.sent) != 0 || f.r.recent[666] == nil || f.r.Stats().Lookup.ReqTTLExhausted != 1 {
		t.Fatal("ttl 0 handling")
	}
}

func TestLookupRequestForwarding(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	sender, tree1, tree2, mesh, target := addr(0x10), addr(0x20), addr(0x30), addr(0x40), addr(0xBB)
	f.child(sender)
	f.child(tree1)
	f.child(tree2)
	f.links.add(mesh) // not a tree peer
	f.flt.add(sender, target)
	f.flt.add(tree2, target)
	f.flt.add(mesh, target)
	if err := f.r.HandleLookupRequest(t0, sender, lookupRequest(t, 1, target, addr(0xCC), 5)); err != nil {
		t.Fatal(err)
	}
	out := f.links.take()
	if len(out) != 2 || out[0].to != sender || out[1].to != tree2 {
		t.Fatalf("want the tree peers with a hit (sender included), got %+v", out)
	}
	fwd, err := wire.ParseLookupRequest(out[0].msg)
	if err != nil || fwd.TTL != 4 || fwd.RequestID != 1 || fwd.MinMTU != 1280 || fwd.OriginCoords.Len() != 2 {
		t.Fatalf("%+v %v", fwd, err)
	}

	// Another target reachable only through the mesh peer: fallback.
	t2 := addr(0xBC)
	f.flt.add(mesh, t2)
	f.r.HandleLookupRequest(t0, sender, lookupRequest(t, 2, t2, addr(0xCC), 5))
	if out := f.links.take(); len(out) != 1 || out[0].to != mesh {
		t.Fatalf("fallback: %+v", out)
	}
	// Nobody has a third.
	if err := f.r.HandleLookupRequest(t0, sender, lookupRequest(t, 3, addr(0xBD), addr(0xCC), 5)); !errors.Is(err, ErrNoPeers) {
		t.Fatal(err)
	}
	s := f.r.Stats().Lookup
	if s.ReqForwarded != 3 || s.ReqFallbackForwarded != 1 || s.ReqNoTreePeer != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestLookupRequestForwardRateLimit(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, target := addr(0x10), addr(0xBB)
	f.child(p)
	f.flt.add(p, target)
	f.r.HandleLookupRequest(t0, addr(0xAA), lookupRequest(t, 1, target, addr(0xCC), 5))
	if err := f.r.HandleLookupRequest(t0.Add(1999*time.Millisecond), addr(0xAA), lookupRequest(t, 2, target, addr(0xCC), 5)); !errors.Is(err, ErrRateLimited) {
		t.Fatal(err)
	}
	if err := f.r.HandleLookupRequest(t0.Add(1999*time.Millisecond), addr(0xAA), lookupRequest(t, 3, addr(0xBC), addr(0xCC), 5)); errors.Is(err, ErrRateLimited) {
		t.Fatal("the limit is per target")
	}
	if err := f.r.HandleLookupRequest(t0.Add(2*time.Second), addr(0xAA), lookupRequest(t, 4, target, addr(0xCC), 5)); err != nil {
		t.Fatal(err)
	}
	if s := f.r.Stats().Lookup; s.ReqForwardRateLimited != 1 || s.ReqForwarded != 3 {
		t.Fatalf("%+v", s)
	}
	if len(f.links.take()) != 2 {
		t.Fatal("sends")
	}
}

func TestLookupResponseDecodeError(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), make([]byte, 10)); !errors.Is(err, ErrDecode) {
		t.Fatal(err)
	}
	if s := f.r.Stats().Lookup; s.RespDecodeError != 1 || f.r.Cache().Len() != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestLookupResponseTransit(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	back, from := addr(0xDD), addr(0x10)
	f.child(back).mtu = 1200
	f.child(from)
	target := addr(0xBB)
	f.r.HandleLookupRequest(t0, back, lookupRequest(t, 444, target, addr(0xCC), 5))
	f.links.take()
	other := mustIdentity(t, newSeeded(5))
	resp := signedResponse(t, other, 444, target, path(target, addr(0xF0)), 1400)
	if err := f.r.HandleLookupResponse(t0, from, resp); err != nil {
		t.Fatal(err)
	}
	out := f.links.take()
	if len(out) != 1 || out[0].to != back {
		t.Fatalf("sent %+v", out)
	}
	fwd, _ := wire.ParseLookupResponse(out[0].msg)
	if fwd.PathMTU != 1200 || string(fwd.Proof) != string(resp[len(resp)-64:]) {
		t.Fatalf("forwarded %+v", fwd)
	}
	if f.r.Cache().Contains(t0, target) {
		t.Fatal("transit cached the target")
	}
	if err := f.r.HandleLookupResponse(t0, from, resp); !errors.Is(err, ErrForwarded) {
		t.Fatalf("second response: %v", err)
	}
	if s := f.r.Stats().Lookup; s.RespForwarded != 1 || s.RespReceived != 2 {
		t.Fatalf("%+v", s)
	}
}

func originatorFixture(t *testing.T) (*fixture, *identity.Identity, identity.NodeAddr, []identity.NodeAddr, *[]LookupEvent) {
	f := newFixture(t, DefaultConfig())
	target := mustIdentity(t, newSeeded(7))
	ta := target.NodeAddr()
	f.ids[ta] = target.PublicKey()
	var evs []LookupEvent
	f.r.OnLookup(func(_ time.Time, ev LookupEvent) { evs = append(evs, ev) })
	return f, target, ta, path(ta, addr(0xF0)), &evs
}

func TestLookupResponseOriginatorCachesRoute(t *testing.T) {
	f, target, ta, coords, evs := originatorFixture(t)
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), signedResponse(t, target, 555, ta, coords, 1280)); err != nil {
		t.Fatal(err)
	}
	e, ok := f.r.Cache().Entry(ta)
	if !ok || len(e.Coords) != 2 || e.Coords[1] != addr(0xF0) || e.PathMTU != 1280 {
		t.Fatalf("%+v", e)
	}
	if len(*evs) != 1 || (*evs)[0].Outcome != LookupFound || (*evs)[0].RequestID != 555 || (*evs)[0].PathMTU != 1280 || len((*evs)[0].Coords) != 2 {
		t.Fatalf("events %+v", *evs)
	}
	if s := f.r.Stats().Lookup; s.RespAccepted != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestLookupResponseProofFailures(t *testing.T) {
	f, target, ta, coords, evs := originatorFixture(t)
	wrong := mustIdentity(t, newSeeded(8))
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), signedResponse(t, wrong, 701, ta, coords, 1280)); !errors.Is(err, ErrProof) {
		t.Fatalf("wrong key: %v", err)
	}
	// Coordinates substituted after signing.
	good := signedResponse(t, target, 703, ta, coords, 1280)
	fake := wire.LookupResponse{RequestID: 703, Target: ta, PathMTU: 1280, TargetCoords: wire.CoordsOf(ta, addr(0xEE), addr(0xF0)), Proof: good[len(good)-64:]}
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), marshal(t, fake)); !errors.Is(err, ErrProof) {
		t.Fatalf("substituted coords: %v", err)
	}
	// The request id is signed too.
	binary.LittleEndian.PutUint64(good[1:], 704)
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), good); !errors.Is(err, ErrProof) {
		t.Fatalf("changed id: %v", err)
	}
	// path_mtu is not signed: lowering it in flight is accepted.
	good = signedResponse(t, target, 705, ta, coords, 1280)
	binary.LittleEndian.PutUint16(good[25:], 1000)
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), good); err != nil {
		t.Fatalf("unsigned path_mtu: %v", err)
	}
	// Unknown target identity.
	stranger := mustIdentity(t, newSeeded(9))
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), signedResponse(t, stranger, 702, stranger.NodeAddr(), path(stranger.NodeAddr(), addr(0xF0)), 1280)); !errors.Is(err, ErrUnknownTarget) {
		t.Fatalf("identity miss: %v", err)
	}
	s := f.r.Stats().Lookup
	if s.RespProofFailed != 3 || s.RespIdentityMiss != 1 || s.RespAccepted != 1 || len(*evs) != 1 || f.r.Cache().Len() != 1 {
		t.Fatalf("%+v events %d", s, len(*evs))
	}
}

func TestLookupResponseSubFloorPathMTU(t *testing.T) {
	f, target, ta, coords, evs := originatorFixture(t)
	f.r.HandleLookupResponse(t0, addr(0xAA), signedResponse(t, target, 801, ta, coords, 1400))
	if err := f.r.HandleLookupResponse(t0, addr(0xAA), signedResponse(t, target, 802, ta, coords, 64)); err != nil {
		t.Fatal(err)
	}
	e, ok := f.r.Cache().Entry(ta)
	if !ok || e.PathMTU != 1400 {
		t.Fatalf("sub-floor value stored or coordinates lost: %+v", e)
	}
	if (*evs)[1].PathMTU != 0 || f.r.Stats().Errors.LookupRespMTUBelowFloor != 1 {
		t.Fatal("sub-floor not reported")
	}
	f.r.HandleLookupResponse(t0, addr(0xAA), signedResponse(t, target, 803, ta, coords, 256))
	if e, _ := f.r.Cache().Entry(ta); e.PathMTU != 256 || f.r.Stats().Errors.LookupRespMTUBelowFloor != 1 {
		t.Fatal("256 is actionable")
	}
}

func TestStartLookupOutcomes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPendingLookups = 2
	f := newFixture(t, cfg)
	tree, mesh := addr(0x10), addr(0x20)
	f.child(tree)
	f.links.add(mesh)
	t1, t2, t3, t4 := addr(0xB1), addr(0xB2), addr(0xB3), addr(0xB4)
	f.flt.add(tree, t1, t3, t4)
	f.flt.add(mesh, t2)
	if o, n := f.r.StartLookup(t0, addr(0xB9)); o != StartBloomMiss || n != 0 {
		t.Fatal(o, n)
	}
	if o, _ := f.r.StartLookup(t0, t2); o != StartZeroFanout || f.r.LookupPending(t2) {
		t.Fatal("origin must not use non-tree peers", o)
	}
	if o, n := f.r.StartLookup(t0, t1); o != StartSent || n != 1 || !f.r.LookupPending(t1) {
		t.Fatal(o, n)
	}
	req, err := wire.ParseLookupRequest(f.links.take()[0].msg)
	if err != nil || req.Target != t1 || req.Origin != f.self || req.TTL != 64 || req.MinMTU != 0 || req.OriginCoords.At(0) != f.self {
		t.Fatalf("%+v %v", req, err)
	}
	if len(f.r.recent) != 0 {
		t.Fatal("originator recorded its own request id")
	}
	if o, _ := f.r.StartLookup(t0, t1); o != StartDeduplicated {
		t.Fatal(o)
	}
	f.r.StartLookup(t0, t3)
	if o, _ := f.r.StartLookup(t0, t4); o != StartRefused || f.r.Stats().Limits.PendingLookupsFull != 1 {
		t.Fatal(o)
	}
	s := f.r.Stats().Lookup
	if s.ReqBloomMiss != 1 || s.ReqDeduplicated != 1 || s.ReqInitiated != 3 {
		t.Fatalf("%+v", s)
	}
	snap := f.r.Snapshot(t0.Add(time.Second))
	if len(snap.PendingLookups) != 2 || snap.PendingLookups[0].Target != t1 || snap.PendingLookups[0].Attempt != 1 || snap.PendingLookups[0].AgeMs != 1000 || snap.PendingLookups[0].InitiatedMs != ms(t0) {
		t.Fatalf("%+v", snap.PendingLookups)
	}
}

func TestLookupRetriesThenTimeout(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, target := addr(0x10), addr(0xBB)
	f.child(p)
	f.flt.add(p, target)
	var evs []LookupEvent
	f.r.OnLookup(func(_ time.Time, ev LookupEvent) { evs = append(evs, ev) })
	f.r.StartLookup(t0, target)
	ids := map[uint64]bool{}
	var sentAt []int64
	for msec := int64(0); msec <= 16000; msec += 100 {
		if msec > 0 {
			f.r.Tick(at(msec))
		}
		for _, s := range f.links.take() {
			req, err := wire.ParseLookupRequest(s.msg)
			if err != nil {
				t.Fatal(err)
			}
			ids[req.RequestID] = true
			sentAt = append(sentAt, msec)
		}
	}
	want := []int64{0, 1000, 3000, 7000}
	if len(sentAt) != 4 || sentAt[1] != want[1] || sentAt[2] != want[2] || sentAt[3] != want[3] || len(ids) != 4 {
		t.Fatalf("attempts at %v with %d distinct ids, want %v", sentAt, len(ids), want)
	}
	if len(evs) != 1 || evs[0].Outcome != LookupTimedOut || evs[0].Target != target || f.r.LookupPending(target) {
		t.Fatalf("events %+v", evs)
	}
	if s := f.r.Stats().Lookup; s.ReqInitiated != 4 || s.RespTimedOut != 1 {
		t.Fatalf("%+v", s)
	}
}

// A retry that finds no tree peer keeps the lookup pending until the
// last timeout, as upstream.
func TestLookupRetryWithoutPeersStillTimesOut(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	p, target := addr(0x10), addr(0xBB)
	f.child(p)
	f.flt.add(p, target)
	f.r.StartLookup(t0, target)
	delete(f.flt, p)
	for s := int64(1); s <= 15; s++ {
		f.r.Tick(at(s * 1000))
	}
	if f.r.LookupPending(target) || f.r.Stats().Lookup.RespTimedOut != 1 {
		t.Fatal("not timed out at 15 s")
	}
}

func TestLookupBackoff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LookupBackoffBase = time.Second
	cfg.LookupBackoffMax = 3 * time.Second
	f := newFixture(t, cfg)
	p, target := addr(0x10), addr(0xBB)
	f.links.add(p) // not a tree peer: every attempt fails at once
	f.flt.add(p, target)
	f.r.StartLookup(t0, target) // failure 1: 1 s
	if o, _ := f.r.StartLookup(at(999), target); o != StartSuppressed {
		t.Fatal(o)
	}
	f.r.StartLookup(at(1000), target) // failure 2: 2 s
	if o, _ := f.r.StartLookup(at(2999), target); o != StartSuppressed {
		t.Fatal(o)
	}
	f.r.StartLookup(at(3000), target) // failure 3: capped at 3 s
	if o, _ := f.r.StartLookup(at(5999), target); o != StartSuppressed {
		t.Fatal(o)
	}
	f.r.ResetLookupBackoff()
	if o, _ := f.r.StartLookup(at(6000), target); o != StartZeroFanout {
		t.Fatal(o)
	}
	if s := f.r.Stats().Lookup; s.ReqBackoffSuppressed != 3 {
		t.Fatalf("%+v", s)
	}
}

// TestLookupsThroughFullTreeFilters: a tree peer whose filter was refused
// over the FPR cap still gets lookups with full_filter_lookups tree (the
// default) — from the origin, and in transit unless it sent the request —
// while a non-tree peer over the cap does not, and with upstream's
// setting only filter hits count.
func TestLookupsThroughFullTreeFilters(t *testing.T) {
	parent, child, mesh, target := addr(0x10), addr(0x20), addr(0x30), addr(0xB1)
	setup := func(full bool) *fixture {
		cfg := DefaultConfig()
		cfg.FullFilterLookups = full
		f := newFixture(t, cfg)
		f.child(parent) // a tree peer either way
		f.child(child)
		f.links.add(mesh)
		f.flt.overCap(parent)
		f.flt.overCap(mesh)
		return f
	}
	f := setup(true)
	if o, n := f.r.StartLookup(t0, target); o != StartSent || n != 1 {
		t.Fatalf("origin: %v to %d peers, want sent to the full parent", o, n)
	}
	if out := f.links.take(); len(out) != 1 || out[0].to != parent {
		t.Fatalf("origin sent %+v", out)
	}
	// In transit, from the child: up to the full parent; from the
	// parent: not back to it, and the child's filter has no hit.
	if err := f.r.HandleLookupRequest(t0, child, lookupRequest(t, 7, addr(0xB2), addr(0xCC), 5)); err != nil {
		t.Fatal(err)
	}
	if out := f.links.take(); len(out) != 1 || out[0].to != parent {
		t.Fatalf("transit from the child: %+v", out)
	}
	if err := f.r.HandleLookupRequest(t0, parent, lookupRequest(t, 8, addr(0xB3), addr(0xCC), 5)); !errors.Is(err, ErrNoPeers) {
		t.Fatalf("transit from the full parent: %v, sent %+v", err, f.links.take())
	}
	// A filter hit and a full tree peer together: both.
	f.flt.add(child, addr(0xB4))
	f.r.HandleLookupRequest(t0, mesh, lookupRequest(t, 9, addr(0xB4), addr(0xCC), 5))
	if out := f.links.take(); len(out) != 2 || out[0].to != parent || out[1].to != child {
		t.Fatalf("hit plus full parent: %+v", out)
	}

	u := setup(false)
	if o, _ := u.r.StartLookup(t0, target); o != StartBloomMiss {
		t.Fatalf("upstream's setting: %v, want bloom_miss", o)
	}
	if err := u.r.HandleLookupRequest(t0, child, lookupRequest(t, 7, addr(0xB2), addr(0xCC), 5)); !errors.Is(err, ErrNoPeers) {
		t.Fatalf("upstream's setting in transit: %v", err)
	}
}

// TestOwnLookupRequestComingBack: our own request, handed back by a peer,
// is dropped as a duplicate and not recorded, so the response, when it
// arrives, answers our lookup instead of being passed back as transit.
func TestOwnLookupRequestComingBack(t *testing.T) {
	rnd := newSeeded(5)
	target := mustIdentity(t, rnd)
	f := newFixture(t, DefaultConfig())
	parent, child := addr(0x10), addr(0x20)
	f.child(parent)
	f.child(child)
	f.flt.add(parent, target.NodeAddr())
	f.flt.add(child, target.NodeAddr())
	f.ids[target.NodeAddr()] = target.PublicKey()
	if o, n := f.r.StartLookup(t0, target.NodeAddr()); o != StartSent || n != 2 {
		t.Fatal(o, n)
	}
	req, err := wire.ParseLookupRequest(f.links.take()[0].msg)
	if err != nil {
		t.Fatal(err)
	}
	back := marshal(t, req)
	if err := f.r.HandleLookupRequest(t0, parent, back); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("own request from the parent: %v", err)
	}
	if out := f.links.take(); len(out) != 0 || len(f.r.recent) != 0 {
		t.Fatalf("own request forwarded %+v or recorded (%d ids)", out, len(f.r.recent))
	}
	coords := []identity.NodeAddr{target.NodeAddr(), child, f.self}
	if err := f.r.HandleLookupResponse(t0, child, signedResponse(t, target, req.RequestID, target.NodeAddr(), coords, 1400)); err != nil {
		t.Fatal(err)
	}
	if f.r.LookupPending(target.NodeAddr()) || len(f.links.take()) != 0 {
		t.Fatal("the response did not end our lookup, or was passed on")
	}
}

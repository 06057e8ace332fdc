package route

import (
	"errors"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

var typedErrors = []error{ErrDecode, ErrTTLExhausted, ErrNoRoute, ErrMTUExceeded, ErrSend, ErrDuplicate,
	ErrLimit, ErrRateLimited, ErrNoPeers, ErrForwarded, ErrUnknownTarget, ErrProof, ErrSign}

func checkTyped(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, e := range typedErrors {
		if errors.Is(err, e) {
			return
		}
	}
	t.Fatalf("untyped error %v", err)
}

// fuzzFixture has peers, tree coordinates, filters and a small cache, so
// that random input reaches every branch.
func fuzzFixture(t *testing.T) *fixture {
	cfg := DefaultConfig()
	cfg.CoordCacheSize = 8
	cfg.LookupMaxRecent = 8
	f := newFixture(t, cfg)
	a, b, c := addr(0x10), addr(0x20), addr(0x30)
	f.child(a)
	f.child(b).congested = true
	f.links.add(c)
	f.topo.peerCoords[c] = path(c, addr(0x01))
	f.flt.add(b, addr(0x99), addr(0x98))
	f.flt.add(c, addr(0x98))
	f.r.Cache().Insert(t0, addr(0x99), path(addr(0x99), b, f.self), 0)
	f.links.sendErr = mtuLimit(600)
	f.ids[f.self] = f.id.PublicKey()
	return f
}

func seeds(f *testing.F, t testing.TB) {
	src, dst, root := addr(0x10), addr(0x99), addr(0xF0)
	f.Add(datagram(t, 64, 0xffff, src, dst, someFSP))
	f.Add(datagram(t, 1, 1280, src, dst, marshal(t, wire.SessionSetup{SrcCoords: wire.CoordsOf(src, root), DestCoords: wire.CoordsOf(dst, root), Handshake: make([]byte, 33)})))
	f.Add(datagram(t, 2, 1280, src, addr(0x77), marshal(t, wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP, PayloadLen: 4}, SrcCoords: wire.CoordsOf(src), Ciphertext: make([]byte, 20)})))
	f.Add(marshal(t, wire.LookupRequest{RequestID: 1, Target: addr(0x98), Origin: src, TTL: 3, OriginCoords: wire.CoordsOf(src)}))
	f.Add(marshal(t, wire.LookupResponse{RequestID: 1, Target: addr(0x98), PathMTU: 900, TargetCoords: wire.CoordsOf(addr(0x98)), Proof: make([]byte, 64)}))
	f.Add([]byte{})
}

func fuzzInvariants(t *testing.T, fx *fixture) {
	if fx.r.Cache().Len() > fx.r.cfg.CoordCacheSize || len(fx.r.recent) > fx.r.cfg.LookupMaxRecent {
		t.Fatal("bound exceeded")
	}
	for _, s := range fx.links.take() {
		if len(s.msg) == 0 {
			t.Fatal("empty message sent")
		}
		var err error
		switch wire.MsgType(s.msg[0]) {
		case wire.MsgSessionDatagram:
			_, err = wire.ParseSessionDatagram(s.msg)
		case wire.MsgLookupRequest:
			_, err = wire.ParseLookupRequest(s.msg)
		case wire.MsgLookupResponse:
			_, err = wire.ParseLookupResponse(s.msg)
		default:
			t.Fatalf("sent message type 0x%02x", s.msg[0])
		}
		if err != nil {
			t.Fatalf("sent a message its own decoder refuses: %v", err)
		}
	}
}

func FuzzHandleSessionDatagram(f *testing.F) {
	seeds(f, f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		fx := fuzzFixture(t)
		for i := range 2 { // twice: the second sees the state the first left
			_, err := fx.r.HandleSessionDatagram(t0.Add(time.Duration(i)*time.Millisecond), addr(0x10), i == 1, msg)
			checkTyped(t, err)
			fuzzInvariants(t, fx)
		}
	})
}

func FuzzHandleLookupRequest(f *testing.F) {
	seeds(f, f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		fx := fuzzFixture(t)
		for _, from := range []identity.NodeAddr{addr(0x10), addr(0x20)} {
			checkTyped(t, fx.r.HandleLookupRequest(t0, from, msg))
			fuzzInvariants(t, fx)
		}
	})
}

func FuzzHandleLookupResponse(f *testing.F) {
	seeds(f, f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		fx := fuzzFixture(t)
		// Make some responses transit: remember their request id first.
		if r, err := wire.ParseLookupResponse(msg); err == nil && r.RequestID%2 == 0 {
			req := wire.LookupRequest{RequestID: r.RequestID, Target: r.Target, Origin: addr(0x55), TTL: 0, OriginCoords: wire.CoordsOf(addr(0x55))}
			fx.r.HandleLookupRequest(t0, addr(0x20), marshal(t, req))
			fx.links.take()
		}
		for range 2 {
			checkTyped(t, fx.r.HandleLookupResponse(t0, addr(0x10), msg))
			fuzzInvariants(t, fx)
		}
	})
}

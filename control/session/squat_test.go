package session

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// spoofedSetup is a SessionSetup to `to` from a throwaway key, to be sent
// claiming some other node's address as its source: the source of a
// datagram is an envelope field anyone on a path can write.
func spoofedSetup(t testing.TB, m *mesh, to *node) []byte {
	t.Helper()
	rs, _ := to.id.PublicKey().Point()
	k, err := identity.Generate(m.rnd)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := noise.NewXKInitiator(k.Secret().Private(), rs, noise.Epoch{0x5e}, noise.WithRand(m.rnd))
	if err != nil {
		t.Fatal(err)
	}
	msg1, _ := hs.WriteMessage1(nil)
	s := wire.SessionSetup{SrcCoords: wire.CoordsOf(identity.NodeAddr{1}), DestCoords: wire.CoordsOf(to.addr), Handshake: msg1}
	b := make([]byte, s.Len())
	if _, err := s.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpoofedSetupDoesNotSquatSource: one SessionSetup claiming a's address,
// from anyone, must not stop a from opening a session to b (b used to
// answer a's genuine setups with the ack of the spoofed one, for the whole
// handshake timeout, and the attacker could renew that every 30 s), nor
// stop b's own traffic to a from starting a handshake.
func TestSpoofedSetupDoesNotSquatSource(t *testing.T) {
	t.Run("a opens", func(t *testing.T) {
		m, a, b := pair(t, 40, DefaultConfig())
		b.tbl.HandleFSP(m.now, a.addr, identity.NodeAddr{0x77}, false, spoofedSetup(t, m, b))
		m.run() // the ack goes to a, which expects none
		if b.state(a) != StateAwaitingMsg3 {
			t.Fatalf("b state %v", b.state(a))
		}
		m.advance(100 * time.Millisecond)
		if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("a to b")); err != nil {
			t.Fatal(err)
		}
		m.run()
		if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
			t.Fatalf("states a %v, b %v; b stats %+v", a.state(b), b.state(a), b.tbl.Stats())
		}
		if len(b.delivered) != 1 || string(b.delivered[0].payload) != "a to b" {
			t.Fatalf("b delivered %+v", b.delivered)
		}
		if got := b.tbl.Stats().SetupSuperseded; got != 1 {
			t.Errorf("setup_superseded %d, want 1", got)
		}
	})
	t.Run("b opens", func(t *testing.T) {
		m, a, b := pair(t, 41, DefaultConfig())
		b.tbl.HandleFSP(m.now, a.addr, identity.NodeAddr{0x77}, false, spoofedSetup(t, m, b))
		m.run()
		// A genuine initiator's msg3 follows our ack within a round trip;
		// past a resend interval with traffic waiting, b opens its own.
		m.advance(DefaultConfig().HandshakeResendInterval)
		if err := b.tbl.Send(m.now, a.addr, 1, 1, []byte("b to a")); err != nil {
			t.Fatal(err)
		}
		m.run()
		if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
			t.Fatalf("states a %v, b %v; b stats %+v", a.state(b), b.state(a), b.tbl.Stats())
		}
		if len(a.delivered) != 1 || string(a.delivered[0].payload) != "b to a" {
			t.Fatalf("a delivered %+v", a.delivered)
		}
		if got := b.tbl.Stats().ResponderSuperseded; got != 1 {
			t.Errorf("responder_superseded %d, want 1", got)
		}
	})
	t.Run("traffic queued early", func(t *testing.T) {
		// Traffic queued while the unproven handshake was young starts
		// b's own handshake at the next tick past the resend interval.
		m, a, b := pair(t, 42, DefaultConfig())
		b.tbl.HandleFSP(m.now, a.addr, identity.NodeAddr{0x77}, false, spoofedSetup(t, m, b))
		m.run()
		if err := b.tbl.Send(m.now, a.addr, 1, 1, []byte("early")); err != nil {
			t.Fatal(err)
		}
		m.run()
		if b.state(a) != StateAwaitingMsg3 {
			t.Fatalf("b state %v: a young unproven handshake is given its round trip", b.state(a))
		}
		m.advance(DefaultConfig().HandshakeResendInterval)
		m.tickAll()
		if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
			t.Fatalf("states a %v, b %v", a.state(b), b.state(a))
		}
		if len(a.delivered) != 1 || string(a.delivered[0].payload) != "early" {
			t.Fatalf("a delivered %+v", a.delivered)
		}
	})
}

// TestForgedMsg3KeepsGenuineHandshake: a msg3 that fails to decrypt,
// claiming a's address, must not take away b's answered handshake with a
// (upstream removes the entry before reading msg3), so a's genuine msg3
// still completes it.
func TestForgedMsg3KeepsGenuineHandshake(t *testing.T) {
	m, a, b := pair(t, 43, DefaultConfig())
	m.drop = func(p packet) bool { return p.src == a.addr && p.dest == b.addr && isKind(p.b, wire.FSPKindMsg3) }
	if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if b.state(a) != StateAwaitingMsg3 || len(m.dropped) != 1 {
		t.Fatalf("b state %v, dropped %d", b.state(a), len(m.dropped))
	}
	genuine := m.dropped[0].b
	forged := wire.SessionMsg3{Handshake: make([]byte, noise.XKMsg3Size)}
	fb := make([]byte, forged.Len())
	if _, err := forged.MarshalTo(fb); err != nil {
		t.Fatal(err)
	}
	b.tbl.HandleFSP(m.now, a.addr, identity.NodeAddr{0x77}, false, fb)
	if got := b.tbl.Stats().Msg3Failed; got != 1 {
		t.Fatalf("msg3_failed %d", got)
	}
	if b.state(a) != StateAwaitingMsg3 {
		t.Fatalf("forged msg3 removed the handshake: b state %v", b.state(a))
	}
	m.drop = nil
	b.tbl.HandleFSP(m.now, a.addr, a.addr, false, genuine)
	m.run()
	if b.state(a) != StateEstablished {
		t.Fatalf("b state %v", b.state(a))
	}
}

func isKind(b []byte, k wire.FSPKind) bool {
	got, _ := wire.ClassifyFSP(b)
	return got == k
}

// TestSpoofedRekeySetupDoesNotRefuseGenuineRekey: a SessionSetup naming
// an established peer only arms a rekey responder beside the session.
// Upstream then treated that armed responder as a rekey of its own in the
// dual-initiation tie-break: the smaller side refused the peer's genuine
// rekey setups for as long as a forger re-armed it. A different msg1 now
// replaces a responder we armed; only a rekey we initiated wins a
// tie-break.
func TestSpoofedRekeySetupDoesNotRefuseGenuineRekey(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RekeyJitter = 0
	cfg.IdleTimeout = 0         // no traffic for 100 s below
	m, a, b := pair(t, 44, cfg) // a is the smaller: it wins tie-breaks
	establish(t, m, a, b)
	m.advance(100 * time.Second)
	a.tbl.HandleFSP(m.now, b.addr, identity.NodeAddr{0x77}, false, spoofedSetup(t, m, a))
	m.run()
	if in, _ := a.tbl.Session(b.addr); !in.RekeyInProgress {
		t.Fatal("the spoofed setup armed no rekey responder")
	}
	// b's rekey timer fires first (a's own is held by the armed responder).
	m.advance(21 * time.Second)
	b.tbl.Tick(m.now)
	m.run()
	if got := a.tbl.Stats().RekeyTiebreak; got != 0 {
		t.Fatalf("a refused b's genuine rekey setup (rekey_tiebreak %d)", got)
	}
	for range 5 {
		m.advance(time.Second)
		m.tickAll()
		for _, n := range []*node{a, b} {
			peer := map[*node]*node{a: b, b: a}[n]
			if err := n.tbl.Send(m.now, peer.addr, 1, 1, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		m.run()
	}
	if a.tbl.Stats().Cutovers == 0 || b.tbl.Stats().Cutovers == 0 {
		t.Fatalf("no cutover: a %+v\nb %+v", a.tbl.Stats(), b.tbl.Stats())
	}
	if got := a.tbl.Stats().SetupSuperseded; got != 1 {
		t.Errorf("setup_superseded %d, want 1", got)
	}
}

// TestForgedRekeyMsg3KeepsArmedResponder: a rekey msg3 that fails to
// decrypt must not disarm the responder the genuine rekey set up (upstream
// dropped it), so the genuine msg3 still completes the rekey.
func TestForgedRekeyMsg3KeepsArmedResponder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RekeyJitter, cfg.IdleTimeout = 0, 0
	m, a, b := pair(t, 45, cfg)
	establish(t, m, a, b)
	m.advance(121 * time.Second)
	m.drop = func(p packet) bool { return p.src == b.addr && p.dest == a.addr && isKind(p.b, wire.FSPKindMsg3) }
	b.tbl.Tick(m.now) // b's rekey: setup, a's ack, b's msg3 (held back)
	m.run()
	if len(m.dropped) != 1 {
		t.Fatalf("held back %d msg3s", len(m.dropped))
	}
	forged := wire.SessionMsg3{Handshake: make([]byte, noise.XKMsg3Size)}
	fb := make([]byte, forged.Len())
	if _, err := forged.MarshalTo(fb); err != nil {
		t.Fatal(err)
	}
	a.tbl.HandleFSP(m.now, b.addr, identity.NodeAddr{0x77}, false, fb)
	if got := a.tbl.Stats().Msg3Failed; got != 1 {
		t.Fatalf("msg3_failed %d", got)
	}
	m.drop = nil
	a.tbl.HandleFSP(m.now, b.addr, b.addr, false, m.dropped[0].b)
	if got := a.tbl.Stats().BadState; got != 0 {
		t.Fatalf("genuine rekey msg3 refused after a forged one (bad_state %d)", got)
	}
	for range 5 {
		m.advance(time.Second)
		m.tickAll()
		for _, n := range []*node{a, b} {
			peer := map[*node]*node{a: b, b: a}[n]
			if err := n.tbl.Send(m.now, peer.addr, 1, 1, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		m.run()
	}
	if a.tbl.Stats().Cutovers == 0 || b.tbl.Stats().Cutovers == 0 {
		t.Fatalf("no cutover: a %d b %d", a.tbl.Stats().Cutovers, b.tbl.Stats().Cutovers)
	}
}

// TestCoordsResponseLimiterForgetsGoneSessions: the per-destination limit
// on CoordsWarmup answers is kept only as long as it matters. It used to
// keep an entry for every session that ever got a CoordsRequired or
// PathBroken, so sessions opened from fresh keys and left to idle out,
// each sent one forged signal, grew it without bound.
func TestCoordsResponseLimiterForgetsGoneSessions(t *testing.T) {
	m, a, b := pair(t, 46, DefaultConfig())
	establish(t, m, a, b)
	rep := identity.NodeAddr{0x43}
	cr := wire.CoordsRequired{DestAddr: b.addr, Reporter: rep}
	buf := make([]byte, cr.Len())
	if _, err := cr.MarshalTo(buf); err != nil {
		t.Fatal(err)
	}
	a.tbl.HandleFSP(m.now, rep, rep, false, buf)
	m.run()
	if a.tbl.coordsTx.Len() != 1 {
		t.Fatalf("%d limiter entries", a.tbl.coordsTx.Len())
	}
	m.advance(DefaultConfig().IdleTimeout + time.Second)
	a.tbl.Tick(m.now)
	if a.tbl.Len() != 0 {
		t.Fatal("session not purged")
	}
	if a.tbl.coordsTx.Len() != 0 {
		t.Fatalf("%d limiter entries left for sessions gone", a.tbl.coordsTx.Len())
	}
}

// TestSpoofedSetupReflectsOneAck: a SessionSetup from a forged source is
// answered with one SessionAck, to that source. The responder used to
// resend its ack on a timer too (4 more in 30 s), which a genuine
// initiator does not need — its own setup resends draw the stored ack —
// and which multiplied what a spoofed setup reflected at its victim.
func TestSpoofedSetupReflectsOneAck(t *testing.T) {
	m, a, b := pair(t, 47, DefaultConfig())
	b.tbl.HandleFSP(m.now, a.addr, identity.NodeAddr{0x77}, false, spoofedSetup(t, m, b))
	for range 40 {
		m.advance(time.Second)
		m.tickAll()
	}
	acks := 0
	for _, p := range b.sent {
		if p.dest == a.addr && isKind(p.b, wire.FSPKindAck) {
			acks++
		}
	}
	if acks != 1 {
		t.Fatalf("%d acks reflected at the claimed source", acks)
	}
	if b.state(a) != StateNone || b.tbl.Stats().HandshakeTimeouts != 1 {
		t.Fatalf("state %v, stats %+v", b.state(a), b.tbl.Stats())
	}
}

// TestAnsweredHandshakesBounded: setups from forged sources, each
// answered and awaiting a msg3 that never comes, are held at most
// MaxPendingResponders at once, oldest dropped first; before, only the
// setup rate (per link peer) times the 30 s timeout bounded them, and
// every link peer added its own share. Established sessions are never
// dropped for room.
func TestAnsweredHandshakesBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPendingResponders = 8
	m, a, b := pair(t, 48, cfg)
	establish(t, m, a, b)
	var srcs []identity.NodeAddr
	for i := range 20 {
		src := identity.NodeAddr{0xee, byte(i)}
		srcs = append(srcs, src)
		b.tbl.HandleFSP(m.now, src, identity.NodeAddr{0x77, byte(i % 2)}, false, spoofedSetup(t, m, b))
	}
	m.queue = nil
	if got := b.tbl.Len(); got != 1+8 {
		t.Fatalf("%d entries, want the session and 8 answered handshakes", got)
	}
	if got := b.tbl.Stats().RespondersEvicted; got != 12 {
		t.Fatalf("responders_evicted %d", got)
	}
	for i, src := range srcs {
		_, ok := b.tbl.Session(src)
		if want := i >= 12; ok != want {
			t.Errorf("handshake %d held %v, want %v", i, ok, want)
		}
	}
	if b.state(a) != StateEstablished {
		t.Fatal("the established session was dropped for room")
	}
}

package session

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

func TestEstablishAndDataBothWays(t *testing.T) {
	m, a, b := pair(t, 1, DefaultConfig())
	establish(t, m, a, b)
	ia, _ := a.tbl.Session(b.addr)
	ib, _ := b.tbl.Session(a.addr)
	if !ia.Initiator || ib.Initiator {
		t.Fatalf("roles: a initiator=%v b initiator=%v", ia.Initiator, ib.Initiator)
	}
	if ib.Remote != a.id.PublicKey() {
		t.Fatal("responder did not learn the initiator's key")
	}
	// The queued payload was flushed on establishment.
	if len(b.delivered) != 1 || string(b.delivered[0].payload) != "hello" || b.delivered[0].src != a.addr {
		t.Fatalf("b delivered %+v", b.delivered)
	}
	if err := b.tbl.Send(m.now, a.addr, 7, 9, []byte("back")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if len(a.delivered) != 1 || string(a.delivered[0].payload) != "back" || a.delivered[0].srcPort != 7 || a.delivered[0].dstPort != 9 {
		t.Fatalf("a delivered %+v", a.delivered)
	}
	// Handshake sizes on the wire: Setup 44+16(n+m), Ack 68+16(n+m), Msg3 80.
	sizes := map[wire.FSPKind]int{}
	for _, p := range append(append([]packet{}, a.sent...), b.sent...) {
		k, _ := wire.ClassifyFSP(p.b)
		if _, ok := sizes[k]; !ok {
			sizes[k] = len(p.b)
		}
	}
	if sizes[wire.FSPKindSetup] != 44+32 || sizes[wire.FSPKindAck] != 68+32 || sizes[wire.FSPKindMsg3] != 80 {
		t.Fatalf("handshake sizes %v", sizes)
	}
	if got := a.tbl.Stats().Established + b.tbl.Stats().Established; got != 2 {
		t.Fatalf("established count %d", got)
	}
	snap := b.tbl.Snapshot()
	if len(snap) != 1 || snap[0].State != "established" || snap[0].CurrentKBit == nil || *snap[0].CurrentKBit {
		t.Fatalf("snapshot %+v", snap)
	}
}

func TestUnknownDestination(t *testing.T) {
	m, a, _ := pair(t, 2, DefaultConfig())
	if err := a.tbl.Send(m.now, identity.NodeAddr{1}, 1, 1, nil); err != ErrUnknownDestination {
		t.Fatalf("err %v", err)
	}
}

func TestHandshakeResendAndTimeout(t *testing.T) {
	m, a, b := pair(t, 3, DefaultConfig())
	m.drop = func(p packet) bool { return true }
	if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	m.run()
	for i := 0; i < 40; i++ {
		m.advance(time.Second)
		m.tickAll()
	}
	// Resends at 1, 3, 7, 15 s (×2 backoff); the 30 s timeout removes the
	// entry at 31 s, before the fifth resend falls due.
	if len(a.sent) != 5 {
		t.Fatalf("sent %d setups", len(a.sent))
	}
	if a.state(b) != StateNone || a.tbl.PendingDestinations() != 0 || a.tbl.Stats().HandshakeTimeouts != 1 {
		t.Fatalf("state %v pending %d", a.state(b), a.tbl.PendingDestinations())
	}
	// A lost handshake recovers through resends.
	m.drop = nil
	n := 0
	m.drop = func(p packet) bool { n++; return n <= 2 } // lose the setup and its first resend
	if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("y")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5 && a.state(b) != StateEstablished; i++ {
		m.run()
		m.advance(time.Second)
		m.tickAll()
	}
	if a.state(b) != StateEstablished || b.state(a) != StateEstablished || len(b.delivered) != 1 {
		t.Fatalf("no recovery: %v %v %d", a.state(b), b.state(a), len(b.delivered))
	}
}

func TestWarmupCarriesCoords(t *testing.T) {
	m, a, b := pair(t, 4, DefaultConfig())
	a.coords = []identity.NodeAddr{a.addr, {9}}
	establish(t, m, a, b)
	for i := 0; i < 7; i++ {
		if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("data")); err != nil {
			t.Fatal(err)
		}
	}
	m.run()
	msgs := encryptedTo(t, a, b.addr)
	if len(msgs) != 8 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, e := range msgs {
		want := i < 5
		if e.Header.Flags.CoordsPresent() != want {
			t.Fatalf("message %d CP=%v", i, e.Header.Flags.CoordsPresent())
		}
		if want && (e.SrcCoords.Len() != 2 || e.SrcCoords.At(0) != a.addr || e.DestCoords.At(0) != b.addr) {
			t.Fatalf("message %d coords %v %v", i, e.SrcCoords.Addrs(), e.DestCoords.Addrs())
		}
	}
	if len(b.delivered) != 8 {
		t.Fatalf("delivered %d", len(b.delivered))
	}
	// b learned a's coords from the CP messages.
	if c := b.cache[a.addr]; len(c) != 2 {
		t.Fatalf("b cached %v", c)
	}
}

func TestWarmupStandaloneWhenCoordsDoNotFit(t *testing.T) {
	m, a, b := pair(t, 5, DefaultConfig())
	establish(t, m, a, b)
	a.sent = nil
	payload := make([]byte, 1280-FIPSOverhead-4-18-18+1) // one byte too many for CP
	for i := 0; i < 6; i++ {
		if err := a.tbl.Send(m.now, b.addr, 1, 1, payload); err != nil {
			t.Fatal(err)
		}
	}
	m.run()
	msgs := encryptedTo(t, a, b.addr)
	// The warmup counter was 4 after the flushed "hello": 4 × (CoordsWarmup, data) + 2 data.
	if len(msgs) != 10 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, e := range msgs {
		warm := i < 8 && i%2 == 0
		if warm {
			if !e.Header.Flags.CoordsPresent() || e.Header.PayloadLen != 6 || len(e.Ciphertext) != 22 {
				t.Fatalf("message %d is not a CoordsWarmup: %+v", i, e.Header)
			}
		} else if e.Header.Flags.CoordsPresent() {
			t.Fatalf("data message %d has CP", i)
		}
	}
	if len(b.delivered) != 7 {
		t.Fatalf("delivered %d", len(b.delivered))
	}
	// Exactly fitting coords go inline.
	m2, c, d := pair(t, 6, DefaultConfig())
	establish(t, m2, c, d)
	c.sent = nil
	if err := c.tbl.Send(m2.now, d.addr, 1, 1, payload[1:]); err != nil {
		t.Fatal(err)
	}
	m2.run()
	if msgs := encryptedTo(t, c, d.addr); len(msgs) != 1 || !msgs[0].Header.Flags.CoordsPresent() {
		t.Fatalf("fitting coords not inline")
	}
}

// An attacker M runs XK with B while claiming the source address of C:
// B's msg3 check (NodeAddr of the static == datagram source) rejects it.
func TestMsg3AntiSpoofing(t *testing.T) {
	m := newMesh(t, 8)
	b := m.addNode(DefaultConfig())
	var logs bytes.Buffer
	b.tbl = New(b.id, noise.Epoch{m.epochN}, DefaultConfig(), b, b, slog.New(logging.New(&logs, logging.Options{})), m.rnd)
	mal, err := identity.Generate(m.rnd)
	if err != nil {
		t.Fatal(err)
	}
	victim := identity.NodeAddr{0xc0, 0xff, 0xee}
	rs, _ := b.id.PublicKey().Point()
	hs, err := noise.NewXKInitiator(mal.Secret().Private(), rs, noise.Epoch{9}, noise.WithRand(m.rnd))
	if err != nil {
		t.Fatal(err)
	}
	msg1, _ := hs.WriteMessage1(nil)
	setup := wire.SessionSetup{SrcCoords: wire.CoordsOf(victim), DestCoords: wire.CoordsOf(b.addr), Handshake: msg1}
	sb := make([]byte, setup.Len())
	setup.MarshalTo(sb)
	b.tbl.HandleFSP(m.now, victim, victim, false, sb)
	if b.state(&node{addr: victim}) != StateAwaitingMsg3 {
		t.Fatal("no responder entry")
	}
	ack, err := wire.ParseSessionAck(m.queue[0].b)
	if err != nil {
		t.Fatal(err)
	}
	m.queue = nil
	if _, err := hs.ReadMessage2(ack.Handshake); err != nil {
		t.Fatal(err)
	}
	msg3, _ := hs.WriteMessage3(nil)
	w := wire.SessionMsg3{Handshake: msg3}
	mb := make([]byte, w.Len())
	w.MarshalTo(mb)
	b.tbl.HandleFSP(m.now, victim, victim, false, mb)
	if b.tbl.Len() != 0 || b.tbl.Stats().AddrMismatch != 1 {
		t.Fatalf("spoofed msg3 accepted: len %d stats %+v", b.tbl.Len(), b.tbl.Stats())
	}
	// Upstream's warning: the claimed source and the address the key gives.
	if want := " WARN fips::node::handlers::session: SessionMsg3 source address does not match the authenticated static key src=" +
		victim.ShortHex() + " derived=" + mal.NodeAddr().String() + "\n"; !strings.Contains(logs.String(), want) {
		t.Errorf("no %q in:\n%s", want, logs.String())
	}
	for _, ev := range b.events {
		if ev.Kind == EventUp {
			t.Fatal("session came up")
		}
	}
}

func TestCrossingSetups(t *testing.T) {
	m, a, b := pair(t, 9, DefaultConfig())
	if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if err := b.tbl.Send(m.now, a.addr, 1, 1, []byte("from b")); err != nil {
		t.Fatal(err)
	}
	m.run()
	ia, _ := a.tbl.Session(b.addr)
	ib, _ := b.tbl.Session(a.addr)
	if ia.State != StateEstablished || ib.State != StateEstablished {
		t.Fatalf("states %v %v", ia.State, ib.State)
	}
	if !ia.Initiator || ib.Initiator {
		t.Fatal("the smaller NodeAddr must stay initiator")
	}
	if len(a.delivered) != 1 || len(b.delivered) != 1 {
		t.Fatalf("delivered %d %d", len(a.delivered), len(b.delivered))
	}
	if a.tbl.Stats().CrossingDropped != 1 {
		t.Fatalf("stats %+v", a.tbl.Stats())
	}
}

func TestDuplicateSetupResendsStoredAck(t *testing.T) {
	m, a, b := pair(t, 10, DefaultConfig())
	if err := a.tbl.Send(m.now, b.addr, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	setup := m.queue[0]
	m.drop = func(p packet) bool { return p.src == b.addr } // lose b's ack
	m.run()
	b.tbl.HandleFSP(m.now, a.addr, a.addr, false, setup.b)
	if len(b.sent) != 2 || !bytes.Equal(b.sent[0].b, b.sent[1].b) {
		t.Fatal("duplicate setup did not resend the stored ack")
	}
	m.drop = nil
	m.queue = m.queue[:0]
	a.tbl.HandleFSP(m.now, b.addr, b.addr, false, b.sent[1].b)
	m.run()
	if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
		t.Fatal("not established")
	}
}

func forgedSetup(t testing.TB, m *mesh, to *node) []byte {
	rs, _ := to.id.PublicKey().Point()
	k, _ := identity.Generate(m.rnd)
	hs, err := noise.NewXKInitiator(k.Secret().Private(), rs, noise.Epoch{}, noise.WithRand(m.rnd))
	if err != nil {
		t.Fatal(err)
	}
	msg1, _ := hs.WriteMessage1(nil)
	s := wire.SessionSetup{SrcCoords: wire.CoordsOf(identity.NodeAddr{1}), DestCoords: wire.CoordsOf(to.addr), Handshake: msg1}
	b := make([]byte, s.Len())
	s.MarshalTo(b)
	return b
}

func TestForgedSetupsDrainPerPeerBucket(t *testing.T) {
	m, a, b := pair(t, 11, DefaultConfig())
	establish(t, m, a, b)
	link := identity.NodeAddr{0x77}
	setup := forgedSetup(t, m, b)
	for i := 0; i < 100; i++ {
		src := identity.NodeAddr{0xee, byte(i)}
		b.tbl.HandleFSP(m.now, src, link, false, setup)
	}
	m.queue = nil
	if got := b.tbl.Len(); got != 1+64 {
		t.Fatalf("%d entries", got)
	}
	if b.tbl.Stats().SetupRateLimited != 36 {
		t.Fatalf("limited %d", b.tbl.Stats().SetupRateLimited)
	}
	// Another link peer has its own bucket.
	b.tbl.HandleFSP(m.now, identity.NodeAddr{0xef}, identity.NodeAddr{0x78}, false, setup)
	if b.tbl.Len() != 66 {
		t.Fatal("other link peer refused")
	}
	// A setup naming the established peer uses the established bucket.
	m.queue = nil
	b.tbl.HandleFSP(m.now, a.addr, link, false, forgedSetup(t, m, b))
	if in, _ := b.tbl.Session(a.addr); !in.RekeyInProgress {
		t.Fatal("setup naming the established peer refused by the drained stranger bucket")
	}
	// Refill: 16 per second.
	m.advance(time.Second)
	for i := 100; i < 120; i++ {
		b.tbl.HandleFSP(m.now, identity.NodeAddr{0xee, byte(i)}, link, false, setup)
	}
	m.queue = nil
	if got := b.tbl.Len(); got != 66+16 {
		t.Fatalf("%d entries after refill", got)
	}
}

func TestRestartReestablishes(t *testing.T) {
	for _, rekey := range []bool{false, true} {
		t.Run(fmt.Sprint("rekey=", rekey), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.RekeyEnabled = rekey
			m, a, b := pair(t, 12, cfg)
			establish(t, m, a, b)
			m.advance(5 * time.Second)
			m.restart(a, cfg)
			if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("after restart")); err != nil {
				t.Fatal(err)
			}
			m.run()
			if a.state(b) != StateEstablished {
				t.Fatal("restarted side not established")
			}
			ib, _ := b.tbl.Session(a.addr)
			if ib.HasPending || !ib.KBit || len(b.delivered) != 2 || string(b.delivered[1].payload) != "after restart" {
				t.Fatalf("b: %+v delivered %d", ib, len(b.delivered))
			}
			if err := b.tbl.Send(m.now, a.addr, 1, 1, []byte("reply")); err != nil {
				t.Fatal(err)
			}
			m.run()
			if len(a.delivered) != 1 {
				t.Fatal("reply lost")
			}
		})
	}
}

func TestIdlePurge(t *testing.T) {
	m, a, b := pair(t, 13, DefaultConfig())
	establish(t, m, a, b)
	// MMP-type messages do not keep the session alive.
	for i := 0; i < 9; i++ {
		m.advance(10 * time.Second)
		if err := a.tbl.SendMessage(m.now, b.addr, wire.SessionMsgReceiverReport, make([]byte, 66)); err != nil {
			t.Fatal(err)
		}
		if err := b.tbl.SendMessage(m.now, a.addr, wire.SessionMsgPathMtuNotification, []byte{0, 5}); err != nil {
			t.Fatal(err)
		}
		m.tickAll()
	}
	if a.state(b) != StateEstablished {
		t.Fatal("purged before 90 s")
	}
	m.advance(1001 * time.Millisecond)
	m.tickAll()
	if a.state(b) != StateNone || b.state(a) != StateNone {
		t.Fatalf("not purged: %v %v", a.state(b), b.state(a))
	}
	if a.tbl.Stats().IdlePurged != 1 || b.tbl.Stats().IdlePurged != 1 {
		t.Fatal("purge not counted")
	}
	// Data keeps it alive.
	establish(t, m, a, b)
	for i := 0; i < 20; i++ {
		m.advance(10 * time.Second)
		if err := b.tbl.Send(m.now, a.addr, 1, 1, []byte("k")); err != nil {
			t.Fatal(err)
		}
		m.tickAll()
	}
	if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
		t.Fatal("active session purged")
	}
}

func TestPendingQueueBounds(t *testing.T) {
	m, a, b := pair(t, 14, DefaultConfig())
	a.noRout = true
	for i := 0; i < 20; i++ {
		if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if a.tbl.Stats().PendingDropped != 4 || a.lookups != 20 {
		t.Fatalf("stats %+v lookups %d", a.tbl.Stats(), a.lookups)
	}
	for i := 0; i < 300; i++ {
		n := &node{addr: identity.NodeAddr{0xaa, byte(i), byte(i >> 8)}}
		m.nodes[n.addr] = &node{id: b.id, addr: n.addr} // any cached identity
		a.tbl.Send(m.now, n.addr, 1, 1, []byte("q"))
	}
	if a.tbl.PendingDestinations() != 256 || a.tbl.Stats().PendingDestRefused != 45 {
		t.Fatalf("dests %d refused %d", a.tbl.PendingDestinations(), a.tbl.Stats().PendingDestRefused)
	}
	// Route appears; the lookup answer retries and the newest 16 flush in order.
	a.noRout = false
	if err := a.tbl.RetryAfterDiscovery(m.now, b.addr); err != nil {
		t.Fatal(err)
	}
	m.run()
	if len(b.delivered) != 16 || b.delivered[0].payload[0] != 4 || b.delivered[15].payload[0] != 19 {
		t.Fatalf("delivered %d", len(b.delivered))
	}
}

func mtuExceeded(dest, reporter identity.NodeAddr, mtu uint16) []byte {
	s := wire.MtuExceeded{DestAddr: dest, Reporter: reporter, MTU: mtu}
	b := make([]byte, s.Len())
	s.MarshalTo(b)
	return b
}

func TestMtuExceededClamp(t *testing.T) {
	m, a, b := pair(t, 15, DefaultConfig())
	establish(t, m, a, b)
	rep := identity.NodeAddr{0x42}
	a.hops = map[identity.NodeAddr]identity.NodeAddr{b.addr: rep} // the relay that reports
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 1000))
	if mtu, ok := a.tbl.PathMTU(b.addr); !ok || mtu != 1000 {
		t.Fatalf("clamp %d %v", mtu, ok)
	}
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 1200))
	if mtu, _ := a.tbl.PathMTU(b.addr); mtu != 1000 {
		t.Fatal("looser MTU replaced a tighter one")
	}
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 256))
	if mtu, _ := a.tbl.PathMTU(b.addr); mtu != 256 {
		t.Fatal("the floor itself must apply")
	}
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 0))
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 255))
	if mtu, _ := a.tbl.PathMTU(b.addr); mtu != 256 || a.tbl.Stats().MtuExceededBelowFloor != 2 {
		t.Fatal("sub-floor MTU applied")
	}
	if in, _ := a.tbl.Session(b.addr); in.PathMTU != 256 {
		t.Fatalf("session path MTU %d", in.PathMTU)
	}
	// Forged (names us, or src == dest) and unbound signals are dropped.
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(a.addr, rep, 300))
	a.tbl.HandleFSP(m.now, b.addr, b.addr, false, mtuExceeded(b.addr, b.addr, 300))
	other := identity.NodeAddr{0x99}
	a.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(other, rep, 300))
	st := a.tbl.Stats()
	if st.SignalsForged != 2 || st.SignalsUnbound != 3 {
		t.Fatalf("stats %+v", st)
	}
	if _, ok := a.tbl.PathMTU(other); ok {
		t.Fatal("unbound dest clamped")
	}
	// An unauthenticated responder handshake does not bind.
	c := m.addNode(DefaultConfig())
	c.tbl.Send(m.now, b.addr, 1, 1, nil)
	m.drop = func(p packet) bool { return p.src == b.addr && p.dest == c.addr }
	m.run()
	b.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(c.addr, rep, 500))
	if _, ok := b.tbl.PathMTU(c.addr); ok {
		t.Fatal("responder handshake admitted a signal")
	}
	// ... but an initiation we started does.
	c.hops = map[identity.NodeAddr]identity.NodeAddr{b.addr: rep}
	c.tbl.HandleFSP(m.now, rep, rep, false, mtuExceeded(b.addr, rep, 500))
	if mtu, _ := c.tbl.PathMTU(b.addr); mtu != 500 {
		t.Fatal("initiating session did not admit the signal")
	}
	// PathBroken releases the clamp.
	pb := wire.PathBroken{DestAddr: b.addr, Reporter: rep}
	buf := make([]byte, pb.Len())
	pb.MarshalTo(buf)
	a.tbl.HandleFSP(m.now, rep, rep, false, buf)
	if _, ok := a.tbl.PathMTU(b.addr); ok || a.invalid != 1 {
		t.Fatal("PathBroken did not release the clamp / invalidate coords")
	}
}

func TestCoordsRequiredResetsWarmupRateLimited(t *testing.T) {
	m, a, b := pair(t, 16, DefaultConfig())
	establish(t, m, a, b)
	for i := 0; i < 5; i++ {
		a.tbl.Send(m.now, b.addr, 1, 1, []byte("d"))
	}
	m.run()
	if in, _ := a.tbl.Session(b.addr); in.CoordsWarmupRemaining != 0 {
		t.Fatal("warmup not consumed")
	}
	rep := identity.NodeAddr{0x43}
	cr := wire.CoordsRequired{DestAddr: b.addr, Reporter: rep}
	buf := make([]byte, cr.Len())
	cr.MarshalTo(buf)
	a.sent = nil
	a.tbl.HandleFSP(m.now, rep, rep, false, buf)
	m.advance(1999 * time.Millisecond)
	a.tbl.HandleFSP(m.now, rep, rep, false, buf)
	m.advance(time.Millisecond)
	a.tbl.HandleFSP(m.now, rep, rep, false, buf)
	m.run()
	if n := len(encryptedTo(t, a, b.addr)); n != 2 || a.tbl.Stats().CoordsWarmupResponses != 2 {
		t.Fatalf("%d CoordsWarmups", n)
	}
	if in, _ := a.tbl.Session(b.addr); in.CoordsWarmupRemaining != 5 {
		t.Fatal("warmup not reset")
	}
	if a.lookups != 3 {
		t.Fatalf("lookups %d", a.lookups)
	}
}

// FSP rekey under continuous data and 5% loss on every packet: every data
// packet the channel delivered is delivered up, K toggles.
func TestRekeyUnderLoss(t *testing.T) {
	m, a, b := pair(t, 17, DefaultConfig())
	establish(t, m, a, b)
	m.loss = 0.05
	const size = 100
	sentData := map[*node]int{}
	kSeen := map[bool]int{}
	for step := 0; step < 5000; step++ { // 500 s of traffic, 10 packets/s each way
		m.advance(100 * time.Millisecond)
		for _, n := range []*node{a, b} {
			peer := b
			if n == b {
				peer = a
			}
			if err := n.tbl.Send(m.now, peer.addr, 1, 1, make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			sentData[n]++
		}
		if step%10 == 0 {
			m.tickAll()
		}
		m.run()
		in, _ := a.tbl.Session(b.addr)
		kSeen[in.KBit]++
	}
	isData := func(p packet) bool {
		e, err := wire.ParseFSPEncrypted(p.b)
		return err == nil && e.Header.PayloadLen == wire.FSPInnerHeaderSize+4+size
	}
	lost := map[identity.NodeAddr]int{}
	for _, p := range m.dropped {
		if isData(p) {
			lost[p.src]++
		}
	}
	for _, n := range []*node{a, b} {
		peer := b
		if n == b {
			peer = a
		}
		got := 0
		for _, d := range peer.delivered {
			if len(d.payload) == size {
				got++
			}
		}
		if got != sentData[n]-lost[n.addr] {
			t.Errorf("%x: sent %d, channel lost %d, delivered %d", n.addr[:2], sentData[n], lost[n.addr], got)
		}
	}
	ca, cb := a.tbl.Stats().Cutovers, b.tbl.Stats().Cutovers
	if ca < 3 || cb < 3 || kSeen[true] == 0 || kSeen[false] == 0 {
		t.Fatalf("cutovers a=%d b=%d kSeen=%v", ca, cb, kSeen)
	}
	t.Logf("cutovers a=%d b=%d, dropped %d packets, rekeys a=%d b=%d", ca, cb, len(m.dropped), a.tbl.Stats().RekeysInitiated, b.tbl.Stats().RekeysInitiated)
}

package session

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// pqPair is a pair whose tables run the policies ma (a, the smaller
// address, which initiates in establish) and mb, logging into buf.
func pqPair(t *testing.T, seed uint64, ma, mb PQMode, buf *bytes.Buffer) (*mesh, *node, *node) {
	t.Helper()
	m, a, b := pair(t, seed, DefaultConfig())
	log := slog.New(logging.New(buf, logging.Options{Level: slog.LevelDebug}))
	for i, n := range []*node{a, b} {
		cfg := DefaultConfig()
		cfg.PQ = []PQMode{ma, mb}[i]
		n.tbl = New(n.id, noise.Epoch{byte(200 + i)}, cfg, n, n, log.With("node", string(rune('a'+i))), m.rnd)
	}
	return m, a, b
}

func (n *node) pq(peer *node) bool {
	in, ok := n.tbl.Session(peer.addr)
	return ok && in.PQ
}

// pqMessages are the encrypted messages n sent to dest whose plaintext
// length is a PQ fragment's.
func pqSizes(t *testing.T, n *node, dest identity.NodeAddr) (pq, other int) {
	for _, e := range encryptedTo(t, n, dest) {
		if int(e.Header.PayloadLen) == wire.FSPInnerHeaderSize+wire.PQFragmentSize {
			pq++
		} else {
			other++
		}
	}
	return pq, other
}

func delivered(n *node, payload string) int {
	c := 0
	for _, d := range n.delivered {
		if string(d.payload) == payload {
			c++
		}
	}
	return c
}

// TestPQUpgradeBothWays: two PQ-preferred tables upgrade at establishment
// and again after every XK rekey; data flows throughout, and every PQ
// message has one size.
func TestPQUpgradeBothWays(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 1, PQPreferred, PQPreferred, &buf)
	establish(t, m, a, b)
	if !a.pq(b) || !b.pq(a) || a.tbl.PQLen() != 1 || b.tbl.PQLen() != 1 {
		t.Fatalf("not post-quantum after establishment: a %v b %v\n%s", a.pq(b), b.pq(a), buf.String())
	}
	for _, n := range []*node{a, b} {
		if s := n.tbl.Stats(); s.PQUpgrades != 1 || s.PQFallbacks != 0 || s.PQMessagesRefused != 0 || s.PQFragmentsRefused != 0 {
			t.Fatalf("stats %+v", s)
		}
	}
	if n, _ := pqSizes(t, a, b.addr); n != 3 { // offer (2), confirm (1)
		t.Fatalf("a sent %d PQ messages, want 3", n)
	}
	if n, _ := pqSizes(t, b, a.addr); n != 2 { // accept (2)
		t.Fatalf("b sent %d PQ messages, want 2", n)
	}
	if delivered(b, "hello") != 1 {
		t.Fatal("the first packet was not delivered")
	}
	for i := range 400 { // 400 s: several XK rekeys, each upgraded
		m.advance(time.Second)
		_ = a.tbl.Send(m.now, b.addr, 1, 1, []byte("ab"))
		_ = b.tbl.Send(m.now, a.addr, 1, 1, []byte("ba"))
		if i%2 == 0 {
			m.tickAll()
		}
		m.run()
	}
	if delivered(b, "ab") != 400 || delivered(a, "ba") != 400 {
		t.Fatalf("delivered a→b %d, b→a %d of 400", delivered(b, "ab"), delivered(a, "ba"))
	}
	sa, sb := a.tbl.Stats(), b.tbl.Stats()
	if sa.PQUpgrades < 3 || sb.PQUpgrades < 3 || sa.RekeysInitiated+sb.RekeysInitiated < 2 {
		t.Fatalf("upgrades a %d b %d, rekeys %d+%d", sa.PQUpgrades, sb.PQUpgrades, sa.RekeysInitiated, sb.RekeysInitiated)
	}
	if sa.PQFallbacks+sb.PQFallbacks+sa.PQMessagesRefused+sb.PQMessagesRefused+sa.DecryptFailed+sb.DecryptFailed != 0 {
		t.Fatalf("a %+v\nb %+v", sa, sb)
	}
	// The snapshot says so.
	for _, s := range a.tbl.Snapshot() {
		if s.PostQuantum == nil {
			t.Fatal("no post_quantum key")
		}
	}
}

// TestPQPreferredClassicPeer: a classic peer (off: our table behaves as
// upstream's, dropping the unknown type) never answers; after the timeout
// the preferred side stays classical, counted, and traffic flows.
func TestPQPreferredClassicPeer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ma, mb PQMode
	}{{"initiator preferred", PQPreferred, PQOff}, {"responder preferred", PQOff, PQPreferred}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			m, a, b := pqPair(t, 2, tc.ma, tc.mb, &buf)
			establish(t, m, a, b)
			pqSide, classic := a, b
			if tc.mb != PQOff {
				pqSide, classic = b, a
			}
			for range 25 {
				m.advance(time.Second)
				m.tickAll()
				_ = a.tbl.Send(m.now, b.addr, 1, 1, []byte("ab"))
				_ = b.tbl.Send(m.now, a.addr, 1, 1, []byte("ba"))
				m.run()
			}
			s := pqSide.tbl.Stats()
			if s.PQFallbacks != 1 || a.pq(b) || b.pq(a) {
				t.Fatalf("fallbacks %d, pq %v %v", s.PQFallbacks, a.pq(b), b.pq(a))
			}
			if tc.ma == PQPreferred && classic.tbl.Stats().UnknownMessageType == 0 {
				t.Fatal("the classic peer saw no unknown message type")
			}
			if delivered(b, "ab") != 25 || delivered(a, "ba") != 25 {
				t.Fatalf("delivered %d %d", delivered(b, "ab"), delivered(a, "ba"))
			}
			if n := strings.Count(buf.String(), "Session stays classical"); n != 1 {
				t.Fatalf("%d fallback lines:\n%s", n, buf.String())
			}
		})
	}
}

// TestPQRequiredClassicPeer: under required nothing travels classically;
// after the timeout the session is torn down with one line and counted.
func TestPQRequiredClassicPeer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ma, mb PQMode
	}{{"initiator required", PQRequired, PQOff}, {"responder required", PQOff, PQRequired}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			m, a, b := pqPair(t, 3, tc.ma, tc.mb, &buf)
			req := a
			if tc.mb == PQRequired {
				req = b
			}
			if err := a.tbl.Send(m.now, b.addr, 1024, 1024, []byte("hello")); err != nil {
				t.Fatal(err)
			}
			m.run()
			if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
				t.Fatal("not established")
			}
			if delivered(b, "hello") != 0 {
				t.Fatal("data delivered over a classical epoch under pq required")
			}
			for range 25 {
				m.advance(time.Second)
				m.tickAll()
			}
			s := req.tbl.Stats()
			if s.PQRefused != 1 || req.tbl.Len() != 0 {
				t.Fatalf("refused %d, sessions %d", s.PQRefused, req.tbl.Len())
			}
			if tc.ma == PQRequired && s.PendingDropped != 1 {
				t.Fatalf("the held packet was not counted: %d", s.PendingDropped)
			}
			if tc.mb == PQRequired && s.PQClassicDropped != 1 {
				t.Fatalf("the classical packet was not counted: %d", s.PQClassicDropped)
			}
			if n := strings.Count(buf.String(), "pq is required"); n != 1 {
				t.Fatalf("%d teardown lines:\n%s", n, buf.String())
			}
			var down Event
			for _, ev := range req.events {
				if ev.Kind == EventDown {
					down = ev
				}
			}
			if down.Reason != "pq_required" {
				t.Fatalf("down event %+v", down)
			}
		})
	}
}

// TestPQRequiredBothUpgrades: two required tables hold the first packet
// until the upgrade and then deliver it.
func TestPQRequiredBothUpgrades(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 4, PQRequired, PQRequired, &buf)
	establish(t, m, a, b)
	if !a.pq(b) || !b.pq(a) || delivered(b, "hello") != 1 {
		t.Fatalf("pq %v %v, delivered %d", a.pq(b), b.pq(a), delivered(b, "hello"))
	}
}

// tamperAccept makes b answer a's offer with a ciphertext changed in one
// byte, sealed under the real session (as only someone holding the
// classical keys could), instead of its genuine accept.
func tamperAccept(t *testing.T, m *mesh, a, b *node) {
	t.Helper()
	m.drop = func(p packet) bool {
		if p.src != b.addr {
			return false
		}
		e, err := wire.ParseFSPEncrypted(p.b)
		return err == nil && int(e.Header.PayloadLen) == wire.FSPInnerHeaderSize+wire.PQFragmentSize
	}
	establish(t, m, a, b)
	m.drop = nil
	eb := b.tbl.sessions[a.addr]
	bad := bytes.Clone(eb.pq.accept)
	bad[17] ^= 1
	if err := b.tbl.pqSend(m.now, eb, wire.PQKindAccept, bad); err != nil {
		t.Fatal(err)
	}
	m.run()
}

// TestPQTamperedAccept: a changed ciphertext decapsulates to another
// secret (implicit rejection); the key confirmation catches it, so nobody
// cuts over: preferred stays classical with traffic flowing both ways,
// required tears down. Never a black hole.
func TestPQTamperedAccept(t *testing.T) {
	t.Run("preferred", func(t *testing.T) {
		var buf bytes.Buffer
		m, a, b := pqPair(t, 5, PQPreferred, PQPreferred, &buf)
		tamperAccept(t, m, a, b)
		sa := a.tbl.Stats()
		if sa.PQConfirmFailed != 1 || sa.PQFallbacks != 1 || a.pq(b) {
			t.Fatalf("a %+v", sa)
		}
		for range 25 {
			m.advance(time.Second)
			m.tickAll()
			_ = a.tbl.Send(m.now, b.addr, 1, 1, []byte("ab"))
			_ = b.tbl.Send(m.now, a.addr, 1, 1, []byte("ba"))
			m.run()
		}
		if delivered(b, "ab") != 25 || delivered(a, "ba") != 25 {
			t.Fatalf("delivered %d %d", delivered(b, "ab"), delivered(a, "ba"))
		}
		if b.tbl.Stats().PQFallbacks != 1 || b.pq(a) {
			t.Fatalf("b did not fall back: %+v", b.tbl.Stats())
		}
	})
	t.Run("required", func(t *testing.T) {
		var buf bytes.Buffer
		m, a, b := pqPair(t, 6, PQRequired, PQPreferred, &buf)
		tamperAccept(t, m, a, b)
		if s := a.tbl.Stats(); s.PQConfirmFailed != 1 || s.PQRefused != 1 || a.tbl.Len() != 0 {
			t.Fatalf("a %+v", s)
		}
		if n := strings.Count(buf.String(), "pq is required"); n != 1 {
			t.Fatalf("%d teardown lines", n)
		}
	})
}

// TestPQOfferRefusals: a second offer in an epoch already answered
// (replayed exchange) and an offer on an epoch that is already
// post-quantum (out of epoch) are refused; the offer resent with its own id
// is answered again, so a lost accept does not stop the upgrade.
func TestPQOfferRefusals(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 7, PQPreferred, PQPreferred, &buf)
	m.drop = func(p packet) bool {
		e, err := wire.ParseFSPEncrypted(p.b)
		return p.src == b.addr && err == nil && int(e.Header.PayloadLen) == wire.FSPInnerHeaderSize+wire.PQFragmentSize
	}
	establish(t, m, a, b)
	if b.tbl.Stats().PQAccepted != 1 || a.pq(b) {
		t.Fatal("no accept to lose")
	}
	ea := a.tbl.sessions[b.addr]
	// Another exchange id in the answered epoch.
	realID := ea.pq.id
	ea.pq.id[0] ^= 0xff
	if err := a.tbl.pqSend(m.now, ea, wire.PQKindOffer, ea.pq.dk.EncapsulationKey().Bytes()); err != nil {
		t.Fatal(err)
	}
	m.run()
	if got := b.tbl.Stats().PQMessagesRefused; got != 2 { // both fragments
		t.Fatalf("refused %d, want 2", got)
	}
	ea.pq.id = realID
	m.drop = nil
	m.advance(1100 * time.Millisecond)
	m.tickAll() // the offer again: answered with the stored accept
	if !a.pq(b) || !b.pq(a) || a.tbl.Stats().PQOfferResends != 1 {
		t.Fatalf("pq %v %v, resends %d", a.pq(b), b.pq(a), a.tbl.Stats().PQOfferResends)
	}
	// An offer on the post-quantum epoch.
	before := b.tbl.Stats().PQMessagesRefused
	ea.pq.id = [8]byte{1}
	if err := a.tbl.pqSend(m.now, ea, wire.PQKindOffer, make([]byte, wire.PQOfferSize)); err != nil {
		t.Fatal(err)
	}
	m.run()
	if got := b.tbl.Stats().PQMessagesRefused - before; got != 2 {
		t.Fatalf("out-of-epoch offer: refused %d, want 2", got)
	}
}

// TestPQReassemblyBounds: fragments of another exchange while one is being
// reassembled, and malformed fragments, are refused and counted; a
// reassembly holds at most one payload.
func TestPQReassemblyBounds(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 8, PQOff, PQPreferred, &buf)
	establish(t, m, a, b) // a classic: b waits for an offer
	eb := b.tbl.sessions[a.addr]
	frags, err := wire.PQFragments(wire.PQKindOffer, [8]byte{1}, make([]byte, wire.PQOfferSize))
	if err != nil {
		t.Fatal(err)
	}
	enc := func(f wire.PQFragment) []byte {
		bb := make([]byte, wire.PQFragmentSize)
		if _, err := f.MarshalTo(bb); err != nil {
			t.Fatal(err)
		}
		return bb
	}
	b.tbl.handlePQ(m.now, eb, slotCurrent, enc(frags[0]))
	other := frags[1]
	other.ID = [8]byte{2}
	b.tbl.handlePQ(m.now, eb, slotCurrent, enc(other))
	b.tbl.handlePQ(m.now, eb, slotCurrent, []byte{1, 2, 3})
	b.tbl.handlePQ(m.now, eb, slotPrevious, enc(frags[1]))
	s := b.tbl.Stats()
	if s.PQFragmentsRefused != 2 || s.PQMessagesRefused != 1 {
		t.Fatalf("fragments refused %d, messages refused %d", s.PQFragmentsRefused, s.PQMessagesRefused)
	}
	if eb.pq.rx.Held() > wire.PQOfferSize {
		t.Fatalf("reassembly holds %d bytes", eb.pq.rx.Held())
	}
	// The all-zero "key" completes and is answered or refused, never kept.
	b.tbl.handlePQ(m.now, eb, slotCurrent, enc(frags[1]))
	if eb.pq.rx.Pending() {
		t.Fatal("a complete payload stayed in the reassembly")
	}
}

// TestPQRekeyUnderLoss: TestRekeyUnderLoss with both sides PQ-preferred:
// every packet the channel did not lose arrives through upgrades and
// rekeys.
func TestPQRekeyUnderLoss(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 17, PQPreferred, PQPreferred, &buf)
	establish(t, m, a, b)
	m.loss = 0.05
	const size = 100
	sent := map[*node]int{}
	for step := range 3000 {
		m.advance(100 * time.Millisecond)
		for _, n := range []*node{a, b} {
			peer := b
			if n == b {
				peer = a
			}
			if err := n.tbl.Send(m.now, peer.addr, 1, 1, make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			sent[n]++
		}
		if step%10 == 0 {
			m.tickAll()
		}
		m.run()
	}
	lost := map[identity.NodeAddr]int{}
	for _, p := range m.dropped {
		if e, err := wire.ParseFSPEncrypted(p.b); err == nil && e.Header.PayloadLen == wire.FSPInnerHeaderSize+4+size {
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
		if got != sent[n]-lost[n.addr] {
			t.Errorf("sent %d, lost %d, delivered %d", sent[n], lost[n.addr], got)
		}
	}
	sa, sb := a.tbl.Stats(), b.tbl.Stats()
	if sa.PQUpgrades < 2 {
		t.Fatalf("upgrades a %d b %d, fallbacks %d %d", sa.PQUpgrades, sb.PQUpgrades, sa.PQFallbacks, sb.PQFallbacks)
	}
	t.Logf("upgrades a=%d b=%d cutovers a=%d b=%d fallbacks a=%d b=%d", sa.PQUpgrades, sb.PQUpgrades, sa.Cutovers, sb.Cutovers, sa.PQFallbacks, sb.PQFallbacks)
}

// TestPQPerPeerPolicy: peers[].pq overrides node.session.pq for that peer.
func TestPQPerPeerPolicy(t *testing.T) {
	m, a, b := pair(t, 9, DefaultConfig())
	ca, cb := DefaultConfig(), DefaultConfig()
	ca.PQPeers = &PQPeerModes{b.addr: PQPreferred} // a: off but for b
	cb.PQ = PQPreferred
	a.tbl = New(a.id, noise.Epoch{31}, ca, a, a, nil, m.rnd)
	b.tbl = New(b.id, noise.Epoch{32}, cb, b, b, nil, m.rnd)
	if a.tbl.PQMode(b.addr) != PQPreferred || a.tbl.PQMode(a.addr) != PQOff {
		t.Fatal("per-peer policy not applied")
	}
	establish(t, m, a, b)
	if !a.pq(b) || !b.pq(a) {
		t.Fatal("not upgraded under the per-peer policy")
	}
	if in, _ := a.tbl.Session(b.addr); in.PQMode != PQPreferred {
		t.Fatalf("mode %v", in.PQMode)
	}
}

func TestParsePQMode(t *testing.T) {
	for s, want := range map[string]PQMode{"": PQOff, "off": PQOff, "preferred": PQPreferred, "required": PQRequired} {
		if got, err := ParsePQMode(s); err != nil || got != want || (s != "" && got.String() != s) {
			t.Errorf("%q: %v, %v", s, got, err)
		}
	}
	if _, err := ParsePQMode("on"); err == nil {
		t.Error("on accepted")
	}
}

// TestPQRestartAndCrossing: a restarted peer's new session upgrades
// afresh; crossing setups leave one initiator, which offers.
func TestPQRestartAndCrossing(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 10, PQPreferred, PQPreferred, &buf)
	establish(t, m, a, b)
	cfg := DefaultConfig()
	cfg.PQ = PQPreferred
	m.restart(b, cfg)
	m.advance(time.Second)
	if err := b.tbl.Send(m.now, a.addr, 1, 1, []byte("after restart")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if !a.pq(b) || !b.pq(a) || delivered(a, "after restart") != 1 {
		t.Fatalf("after restart: pq %v %v, delivered %d", a.pq(b), b.pq(a), delivered(a, "after restart"))
	}

	m2, c, d := pqPair(t, 11, PQPreferred, PQPreferred, &buf)
	if err := c.tbl.Send(m2.now, d.addr, 1, 1, []byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := d.tbl.Send(m2.now, c.addr, 1, 1, []byte("d")); err != nil {
		t.Fatal(err)
	}
	m2.run()
	if !c.pq(d) || !d.pq(c) || delivered(d, "c") != 1 || delivered(c, "d") != 1 {
		t.Fatalf("crossing: pq %v %v, delivered %d %d", c.pq(d), d.pq(c), delivered(d, "c"), delivered(c, "d"))
	}
}

// TestPQRequiredUnderLoss: both ends required, 5% loss, rekeys: every
// packet is delivered, lost on the channel, or counted as dropped from a
// held queue — nothing vanishes uncounted, nothing travels classically.
func TestPQRequiredUnderLoss(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 18, PQRequired, PQRequired, &buf)
	establish(t, m, a, b)
	m.loss = 0.05
	const size = 100
	sent := map[*node]int{}
	for step := range 3000 {
		m.advance(100 * time.Millisecond)
		for _, n := range []*node{a, b} {
			peer := b
			if n == b {
				peer = a
			}
			if err := n.tbl.Send(m.now, peer.addr, 1, 1, make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			sent[n]++
		}
		if step%10 == 0 {
			m.tickAll()
		}
		m.run()
	}
	lost := map[identity.NodeAddr]int{}
	for _, p := range m.dropped {
		if e, err := wire.ParseFSPEncrypted(p.b); err == nil && e.Header.PayloadLen == wire.FSPInnerHeaderSize+4+size {
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
		st, pst := n.tbl.Stats(), peer.tbl.Stats()
		accounted := got + lost[n.addr] + int(st.PendingDropped) + int(pst.PQClassicDropped)
		if accounted != sent[n] {
			t.Errorf("sent %d: delivered %d + lost %d + dropped from the queue %d + refused classical %d = %d",
				sent[n], got, lost[n.addr], st.PendingDropped, pst.PQClassicDropped, accounted)
		}
		if pst.PQClassicDropped != 0 {
			t.Errorf("%d packets came on a classical epoch between required ends", pst.PQClassicDropped)
		}
	}
	sa, sb := a.tbl.Stats(), b.tbl.Stats()
	t.Logf("upgrades a=%d b=%d refused a=%d b=%d queue drops a=%d b=%d", sa.PQUpgrades, sb.PQUpgrades, sa.PQRefused, sb.PQRefused, sa.PendingDropped, sb.PendingDropped)
	if sa.PQUpgrades < 2 {
		t.Fatalf("upgrades a %d", sa.PQUpgrades)
	}
}

// TestPQLateFrameAfterAnswererDeadline: the offerer cut over, but nothing
// it sent reached the answerer before the answerer's deadline; the
// answerer falls back yet keeps the answered keys pending, so the
// offerer's next frame still promotes them: no black hole.
func TestPQLateFrameAfterAnswererDeadline(t *testing.T) {
	var buf bytes.Buffer
	m, a, b := pqPair(t, 12, PQPreferred, PQPreferred, &buf)
	cut := false
	m.drop = func(p packet) bool { return cut && p.src == a.addr }
	sawAccept := 0
	inner := m.drop
	m.drop = func(p packet) bool {
		if e, err := wire.ParseFSPEncrypted(p.b); err == nil && p.src == b.addr &&
			int(e.Header.PayloadLen) == wire.FSPInnerHeaderSize+wire.PQFragmentSize {
			sawAccept++
			if sawAccept == 2 {
				cut = true // a's confirm and everything after it are lost
			}
		}
		return inner(p)
	}
	establish(t, m, a, b)
	if !a.pq(b) || b.pq(a) {
		t.Fatalf("setup: a %v b %v", a.pq(b), b.pq(a))
	}
	for range 25 {
		m.advance(time.Second)
		_ = a.tbl.Send(m.now, b.addr, 1, 1, []byte("lost"))
		m.tickAll()
	}
	if b.tbl.Stats().PQFallbacks != 1 || b.pq(a) {
		t.Fatalf("b: %+v", b.tbl.Stats())
	}
	cut = false
	_ = a.tbl.Send(m.now, b.addr, 1, 1, []byte("late"))
	m.run()
	if delivered(b, "late") != 1 || !b.pq(a) {
		t.Fatalf("late frame: delivered %d, b pq %v", delivered(b, "late"), b.pq(a))
	}
}

package session

import (
	"bytes"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

func xxConfig() Config {
	c := DefaultConfig()
	c.Patterns = &Patterns{Default: PatternXX}
	return c
}

// handshakeLens are the Noise message lengths of the SessionAcks and
// SessionMsg3s n sent, in order.
func handshakeLens(t testing.TB, n *node, parseAck func([]byte) (wire.SessionAck, error), parseMsg3 func([]byte) (wire.SessionMsg3, error)) (acks, msg3s []int) {
	t.Helper()
	for _, p := range n.sent {
		switch k, _ := wire.ClassifyFSP(p.b); k {
		case wire.FSPKindAck:
			a, err := parseAck(p.b)
			if err != nil {
				t.Fatalf("ack sent: %v", err)
			}
			acks = append(acks, len(a.Handshake))
		case wire.FSPKindMsg3:
			m, err := parseMsg3(p.b)
			if err != nil {
				t.Fatalf("msg3 sent: %v", err)
			}
			msg3s = append(msg3s, len(m.Handshake))
		}
	}
	return acks, msg3s
}

// Two nodes on upstream next's pattern: the same three FSP messages carry
// XX, with the 10-byte negotiation payload after msg2 and msg3 on a fresh
// session (ack handshake 106+26, msg3 73+26), and data flows both ways.
func TestXXSessionEstablishAndData(t *testing.T) {
	m, a, b := pair(t, 41, xxConfig())
	establish(t, m, a, b)
	if len(b.delivered) != 1 || string(b.delivered[0].payload) != "hello" {
		t.Fatalf("b delivered %+v", b.delivered)
	}
	if err := b.tbl.Send(m.now, a.addr, 7, 9, []byte("back")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if len(a.delivered) != 1 || string(a.delivered[0].payload) != "back" {
		t.Fatalf("a delivered %+v", a.delivered)
	}
	ib, _ := b.tbl.Session(a.addr)
	if ib.Remote != a.id.PublicKey() || ib.Pattern != PatternXX {
		t.Fatalf("responder: remote %v pattern %v", ib.Remote.Npub(), ib.Pattern)
	}
	acks, _ := handshakeLens(t, b, wire.ParseSessionAckXX, wire.ParseSessionMsg3XX)
	_, msg3s := handshakeLens(t, a, wire.ParseSessionAckXX, wire.ParseSessionMsg3XX)
	if len(acks) != 1 || acks[0] != 132 || len(msg3s) != 1 || msg3s[0] != 99 {
		t.Fatalf("ack handshakes %v, msg3 handshakes %v: want [132] and [99]", acks, msg3s)
	}
	for _, n := range []*node{a, b} {
		snap := n.tbl.Snapshot()
		if len(snap) != 1 || snap[0].NoisePattern != "XX" {
			t.Fatalf("snapshot %+v", snap)
		}
	}
	// XK stays the default and says so.
	m2, c, d := pair(t, 42, DefaultConfig())
	establish(t, m2, c, d)
	if snap := c.tbl.Snapshot(); snap[0].NoisePattern != "XK" {
		t.Fatalf("default pattern %q", snap[0].NoisePattern)
	}
}

// The payload is upstream next's NegotiationPayload::new(0, 0, 0): format
// 0, versions [0, 0], no features, no TLVs.
func TestSessionNegotiationPayload(t *testing.T) {
	b, err := wire.Negotiation{}.Append(nil)
	if err != nil || !bytes.Equal(b, sessionNegotiation[:]) {
		t.Fatalf("negotiation %x, %v; sent %x", b, err, sessionNegotiation)
	}
}

// XX rekeys under loss: every rekey's msg2 and msg3 are exactly 106 and
// 73 bytes (upstream next reads a rekey's msg2 whole, so a payload there
// would fail it), the epochs cut over and no data is lost beyond the
// channel's own loss.
func TestXXSessionRekeysUnderLoss(t *testing.T) {
	m, a, b := pair(t, 43, xxConfig())
	establish(t, m, a, b)
	m.loss = 0.05
	sent := 0
	for step := 0; step < 3000; step++ { // 300 s, 10 packets/s each way
		m.advance(100 * time.Millisecond)
		for _, n := range []*node{a, b} {
			peer := b
			if n == b {
				peer = a
			}
			if err := n.tbl.Send(m.now, peer.addr, 1, 1, make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		if step%10 == 0 {
			m.tickAll()
		}
		m.run()
	}
	if ca, cb := a.tbl.Stats().Cutovers, b.tbl.Stats().Cutovers; ca < 2 || cb < 2 {
		t.Fatalf("cutovers a=%d b=%d", ca, cb)
	}
	for _, n := range []*node{a, b} {
		acks, msg3s := handshakeLens(t, n, wire.ParseSessionAckXX, wire.ParseSessionMsg3XX)
		fresh := 0
		for _, l := range acks {
			if l == 132 {
				fresh++
			} else if l != 106 {
				t.Fatalf("rekey ack handshake of %d bytes", l)
			}
		}
		for _, l := range msg3s {
			if l == 99 {
				fresh++
			} else if l != 73 {
				t.Fatalf("rekey msg3 handshake of %d bytes", l)
			}
		}
		if len(acks)+len(msg3s) < 3 {
			t.Fatalf("%d acks and %d msg3s sent", len(acks), len(msg3s))
		}
		if in, _ := n.tbl.Session(map[*node]*node{a: b, b: a}[n].addr); in.Pattern != PatternXX || in.State != StateEstablished {
			t.Fatalf("after rekeys: %+v", in)
		}
		t.Logf("%x: %d fresh handshake messages, acks %d, msg3s %d", n.addr[:2], fresh, len(acks), len(msg3s))
	}
	delivered := len(a.delivered) + len(b.delivered)
	lostData := 0
	for _, p := range m.dropped {
		if e, err := wire.ParseFSPEncrypted(p.b); err == nil && e.Header.PayloadLen == wire.FSPInnerHeaderSize+4+100 {
			lostData++
		}
	}
	// establish's "hello" is one more delivered packet.
	if delivered-1 != sent-lostData {
		t.Fatalf("sent %d, lost on the channel %d, delivered %d", sent, lostData, delivered-1)
	}
}

// A SessionAck that authenticates under another key than the one dialled
// (anyone can answer a msg1 with a valid XX msg2 of its own) is counted
// as ack_identity_mismatch and keeps the initiation, which the genuine
// ack then completes.
func TestXXAckFromAnotherKeyKeepsInitiation(t *testing.T) {
	m, a, b := pair(t, 44, xxConfig())
	c := m.addNode(xxConfig())
	m.drop = func(p packet) bool { return p.src == b.addr } // hold b's ack back
	if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	m.run()
	if len(m.dropped) != 1 {
		t.Fatalf("%d packets held back", len(m.dropped))
	}
	genuine := m.dropped[0].b
	// c answers a's SessionSetup with its own key; the ack claims b.
	setup := a.sent[0].b
	c.tbl.HandleFSP(m.now, a.addr, a.addr, false, setup)
	var forged []byte
	for _, p := range c.sent {
		if k, _ := wire.ClassifyFSP(p.b); k == wire.FSPKindAck {
			forged = p.b
		}
	}
	if forged == nil {
		t.Fatal("c sent no ack")
	}
	m.queue = nil
	a.tbl.HandleFSP(m.now, b.addr, b.addr, false, forged)
	if st := a.tbl.Stats(); st.AckIdentityMismatch != 1 || a.state(b) != StateInitiating {
		t.Fatalf("after the forged ack: mismatches %d, state %v", st.AckIdentityMismatch, a.state(b))
	}
	m.drop = nil
	a.tbl.HandleFSP(m.now, b.addr, b.addr, false, genuine)
	m.run()
	if a.state(b) != StateEstablished || b.state(a) != StateEstablished {
		t.Fatalf("genuine ack: %v / %v", a.state(b), b.state(a))
	}
}

// Patterns that differ do not meet: an XK initiator drops an XX ack
// (not 57 bytes) and an XX initiator an XK ack (under 106), each counted
// as malformed, as upstream's master and next do with each other's. The
// initiation stays and resends; nothing is established on either side.
func TestMismatchedPatternsDoNotEstablish(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ai, bi Pattern
	}{{"XK to XX", PatternXK, PatternXX}, {"XX to XK", PatternXX, PatternXK}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMesh(t, 45)
			ca, cb := DefaultConfig(), DefaultConfig()
			ca.Patterns, cb.Patterns = &Patterns{Default: tc.ai}, &Patterns{Default: tc.bi}
			a, b := m.addNode(ca), m.addNode(cb)
			if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("x")); err != nil {
				t.Fatal(err)
			}
			m.run()
			if a.state(b) != StateInitiating || b.state(a) != StateAwaitingMsg3 {
				t.Fatalf("states %v / %v", a.state(b), b.state(a))
			}
			if st := a.tbl.Stats(); st.Malformed != 1 || st.Established != 0 {
				t.Fatalf("initiator stats: malformed %d established %d", st.Malformed, st.Established)
			}
		})
	}
}

// Per-peer patterns: a node on XX by default keeps XK for a peer named
// so, as initiator and as responder.
func TestPatternsPerPeer(t *testing.T) {
	m := newMesh(t, 46)
	a := m.addNode(DefaultConfig())
	b := m.addNode(DefaultConfig())
	c := m.addNode(xxConfig())
	cfg := DefaultConfig()
	cfg.Patterns = &Patterns{Default: PatternXX, Peers: map[identity.NodeAddr]Pattern{a.addr: PatternXK, b.addr: PatternXK}}
	m.restart(c, cfg)
	establish(t, m, a, c)
	establish(t, m, c, b)
	for _, n := range []*node{a, b} {
		if in, _ := c.tbl.Session(n.addr); in.Pattern != PatternXK {
			t.Fatalf("c's session with %x: %v", n.addr[:2], in.Pattern)
		}
	}
}

// PatternAuto meets either line: as initiator one SessionSetup serves
// both handshakes and the ack's size decides; as responder both acks go
// out (XK's first) and the msg3 decides. Every pairing establishes, in
// the pattern the other side runs (XK between two auto nodes), and
// carries data both ways; rekeys keep the pattern.
func TestAutoPatternMeetsEither(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ai, bi Pattern // a initiates to b
		want   Pattern
	}{
		{"auto to XK", PatternAuto, PatternXK, PatternXK},
		{"auto to XX", PatternAuto, PatternXX, PatternXX},
		{"XK to auto", PatternXK, PatternAuto, PatternXK},
		{"XX to auto", PatternXX, PatternAuto, PatternXX},
		{"auto to auto", PatternAuto, PatternAuto, PatternXK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMesh(t, 47)
			ca, cb := DefaultConfig(), DefaultConfig()
			ca.Patterns, cb.Patterns = &Patterns{Default: tc.ai}, &Patterns{Default: tc.bi}
			a, b := m.addNode(ca), m.addNode(cb)
			establish(t, m, a, b)
			if err := b.tbl.Send(m.now, a.addr, 3, 4, []byte("back")); err != nil {
				t.Fatal(err)
			}
			m.run()
			if len(a.delivered) != 1 || len(b.delivered) != 1 {
				t.Fatalf("delivered a %d b %d", len(a.delivered), len(b.delivered))
			}
			for _, p := range [][2]*node{{a, b}, {b, a}} {
				if in, _ := p[0].tbl.Session(p[1].addr); in.Pattern != tc.want {
					t.Fatalf("%x's session: %v, want %v", p[0].addr[:2], in.Pattern, tc.want)
				}
			}
			if dual := b.tbl.Stats().DualAcks; (tc.bi == PatternAuto) != (dual == 1) {
				t.Fatalf("responder sent %d dual acks", dual)
			}
			// Over a few rekeys the pattern stays and traffic flows.
			for step := 0; step < 1500; step++ {
				m.advance(100 * time.Millisecond)
				if err := a.tbl.Send(m.now, b.addr, 1, 1, []byte("x")); err != nil {
					t.Fatal(err)
				}
				if step%10 == 0 {
					m.tickAll()
				}
				m.run()
			}
			if ca, cb := a.tbl.Stats().Cutovers, b.tbl.Stats().Cutovers; ca+cb < 1 {
				t.Fatalf("no rekey cutover: a %d b %d", ca, cb)
			}
			if in, _ := a.tbl.Session(b.addr); in.Pattern != tc.want || in.State != StateEstablished {
				t.Fatalf("after rekeys: %+v", in)
			}
			if got := len(b.delivered); got != 1+1500 {
				t.Fatalf("b delivered %d of %d", got, 1+1500)
			}
		})
	}
}

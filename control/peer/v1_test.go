package peer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

func v1Config(f WireFormat) Config {
	c := DefaultConfig()
	c.WireFormat = f
	return c
}

// TestV1LinkUp: two v1 nodes link over Noise XX in three packets of
// next's sizes (41, 144, 111), every frame after carries version 1 and
// never the SP flag, and link messages flow both ways.
func TestV1LinkUp(t *testing.T) {
	n := newSimNet(t, 11)
	a, b := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireV1))
	var sizes []int
	var firsts []byte
	n.loss = 0
	sent := func(p simPkt) { sizes = append(sizes, len(p.data)); firsts = append(firsts, p.data[0]) }
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	for len(n.queue) > 0 {
		p := n.queue[0]
		sent(p)
		n.queue = n.queue[1:]
		n.nodes[p.to].m.HandlePacket(n.now, 1, p.from, p.data)
	}
	linked(t, a, b)
	if len(sizes) < 3 || sizes[0] != 41 || sizes[1] != 144 || sizes[2] != 111 {
		t.Fatalf("handshake sizes %v, want 41, 144, 111 first", sizes)
	}
	if firsts[0] != 0x11 || firsts[1] != 0x12 || firsts[2] != 0x13 {
		t.Fatalf("handshake first bytes % x", firsts[:3])
	}
	for i, f := range firsts[3:] {
		if f != 0x10 {
			t.Errorf("packet %d after the handshake starts 0x%02x, want 0x10", i+3, f)
		}
	}
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	if !pa.V1() || !pb.V1() || pa.LinkFormat() != "v1" || pb.Profile() != wire.ProfileFull {
		t.Fatalf("peers not v1/full: a %v %s, b %v %s", pa.V1(), pa.Profile(), pb.V1(), pb.Profile())
	}
	if pa.Direction != Outbound || pb.Direction != Inbound {
		t.Errorf("directions %s/%s", pa.Direction, pb.Direction)
	}
	var frames []byte
	n.dropHook = func(p simPkt) {}
	if err := a.m.SendLink(n.now, pa, wire.FMPFlagSP|wire.FMPFlagCE, lookupMsg(1)); err != nil {
		t.Fatal(err)
	}
	frames = append(frames, n.queue[len(n.queue)-1].data[:2]...)
	if err := b.m.SendLink(n.now, pb, 0, lookupMsg(2)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	if frames[0] != 0x10 || frames[1]&wire.FMPFlagSP != 0 || frames[1]&wire.FMPFlagCE == 0 {
		t.Errorf("v1 frame header % x: want version 1, SP clear, CE kept", frames)
	}
	if !hasMsg(b, lookupMsg(1)) || !hasMsg(a, lookupMsg(2)) {
		t.Fatalf("link messages lost: a got %d, b got %d", len(a.msgs), len(b.msgs))
	}
	// The link lives on: heartbeats, reports.
	n.advance(5*time.Minute, time.Second)
	linked(t, a, b)
	if s := a.m.Stats(); s.DropDecrypt != 0 || s.DropVersionMismatch != 0 {
		t.Errorf("a: decrypt drops %d, version mismatches %d", s.DropDecrypt, s.DropVersionMismatch)
	}
	if s := b.m.Stats(); s.ReportsSent == 0 || s.DropMalformed != 0 {
		t.Errorf("b: %d reports sent, %d malformed drops", s.ReportsSent, s.DropMalformed)
	}
	if _, ok := pa.MMP().SRTT(); !ok {
		t.Errorf("no RTT measured over v1 reports")
	}
	if a.m.PendingV1Count() != 0 || b.m.PendingV1Count() != 0 {
		t.Errorf("pending v1 handshakes left: %d, %d", a.m.PendingV1Count(), b.m.PendingV1Count())
	}
}

func hasMsg(s *simNode, msg []byte) bool {
	for _, m := range s.msgs {
		if bytes.Equal(m.msg, msg) {
			return true
		}
	}
	return false
}

// TestV1AutoReachesEither: a node in auto mode dials a v0-only and a
// v1-only peer; its msg1s alternate formats, so each links in the
// format it speaks within the first resends, and the v1-only peer
// counts the IK msg1 it dropped.
func TestV1AutoReachesEither(t *testing.T) {
	n := newSimNet(t, 12)
	hub := n.add(1, v1Config(WireAuto))
	old, nxt := n.add(2, v1Config(WireV0)), n.add(3, v1Config(WireV1))
	hub.m.AddStatic(n.now, StaticPeer{PublicKey: old.id.PublicKey(), Addresses: []Candidate{hub.candidate(old)}, AutoReconnect: true})
	hub.m.AddStatic(n.now, StaticPeer{PublicKey: nxt.id.PublicKey(), Addresses: []Candidate{hub.candidate(nxt)}, AutoReconnect: true})
	n.deliver()
	n.advance(5*time.Second, 100*time.Millisecond)
	linked(t, hub, old)
	linked(t, hub, nxt)
	if hub.m.Peer(old.id.NodeAddr()).V1() || !hub.m.Peer(nxt.id.NodeAddr()).V1() {
		t.Fatalf("formats: old v1=%v, next v1=%v", hub.m.Peer(old.id.NodeAddr()).V1(), hub.m.Peer(nxt.id.NodeAddr()).V1())
	}
	if nxt.m.Stats().DropOtherVersion == 0 {
		t.Errorf("the v1-only peer counted no IK msg1 dropped")
	}
	// The formats are remembered: after the links drop, the redial
	// starts with the format that worked.
	if !hub.m.static[nxt.id.NodeAddr()].learnedV1 || hub.m.static[old.id.NodeAddr()].learnedV1 {
		t.Errorf("learned formats wrong")
	}
}

// TestV0AndV1DoNotLink: a v0-only and a v1-only node never link, and
// each counts and logs the other's packets as another version.
func TestV0AndV1DoNotLink(t *testing.T) {
	n := newSimNet(t, 13)
	a, b := n.add(1, v1Config(WireV0)), n.add(2, v1Config(WireV1))
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	b.m.AddStatic(n.now, StaticPeer{PublicKey: a.id.PublicKey(), Addresses: []Candidate{b.candidate(a)}, AutoReconnect: true})
	n.deliver()
	n.advance(40*time.Second, time.Second)
	if a.m.PeerCount() != 0 || b.m.PeerCount() != 0 {
		t.Fatalf("linked across formats")
	}
	if a.m.Stats().DropOtherVersion == 0 || b.m.Stats().DropOtherVersion == 0 {
		t.Errorf("drop_other_version: a %d, b %d", a.m.Stats().DropOtherVersion, b.m.Stats().DropOtherVersion)
	}
	if !strings.Contains(a.logs.String(), "version=1 our_version=0") || !strings.Contains(b.logs.String(), "version=0 our_version=1") {
		t.Errorf("logs do not name the versions:\nA:\n%s\nB:\n%s", a.logs, b.logs)
	}
	if b.m.Stats().V1Msg2Sent != 0 && a.m.Stats().Msg2Received != 0 {
		t.Errorf("a handshake crossed formats")
	}
}

// TestV1Msg1RateLimitedBeforeReply: stranger v1 msg1s from one source
// beyond its bucket get no msg2 (the 3.5× reply is the amplification
// risk), are refused before any DH, and counted.
func TestV1Msg1RateLimitedBeforeReply(t *testing.T) {
	n := newSimNet(t, 14)
	cfg := v1Config(WireV1)
	cfg.HandshakeBurst, cfg.HandshakeRate = 5, 0.001
	b := n.add(2, cfg)
	attacker := n.add(9, v1Config(WireV1))
	for i := range 50 {
		hs, err := noise.NewXXInitiator(attacker.id.Secret().Private(), noise.Epoch{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		e, err := hs.WriteMessage1(nil)
		if err != nil {
			t.Fatal(err)
		}
		m1 := make([]byte, wire.FMPv1Msg1Size)
		if _, err := (wire.FMPv1Handshake{Phase: wire.FMPPhaseMsg1, SenderIndex: uint32(i), Noise: e}).MarshalTo(m1); err != nil {
			t.Fatal(err)
		}
		b.m.HandlePacket(n.now, 1, attacker.addr, m1)
	}
	s := b.m.Stats()
	if len(n.queue) != 5 || s.V1Msg2Sent != 5 {
		t.Errorf("%d replies (%d msg2 counted) to 50 msg1s from one source with a burst of 5", len(n.queue), s.V1Msg2Sent)
	}
	if s.Msg1RateLimited != 45 || s.Msg1SourceLimited != 45 {
		t.Errorf("rate limited %d (source %d), want 45", s.Msg1RateLimited, s.Msg1SourceLimited)
	}
	if b.m.PendingV1Count() != 5 {
		t.Errorf("%d pending handshakes, want 5", b.m.PendingV1Count())
	}
	// Pending handshakes time out and are counted.
	n.queue = nil
	n.advance(31*time.Second, time.Second)
	if b.m.PendingV1Count() != 0 || b.m.Stats().V1PendingExpired != 5 {
		t.Errorf("pending %d, expired %d", b.m.PendingV1Count(), b.m.Stats().V1PendingExpired)
	}
}

// TestV1DuplicateMsg1GetsStoredMsg2: a copy of a msg1 we answered gets
// the same msg2 again with no new state, and only to where the first
// went; the pending table is bounded, oldest evicted and counted.
func TestV1DuplicateMsg1GetsStoredMsg2(t *testing.T) {
	n := newSimNet(t, 15)
	cfg := v1Config(WireV1)
	cfg.MaxPendingInbound = 3
	a, b := n.add(1, v1Config(WireV1)), n.add(2, cfg)
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	m1 := n.queue[0].data
	n.queue = nil
	b.m.HandlePacket(n.now, 1, a.addr, m1)
	b.m.HandlePacket(n.now, 1, a.addr, m1)
	b.m.HandlePacket(n.now, 1, simAddr(77), m1) // a copy from elsewhere
	if len(n.queue) != 2 || !bytes.Equal(n.queue[0].data, n.queue[1].data) || n.queue[1].to != a.addr {
		t.Fatalf("%d replies; want the same msg2 twice, to a", len(n.queue))
	}
	if s := b.m.Stats(); s.Msg1Duplicate != 2 || s.V1Msg2Sent != 1 || b.m.PendingV1Count() != 1 {
		t.Errorf("duplicates %d, msg2 built %d, pending %d", s.Msg1Duplicate, s.V1Msg2Sent, b.m.PendingV1Count())
	}
	n.deliver()
	linked(t, a, b)
	for i := range 5 {
		c := n.add(10+i, v1Config(WireV1))
		if err := c.m.Dial(n.now, b.id.PublicKey(), c.candidate(b)); err != nil {
			t.Fatal(err)
		}
		p := n.queue[len(n.queue)-1]
		n.queue = n.queue[:len(n.queue)-1]
		b.m.HandlePacket(n.now, 1, p.from, p.data)
	}
	if b.m.PendingV1Count() != 3 || b.m.Stats().V1PendingEvicted != 2 {
		t.Errorf("pending %d, evicted %d; want 3 and 2", b.m.PendingV1Count(), b.m.Stats().V1PendingEvicted)
	}
}

// TestV1Msg2FromAnotherKey: a msg2 from a key other than the one dialled
// is refused and counted, and the leg still completes with the genuine
// responder.
func TestV1Msg2FromAnotherKey(t *testing.T) {
	n := newSimNet(t, 16)
	a, b, c := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireV1)), n.add(3, v1Config(WireV1))
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	m1 := n.queue[0].data
	// c, on path, answers a's msg1 with its own key first.
	c.m.HandlePacket(n.now, 1, a.addr, m1)
	forged := n.queue[len(n.queue)-1]
	n.queue = n.queue[:len(n.queue)-1]
	a.m.HandlePacket(n.now, 1, c.addr, forged.data)
	if s := a.m.Stats(); s.Msg2WrongIdentity != 1 || a.m.PeerCount() != 0 || a.m.ConnectionCount() != 1 {
		t.Fatalf("wrong identity %d, peers %d, legs %d", s.Msg2WrongIdentity, a.m.PeerCount(), a.m.ConnectionCount())
	}
	if !strings.Contains(a.logs.String(), "msg2 answered by a different static than the one dialed") {
		t.Errorf("no warning:\n%s", a.logs)
	}
	n.deliver()
	linked(t, a, b)
	if c.m.PeerCount() != 0 {
		t.Errorf("c linked")
	}
}

// rekeyingV1Pair links two v1 nodes that rekey every 40 s; small is
// the one with the smaller NodeAddr, which starts the rekeys.
func rekeyingV1Pair(t *testing.T, n *simNet) (a, b, small, large *simNode) {
	t.Helper()
	cfg := v1Config(WireV1)
	cfg.RekeyAfter, cfg.RekeyJitter = 40*time.Second, 0
	a, b = n.add(1, cfg), n.add(2, cfg)
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, a, b)
	if b.id.NodeAddr().Less(a.id.NodeAddr()) {
		return a, b, b, a
	}
	return a, b, a, b
}

// TestV1RekeyStaticMismatch: a stranger on path answers our rekey msg1
// of a v1 link with its own key: counted as upstream next's
// rekey_static_mismatch (and as a msg2 from another key), the session
// kept, and the genuine msg2 still completes the rekey.
func TestV1RekeyStaticMismatch(t *testing.T) {
	n := newSimNet(t, 19)
	a, b, small, large := rekeyingV1Pair(t, n)
	c := n.add(3, v1Config(WireV1))
	forged := false
	n.intercept = func(p simPkt) bool {
		if !forged && p.from == small.addr && p.to == large.addr && p.data[0] == 0x11 {
			forged = true
			c.m.HandlePacket(n.now, 1, small.addr, p.data) // its msg2 goes ahead of large's
		}
		return false
	}
	n.advance(60*time.Second, time.Second)
	if !forged {
		t.Fatal("no rekey msg1 seen")
	}
	linked(t, a, b)
	s := small.m.Stats()
	if s.RekeyStaticMismatch != 1 || s.Msg2WrongIdentity != 1 {
		t.Errorf("rekey static mismatches %d, wrong identities %d; want 1, 1", s.RekeyStaticMismatch, s.Msg2WrongIdentity)
	}
	if s.RekeyCutovers == 0 || s.PeersRemoved != 0 {
		t.Errorf("cutovers %d, peers removed %d", s.RekeyCutovers, s.PeersRemoved)
	}
	if !strings.Contains(small.logs.String(), "rekey msg2 answered by a different static than the peer's") {
		t.Errorf("no warning:\n%s", small.logs)
	}
	if c.m.PeerCount() != 0 || large.m.Stats().RekeyStaticMismatch != 0 {
		t.Errorf("stranger linked (%d) or the responder counted a mismatch", c.m.PeerCount())
	}
}

// TestV1ProfilesPairing: two Leaf nodes refuse each other (neither is
// Full), counted on both sides and logged as upstream's "FMP
// negotiation failed"; a Leaf and a Full node link, each seeing the
// other's profile.
func TestV1ProfilesPairing(t *testing.T) {
	n := newSimNet(t, 17)
	leaf := v1Config(WireV1)
	leaf.Profile = wire.ProfileLeaf
	a, b, full := n.add(1, leaf), n.add(2, leaf), n.add(3, v1Config(WireV1))
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	if a.m.PeerCount() != 0 || b.m.PeerCount() != 0 {
		t.Fatalf("two leaves linked")
	}
	if a.m.Stats().V1NegotiationFailed != 1 || !strings.Contains(a.logs.String(), "FMP negotiation failed") {
		t.Errorf("initiator: negotiation failures %d\n%s", a.m.Stats().V1NegotiationFailed, a.logs)
	}
	if a.m.Stats().V1Msg3Sent != 0 {
		t.Errorf("msg3 sent after a failed negotiation")
	}
	if err := a.m.Dial(n.now, full.id.PublicKey(), a.candidate(full)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, a, full)
	if got := full.m.Peer(a.id.NodeAddr()).Profile(); got != wire.ProfileLeaf {
		t.Errorf("full sees a as %s", got)
	}
	if got := a.m.Peer(full.id.NodeAddr()).Profile(); got != wire.ProfileFull {
		t.Errorf("a sees full as %s", got)
	}
}

// TestV1FrameOfOtherVersionNotDecrypted: on a dual-format node, a frame
// carrying version 0 for a v1 link's index (or the reverse) is dropped
// before decryption and counted.
func TestV1FrameOfOtherVersionNotDecrypted(t *testing.T) {
	n := newSimNet(t, 18)
	a, b := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireAuto))
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, a, b)
	pa := a.m.Peer(b.id.NodeAddr())
	if err := a.m.SendLink(n.now, pa, 0, lookupMsg(1)); err != nil {
		t.Fatal(err)
	}
	f := append([]byte(nil), n.queue[len(n.queue)-1].data...)
	n.queue = n.queue[:len(n.queue)-1]
	f[0] = 0x00
	before := b.m.Stats()
	b.m.HandlePacket(n.now, 1, a.addr, f)
	s := b.m.Stats()
	if s.DropVersionMismatch-before.DropVersionMismatch != 1 || s.DropDecrypt != before.DropDecrypt {
		t.Errorf("version mismatches %d, decrypt failures %d", s.DropVersionMismatch-before.DropVersionMismatch, s.DropDecrypt-before.DropDecrypt)
	}
	if hasMsg(b, lookupMsg(1)) {
		t.Errorf("delivered")
	}
	// Through the fast path too.
	a.m.Publish()
	b.m.Publish()
	fr, err := wire.ParseFMPFrameAny(f)
	if err != nil {
		t.Fatal(err)
	}
	l := b.m.Published().Lookup(1, fr.ReceiverIndex)
	if l == nil {
		t.Fatal("link not published")
	}
	if _, v := l.Open(n.now, a.addr, fr, len(f), nil); v != Dropped {
		t.Errorf("fast path verdict %d for a v0 frame on a v1 link", v)
	}
	if got := b.m.Stats().DropVersionMismatch - s.DropVersionMismatch; got != 1 {
		t.Errorf("fast path version mismatches %d", got)
	}
}

// TestV1CrossedDials: both v1 nodes dial at once; they settle on one
// session.
func TestV1CrossedDials(t *testing.T) {
	for seed := uint64(20); seed < 26; seed++ {
		n := newSimNet(t, seed)
		n.reorder = true
		a, b := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireV1))
		dialBoth(t, n, a, b)
		n.advance(3*time.Second, 100*time.Millisecond)
		linked(t, a, b)
		if !hasLinkMsgFlow(t, n, a, b) {
			t.Fatalf("seed %d: link carries nothing", seed)
		}
	}
}

func hasLinkMsgFlow(t *testing.T, n *simNet, a, b *simNode) bool {
	t.Helper()
	msg := lookupMsg(int(n.now.Unix() % 1000))
	if err := a.m.SendLink(n.now, a.m.Peer(b.id.NodeAddr()), 0, msg); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	return hasMsg(b, msg)
}

// TestV1PeerOverride: a v1 node with one peer configured v0 links to
// that peer over IK, and refuses an XX handshake from it, counted.
func TestV1PeerOverride(t *testing.T) {
	n := newSimNet(t, 27)
	a, b := n.add(1, v1Config(WireV1)), n.add(2, v1Config(WireAuto))
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true, WireFormat: WireV0})
	n.deliver()
	linked(t, a, b)
	if a.m.Peer(b.id.NodeAddr()).V1() {
		t.Fatalf("override ignored: v1 link")
	}
	a.m.Disconnect(n.now, a.m.Peer(b.id.NodeAddr()), wire.DisconnectShutdown, false)
	n.deliver()
	b.m.cfg.WireFormat = WireV1
	if err := b.m.Dial(n.now, a.id.PublicKey(), b.candidate(a)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	if a.m.Peer(b.id.NodeAddr()) != nil {
		t.Fatalf("a v1 link made with a peer configured v0")
	}
	if a.m.Stats().WireFormatRefused != 1 {
		t.Errorf("wire_format_refused %d", a.m.Stats().WireFormatRefused)
	}
}

// TestV1DefaultUnchanged: with the default configuration the node's
// first packets are byte-for-byte the IK ones (the v1 code draws no
// randomness and sends nothing), so seeded runs match.
func TestV1DefaultUnchanged(t *testing.T) {
	run := func(f WireFormat) []byte {
		n := newSimNet(t, 30)
		a, b := n.add(1, v1Config(f)), n.add(2, v1Config(f))
		if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
			t.Fatal(err)
		}
		var all []byte
		for len(n.queue) > 0 {
			p := n.queue[0]
			n.queue = n.queue[1:]
			all = append(all, p.data...)
			n.nodes[p.to].m.HandlePacket(n.now, 1, p.from, p.data)
		}
		return all
	}
	if d, v0 := run(WireDefault), run(WireV0); !bytes.Equal(d, v0) || len(d) == 0 || d[0] != 0x01 {
		t.Errorf("default and v0 differ, or do not start with an IK msg1")
	}
}

// FuzzV1Packets: any version-1 packet, to a dual-format node with a v1
// link and a pending handshake, neither panics nor links anything.
func FuzzV1Packets(f *testing.F) {
	f.Add([]byte{0x11, 0, 37, 0})
	f.Add(append([]byte{0x12, 0, 140, 0}, make([]byte, 140)...))
	f.Add(append([]byte{0x13, 0, 107, 0}, make([]byte, 107)...))
	f.Add(append([]byte{0x10, 0, 20, 0}, make([]byte, 48)...))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		n := newSimNet(t, 40)
		a, b := n.add(1, v1Config(WireAuto)), n.add(2, v1Config(WireV1))
		if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
			t.Fatal(err)
		}
		n.deliver()
		peers := a.m.PeerCount()
		if len(pkt) > 0 {
			pkt[0] = 0x10 | pkt[0]&0x0f
		}
		a.m.HandlePacket(n.now, 1, transport.Addr(simAddr(99)), pkt)
		b.m.HandlePacket(n.now, 1, transport.Addr(simAddr(99)), pkt)
		if a.m.PeerCount() != peers {
			t.Fatalf("a fuzzed packet changed the peer set")
		}
	})
}

// TestV1Rekey: a v1 link rekeys over XX with REKEY_OF (docs/next.md §4):
// only the smaller NodeAddr starts rekeys, so crossed rekeys cannot
// happen; the responder cuts over on the first frame under the new
// session; the link keeps carrying messages through every cutover, with
// loss (msg3 is resent until the peer is heard on the new session).
func TestV1Rekey(t *testing.T) {
	for seed := uint64(50); seed < 54; seed++ {
		n := newSimNet(t, seed)
		a, b, small, large := rekeyingV1Pair(t, n)
		n.loss = 0.05
		sent := 0
		for range 60 {
			n.advance(5*time.Second, time.Second)
			for _, x := range []*simNode{a, b} {
				other := b
				if x == b {
					other = a
				}
				if p := x.m.Peer(other.id.NodeAddr()); p != nil {
					_ = x.m.SendLink(n.now, p, 0, lookupMsg(sent))
					sent++
				}
			}
		}
		n.loss = 0
		n.advance(20*time.Second, time.Second)
		linked(t, a, b)
		ss, ls := small.m.Stats(), large.m.Stats()
		if ss.RekeysInitiated < 3 || ls.RekeysInitiated != 0 {
			t.Errorf("seed %d: rekeys started: smaller %d, larger %d", seed, ss.RekeysInitiated, ls.RekeysInitiated)
		}
		if ss.RekeyCutovers < 3 || ls.RekeysResponded < 3 {
			t.Errorf("seed %d: cutovers %d, responded %d", seed, ss.RekeyCutovers, ls.RekeysResponded)
		}
		if ss.PeersRemoved != 0 || ls.PeersRemoved != 0 {
			t.Errorf("seed %d: the link dropped during rekeys (%d, %d)", seed, ss.PeersRemoved, ls.PeersRemoved)
		}
		if !a.m.Peer(b.id.NodeAddr()).V1() {
			t.Errorf("seed %d: a rekey changed the link's format", seed)
		}
		if !hasLinkMsgFlow(t, n, a, b) || !hasLinkMsgFlow(t, n, b, a) {
			t.Fatalf("seed %d: the link carries nothing after the rekeys", seed)
		}
	}
}

package peer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

func TestHandshakeAndFrames(t *testing.T) {
	n := newSimNet(t, 1)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, a, b)
	pa := a.m.Peer(b.id.NodeAddr())
	if pa.Direction != Outbound || b.m.Peer(a.id.NodeAddr()).Direction != Inbound {
		t.Error("directions wrong")
	}
	if len(a.up) != 1 || len(b.up) != 1 {
		t.Errorf("PeerUp calls: a %d b %d", len(a.up), len(b.up))
	}
	for i := range 10 {
		if err := a.m.SendLink(n.now, pa, wire.FMPFlagCE, lookupMsg(i)); err != nil {
			t.Fatal(err)
		}
	}
	n.deliver()
	if len(b.msgs) != 10 {
		t.Fatalf("b got %d messages", len(b.msgs))
	}
	for i, m := range b.msgs {
		if !bytes.Equal(m.msg, lookupMsg(i)) || m.flags&wire.FMPFlagCE == 0 || m.from != a.id.NodeAddr() {
			t.Errorf("message %d: %+v", i, m)
		}
	}
}

func TestFirstFrameMatchesWireLayout(t *testing.T) {
	n := newSimNet(t, 2)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	pa := a.m.Peer(b.id.NodeAddr())
	n.now = n.now.Add(1500 * time.Millisecond)
	a.m.SendLink(n.now, pa, 0, []byte{byte(wire.MsgHeartbeat)})
	pkt := n.queue[0].data
	// Counter 0 went at promotion (the harness's PeerUp frame, as the
	// node's TreeAnnounce): this is counter 1.
	// 16-byte header, 5-byte plaintext (ts + type), 16-byte tag.
	if len(pkt) != 37 || pkt[0] != 0x00 || pkt[1] != 0 || binary.LittleEndian.Uint16(pkt[2:]) != 5 {
		t.Fatalf("frame % x", pkt)
	}
	if binary.LittleEndian.Uint32(pkt[4:]) != pa.TheirIndex() || binary.LittleEndian.Uint64(pkt[8:]) != 1 {
		t.Errorf("receiver index or counter wrong: % x", pkt[:16])
	}
	// Open it with b's session to check the timestamp base.
	pb := b.m.Peer(a.id.NodeAddr())
	f, _ := wire.ParseFMPFrame(pkt)
	pt, err := pb.cur.s.Open(nil, f.Counter, f.Header, f.Sealed)
	if err != nil {
		t.Fatal(err)
	}
	if ts := binary.LittleEndian.Uint32(pt); ts != 1500 || pt[4] != byte(wire.MsgHeartbeat) {
		t.Errorf("plaintext % x", pt)
	}
}

func TestCrossConnectionConverges(t *testing.T) {
	resolved := 0
	for seed := uint64(1); seed <= 20; seed++ {
		n := newSimNet(t, seed)
		n.reorder = true
		a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
		a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
		b.m.Dial(n.now, a.id.PublicKey(), b.candidate(a))
		n.deliver()
		n.advance(2*time.Second, time.Second)
		linked(t, a, b)
		small, large := a, b
		if b.id.NodeAddr().Less(a.id.NodeAddr()) {
			small, large = b, a
		}
		// When both handshakes complete on both sides, both keep the link
		// the smaller NodeAddr dialed.
		if small.m.Stats().CrossConnections > 0 && large.m.Stats().CrossConnections > 0 {
			resolved++
			if small.m.Peer(large.id.NodeAddr()).Direction != Outbound {
				t.Errorf("seed %d: smaller node's link is not its outbound", seed)
			}
		}
		// A side that resolved a crossing tells the upper layers again
		// (they re-announce: what went out on the losing session is lost).
		for _, x := range []*simNode{small, large} {
			other := small
			if x == small {
				other = large
			}
			ups := 0
			for _, a := range x.up {
				if a == other.id.NodeAddr() {
					ups++
				}
			}
			if want := 1 + int(x.m.Stats().CrossConnections); ups != want {
				t.Errorf("seed %d: %d PeerUp for one peer after %d crossings, want %d",
					seed, ups, x.m.Stats().CrossConnections, want)
			}
		}
		// Traffic flows both ways on it.
		small.m.SendLink(n.now, small.m.Peer(large.id.NodeAddr()), 0, lookupMsg(1))
		large.m.SendLink(n.now, large.m.Peer(small.id.NodeAddr()), 0, lookupMsg(2))
		n.deliver()
		if len(small.msgs) != 1 || len(large.msgs) != 1 {
			t.Errorf("seed %d: messages small %d large %d", seed, len(small.msgs), len(large.msgs))
		}
	}
	if resolved == 0 {
		t.Error("no seed exercised the both-complete tie-break")
	}
}

func TestRestartDetectedByEpoch(t *testing.T) {
	n := newSimNet(t, 3)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	b.m.AddStatic(n.now, StaticPeer{PublicKey: a.id.PublicKey(), Addresses: []Candidate{b.candidate(a)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	n.advance(5*time.Second, time.Second)

	// b "kill -9"s and comes back: same key, new epoch, dials at start.
	b2 := n.addWithIdentity(2, DefaultConfig(), b.id)
	if b2.m.Epoch() == b.m.Epoch() {
		t.Fatal("epochs collide")
	}
	b2.m.AddStatic(n.now, StaticPeer{PublicKey: a.id.PublicKey(), Addresses: []Candidate{b2.candidate(a)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b2)
	if a.m.Stats().PeerRestarts != 1 {
		t.Errorf("restarts %d", a.m.Stats().PeerRestarts)
	}
	// Upstream's line, with the new link (winner) and the replaced one.
	found := false
	for _, l := range strings.Split(a.logs.String(), "\n") {
		if strings.Contains(l, `level=INFO msg="Peer restart detected during promotion, replacing stale active peer" `) {
			found = strings.Contains(l, " peer=") && strings.Contains(l, " winner_link=") && strings.Contains(l, " loser_link=") &&
				!strings.Contains(l, fmt.Sprintf(" winner_link=%d loser_link=%d ", a.m.Peer(b.id.NodeAddr()).LinkID, a.m.Peer(b.id.NodeAddr()).LinkID))
		}
	}
	if !found {
		t.Errorf("survivor did not log the restart with peer, winner_link and loser_link:\n%s", a.logs)
	}
	if a.m.Peer(b.id.NodeAddr()).Epoch != b2.m.Epoch() {
		t.Error("survivor kept the old epoch")
	}
}

func TestDuplicateMsg1GetsSameMsg2(t *testing.T) {
	n := newSimNet(t, 4)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	msg1 := n.queue[0]
	n.queue = nil
	b.m.HandlePacket(n.now, 1, msg1.from, msg1.data)
	first := n.queue[0].data
	n.queue = nil // msg2 lost
	b.m.HandlePacket(n.now, 1, msg1.from, msg1.data)
	if len(n.queue) != 1 || !bytes.Equal(n.queue[0].data, first) {
		t.Fatal("duplicate msg1 not answered with the stored msg2")
	}
	// Nothing is promoted before the initiator's first frame.
	if b.m.Stats().Msg1Duplicate != 1 || b.m.UnprovenCount() != 1 || b.m.PeerCount() != 0 {
		t.Errorf("stats %+v unproven %d peers %d", b.m.Stats(), b.m.UnprovenCount(), b.m.PeerCount())
	}
	n.deliver()
	linked(t, a, b)
}

func TestHandshakeResendScheduleAndTimeout(t *testing.T) {
	n := newSimNet(t, 5)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	n.setCut(a, b, true)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	start := n.now
	var sends []time.Duration
	for n.now.Sub(start) < 31*time.Second {
		before := len(n.queue)
		n.deliver()
		_ = before
		n.now = n.now.Add(100 * time.Millisecond)
		q := len(n.queue)
		a.m.Tick(n.now)
		if len(n.queue) > q {
			sends = append(sends, n.now.Sub(start).Round(100*time.Millisecond))
		}
	}
	want := []time.Duration{1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}
	if len(sends) < len(want) {
		t.Fatalf("resends at %v", sends)
	}
	for i, w := range want {
		if sends[i] != w {
			t.Errorf("resend %d at %v, want %v (all %v)", i+1, sends[i], w, sends)
		}
	}
	if s := a.m.Stats(); s.HandshakeTimeouts != 1 {
		t.Errorf("timeouts %d", s.HandshakeTimeouts)
	}
	// First handshake failure: retry after base·2 = 10 s.
	if next := a.m.NextRetry(b.id.NodeAddr()); next.Sub(start) != 40*time.Second {
		t.Errorf("next retry at +%v, want +40s", next.Sub(start))
	}
	n.setCut(a, b, false)
	n.advance(11*time.Second, 100*time.Millisecond)
	linked(t, a, b)
}

func TestDeadLinkRemovedAndReconnected(t *testing.T) {
	n := newSimNet(t, 6)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	// Heartbeats keep an idle link alive.
	n.advance(95*time.Second, time.Second)
	linked(t, a, b)
	if a.m.Stats().HeartbeatsSent < 9 || b.m.Stats().HeartbeatsRecv < 9 {
		t.Errorf("heartbeats sent %d received %d", a.m.Stats().HeartbeatsSent, b.m.Stats().HeartbeatsRecv)
	}
	n.setCut(a, b, true)
	// Dead after 30 s of silence, or once a rekey msg1 in flight has used
	// its resends (31 s after it started).
	n.advance(70*time.Second, time.Second)
	if a.m.PeerCount() != 0 || b.m.PeerCount() != 0 {
		t.Fatalf("dead link not removed: a %d b %d", a.m.PeerCount(), b.m.PeerCount())
	}
	if a.m.Stats().LinksDead != 1 || !strings.HasPrefix(a.downWhy[0], "link dead") {
		t.Errorf("dead stats %d why %v", a.m.Stats().LinksDead, a.downWhy)
	}
	// The redial in flight resends at 1, 3, 7, 15, 31 s after it started,
	// so the link is back within ~31 s of the cut healing.
	n.setCut(a, b, false)
	n.advance(35*time.Second, time.Second)
	linked(t, a, b)
}

func TestDisconnectRemovesPeerOnBothSides(t *testing.T) {
	n := newSimNet(t, 8)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	a.m.Disconnect(n.now, a.m.Peer(b.id.NodeAddr()), wire.DisconnectConfigurationChange, false)
	n.deliver()
	if a.m.PeerCount() != 0 || b.m.PeerCount() != 0 {
		t.Fatal("peer survived Disconnect")
	}
	if len(b.downWhy) != 1 || !strings.Contains(b.downWhy[0], "ConfigurationChange") {
		t.Errorf("reason %v", b.downWhy)
	}
}

func TestRoamingFollowsAuthenticatedFrames(t *testing.T) {
	n := newSimNet(t, 9)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	// a's frames now arrive from a new address.
	a.m.SendLink(n.now, a.m.Peer(b.id.NodeAddr()), 0, lookupMsg(0))
	p := n.queue[0]
	n.queue = nil
	newAddr := simAddr(77)
	b.m.HandlePacket(n.now, 1, newAddr, p.data)
	if got := b.m.Peer(a.id.NodeAddr()).Addr; got != newAddr {
		t.Errorf("peer address %v, want %v", got, newAddr)
	}
	// A forged frame from yet another address does not move it.
	junk := make([]byte, 64)
	wire.PutFMPFrameHeader(junk, 0, b.m.Peer(a.id.NodeAddr()).OurIndex(), 99, 32)
	b.m.HandlePacket(n.now, 1, simAddr(78), junk)
	if got := b.m.Peer(a.id.NodeAddr()).Addr; got != newAddr {
		t.Errorf("unauthenticated frame moved the peer to %v", got)
	}
}

func TestACLDeniesBothWays(t *testing.T) {
	n := newSimNet(t, 10)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	acl := &ACL{}
	acl.deny, _ = ParseACL(strings.NewReader(a.id.Npub()+"\n"), nil, func(int, string, error) {})
	b.m.SetACL(acl)
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	if b.m.PeerCount() != 0 || b.m.Stats().Msg1ACLDenied != 1 || len(n.queue) != 0 {
		t.Errorf("denied msg1 admitted: peers %d stats %+v", b.m.PeerCount(), b.m.Stats())
	}
	if err := b.m.Dial(n.now, a.id.PublicKey(), b.candidate(a)); err == nil {
		t.Error("dial to a denied peer allowed")
	}
	// An allow entry overrides deny ALL (strict allowlist).
	c := n.add(3, DefaultConfig())
	acl2 := &ACL{}
	acl2.allow, _ = ParseACL(strings.NewReader("# comment\n"+c.id.Npub()+"  # trailing\n"), nil, func(int, string, error) {})
	acl2.deny, _ = ParseACL(strings.NewReader("all\n"), nil, func(int, string, error) {})
	b.m.SetACL(acl2)
	c.m.Dial(n.now, b.id.PublicKey(), c.candidate(b))
	a.m.Dial(n.now.Add(time.Minute), b.id.PublicKey(), a.candidate(b))
	n.deliver()
	if b.m.Peer(c.id.NodeAddr()) == nil || b.m.Peer(a.id.NodeAddr()) != nil {
		t.Error("allowlist semantics wrong")
	}
	if acl2.Mode() != "allow_then_deny_all" {
		t.Errorf("mode %s", acl2.Mode())
	}
}

func TestMaxPeers(t *testing.T) {
	n := newSimNet(t, 11)
	cfg := DefaultConfig()
	cfg.MaxPeers = 2
	hub := n.add(1, cfg)
	for i := 2; i <= 4; i++ {
		s := n.add(i, DefaultConfig())
		s.m.Dial(n.now, hub.id.PublicKey(), s.candidate(hub))
		n.deliver()
	}
	if hub.m.PeerCount() != 2 || hub.m.Stats().Msg1PeerLimit != 1 {
		t.Errorf("peers %d refused %d", hub.m.PeerCount(), hub.m.Stats().Msg1PeerLimit)
	}
}

func TestAcceptConnectionsOffRefusesStrangersOnly(t *testing.T) {
	n := newSimNet(t, 12)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	b.accept = false
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	if b.m.PeerCount() != 0 || b.m.Stats().Msg1NotAccepting != 1 {
		t.Fatal("stranger admitted with accept_connections off")
	}
	// b can still dial out, and rekeys from a then pass the gate.
	b.m.Dial(n.now, a.id.PublicKey(), b.candidate(a))
	n.deliver()
	linked(t, a, b)
	n.advance(200*time.Second, time.Second)
	linked(t, a, b)
	if a.m.Stats().RekeyCutovers+b.m.Stats().RekeyCutovers == 0 {
		t.Error("no rekey happened")
	}
}

// TestMsg1SpoofedFromPeerAddressDropped: a msg1 arriving from an
// established peer's address but revealing another identity after the DH
// is dropped; it neither creates a peer nor moves the existing one.
func TestMsg1SpoofedFromPeerAddressDropped(t *testing.T) {
	n := newSimNet(t, 13)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	c := n.add(3, DefaultConfig())
	c.m.Dial(n.now, b.id.PublicKey(), c.candidate(b))
	spoof := n.queue[0]
	n.queue = nil
	b.m.HandlePacket(n.now, 1, a.addr, spoof.data) // c's msg1, from a's address
	if b.m.Stats().Msg1IdentityMismatch != 1 || b.m.PeerCount() != 1 || len(n.queue) != 0 {
		t.Errorf("spoofed msg1 not dropped: stats %+v peers %d", b.m.Stats(), b.m.PeerCount())
	}
	if b.m.Peer(a.id.NodeAddr()).Addr != a.addr {
		t.Error("established peer moved")
	}
	// Upstream's warning names whom the address belongs to and who came.
	want := fmt.Sprintf(`level=WARN msg="Msg1 admitted by the established-address waiver carries a different identity, dropping" log.target=fips::node::handlers::handshake expected=%s actual=%s transport_id=1`,
		identity.ShortNpub(a.id.Npub()), c.id.NodeAddr().ShortHex()) // a is a peer, its key known; c is not
	if !strings.Contains(b.logs.String(), want) {
		t.Errorf("no %q in:\n%s", want, b.logs)
	}
}

// TestRetryDelayNeverWrapsShort: the reconnect backoff doubles from the
// base to the cap and stays there for every retry count, whatever the
// base (a shift that overflowed once gave short or negative delays).
func TestRetryDelayNeverWrapsShort(t *testing.T) {
	for _, base := range []time.Duration{time.Nanosecond, time.Second, 5 * time.Second, 7*time.Second + 3, 300 * time.Second, time.Duration(1<<62 + 1)} {
		max := 300 * time.Second
		prev := time.Duration(0)
		for r := range 100 {
			d := retryDelay(base, max, r)
			if d <= 0 || d > max || d < prev || (base <= max && r == 0 && d != base) {
				t.Fatalf("base %v retry %d: delay %v after %v", base, r, d, prev)
			}
			prev = d
		}
		if prev != max {
			t.Errorf("base %v: the backoff ends at %v, not the cap %v", base, prev, max)
		}
	}
	if d := retryDelay(5*time.Second, 300*time.Second, 3); d != 40*time.Second {
		t.Errorf("5 s doubled 3 times = %v", d)
	}
}

package peer

import (
	"math"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// These tests perform the attacks of issue 13 on links: replayed and forged
// packets crafted with control/noise and control/wire, from spoofed
// sources on the simulated network. Each asserts the established link
// stays up with heartbeats on time, a real peer can still join during the
// attack, and the counters name what was refused.

// craftMsg1 builds the msg1 id would send to the holder of to in the run
// with epoch: what an attacker replays after capturing it.
func craftMsg1(t *testing.T, id *identity.Identity, to identity.PublicKey, epoch noise.Epoch, senderIdx uint32, n *simNet) []byte {
	t.Helper()
	rs, err := to.Point()
	if err != nil {
		t.Fatal(err)
	}
	hs, err := noise.NewIKInitiator(id.Secret().Private(), rs, epoch, noise.WithRand(seededReader{n.rng}))
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, wire.FMPMsg1Size)
	msg, err := hs.WriteMessage1(pkt[8:8])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (wire.FMPMsg1{SenderIndex: senderIdx, Noise: msg}).MarshalTo(pkt); err != nil {
		t.Fatal(err)
	}
	return pkt
}

// trafficTo sums what the network carried to addr, and how often.
type trafficTo struct {
	addr           transport.Addr
	packets, bytes int
}

// watch counts packets queued to the watched addresses while f runs.
func (n *simNet) watch(f func(), w ...*trafficTo) {
	before := len(n.queue)
	f()
	for _, p := range n.queue[before:] {
		for _, x := range w {
			if p.to == x.addr {
				x.packets++
				x.bytes += len(p.data)
			}
		}
	}
}

// pair links a (dialing, static) to b and returns both.
func pair(t *testing.T, n *simNet, cfgA, cfgB Config) (*simNode, *simNode) {
	t.Helper()
	a, b := n.add(1, cfgA), n.add(2, cfgB)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	return a, b
}

// heartbeatsOnTime runs the network for d and asserts the link a—b stays
// the same Peer on both sides and b hears a's heartbeats at the interval.
func heartbeatsOnTime(t *testing.T, n *simNet, a, b *simNode, d time.Duration, during func(i int)) {
	t.Helper()
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	hb := b.m.Stats().HeartbeatsRecv
	last := pb.LastRecv()
	var worst time.Duration
	const tick = 100 * time.Millisecond
	for i := 0; time.Duration(i)*tick < d; i++ {
		if during != nil {
			during(i)
		}
		n.advance(tick, tick)
		if a.m.Peer(b.id.NodeAddr()) != pa || b.m.Peer(a.id.NodeAddr()) != pb {
			t.Fatalf("link replaced or removed at +%v\nb stats %+v\nb log:\n%s", time.Duration(i)*tick, b.m.Stats(), b.logs)
		}
		if gap := pb.LastRecv().Sub(last); gap > worst {
			worst = gap
		}
		last = pb.LastRecv()
	}
	linked(t, a, b)
	interval := DefaultConfig().HeartbeatInterval
	if got, want := b.m.Stats().HeartbeatsRecv-hb, uint64(d/interval)-1; got < want {
		t.Errorf("%d heartbeats in %v, want ≥ %d", got, d, want)
	}
	if worst > interval+time.Second {
		t.Errorf("longest silence on the link %v, heartbeat interval %v", worst, interval)
	}
}

// joins asserts a fresh node can link to b now.
func joins(t *testing.T, n *simNet, i int, b *simNode) {
	t.Helper()
	c := n.add(i, DefaultConfig())
	if err := c.m.Dial(n.now, b.id.PublicKey(), c.candidate(b)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	linked(t, c, b)
}

// TestReplayedMsg1FromEarlierRunKeepsLink: a msg1 captured from the peer's
// previous run (old epoch), replayed from any address, used to make the
// responder drop the live link and promote a zombie. Now it is answered
// with one msg2 and nothing else changes; the restart it pretends to be
// never proves itself and expires.
func TestReplayedMsg1FromEarlierRunKeepsLink(t *testing.T) {
	n := newSimNet(t, 101)
	a1, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a1.m.Dial(n.now, b.id.PublicKey(), a1.candidate(b))
	captured := append([]byte(nil), n.queue[0].data...)
	n.deliver()
	linked(t, a1, b)
	n.advance(5*time.Second, time.Second)

	// a restarts: same key, new epoch; the genuine restart still works.
	a := n.addWithIdentity(1, DefaultConfig(), a1.id)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	if s := b.m.Stats(); s.PeerRestarts != 1 {
		t.Fatalf("genuine restart not taken: %+v", s)
	}

	// A msg1 of a run b never completed a handshake with (b was down
	// then, or has forgotten it): b cannot tell it from a restart.
	var oldEpoch noise.Epoch
	oldEpoch[0] = 0xee
	crafted := craftMsg1(t, a.id, b.id.PublicKey(), oldEpoch, 7, n)
	attacker := simAddr(66)
	toAttacker, toA := &trafficTo{addr: attacker}, &trafficTo{addr: a.addr}
	sent := 0
	heartbeatsOnTime(t, n, a, b, 60*time.Second, func(i int) {
		if i%50 != 0 {
			return
		}
		n.watch(func() {
			for _, m1 := range [][]byte{captured, crafted} {
				b.m.HandlePacket(n.now, 1, attacker, m1)
				b.m.HandlePacket(n.now, 1, a.addr, m1) // spoofed from the peer's own address
			}
		}, toAttacker, toA)
		sent += 2*len(captured) + 2*len(crafted)
		if i == 100 {
			joins(t, n, 3, b)
		}
	})
	s := b.m.Stats()
	// The captured msg1 proved itself in a1's run: its copies are refused
	// before any cryptography.
	if s.Msg1Replayed != 24 {
		t.Errorf("replays of a used msg1 refused %d, want 24", s.Msg1Replayed)
	}
	// The crafted one is a restart that never proves itself: the first
	// copy costs a DH and a msg2, the rest get the stored msg2 until it
	// expires after the handshake timeout, and then it starts over.
	if s.PeerRestarts != 1 || s.RestartsUnproven != 1+2 || s.UnprovenExpired != 2 || s.Msg1Duplicate != 24-2 {
		t.Errorf("replayed restart: restarts %d (want 1), unproven %d (want 3), expired %d (want 2), duplicates %d (want 22)",
			s.PeerRestarts, s.RestartsUnproven, s.UnprovenExpired, s.Msg1Duplicate)
	}
	got := toAttacker.bytes + toA.bytes
	ratio := float64(got) / float64(sent)
	t.Logf("replays: %d bytes in, %d bytes (%d packets) out to their sources: reflection ratio %.2f",
		sent, got, toAttacker.packets+toA.packets, ratio)
	if ratio > 1 {
		t.Errorf("reflection ratio %.2f > 1", ratio)
	}
}

// TestReplayedCurrentEpochMsg1DoesNotBlockRekey: a msg1 of the peer's
// current run (one whose msg2 it never used) replayed once the session is
// old enough to rekey used to create a pending rekey that made the
// genuine rekey be ignored for 30 s. Now it is an unproven candidate
// beside which the genuine rekey cuts over at once.
func TestReplayedCurrentEpochMsg1DoesNotBlockRekey(t *testing.T) {
	n := newSimNet(t, 102)
	cfgA, cfgB := DefaultConfig(), DefaultConfig()
	cfgA.RekeyAfter, cfgA.RekeyJitter = 60*time.Second, 0
	cfgB.RekeyAfter = time.Hour // only a initiates
	a, b := pair(t, n, cfgA, cfgB)

	n.advance(58*time.Second, time.Second)
	// Five different msg1s of a's current run, replayed from anywhere:
	// more than a peer's candidate slots, so the oldest are evicted.
	for i := range 5 {
		m1 := craftMsg1(t, a.id, b.id.PublicKey(), a.m.Epoch(), uint32(1000+i), n)
		b.m.HandlePacket(n.now, 1, simAddr(70+i), m1)
		b.m.HandlePacket(n.now, 1, simAddr(70+i), m1) // and a copy
	}
	n.queue = nil // the msg2s go to the attacker's sources
	if got := len(b.m.Peer(a.id.NodeAddr()).rekeyCands); got != maxRekeyCandidates {
		t.Fatalf("%d rekey candidates, want %d", got, maxRekeyCandidates)
	}
	kb := b.m.Peer(a.id.NodeAddr()).KBit()
	start := n.now
	heartbeatsOnTime(t, n, a, b, 40*time.Second, func(int) {
		if b.m.Stats().RekeyCutovers == 0 && n.now.Sub(start) > 5*time.Second {
			t.Fatalf("genuine rekey not cut over 5 s after its due time: %+v", b.m.Stats())
		}
	})
	s := b.m.Stats()
	if s.RekeyCutovers == 0 || a.m.Stats().RekeyCutovers == 0 || b.m.Peer(a.id.NodeAddr()).KBit() == kb {
		t.Fatalf("rekey did not complete: a %+v b %+v", a.m.Stats(), s)
	}
	// The genuine msg1 evicted the oldest replay too; its cutover dropped
	// the rest.
	if s.RekeyCandidatesEvicted != 2 || s.Msg1Duplicate != 5 || len(b.m.Peer(a.id.NodeAddr()).rekeyCands) != 0 {
		t.Errorf("candidates evicted %d (want 2), duplicates %d (want 5), left %d",
			s.RekeyCandidatesEvicted, s.Msg1Duplicate, len(b.m.Peer(a.id.NodeAddr()).rekeyCands))
	}
	// A copy of a msg1 whose session is in use is refused before any
	// cryptography.
	before := b.m.Stats()
	b.m.HandlePacket(n.now, 1, simAddr(80), a.msg1s[0])
	if s := b.m.Stats(); s.Msg1Replayed != before.Msg1Replayed+1 || s.Msg1DecryptFailed != before.Msg1DecryptFailed {
		t.Errorf("replay of a used msg1: replayed %d→%d", before.Msg1Replayed, s.Msg1Replayed)
	}
	if len(n.queue) != 0 {
		t.Errorf("replay of a used msg1 answered with %d packets", len(n.queue))
	}
	joins(t, n, 3, b)
}

// TestForgedFramesNeverRemovePeer: frames carrying a link's receiver index
// (cleartext) with garbage ciphertext, from any source and from the peer's
// own address, used to remove the peer after 20. Now they are counted and
// nothing else.
func TestForgedFramesNeverRemovePeer(t *testing.T) {
	n := newSimNet(t, 103)
	a, b := pair(t, n, DefaultConfig(), DefaultConfig())
	pb := b.m.Peer(a.id.NodeAddr())
	junk := make([]byte, 64)
	var ctr uint64 = 1 << 20
	forged := 0
	heartbeatsOnTime(t, n, a, b, 60*time.Second, func(i int) {
		for j := range 10 { // 100 per second
			ctr++
			wire.PutFMPFrameHeader(junk, 0, pb.OurIndex(), ctr, len(junk)-wire.FMPHeaderSize-wire.FMPTagSize)
			from := simAddr(90 + j)
			if j == 0 {
				from = a.addr
			}
			b.m.HandlePacket(n.now, 1, from, junk)
			forged++
		}
		if i == 300 {
			joins(t, n, 3, b)
		}
	})
	s := b.m.Stats()
	if s.DropDecrypt != uint64(forged) || pb.Stats().DecryptFailures != uint64(forged) {
		t.Errorf("decrypt failures counted %d (peer %d), forged %d", s.DropDecrypt, pb.Stats().DecryptFailures, forged)
	}
	if s.PeersRemoved != 0 {
		t.Errorf("%d peers removed", s.PeersRemoved)
	}
	// Only those from the peer's current address count as consecutive
	// (show_peers), and a good frame resets that.
	if pb.ConsecutiveDecryptFailures() != 0 {
		t.Errorf("consecutive failures %d after heartbeats", pb.ConsecutiveDecryptFailures())
	}
	wire.PutFMPFrameHeader(junk, 0, pb.OurIndex(), ctr+1, len(junk)-wire.FMPHeaderSize-wire.FMPTagSize)
	b.m.HandlePacket(n.now, 1, simAddr(99), junk)
	b.m.HandlePacket(n.now, 1, a.addr, junk)
	if pb.ConsecutiveDecryptFailures() != 1 {
		t.Errorf("consecutive failures %d, want 1 (from the peer's address only)", pb.ConsecutiveDecryptFailures())
	}
}

// TestSpoofedMsg1NeitherSquatsNorReflects: msg1s of strangers' own keys
// with a victim's source address used to bind the victim's address to the
// attacker (locking the victim out), fill the peer table, and make the
// node send ~36 packets to the victim per msg1. Now only one msg2 per
// msg1 goes to an address that has not proved itself, the peer table
// holds proven peers only, and the victim can join at once.
func TestSpoofedMsg1NeitherSquatsNorReflects(t *testing.T) {
	n := newSimNet(t, 104)
	cfgB := DefaultConfig()
	cfgB.MaxPendingInbound = 64
	a, b := pair(t, n, DefaultConfig(), cfgB)
	victim := n.add(5, DefaultConfig())
	// 200 attacker identities, each msg1 sent three times with the
	// victim's address or one of 50 others as its source.
	var msgs [][]byte
	for range 200 {
		id, err := identity.Generate(seededReader{n.rng})
		if err != nil {
			t.Fatal(err)
		}
		var e noise.Epoch
		msgs = append(msgs, craftMsg1(t, id, b.id.PublicKey(), e, n.rng.Uint32(), n))
	}
	toVictim := &trafficTo{addr: victim.addr}
	in := 0
	var squatted uint64
	heartbeatsOnTime(t, n, a, b, 60*time.Second, func(i int) {
		if i >= 200 {
			return
		}
		for k := range 3 {
			from := victim.addr
			if k > 0 {
				from = simAddr(100 + i%50)
			}
			n.watch(func() { b.m.HandlePacket(n.now, 1, from, msgs[i]) }, toVictim)
			if from == victim.addr {
				in += len(msgs[i])
			}
		}
		if i == 100 {
			// The victim joins from its own address in mid-attack. (After
			// that, the attacker's msg1s from its address are refused as
			// an identity mismatch, as upstream does.)
			squatted = b.m.Stats().Msg1IdentityMismatch
			joins(t, n, 6, b)
			if err := victim.m.Dial(n.now, b.id.PublicKey(), victim.candidate(b)); err != nil {
				t.Fatal(err)
			}
			n.deliver()
			linked(t, victim, b)
		}
	})
	s := b.m.Stats()
	ratio := float64(toVictim.bytes) / float64(in)
	t.Logf("spoofed msg1s: %d bytes from the victim's address, %d bytes (%d packets) sent there: reflection ratio %.2f; "+
		"unproven evicted %d, expired %d, peers %d",
		in, toVictim.bytes, toVictim.packets, ratio, s.UnprovenEvicted, s.UnprovenExpired, b.m.PeerCount())
	if ratio > 1 {
		t.Errorf("reflection ratio %.2f > 1", ratio)
	}
	if b.m.PeerCount() != 3 { // a, the joiner, the victim
		t.Errorf("peer table holds %d, want 3 proven peers", b.m.PeerCount())
	}
	if s.UnprovenEvicted == 0 || b.m.UnprovenCount() > cfgB.MaxPendingInbound {
		t.Errorf("unproven table: evicted %d, holds %d (max %d)", s.UnprovenEvicted, b.m.UnprovenCount(), cfgB.MaxPendingInbound)
	}
	if squatted != 0 {
		t.Errorf("%d msg1 refused as identity mismatch before the victim joined: the attacker squatted its address", squatted)
	}
	if got := b.m.Peer(victim.id.NodeAddr()); got == nil || got.Addr != victim.addr {
		t.Error("victim not linked at its address")
	}
	if math.IsNaN(ratio) {
		t.Error("nothing measured")
	}
}

// junkMsg1 is a msg1-shaped packet with a valid ephemeral point and random
// ciphertext: it costs the responder a DH before it fails.
func junkMsg1(n *simNet, point []byte) []byte {
	p := make([]byte, wire.FMPMsg1Size)
	for i := range p {
		p[i] = byte(n.rng.Uint32())
	}
	p[0], p[1] = 0x01, 0x00
	p[2], p[3] = byte(wire.FMPMsg1PayloadLen), byte(wire.FMPMsg1PayloadLen>>8)
	copy(p[8:], point)
	return p
}

// TestStrangerFloodFromOneSourceLocksOutNobody: 30 msg1-shaped junk
// packets a second from one source used to drain the one stranger bucket
// and stop every new inbound peer. Now they drain that source's bucket.
func TestStrangerFloodFromOneSourceLocksOutNobody(t *testing.T) {
	n := newSimNet(t, 105)
	a, b := pair(t, n, DefaultConfig(), DefaultConfig())
	pt, err := a.id.PublicKey().Point()
	if err != nil {
		t.Fatal(err)
	}
	ep := pt.SerializeCompressed()
	flooder := simAddr(200)
	heartbeatsOnTime(t, n, a, b, 30*time.Second, func(i int) {
		for range 3 { // 30 per second
			b.m.HandlePacket(n.now, 1, flooder, junkMsg1(n, ep))
		}
		if i > 0 && i%50 == 0 { // a new peer every 5 s, from its own address
			joins(t, n, 10+i/50, b)
		}
	})
	s := b.m.Stats()
	if s.Msg1SourceLimited == 0 || s.Msg1StrangerLimited != 0 {
		t.Errorf("source bucket refused %d, shared bucket %d", s.Msg1SourceLimited, s.Msg1StrangerLimited)
	}
	if b.m.PeerCount() != 1+5 {
		t.Errorf("%d peers, want a and 5 joiners", b.m.PeerCount())
	}
	// 100 burst + 10/s for 30 s pass the source's bucket: the rest is
	// refused before any DH.
	if got := s.Msg1DecryptFailed; got > 100+10*30+1 {
		t.Errorf("%d DHs spent on the flood, want ≤ %d", got, 100+10*30+1)
	}
	t.Logf("flood: %d refused by the source's bucket, %d DHs spent", s.Msg1SourceLimited, s.Msg1DecryptFailed)

	// The source table is bounded and counts what it evicts.
	cfg := DefaultConfig()
	cfg.StrangerSources = 8
	c := n.add(30, cfg)
	for i := range 20 {
		c.m.HandlePacket(n.now, 1, simAddr(40+i), junkMsg1(n, ep))
	}
	if s := c.m.Stats(); s.Msg1SourcesEvicted != 12 || c.m.sources.Len() != 8 {
		t.Errorf("sources evicted %d (want 12), held %d (want 8)", s.Msg1SourcesEvicted, c.m.sources.Len())
	}
}

// TestHostilePeerMsg1sDoNotSlowAnotherPeersRestart: an established peer
// that sends junk msg1s from its own address used to drain the bucket all
// established addresses share, stretching another peer's restart
// recovery to seconds. Now it drains its own bucket.
func TestHostilePeerMsg1sDoNotSlowAnotherPeersRestart(t *testing.T) {
	n := newSimNet(t, 106)
	a, b := pair(t, n, DefaultConfig(), DefaultConfig())
	h := n.add(3, DefaultConfig())
	h.m.Dial(n.now, b.id.PublicKey(), h.candidate(b))
	n.deliver()
	linked(t, h, b)
	pt, err := h.id.PublicKey().Point()
	if err != nil {
		t.Fatal(err)
	}
	ep := pt.SerializeCompressed()
	for range 500 {
		b.m.HandlePacket(n.now, 1, h.addr, junkMsg1(n, ep))
	}
	s := b.m.Stats()
	if s.Msg1PeerBucketLimited == 0 || s.Msg1EstablishedLimited != 0 {
		t.Fatalf("peer bucket refused %d, shared established bucket %d", s.Msg1PeerBucketLimited, s.Msg1EstablishedLimited)
	}
	// a restarts and dials from its address: linked within one round trip.
	a2 := n.addWithIdentity(1, DefaultConfig(), a.id)
	a2.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a2.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a2, b)
	if s := b.m.Stats(); s.PeerRestarts != 1 {
		t.Errorf("restart not recovered at once: %+v", s)
	}
	heartbeatsOnTime(t, n, a2, b, 30*time.Second, func(int) {
		b.m.HandlePacket(n.now, 1, h.addr, junkMsg1(n, ep))
	})
}

// TestRemovedPeersConnectionIsClosed: a removed peer's connection used to
// stay open (on TCP, holding an inbound slot). Now removal closes it,
// except when the link replacing it runs on the same connection; and the
// transport is told which addresses carry an authenticated link, only
// once a frame has proved one.
func TestRemovedPeersConnectionIsClosed(t *testing.T) {
	n := newSimNet(t, 107)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.silent = true
	a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b))
	n.deliver()
	if len(b.authed) != 0 || b.m.PeerCount() != 0 {
		t.Fatalf("authenticated %v, peers %d before a's first frame", b.authed, b.m.PeerCount())
	}
	a.m.SendLink(n.now, a.m.Peer(b.id.NodeAddr()), 0, []byte{byte(wire.MsgHeartbeat)})
	n.deliver()
	linked(t, a, b)
	if len(b.authed) != 1 || b.authed[0] != a.addr {
		t.Fatalf("authenticated %v, want [%v]", b.authed, a.addr)
	}
	// A restart on the same address keeps the connection.
	a2 := n.addWithIdentity(1, DefaultConfig(), a.id)
	a2.m.Dial(n.now, b.id.PublicKey(), a2.candidate(b))
	n.deliver()
	linked(t, a2, b)
	if len(b.closed) != 0 {
		t.Errorf("restart on the same connection closed it: %v", b.closed)
	}
	// A Disconnect from the peer removes it and closes its connection.
	a2.m.Disconnect(n.now, a2.m.Peer(b.id.NodeAddr()), wire.DisconnectShutdown, false)
	n.deliver()
	if b.m.PeerCount() != 0 || len(b.closed) != 1 || b.closed[0] != a.addr {
		t.Errorf("peers %d, closed %v", b.m.PeerCount(), b.closed)
	}
	if len(a2.closed) != 1 {
		t.Errorf("local Disconnect closed %v", a2.closed)
	}
}

// TestLinkMetricsKeepMeasuringAfterRekey: a report built from the session
// a rekey replaced, arriving after the cutover, used to set the new
// report baseline, after which every report counted as regressed and the
// link's RTT and loss froze (99 and 114 stale reports in a row in the
// field). Now frames on the draining session are not fed to MMP.
func TestLinkMetricsKeepMeasuringAfterRekey(t *testing.T) {
	n := newSimNet(t, 108)
	cfgA, cfgB := DefaultConfig(), DefaultConfig()
	cfgA.RekeyAfter, cfgA.RekeyJitter = 60*time.Second, 0
	cfgB.RekeyAfter = time.Hour
	a, b := pair(t, n, cfgA, cfgB)
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	n.advance(20*time.Second, 100*time.Millisecond)
	// b's counters on the old session run high.
	for i := range 3000 {
		b.m.SendLink(n.now, pb, 0, lookupMsg(i))
	}
	n.advance(39*time.Second, 100*time.Millisecond)
	// a's report on b's traffic, built and sealed on the old session,
	// delayed in the network past the cutover.
	rr, ok := pa.MMP().BuildReceiverReport(n.now)
	if !ok {
		t.Fatal("no report to build")
	}
	var buf [wire.ReceiverReportSize]byte
	m, err := rr.MarshalTo(buf[:])
	if err != nil {
		t.Fatal(err)
	}
	q := len(n.queue)
	if err := a.m.SendLink(n.now, pa, 0, buf[:m]); err != nil {
		t.Fatal(err)
	}
	late := n.queue[q]
	n.queue = n.queue[:q]
	for b.m.Stats().RekeyCutovers == 0 {
		n.advance(100*time.Millisecond, 100*time.Millisecond)
	}
	b.m.HandlePacket(n.now, 1, late.from, late.data)
	if got := b.m.Stats().ReportsDraining; got != 1 {
		t.Fatalf("reports on the draining session ignored %d, want 1", got)
	}
	before := pb.MMP().Stats()
	heartbeatsOnTime(t, n, a, b, 60*time.Second, nil)
	after := pb.MMP().Stats()
	if stale := after.StaleReports - before.StaleReports; stale > 1 {
		t.Errorf("%d stale reports after the rekey", stale)
	}
	// (The simulated network has no delay: echoes give 0 ms, so count
	// reports taken rather than RTT samples.)
	taken := (after.ReportsSeen - before.ReportsSeen) - (after.StaleReports - before.StaleReports)
	if taken < 30 {
		t.Errorf("%d reports taken in the minute after the rekey", taken)
	}
	t.Logf("after the rekey: %d reports, %d stale, %d rebaselines",
		after.ReportsSeen-before.ReportsSeen, after.StaleReports-before.StaleReports, after.Rebaselines)
}

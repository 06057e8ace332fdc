package peer

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/fips-go/fips/control/wire"
)

// TestRekeyUnderLossAndReordering: 20 consecutive rekeys, initiated from
// both sides, under 5% loss and reordering, while both sides send data
// continuously. Every data frame the network delivered is delivered to the
// upper layer exactly once, and K toggles at every cutover.
func TestRekeyUnderLossAndReordering(t *testing.T) {
	n := newSimNet(t, 42)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	n.loss, n.reorder = 0.05, true

	dataLen := wire.FMPHeaderSize + 4 + len(lookupMsg(0)) + wire.FMPTagSize
	var sent, droppedData int
	n.dropHook = func(p simPkt) {
		if len(p.data) == dataLen && p.data[0] == 0 {
			droppedData++
		}
	}
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	kA, kB := pa.KBit(), pb.KBit()
	togglesA, togglesB := 0, 0
	seq := 0
	const tick = 100 * time.Millisecond
	for a.m.Stats().RekeyCutovers < 20 || b.m.Stats().RekeyCutovers < 20 {
		if n.now.Sub(time.Unix(1_700_000_000, 0)) > 2*time.Hour {
			t.Fatalf("only %d/%d cutovers after 2 simulated hours", a.m.Stats().RekeyCutovers, b.m.Stats().RekeyCutovers)
		}
		for range 3 {
			seq++
			if err := a.m.SendLink(n.now, pa, 0, lookupMsg(seq)); err != nil {
				t.Fatal(err)
			}
			seq++
			if err := b.m.SendLink(n.now, pb, 0, lookupMsg(seq)); err != nil {
				t.Fatal(err)
			}
			sent += 2
		}
		n.advance(tick, tick)
		if pa != a.m.Peer(b.id.NodeAddr()) || pb != b.m.Peer(a.id.NodeAddr()) {
			t.Fatalf("link was replaced during rekeys (a stats %+v)", a.m.Stats())
		}
		if pa.KBit() != kA {
			togglesA++
			kA = pa.KBit()
		}
		if pb.KBit() != kB {
			togglesB++
			kB = pb.KBit()
		}
	}
	n.loss = 0
	n.deliver()

	got := len(a.msgs) + len(b.msgs)
	if got != sent-droppedData {
		t.Errorf("delivered %d data frames, sent %d, network dropped %d: lost %d to the link layer",
			got, sent, droppedData, sent-droppedData-got)
	}
	seen := map[string]bool{}
	for _, m := range append(a.msgs, b.msgs...) {
		if seen[string(m.msg)] {
			t.Fatalf("message %q delivered twice", m.msg)
		}
		seen[string(m.msg)] = true
	}
	sa, sb := a.m.Stats(), b.m.Stats()
	if sa.RekeysInitiated == 0 || sb.RekeysInitiated == 0 {
		t.Errorf("rekeys initiated a %d b %d: want both directions", sa.RekeysInitiated, sb.RekeysInitiated)
	}
	if togglesA != int(sa.RekeyCutovers) || togglesB != int(sb.RekeyCutovers) {
		t.Errorf("K toggles a %d/%d cutovers, b %d/%d", togglesA, sa.RekeyCutovers, togglesB, sb.RekeyCutovers)
	}
	if pa.KBit() != pb.KBit() {
		t.Error("sides disagree on K")
	}
	t.Logf("cutovers a=%d b=%d, initiated a=%d b=%d, data sent %d, network dropped %d, sim %v",
		sa.RekeyCutovers, sb.RekeyCutovers, sa.RekeysInitiated, sb.RekeysInitiated, sent, droppedData,
		n.now.Sub(time.Unix(1_700_000_000, 0)))
}

// TestFloodDuringEstablishedLink: 10,000 random datagrams and 10,000
// well-formed but unauthenticated msg1 packets do not disturb a link, grow
// no state, and are all counted.
func TestFloodDuringEstablishedLink(t *testing.T) {
	n := newSimNet(t, 43)
	a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	linked(t, a, b)
	before := b.m.Stats()
	hbBefore := before.HeartbeatsRecv

	rng := n.rng
	junk := func() []byte {
		p := make([]byte, rng.IntN(1500))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}
	// Valid ephemeral points make the responder do the DH work; a small
	// pool keeps key generation out of the test's time.
	var points [][]byte
	for range 64 {
		e, _ := secp256k1.GeneratePrivateKey()
		points = append(points, e.PubKey().SerializeCompressed())
	}
	msg1 := func() []byte {
		p := make([]byte, wire.FMPMsg1Size)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		p[0], p[1] = 0x01, 0x00
		binary.LittleEndian.PutUint16(p[2:], wire.FMPMsg1PayloadLen)
		copy(p[8:], points[rng.IntN(len(points))])
		return p
	}
	const each = 10_000
	for i := range each {
		from := simAddr(100 + i%50)
		if i%10 == 0 {
			from = a.addr // some from the peer's own address
		}
		b.m.HandlePacket(n.now, 1, from, junk())
		b.m.HandlePacket(n.now, 1, from, msg1())
		if i%200 == 0 {
			n.advance(time.Second, time.Second) // 50 simulated seconds in all
		}
	}
	n.advance(time.Second, time.Second)
	linked(t, a, b)
	s := b.m.Stats()
	if s.HeartbeatsRecv-hbBefore < 4 {
		t.Errorf("heartbeats stopped: %d received during the flood", s.HeartbeatsRecv-hbBefore)
	}
	refusedMsg1 := (s.Msg1RateLimited - before.Msg1RateLimited) + (s.Msg1DecryptFailed - before.Msg1DecryptFailed) +
		(s.Msg1Duplicate - before.Msg1Duplicate)
	if refusedMsg1 != each {
		t.Errorf("msg1 refusals counted %d, want %d (%+v)", refusedMsg1, each, s)
	}
	if s.Msg1RateLimited == before.Msg1RateLimited {
		t.Error("rate limiter never engaged")
	}
	junkCounted := s.DropMalformed + s.DropUnknownIndex + s.Msg2Unmatched + (s.Msg1Received - before.Msg1Received - each) - before.DropMalformed - before.DropUnknownIndex
	if junkCounted < each-50 { // a junk datagram can look like an msg1 or frame and be counted there
		t.Errorf("junk counted %d of %d", junkCounted, each)
	}
	if len(b.m.unproven) != 0 || len(b.m.legs) != 0 || len(b.m.byIndex) != 1 || len(b.m.byAddr) != 1 {
		t.Errorf("state grew: inbound %d legs %d byIndex %d byAddr %d", len(b.m.unproven), len(b.m.legs), len(b.m.byIndex), len(b.m.byAddr))
	}
}

package peer

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/pq"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// linkPQFrameSize is the size of an FMP frame carrying one MsgLinkPQ.
const linkPQFrameSize = wire.FMPHeaderSize + 4 + wire.LinkPQMsgSize + wire.FMPTagSize

// pqPair makes a (dialling) and b with link policies ma and mb, behind a
// kernel-like index filter, and runs the handshake.
func pqPair(t *testing.T, seed uint64, ma, mb pq.Mode) (*simNet, *simNode, *simNode) {
	t.Helper()
	n := newSimNet(t, seed)
	n.filter = true
	ca, cb := DefaultConfig(), DefaultConfig()
	ca.PQ, cb.PQ = ma, mb
	a, b := n.add(1, ca), n.add(2, cb)
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	n.deliver()
	return n, a, b
}

// exchange sends one message each way on the loop's path and checks both
// arrive.
func exchange(t *testing.T, n *simNet, a, b *simNode, i int) {
	t.Helper()
	na, nb := len(a.msgs), len(b.msgs)
	if err := a.m.SendLink(n.now, a.m.Peer(b.id.NodeAddr()), 0, lookupMsg(i)); err != nil {
		t.Fatal(err)
	}
	if err := b.m.SendLink(n.now, b.m.Peer(a.id.NodeAddr()), 0, lookupMsg(i+1)); err != nil {
		t.Fatal(err)
	}
	n.deliver()
	if len(a.msgs) != na+1 || len(b.msgs) != nb+1 {
		t.Fatalf("messages lost: a got %d, b got %d\nA log:\n%s\nB log:\n%s", len(a.msgs)-na, len(b.msgs)-nb, a.logs, b.logs)
	}
}

func countLines(buf *bytes.Buffer, s string) int { return strings.Count(buf.String(), s) }

// listReserver is a send queue that hands out slots and keeps them.
type listReserver struct{ pkts [][]byte }

func (r *listReserver) Reserve(_ transport.Addr, n int) ([]byte, error) {
	b := make([]byte, n)
	r.pkts = append(r.pkts, b)
	return b, nil
}

// TestLinkPQUpgrade: two preferred peers upgrade their link at once, as a
// rekey cuts over (K flips, new receiver indices that the kernel filter
// learns, the classical session drains), carry traffic on the loop's and
// the dataplane's paths, and a Tick later drop the classical index.
func TestLinkPQUpgrade(t *testing.T) {
	n, a, b := pqPair(t, 1, pq.Preferred, pq.Preferred)
	linked(t, a, b)
	pa, pb := a.m.Peer(b.id.NodeAddr()), b.m.Peer(a.id.NodeAddr())
	if !pa.PostQuantum() || !pb.PostQuantum() {
		t.Fatalf("not upgraded: a %v b %v\nA log:\n%s\nB log:\n%s", pa.PostQuantum(), pb.PostQuantum(), a.logs, b.logs)
	}
	if !pa.KBit() || !pb.KBit() || !pa.Draining() || !pb.Draining() {
		t.Fatalf("K a=%v b=%v, draining a=%v b=%v", pa.KBit(), pb.KBit(), pa.Draining(), pb.Draining())
	}
	sa, sb := a.m.Stats(), b.m.Stats()
	if sa.PQOffered != 1 || sb.PQAccepted != 1 || sa.PQUpgrades != 1 || sb.PQUpgrades != 1 || sa.RekeyCutovers != 0 ||
		sb.HandshakesProven != 1 || sa.PQMessagesRefused+sb.PQMessagesRefused+sa.PQFragmentsRefused+sb.PQFragmentsRefused != 0 {
		t.Fatalf("a %+v\nb %+v", sa, sb)
	}
	for _, x := range []*simNode{a, b} {
		if countLines(x.logs, "Link upgraded to post-quantum keys (ML-KEM-768)") != 1 || len(x.up) != 1 || len(x.indexErrs) != 0 {
			t.Fatalf("log:\n%s\nup %d, index errors %v", x.logs, len(x.up), x.indexErrs)
		}
		if len(x.indices) != 2 {
			t.Fatalf("%d indices published to the filter, want current and draining", len(x.indices))
		}
	}
	exchange(t, n, a, b, 1)
	if n.filtered != 0 {
		t.Fatalf("the index filter dropped %d frames", n.filtered)
	}

	// The dataplane: the published table sends on the upgraded session
	// and opens it, the classical one still opens as draining.
	a.m.Publish()
	b.m.Publish()
	tx := a.m.Published().Tx(b.id.NodeAddr())
	if tx == nil || tx.sess != pa.cur || !tx.sess.pq || !tx.kbit {
		t.Fatalf("published tx %+v", tx)
	}
	if l := b.m.Published().Lookup(1, pb.prev.ourIndex); l == nil || !l.Draining() {
		t.Fatal("the classical session is not published as draining")
	}
	var q listReserver
	if err := tx.Seal(n.now, &q, 0, lookupMsg(99)); err != nil {
		t.Fatal(err)
	}
	f, err := wire.ParseFMPFrame(q.pkts[0])
	if err != nil {
		t.Fatal(err)
	}
	l := b.m.Published().Lookup(1, f.ReceiverIndex)
	if l == nil || l.Draining() || l.Proving() {
		t.Fatalf("upgraded index %#x not published on b", f.ReceiverIndex)
	}
	in, v := l.Open(n.now, a.addr, f, len(q.pkts[0]), nil)
	if v != Opened || !bytes.Equal(in.Message, lookupMsg(99)) {
		t.Fatalf("dataplane open: %v %q", v, in.Message)
	}

	// After the drain window only the upgraded indices stay.
	n.advance(DefaultConfig().DrainWindow+time.Second, time.Second)
	for _, x := range []*simNode{a, b} {
		if len(x.indices) != 1 || len(x.indexErrs) != 0 {
			t.Fatalf("indices %v, errors %v", x.indices, x.indexErrs)
		}
	}
	exchange(t, n, a, b, 3)
}

// TestLinkPQClassicPeer: a classic peer (off: what upstream does with the
// unknown type) drops the offers and keeps the link; a preferred node
// records it classical after the timeout, a required one tears the link
// down with one line, its upper layers never having heard of the peer.
func TestLinkPQClassicPeer(t *testing.T) {
	t.Run("preferred", func(t *testing.T) {
		n, a, b := pqPair(t, 2, pq.Preferred, pq.Off)
		linked(t, a, b)
		n.advance(DefaultConfig().PQTimeout+time.Second, time.Second)
		linked(t, a, b)
		pa := a.m.Peer(b.id.NodeAddr())
		sa, sb := a.m.Stats(), b.m.Stats()
		if pa.PostQuantum() || sa.PQFallbacks != 1 || sa.PQOfferResends == 0 || sb.DropUnknownMsgType != 2*(sa.PQOfferResends+1) {
			t.Fatalf("a %+v\nb %+v", sa, sb)
		}
		if countLines(a.logs, "Link stays classical: the peer did not upgrade to post-quantum keys") != 1 {
			t.Fatalf("log:\n%s", a.logs)
		}
		// Recorded classical: no more offers, at the next rekey either.
		n.advance(3*time.Minute, time.Second)
		linked(t, a, b)
		if s := a.m.Stats(); s.PQOffered != 1 || s.RekeyCutovers == 0 || s.PQFallbacks != 1 {
			t.Fatalf("a %+v", s)
		}
		exchange(t, n, a, b, 1)
	})
	t.Run("required", func(t *testing.T) {
		n, a, b := pqPair(t, 3, pq.Required, pq.Off)
		if p := a.m.Peer(b.id.NodeAddr()); len(a.up) != 0 || p == nil || p.Announced() {
			t.Fatal("the upper layers heard of a classical peer under pq required")
		}
		n.advance(DefaultConfig().PQTimeout+time.Second, time.Second)
		if a.m.Peer(b.id.NodeAddr()) != nil || b.m.Peer(a.id.NodeAddr()) != nil {
			t.Fatal("the classical link stayed")
		}
		if s := a.m.Stats(); s.PQRefused != 1 || s.DisconnectsSent != 1 {
			t.Fatalf("a %+v", s)
		}
		if countLines(a.logs, "level=WARN") != 1 || countLines(a.logs, "Link torn down: pq is required and the peer did not upgrade to post-quantum keys") != 1 {
			t.Fatalf("log:\n%s", a.logs)
		}
		if len(a.down) != 0 {
			t.Fatal("PeerDown for a peer the upper layers never had")
		}
	})
	t.Run("required both", func(t *testing.T) {
		n, a, b := pqPair(t, 4, pq.Required, pq.Required)
		linked(t, a, b)
		if pa := a.m.Peer(b.id.NodeAddr()); !pa.PostQuantum() || !pa.Announced() || len(a.up) != 1 || len(b.up) != 1 {
			t.Fatalf("up a=%d b=%d\nA log:\n%s", len(a.up), len(b.up), a.logs)
		}
		exchange(t, n, a, b, 1)
	})
}

// holdAccepts drops b's accept frames to a (653-byte frames from b), so
// b has answered and a still waits.
func holdAccepts(n *simNet, a, b *simNode) *[][]byte {
	var held [][]byte
	n.intercept = func(p simPkt) bool {
		if p.from == b.addr && p.to == a.addr && len(p.data) == linkPQFrameSize {
			held = append(held, p.data)
			return true
		}
		return false
	}
	return &held
}

// TestLinkPQTamperedCiphertext: an accept whose ciphertext changed on the
// way fails its key confirmation: preferred stays classical and carries
// traffic, required tears down with one line; never a black hole.
func TestLinkPQTamperedCiphertext(t *testing.T) {
	for _, mode := range []pq.Mode{pq.Preferred, pq.Required} {
		t.Run(mode.String(), func(t *testing.T) {
			n := newSimNet(t, 5)
			ca, cb := DefaultConfig(), DefaultConfig()
			ca.PQ, cb.PQ = mode, pq.Preferred
			a, b := n.add(1, ca), n.add(2, cb)
			held := holdAccepts(n, a, b)
			a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}})
			n.deliver()
			pb := b.m.Peer(a.id.NodeAddr())
			if pb == nil || !pb.pq.answered || len(*held) != 2 {
				t.Fatalf("b did not answer (%d held)\nB log:\n%s", len(*held), b.logs)
			}
			n.intercept = nil
			tampered := bytes.Clone(pb.pq.accept)
			tampered[wire.LinkPQIndexSize+100] ^= 1
			if err := b.m.pqSend(n.now, pb, wire.PQKindAccept, tampered); err != nil {
				t.Fatal(err)
			}
			n.deliver()
			sa := a.m.Stats()
			if sa.PQConfirmFailed != 1 || sa.PQUpgrades != 0 {
				t.Fatalf("a %+v", sa)
			}
			if mode == pq.Required {
				if a.m.Peer(b.id.NodeAddr()) != nil || sa.PQRefused != 1 || countLines(a.logs, "level=WARN") != 1 ||
					countLines(a.logs, "the accept's key confirmation failed") != 1 {
					t.Fatalf("log:\n%s", a.logs)
				}
				return
			}
			if sa.PQFallbacks != 1 || a.m.Peer(b.id.NodeAddr()).PostQuantum() {
				t.Fatalf("a %+v", sa)
			}
			exchange(t, n, a, b, 1)
			// The genuine accept, late, is refused: no offer is open.
			for _, p := range *held {
				a.m.HandlePacket(n.now, 1, b.addr, p)
			}
			if s := a.m.Stats(); s.PQMessagesRefused != 2 || s.PQUpgrades != 0 {
				t.Fatalf("a %+v", s)
			}
			// b gives up waiting for the offerer on the new keys, and
			// the link goes on classical.
			n.advance(2*DefaultConfig().PQTimeout+time.Second, time.Second)
			linked(t, a, b)
			if s := b.m.Stats(); s.PQFallbacks != 1 {
				t.Fatalf("b %+v\n%s", s, b.logs)
			}
			exchange(t, n, a, b, 3)
		})
	}
}

// TestLinkPQReplayedOffer: a second offer in an answered session, and an
// offer on a session other than the one to upgrade, are refused; the
// captured offer frames replayed after the upgrade die in the replay
// window.
func TestLinkPQReplayedOffer(t *testing.T) {
	n := newSimNet(t, 6)
	ca := DefaultConfig()
	ca.PQ = pq.Preferred
	a, b := n.add(1, ca), n.add(2, ca)
	var offers [][]byte
	held := holdAccepts(n, a, b)
	hold := n.intercept
	n.intercept = func(p simPkt) bool {
		if p.from == a.addr && len(p.data) == linkPQFrameSize {
			offers = append(offers, p.data)
		}
		return hold(p)
	}
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}})
	n.deliver()
	pb := b.m.Peer(a.id.NodeAddr())
	if pb == nil || !pb.pq.answered || len(offers) != 2 {
		t.Fatalf("b did not answer (%d offer frames)", len(offers))
	}
	// Another offer in the answered session.
	frags, err := wire.LinkPQFragments(wire.PQKindOffer, [8]byte{0xee}, make([]byte, wire.LinkPQOfferSize))
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, wire.LinkPQMsgSize)
	if _, err := wire.MarshalLinkPQ(msg, frags[0]); err != nil {
		t.Fatal(err)
	}
	b.m.handlePQ(n.now, pb, false, msg)
	// The same offer on the draining session.
	b.m.handlePQ(n.now, pb, true, msg)
	if s := b.m.Stats(); s.PQMessagesRefused != 2 || s.PQAccepted != 1 {
		t.Fatalf("b %+v", s)
	}
	// The held accepts go through; the link upgrades.
	n.intercept = nil
	for _, p := range *held {
		b.net.queue = append(b.net.queue, simPkt{from: b.addr, to: a.addr, data: p})
	}
	n.deliver()
	if !pb.PostQuantum() || !a.m.Peer(b.id.NodeAddr()).PostQuantum() {
		t.Fatalf("not upgraded\nA log:\n%s", a.logs)
	}
	before := b.m.Stats()
	for _, p := range offers {
		b.m.HandlePacket(n.now, 1, a.addr, p)
	}
	s := b.m.Stats()
	if s.DropReplay != before.DropReplay+2 || s.PQAccepted != 1 || s.PQUpgrades != 1 {
		t.Fatalf("b %+v", s)
	}
	exchange(t, n, a, b, 1)
}

// TestLinkPQRekeyFreshKEM: every rekey is a classical IK rekey followed by
// a fresh ML-KEM exchange: new keys each time, the link post-quantum after
// each, traffic throughout.
func TestLinkPQRekeyFreshKEM(t *testing.T) {
	n, a, b := pqPair(t, 7, pq.Preferred, pq.Preferred)
	linked(t, a, b)
	seen := map[[32]byte]bool{}
	record := func() {
		pa := a.m.Peer(b.id.NodeAddr())
		if pa.PostQuantum() {
			seen[pa.cur.s.Exporter()] = true
		}
	}
	record()
	for i := 0; a.m.Stats().RekeyCutovers+b.m.Stats().RekeyCutovers < 4; i++ {
		if i > 2000 {
			t.Fatalf("rekeys: a %+v b %+v", a.m.Stats(), b.m.Stats())
		}
		n.advance(time.Second, time.Second)
		record()
		if i%10 == 0 {
			exchange(t, n, a, b, i*2)
		}
	}
	n.advance(5*time.Second, time.Second)
	record()
	sa, sb := a.m.Stats(), b.m.Stats()
	rekeys := sa.RekeyCutovers
	if sa.PQUpgrades != rekeys+1 || sb.PQUpgrades != rekeys+1 || sa.PQOffered+sb.PQOffered != rekeys+1 ||
		sa.PQFallbacks+sb.PQFallbacks != 0 {
		t.Fatalf("rekeys %d\na %+v\nb %+v", rekeys, sa, sb)
	}
	if len(seen) != int(rekeys)+1 {
		t.Fatalf("%d distinct post-quantum sessions over %d rekeys", len(seen), rekeys)
	}
	if !a.m.Peer(b.id.NodeAddr()).PostQuantum() || !b.m.Peer(a.id.NodeAddr()).PostQuantum() {
		t.Fatal("not post-quantum after the rekeys")
	}
	exchange(t, n, a, b, 9999)
}

// FuzzLinkPQMessage: any MsgLinkPQ body handed to an established
// preferred link in either role is refused or handled, never panics, keeps
// the link and at most one reassembly of bounded size.
func FuzzLinkPQMessage(f *testing.F) {
	frags, err := wire.LinkPQFragments(wire.PQKindOffer, [8]byte{1}, make([]byte, wire.LinkPQOfferSize))
	if err != nil {
		f.Fatal(err)
	}
	for _, fr := range frags {
		b := make([]byte, wire.LinkPQMsgSize)
		if _, err := wire.MarshalLinkPQ(b, fr); err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
		f.Add(b, uint8(3))
	}
	f.Add([]byte{byte(wire.MsgLinkPQ)}, uint8(1))
	f.Fuzz(func(t *testing.T, msg []byte, which uint8) {
		n := newSimNet(t, 8)
		c := DefaultConfig()
		c.PQ = pq.Preferred
		a, b := n.add(1, c), n.add(2, c)
		n.intercept = func(p simPkt) bool { return len(p.data) == linkPQFrameSize } // stay classical
		a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}})
		n.deliver()
		to, from := a, b
		if which&1 == 1 {
			to, from = b, a
		}
		p := to.m.Peer(from.id.NodeAddr())
		if p == nil {
			t.Fatal("not linked")
		}
		to.m.handlePQ(n.now, p, which&2 != 0, msg)
		to.m.handlePQ(n.now, p, false, msg)
		if p.pq.rx.Held() > wire.LinkPQOfferSize {
			t.Fatalf("reassembly holds %d bytes", p.pq.rx.Held())
		}
		if to.m.Peer(from.id.NodeAddr()) != p {
			t.Fatal("link lost")
		}
	})
}

// TestLinkPQErrorsTyped: what handlePQ refuses is what wire's typed
// decoder refuses.
func TestLinkPQErrorsTyped(t *testing.T) {
	_, err := wire.ParseLinkPQ([]byte{byte(wire.MsgLinkPQ), 1})
	var de *wire.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%v (%T)", err, err)
	}
}

package session

import (
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// FuzzHandleFSP feeds arbitrary FSP payloads to a table holding an
// established session and a responder handshake: nothing may panic, and the
// established session must survive.
func FuzzHandleFSP(f *testing.F) {
	m, a, b := pair(f, 20, DefaultConfig())
	establish(f, m, a, b)
	c := m.addNode(DefaultConfig())
	c.tbl.Send(m.now, b.addr, 1, 1, nil)
	m.run()
	for _, n := range []*node{a, b, c} {
		for _, p := range n.sent {
			f.Add(p.b, false)
		}
	}
	f.Add([]byte{0x00, 0x04, 0x22, 0x00, 0x22}, true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, fsp []byte, fromA bool) {
		src := c.addr
		if fromA {
			src = a.addr
		}
		b.tbl.HandleFSP(m.now, src, identity.NodeAddr{1}, false, fsp)
		b.tbl.HandleFSP(m.now, identity.NodeAddr{2}, identity.NodeAddr{1}, true, fsp)
		b.tbl.Tick(m.now)
		m.queue = m.queue[:0]
		a.sent, b.sent, b.delivered, b.frames, b.events = nil, nil, nil, nil, nil
		if b.state(a) != StateEstablished {
			t.Fatal("established session lost")
		}
	})
}

// FuzzPQMessages feeds arbitrary SessionMsgPQ bodies (offer, accept and
// confirm fragments, and anything else), as authenticated messages on the
// current epoch, to both ends of a session whose upgrade is under way:
// nothing may panic, the reassembly never holds more than one payload, and
// a preferred session is never torn down by what it is sent.
func FuzzPQMessages(f *testing.F) {
	var seeds [][]byte
	for _, k := range []wire.PQKind{wire.PQKindOffer, wire.PQKindAccept, wire.PQKindConfirm} {
		frags, err := wire.PQFragments(k, [8]byte{7}, make([]byte, k.PayloadSize()))
		if err != nil {
			f.Fatal(err)
		}
		for _, fr := range frags {
			b := make([]byte, wire.PQFragmentSize)
			if _, err := fr.MarshalTo(b); err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, b)
		}
	}
	for _, s := range seeds {
		f.Add(s, uint8(0))
	}
	f.Add([]byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		m, a, b := pair(t, 21, DefaultConfig())
		for i, n := range []*node{a, b} {
			cfg := DefaultConfig()
			cfg.PQ = PQPreferred
			n.tbl = New(n.id, noise.Epoch{byte(40 + i)}, cfg, n, n, nil, m.rnd)
		}
		m.drop = func(p packet) bool { // keep the upgrade under way
			e, err := wire.ParseFSPEncrypted(p.b)
			return err == nil && int(e.Header.PayloadLen) == wire.FSPInnerHeaderSize+wire.PQFragmentSize
		}
		establish(t, m, a, b)
		to, from := b, a
		if which&1 == 1 {
			to, from = a, b
		}
		e := to.tbl.sessions[from.addr]
		to.tbl.handlePQ(m.now, e, slot(which>>1%3), body)
		to.tbl.handlePQ(m.now, e, slotCurrent, body)
		if e.pq.rx.Held() > wire.PQOfferSize {
			t.Fatalf("reassembly holds %d bytes", e.pq.rx.Held())
		}
		if to.state(from) != StateEstablished {
			t.Fatal("session lost")
		}
	})
}

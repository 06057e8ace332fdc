package session

import (
	"testing"

	"github.com/fips-go/fips/control/identity"
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

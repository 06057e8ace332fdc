package peer

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/transport"
)

// benchEnv is an Env that keeps the last packet sent.
type benchEnv struct{ last []byte }

func (e *benchEnv) Send(_ transport.ID, _ transport.Addr, pkt []byte) error {
	e.last = append(e.last[:0], pkt...)
	return nil
}
func (e *benchEnv) LinkMTU(transport.ID, transport.Addr) int     { return 1500 }
func (e *benchEnv) AcceptConnections(transport.ID) bool          { return true }
func (e *benchEnv) CloseConnection(transport.ID, transport.Addr) {}

type nopUpper struct{}

func (nopUpper) PeerUp(*Peer)                             {}
func (nopUpper) PeerDown(*Peer, string)                   {}
func (nopUpper) LinkMessage(*Peer, uint8, uint32, []byte) {}

// BenchmarkLinkSendReceive1400 measures the userspace link path for one
// 1400-byte link message: SendLink on one side (frame header, seal) and
// HandlePacket on the other (index lookup, replay check, open, dispatch).
func BenchmarkLinkSendReceive1400(b *testing.B) {
	n := newSimNet(&testing.T{}, 99)
	a, c := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
	a.m.Dial(n.now, c.id.PublicKey(), a.candidate(c))
	n.deliver()
	pa := a.m.Peer(c.id.NodeAddr())
	if pa == nil {
		b.Fatal("no link")
	}
	env := &benchEnv{}
	a.m.env = env
	c.m.upper = nopUpper{}
	msg := make([]byte, 1400)
	msg[0] = 0x30 // a type the receiver hands up
	now := n.now.Add(time.Second)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if err := a.m.SendLink(now, pa, 0, msg); err != nil {
			b.Fatal(err)
		}
		c.m.HandlePacket(now, 1, a.addr, env.last)
	}
	if c.m.Stats().DropDecrypt+c.m.Stats().DropReplay != 0 {
		b.Fatalf("frames refused: %+v", c.m.Stats())
	}
}

package peer

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/fips-go/fips/control/transport"
)

// TestMsg1FloodFromOneSlash64: msg1 buckets were keyed by exact address,
// so a host given an IPv6 /64 had 2⁶⁴ buckets of 100 msg1s each and alone
// drained the bucket all strangers share. Now a /64 is one source: 1000
// msg1s from 1000 addresses in one /64 draw from one bucket, the DH work
// stops at its burst, the shared bucket keeps its tokens, and a new peer
// still joins.
func TestMsg1FloodFromOneSlash64(t *testing.T) {
	n := newSimNet(t, 127)
	a, b := pair(t, n, DefaultConfig(), DefaultConfig())
	pt, err := a.id.PublicKey().Point()
	if err != nil {
		t.Fatal(err)
	}
	ep := pt.SerializeCompressed()
	prefix := netip.MustParseAddr("2001:db8:27:9::").As16()
	const flood = 1000
	before, buckets := b.m.Stats(), b.m.sources.Len()
	for i := range flood {
		ip := prefix
		binary.BigEndian.PutUint64(ip[8:], uint64(i)*0x9e3779b97f4a7c15+1)
		from := transport.AddrFromIP(netip.AddrPortFrom(netip.AddrFrom16(ip), uint16(1024+i)))
		b.m.HandlePacket(n.now, 1, from, junkMsg1(n, ep))
	}
	s := b.m.Stats()
	dh := s.Msg1DecryptFailed - before.Msg1DecryptFailed
	limited := s.Msg1SourceLimited - before.Msg1SourceLimited
	t.Logf("%d msg1s from %d addresses in one /64: %d DHs, %d refused by the /64's bucket, %d by the shared one, %d source buckets added",
		flood, flood, dh, limited, s.Msg1StrangerLimited, b.m.sources.Len()-buckets)
	burst := int(DefaultConfig().HandshakeBurst)
	if dh != uint64(burst) || limited != uint64(flood-burst) || s.Msg1StrangerLimited != 0 {
		t.Errorf("DHs %d (want %d), refused by the source bucket %d (want %d), by the shared one %d (want 0)",
			dh, burst, limited, flood-burst, s.Msg1StrangerLimited)
	}
	if got := b.m.sources.Len() - buckets; got != 1 {
		t.Errorf("%d source buckets for one /64", got)
	}
	// Another /64 next door, and IPv4, are other sources.
	other := transport.AddrFromIP(netip.MustParseAddrPort("[2001:db8:27:a::1]:2121"))
	b.m.HandlePacket(n.now, 1, other, junkMsg1(n, ep))
	if s2 := b.m.Stats(); s2.Msg1DecryptFailed != s.Msg1DecryptFailed+1 {
		t.Errorf("a msg1 from the next /64 was refused: %+v", s2)
	}
	for _, c := range []struct{ a, b string }{
		{"[2001:db8::1]:1", "[2001:db8::ffff:1]:2"},
		{"192.0.2.1:1", "[::ffff:192.0.2.1]:2"},
	} {
		ka := sourceOf(1, transport.AddrFromIP(netip.MustParseAddrPort(c.a)))
		kb := sourceOf(1, transport.AddrFromIP(netip.MustParseAddrPort(c.b)))
		if ka != kb {
			t.Errorf("%s and %s are different sources", c.a, c.b)
		}
	}
	if sourceOf(1, transport.AddrFromIP(netip.MustParseAddrPort("192.0.2.1:1"))) ==
		sourceOf(1, transport.AddrFromIP(netip.MustParseAddrPort("192.0.2.2:1"))) {
		t.Error("two IPv4 addresses are one source")
	}
	joins(t, n, 20, b)
}

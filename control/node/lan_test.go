package node

import (
	"net/netip"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/rendezvous/lan"
)

// TestLANDialRateUnderFreshNpubFlood: LAN hosts answering with a fresh
// npub per answer (one npub from each of 40 addresses, so no per-host cap
// applies) within one instant start lanDialBurst handshakes, the rest
// counted as dial_limited; a second later one more is dialled. A
// configured peer found on the LAN at the height of the flood is dialled
// anyway and links.
func TestLANDialRateUnderFreshNpubFlood(t *testing.T) {
	defer goleak.VerifyNone(t)
	b := loopbackNode(t, Options{Peer: peer.DefaultConfig()})
	bp := b.Identity().PublicKey()
	// The configured peer has no address: only the LAN finds it.
	a := loopbackNode(t, Options{Peer: peer.DefaultConfig(), StaticPeers: []StaticPeer{{PublicKey: bp, Alias: "bee"}}})
	defer run(t, b)()
	defer run(t, a)()

	const flood = 40
	type counts struct {
		conns   int
		limited uint64
	}
	at := func(now time.Time) counts {
		for i := range flood {
			id, err := identity.Generate(nil)
			if err != nil {
				t.Fatal(err)
			}
			host := netip.AddrFrom4([4]byte{127, 0, byte(1 + i/200), byte(1 + i%200)})
			a.lanDiscovered(now, lan.Discovered{PublicKey: id.PublicKey(), Addr: netip.AddrPortFrom(host, 9)})
		}
		return counts{a.peers.ConnectionCount(), a.lanDialLimited}
	}
	var t0 time.Time
	res, _ := a.Do(t.Context(), func(now time.Time) any {
		t0 = now
		first := at(now)
		// The configured peer, found on the LAN while the bucket is empty.
		a.lanDiscovered(now, lan.Discovered{PublicKey: bp, Addr: netip.MustParseAddrPort(b.transports[1].LocalAddr())})
		return [2]counts{first, {a.peers.ConnectionCount(), a.lanDialLimited}}
	})
	got := res.([2]counts)
	if got[0].conns != lanDialBurst || got[0].limited != flood-lanDialBurst {
		t.Fatalf("flood of %d fresh npubs: %d handshakes, dial_limited %d; want %d and %d",
			flood, got[0].conns, got[0].limited, lanDialBurst, flood-lanDialBurst)
	}
	if got[1].limited != got[0].limited || got[1].conns != got[0].conns+1 {
		t.Fatalf("the configured peer was paced: %+v", got[1])
	}
	// One second on, the bucket has refilled one dial.
	res, _ = a.Do(t.Context(), func(time.Time) any { return at(t0.Add(time.Second)) })
	if c := res.(counts); c.limited != 2*flood-lanDialBurst-1 {
		t.Fatalf("a second later: dial_limited %d, want %d", c.limited, 2*flood-lanDialBurst-1)
	}
	await(t, 5*time.Second, "the configured peer found on the LAN links", func() bool {
		res, _ := a.Do(t.Context(), func(time.Time) any { return a.peers.Peer(bp.NodeAddr()) != nil })
		return res == true
	})
}

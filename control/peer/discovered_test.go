package peer

import (
	"crypto/rand"
	"net/netip"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
)

// Issue 27 item 5: a LAN host answering every mDNS query with 64 fresh
// npubs used to fill node.limits.max_connections with handshakes that
// never complete, and the configured peers' dials then failed. The flood
// is crafted here as the node's LAN rendezvous hands it over: fresh keys
// at addresses that answer nothing, dialled as Discovered.

// floodDiscovered dials n fresh keys as discovered peers at host's address
// (ports vary, as an answer's may) and returns how many were refused.
func floodDiscovered(t *testing.T, sn *simNet, a *simNode, host netip.Addr, n int) (refused int) {
	t.Helper()
	for i := range n {
		id, err := identity.Generate(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		c := Candidate{Addr: transport.AddrFromIP(netip.AddrPortFrom(host, uint16(5000+i))), Discovered: true}
		if err := a.m.Dial(sn.now, id.PublicKey(), c); err != nil {
			refused++
		}
	}
	return refused
}

// TestDiscoveredFloodLeavesConfiguredPeerASlot: with the default limits a
// flood of 64 fresh npubs per query, from one host and from 40, holds at
// most MaxDiscoveredPerHost handshakes per host and MaxDiscovered in all;
// the configured peer dials and links, and the refusals are counted.
func TestDiscoveredFloodLeavesConfiguredPeerASlot(t *testing.T) {
	sn := newSimNet(t, 27)
	cfg := DefaultConfig()
	a, b := sn.add(1, cfg), sn.add(2, DefaultConfig())
	one := netip.AddrFrom4([4]byte{192, 0, 2, 1})
	for range 3 { // three queries' worth from one host
		floodDiscovered(t, sn, a, one, 64)
	}
	if got := a.m.ConnectionCount(); got != cfg.MaxDiscoveredPerHost {
		t.Fatalf("one host holds %d handshakes, want %d", got, cfg.MaxDiscoveredPerHost)
	}
	for h := range 40 {
		floodDiscovered(t, sn, a, netip.AddrFrom4([4]byte{198, 51, 100, byte(h)}), 64)
	}
	if got := a.m.ConnectionCount(); got != cfg.MaxDiscovered {
		t.Fatalf("%d discovered handshakes in flight, want the budget %d", got, cfg.MaxDiscovered)
	}
	st := a.m.Stats()
	if want := uint64(3*64 + 40*64 - cfg.MaxDiscovered); st.DiscoveredLimit != want {
		t.Errorf("discovered_limit %d, want %d", st.DiscoveredLimit, want)
	}
	if st.ConnectionLimit != 0 {
		t.Errorf("connection_limit %d: the flood reached max_connections", st.ConnectionLimit)
	}
	a.m.AddStatic(sn.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	sn.deliver()
	linked(t, a, b)
}

// TestConfiguredDialEvictsDiscovered: when discovered handshakes fill
// max_connections (a budget larger than the limit), a configured peer's
// dial drops the oldest of them instead of failing, and links; a further
// discovered dial is refused at the limit rather than evicting anything.
func TestConfiguredDialEvictsDiscovered(t *testing.T) {
	sn := newSimNet(t, 28)
	cfg := DefaultConfig()
	cfg.MaxConnections = 4
	a, b := sn.add(1, cfg), sn.add(2, DefaultConfig())
	for h := range 8 {
		floodDiscovered(t, sn, a, netip.AddrFrom4([4]byte{198, 51, 100, byte(h)}), 64)
	}
	if got := a.m.ConnectionCount(); got != 4 {
		t.Fatalf("%d handshakes in flight, want max_connections 4", got)
	}
	a.m.AddStatic(sn.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	if got := a.m.Stats().DiscoveredEvicted; got != 1 {
		t.Fatalf("discovered_evicted %d, want 1", got)
	}
	if refused := floodDiscovered(t, sn, a, netip.AddrFrom4([4]byte{203, 0, 113, 1}), 1); refused != 1 {
		t.Fatal("a discovered dial at max_connections was not refused")
	}
	sn.deliver()
	linked(t, a, b)
	st := a.m.Stats()
	if st.DiscoveredEvicted != 1 || st.ConnectionLimit == 0 {
		t.Errorf("discovered_evicted %d connection_limit %d, want 1 and >0", st.DiscoveredEvicted, st.ConnectionLimit)
	}
}

package node

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
)

// beaconingTransport is a transport that has heard beacons: the node's
// own transport, with neighbours to hand the discovery poll.
type beaconingTransport struct {
	transport.Transport
	heard []transport.Neighbour
}

func (b *beaconingTransport) Discover(_ time.Time, dst []transport.Neighbour) []transport.Neighbour {
	dst = append(dst, b.heard...)
	b.heard = nil
	return dst
}

func (b *beaconingTransport) AutoConnect() bool { return true }

// TestBeaconDialsPaced: a segment beaconing 40 fresh keys at once gets
// dial_burst dials and 36 refusals counted as beacon_dial_limited; a
// configured peer's key among them is not paced; a second later one more
// stranger is dialled.
func TestBeaconDialsPaced(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfgID, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := loopbackNode(t, Options{Peer: peer.DefaultConfig(), StaticPeers: []StaticPeer{{PublicKey: cfgID.PublicKey(), Alias: "known"}}})
	defer run(t, a)()
	const flood = 40
	beacons := func(withConfigured bool) []transport.Neighbour {
		var out []transport.Neighbour
		for i := range flood {
			id, err := identity.Generate(nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, transport.Neighbour{Addr: transport.AddrFromMAC(transport.MAC{2, 0, 0, 0, byte(i >> 8), byte(i)}), Key: id.PublicKey()})
		}
		if withConfigured {
			out = append(out, transport.Neighbour{Addr: transport.AddrFromMAC(transport.MAC{2, 0, 0, 1, 0, 0}), Key: cfgID.PublicKey()})
		}
		return out
	}
	res, _ := a.Do(t.Context(), func(now time.Time) any {
		id := a.order[0]
		bt := &beaconingTransport{Transport: a.transports[id], heard: beacons(true)}
		a.transports[id] = bt
		a.pollDiscovery(now)
		first := a.peers.Stats().BeaconDialLimited
		bt.heard = beacons(false)
		a.pollDiscovery(now.Add(time.Second))
		a.transports[id] = bt.Transport
		return [2]uint64{first, a.peers.Stats().BeaconDialLimited}
	})
	got := res.([2]uint64)
	if got[0] != flood-lanDialBurst {
		t.Errorf("%d fresh keys and a configured one at once: beacon_dial_limited %d, want %d (the configured peer not paced)", flood, got[0], flood-lanDialBurst)
	}
	if got[1]-got[0] != flood-1 {
		t.Errorf("a second later: %d more refused, want %d (one dial refilled)", got[1]-got[0], flood-1)
	}
}

// TestKeylessNeighboursDialledByFormat: a keyless neighbour (next's
// beacon) is dialled anonymously by a node whose wire format is v1, once
// per address while the handshake runs, and ignored by a v0 node.
func TestKeylessNeighboursDialledByFormat(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, f := range []peer.WireFormat{peer.WireV1, peer.WireV0} {
		cfg := peer.DefaultConfig()
		cfg.WireFormat = f
		a := loopbackNode(t, Options{Peer: cfg})
		stop := run(t, a)
		res, _ := a.Do(t.Context(), func(now time.Time) any {
			id := a.order[0]
			nb := transport.Neighbour{Addr: transport.AddrFromMAC(transport.MAC{2, 0, 0, 0, 0, 1}), Keyless: true}
			bt := &beaconingTransport{Transport: a.transports[id], heard: []transport.Neighbour{nb, nb}}
			a.transports[id] = bt
			a.pollDiscovery(now)
			a.transports[id] = bt.Transport
			return [2]uint64{a.peers.Stats().AnonymousDials, uint64(a.peers.ConnectionCount())}
		})
		stop()
		want := [2]uint64{1, 1}
		if f == peer.WireV0 {
			want = [2]uint64{}
		}
		if got := res.([2]uint64); got != want {
			t.Errorf("%s: anonymous dials, legs %v, want %v", f, got, want)
		}
	}
}

package node

import (
	"errors"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
)

// pollDiscovery drains every running transport that learns neighbours
// by itself (Ethernet beacons) and, on those with auto_connect, dials
// the ones not linked yet (upstream's poll_transport_discovery, each
// tick). A transport without auto_connect is drained all the same, so
// its buffer does not fill.
func (n *Node) pollDiscovery(now time.Time) {
	for _, id := range n.order {
		t := n.transports[id]
		d, ok := t.(transport.Discoverer)
		if !ok || t.State() != transport.StateUp {
			continue
		}
		n.neighbours = d.Discover(now, n.neighbours[:0])
		if !d.AutoConnect() {
			continue
		}
		for _, nb := range n.neighbours {
			if nb.Keyless {
				n.dialAnonymous(now, id, nb)
				continue
			}
			pk := identity.PublicKey(nb.Key)
			na := pk.NodeAddr()
			if na == n.id.NodeAddr() || n.peers.Peer(na) != nil {
				continue
			}
			lc := logging.WithTarget(n.log, "fips::node::lifecycle")
			lc.Info("Auto-connecting to discovered peer", "peer", n.displayName(na, pk.Npub()), "transport_id", uint32(id),
				"remote_addr", nb.Addr.String(), "active_refresh", false)
			_, configured := n.staticNpubs[na]
			// Any host on the segment can beacon fresh keys: dials to
			// peers nobody configured are paced as mDNS ones are, from a
			// bucket of their own.
			if !configured && !n.beaconDials.Take(now, n.opts.LAN.lanDialPace()) {
				n.peers.BeaconDialLimited()
				lc.Debug("Discovered peer not dialled", "error", "beacon dial rate exceeded") // counted: link_layer.beacon_dial_limited
				continue
			}
			if err := n.peers.Dial(now, pk, peer.Candidate{Transport: id, Addr: nb.Addr, Discovered: !configured}); errors.Is(err, peer.ErrDiscoveredLimit) {
				lc.Debug("Discovered peer not dialled", "error", err)
			} else if err != nil {
				lc.Warn("Failed to auto-connect to discovered peer", "error", err)
			}
		}
	}
	clear(n.neighbours)
}

// dialAnonymous dials a neighbour heard by upstream next's keyless
// beacon, known by its address alone, with a v1 handshake that learns
// its key from msg2 (as next does). A node whose own wire format is v0
// ignores it. Nobody configured it, so it is paced from the beacon-dial
// bucket; the manager skips addresses with a link or handshake already
// and bounds the anonymous dials in flight.
func (n *Node) dialAnonymous(now time.Time, id transport.ID, nb transport.Neighbour) {
	if !n.peers.DialsAnonymously() {
		return
	}
	lc := logging.WithTarget(n.log, "fips::node::lifecycle")
	if n.peers.AddrBusy(id, nb.Addr) {
		return
	}
	if !n.beaconDials.Take(now, n.opts.LAN.lanDialPace()) {
		n.peers.BeaconDialLimited()
		lc.Debug("Discovered peer not dialled", "error", "beacon dial rate exceeded", "remote_addr", nb.Addr.String())
		return
	}
	lc.Info("Auto-connecting to anonymous discovered peer", "transport_id", uint32(id), "remote_addr", nb.Addr.String())
	err := n.peers.DialAnonymous(now, peer.Candidate{Transport: id, Addr: nb.Addr, Discovered: true})
	switch {
	case errors.Is(err, peer.ErrDiscoveredLimit), errors.Is(err, peer.ErrAnonymousLimit), errors.Is(err, peer.ErrConnectionLimit):
		lc.Debug("Discovered peer not dialled", "error", err)
	case err != nil:
		lc.Warn("Failed to auto-connect to discovered peer", "error", err)
	}
}

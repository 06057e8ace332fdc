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

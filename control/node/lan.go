package node

import (
	"errors"
	"net/netip"
	"time"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/ratelimit"
	"github.com/fips-go/fips/control/rendezvous/lan"
	"github.com/fips-go/fips/control/transport"
)

// LAN dial rate defaults (node.rendezvous.lan.dial_burst and dial_rate,
// fips-go's; upstream dials every answer): handshakes to peers found on
// the LAN that nobody configured start at most lanDialBurst at once and
// lanDialRate a second after, however many fresh npubs the LAN's hosts
// answer with. Configured peers found on the LAN are not paced.
const (
	lanDialBurst = 4
	lanDialRate  = 1 // per second
)

// LANOptions are node.rendezvous.lan.* (mDNS).
type LANOptions struct {
	Enabled     bool
	ServiceType string
	Scope       string
	// DialBurst and DialRate pace dials to discovered peers nobody
	// configured (not above zero: lanDialBurst, lanDialRate).
	DialBurst int
	DialRate  float64
}

// lanDialPace is the dial rate o asks for.
func (o LANOptions) lanDialPace() ratelimit.Rate {
	burst, rate := float64(o.DialBurst), o.DialRate
	if burst <= 0 {
		burst = lanDialBurst
	}
	if !(rate > 0) {
		rate = lanDialRate
	}
	return ratelimit.PerSecond(burst, rate)
}

// startLAN registers on mDNS with the lowest-id UDP transport's port and
// dials the peers it finds (upstream's poll_lan_rendezvous).
func (n *Node) startLAN() {
	o := n.opts.LAN
	if !o.Enabled {
		return
	}
	var port uint16
	for _, id := range n.order {
		t := n.transports[id]
		if t.Type() != "udp" || t.State() != transport.StateUp || n.isBootstrap(id) {
			continue
		}
		if ap, err := netip.ParseAddrPort(t.LocalAddr()); err == nil {
			port = ap.Port()
			break
		}
	}
	// Upstream's lines (DEBUG when it does not start, as upstream).
	lc := logging.WithTarget(n.log, "fips::node::lifecycle")
	if port == 0 {
		lc.Debug("LAN mDNS discovery not started", "error", "no operational UDP transport to advertise")
		return
	}
	l, err := lan.Start(n.runCtx, lan.Config{Identity: n.id, ServiceType: o.ServiceType, Scope: o.Scope, Port: port, Log: n.log})
	if err != nil {
		lc.Debug("LAN mDNS discovery not started", "error", err)
		return
	}
	lc.Info("LAN mDNS discovery enabled")
	n.lan = l
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		for {
			select {
			case <-n.runCtx.Done():
				l.Close()
				return
			case d := <-l.Events():
				_, _ = n.Do(n.runCtx, func(now time.Time) any { n.lanDiscovered(now, d); return nil })
			}
		}
	}()
}

// lanDiscovered dials a peer seen on the LAN unless it is linked or a
// handshake to that address is already in flight (Dial ignores those).
func (n *Node) lanDiscovered(now time.Time, d lan.Discovered) {
	na := d.PublicKey.NodeAddr()
	n.log.Debug("LAN peer seen via mDNS", "peer", d.PublicKey.Npub(), "addr", d.Addr.String(), "linked", n.peers.Peer(na) != nil)
	if na == n.id.NodeAddr() || n.peers.Peer(na) != nil {
		return
	}
	for _, id := range n.order {
		t := n.transports[id]
		if t.Type() != "udp" || t.State() != transport.StateUp || n.isBootstrap(id) {
			continue
		}
		la, err := netip.ParseAddrPort(t.LocalAddr())
		if err != nil || (la.Addr().Is4() && !d.Addr.Addr().Unmap().Is4()) {
			continue // an IPv4 socket cannot reach an IPv6 peer
		}
		// A link-local address keeps the zone the answer came in on, as
		// an interface index.
		to := transport.AddrFromIP(netip.AddrPortFrom(d.Addr.Addr().Unmap(), d.Addr.Port()))
		// Upstream's lines; scope is ours.
		lc := logging.WithTarget(n.log, "fips::node::lifecycle")
		lc.Info("Auto-connecting to discovered peer", "peer", n.displayName(na, d.PublicKey.Npub()), "transport_id", uint32(id),
			"remote_addr", to.String(), "active_refresh", false, "scope", d.Scope)
		// A peer nobody configured is dialled from the discovered budget
		// (any LAN host can answer with fresh npubs); a configured one
		// found on the LAN keeps its full claim on a slot.
		_, configured := n.staticNpubs[na]
		if !configured && !n.lanDials.TakeCounted(now, n.opts.LAN.lanDialPace(), &n.lanDialLimited) {
			lc.Debug("Discovered peer not dialled", "error", "LAN dial rate exceeded") // counted: lan_rendezvous.dial_limited
			return
		}
		if err := n.peers.Dial(now, d.PublicKey, peer.Candidate{Transport: id, Addr: to, Discovered: !configured}); errors.Is(err, peer.ErrDiscoveredLimit) {
			lc.Debug("Discovered peer not dialled", "error", err) // counted: link_layer.discovered_limit
		} else if err != nil {
			lc.Warn("Failed to auto-connect to discovered peer", "error", err)
		}
		return
	}
}

package node

import (
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane"
)

// The node's side of the dataplane seam: the loop programs the engine by
// publishing the link table (peer.Manager.Publish) and the forwarding
// table (publishRoutes) at the end of each burst of work, and takes the
// engine's upcalls from the same bounded receive queue as the packets
// the transports deliver.

// MaxRoutes bounds the published forwarding table.
const MaxRoutes = 4096

// routeIdleTicks is how many ticks without a use a published route
// survives.
const routeIdleTicks = 10

// rxItem is one entry of the receive queue: a packet a transport
// delivered, or a frame a worker opened (up.Link set).
type rxItem struct {
	p  transport.Packet
	up dataplane.Upcall
}

// startEngine attaches the engine to every transport that can run it.
func (n *Node) startEngine() {
	if n.eng == nil {
		return
	}
	for _, id := range n.order {
		if a, ok := n.transports[id].(transport.DataAttacher); ok {
			a.AttachDataPath(n.eng)
		}
	}
}

// upcall is the engine's hand-off into the loop: blocking while the
// queue is full, as deliver is.
func (n *Node) upcall(u dataplane.Upcall) bool {
	it := rxItem{up: u}
	select {
	case n.rx <- it:
		return true
	default:
	}
	select {
	case n.rx <- it:
		return true
	case <-n.stopped:
		n.rxDrops.Add(1)
		return false
	}
}

// handleUpcall finishes a frame a worker opened.
func (n *Node) handleUpcall(now time.Time, u dataplane.Upcall) {
	defer u.Buf.Release()
	if u.Fence != nil {
		n.fences = append(n.fences, u.Fence)
	}
	switch {
	case u.Proof:
		n.core.now = now
		n.peers.ProveFast(now, u.Link)
		return
	case u.Promote:
		n.core.now = now
		n.core.sess.PromoteFast(now, u.Src, u.Epoch)
		return
	}
	if u.FSP {
		n.core.HandleOpenedFSP(now, u.Src, u.Counter, u.Msg, u.CE)
		return
	}
	if u.Arrived != 0 && n.aqm.Drop(now, now.Sub(time.Unix(0, u.Arrived))) {
		return
	}
	n.core.HandleOpened(now, u.Link, u.Flags, wire.FMPInner{Timestamp: u.TS, Message: u.Msg})
}

// forwarded is the router's report of a datagram the loop forwarded: its
// destination becomes a route candidate for the workers.
func (n *Node) forwarded(dest identity.NodeAddr) {
	if n.eng == nil {
		return
	}
	if _, ok := n.fwdWant[dest]; ok {
		return
	}
	if len(n.fwdWant) >= MaxRoutes {
		n.routesRefused++
		return
	}
	n.fwdWant[dest] = struct{}{}
	n.routesDirty = true
}

// publishRoutes recomputes the forwarding table: on a tick, routes not
// used since the last tick expire; otherwise (after any work that may
// have changed routing) every route is recomputed with the router's own
// next-hop choice, and new candidates added.
func (n *Node) publishRoutes(now time.Time, tick bool) {
	if n.eng == nil {
		return
	}
	n.peers.Publish()
	if !tick && !n.routesDirty {
		return
	}
	n.routesDirty = false
	old := n.eng.Forwarding()
	if old.Len() == 0 && len(n.fwdWant) == 0 {
		return
	}
	links := n.peers.Published()
	m := make(map[identity.NodeAddr]*dataplane.Route, old.Len()+len(n.fwdWant))
	r := n.core.Router()
	consider := func(dest identity.NodeAddr, prev *dataplane.Route) {
		if _, done := m[dest]; done {
			return
		}
		if len(m) >= MaxRoutes {
			n.routesRefused++
			return
		}
		next, rt, ok := r.FindNextHop(now, dest)
		if !ok {
			return
		}
		x := links.Tx(next)
		if x == nil {
			return
		}
		nr := &dataplane.Route{Tx: x, MTU: n.LinkMTU(x.Transport(), x.Addr()),
			Congested: coreLinks{n.core}.Congested(next), Class: rt.Class}
		if prev != nil {
			nr.Idle = prev.Idle
			if prev.Used() {
				nr.MarkUsed()
			}
		}
		m[dest] = nr
	}
	old.Range(func(dest identity.NodeAddr, rt *dataplane.Route) {
		if tick {
			if rt.TakeUsed() {
				rt.Idle = 0
			} else if rt.Idle++; rt.Idle >= routeIdleTicks {
				n.routesExpired++
				return
			}
		}
		consider(dest, rt)
	})
	for dest := range n.fwdWant {
		consider(dest, nil)
	}
	clear(n.fwdWant)
	n.eng.PublishForwarding(dataplane.NewForwarding(m))
}

// engineView is show_status.dataplane.engine.
func (n *Node) engineView() ctl.EngineView {
	if n.eng == nil {
		return ctl.EngineView{}
	}
	c := n.eng.Stats()
	return ctl.EngineView{Enabled: true, Workers: n.eng.Workers(), LinksPublished: n.peers.Published().Len(),
		RoutesPublished: n.eng.Forwarding().Len(),
		FramesOpened:    c.FramesOpened.Load(), FramesDropped: c.FramesDropped.Load(),
		Forwarded: c.Forwarded.Load(), Delivered: c.Delivered.Load(), Originated: n.v6fast.originated.Load(),
		SessionsPublished: n.localLen(), ForwardMisses: c.ForwardMisses.Load(), ForwardErrors: c.ForwardErrors.Load(),
		Upcalls: c.Upcalls.Load(), UpcallsRefused: c.UpcallsRefused.Load(),
		RoutesRefused: n.routesRefused, RoutesExpired: n.routesExpired,
		EgressToLoop: map[string]uint64{"no_session": n.v6fast.missNoSession.Load(), "warmup": n.v6fast.missWarmup.Load(),
			"too_big": n.v6fast.missTooBig.Load(), "no_route": n.v6fast.missNoRoute.Load(), "frame_mtu": n.v6fast.missFrameMTU.Load()}}
}

// addEngineForwarding folds the workers' forwards into the router's
// counters, so show_routing and show_metrics count every datagram once
// whichever path carried it.
func (n *Node) addEngineForwarding(s *route.Stats) {
	if n.eng == nil {
		return
	}
	c := n.eng.Stats()
	f := &s.Forwarding
	fw := c.Forwarded.Load()
	f.ReceivedPackets += fw
	f.ReceivedBytes += c.ReceivedBytes.Load()
	f.ForwardedPackets += fw
	f.ForwardedBytes += c.ForwardedBytes.Load()
	f.DropSendErrorPackets += c.ForwardErrors.Load()
	f.RouteTreeUp += c.ClassCounts[route.ClassTreeUp].Load()
	f.RouteTreeDown += c.ClassCounts[route.ClassTreeDown].Load()
	f.RouteTreeDownCross += c.ClassCounts[route.ClassTreeDownCross].Load()
	f.RouteCrosslinkDescend += c.ClassCounts[route.ClassCrosslinkDescend].Load()
	f.RouteCrosslinkAscend += c.ClassCounts[route.ClassCrosslinkAscend].Load()
	f.RouteDirectPeer += c.ClassCounts[route.ClassDirectPeer].Load()
	dl := c.Delivered.Load()
	f.ReceivedPackets += dl
	f.ReceivedBytes += c.DeliveredBytes.Load()
	f.DeliveredPackets += dl
	f.DeliveredBytes += c.DeliveredBytes.Load()
	f.OriginatedPackets += n.v6fast.originated.Load()
	f.OriginatedBytes += n.v6fast.originatedBytes.Load()
	s.Congestion.CEForwarded += c.CEForwarded.Load()
	s.Congestion.CongestionDetected += c.CongestionSeen.Load()
}

func (n *Node) localLen() int {
	if lt := n.local.Load(); lt != nil {
		return len(lt.byAddr)
	}
	return 0
}

// engineAQMDrops is what the workers' queue management dropped.
func (n *Node) engineAQMDrops() uint64 {
	if n.eng == nil {
		return 0
	}
	return n.eng.AQMDrops()
}

// releaseFences lets the workers take their flows' datagrams again: what
// they handed the loop has now left it (after the loop's sends and TUN
// writes of the burst were flushed), so nothing they send can overtake it.
func (n *Node) releaseFences() {
	for _, f := range n.fences {
		f.Add(1)
	}
	clear(n.fences)
	n.fences = n.fences[:0]
}

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
// delivered, or one of the workers' upcalls (kind says which field).
type rxItem struct {
	kind    rxKind
	p       transport.Packet
	frame   dataplane.FrameUpcall
	fsp     dataplane.FSPUpcall
	proof   dataplane.ProofUpcall
	promote dataplane.PromoteUpcall
	learn   dataplane.LearnUpcall
}

type rxKind uint8

const (
	rxPacket rxKind = iota
	rxFrame
	rxFSP
	rxProof
	rxPromote
	rxLearn
)

// inbox is the loop's side of the dataplane seam (dataplane.Loop): every
// kind of hand-off goes onto the loop's bounded queues.
type inbox struct{ n *Node }

var _ dataplane.Loop = inbox{}

func (i inbox) Frame(u dataplane.FrameUpcall) bool {
	return i.n.enqueue(rxItem{kind: rxFrame, frame: u})
}
func (i inbox) FSP(u dataplane.FSPUpcall) bool { return i.n.enqueue(rxItem{kind: rxFSP, fsp: u}) }
func (i inbox) Proof(u dataplane.ProofUpcall) bool {
	return i.n.enqueue(rxItem{kind: rxProof, proof: u})
}
func (i inbox) Promote(u dataplane.PromoteUpcall) bool {
	return i.n.enqueue(rxItem{kind: rxPromote, promote: u})
}
func (i inbox) Packet(p transport.Packet) bool { return i.n.deliver(p) }
func (i inbox) Learn(u dataplane.LearnUpcall) bool {
	return i.n.enqueue(rxItem{kind: rxLearn, learn: u})
}

// TUN takes a packet the TUN reader left to the loop, blocking while the
// loop is behind; refused (and counted) once it has stopped.
func (i inbox) TUN(u dataplane.TUNUpcall) bool {
	n := i.n
	select {
	case n.tunIn <- u:
		return true
	case <-n.stopped:
		n.tunDrops.Add(1)
		return false
	}
}

// startEngine attaches the engine to every transport that can run it.
func (n *Node) startEngine() {
	if n.eng == nil {
		return
	}
	for _, id := range n.order {
		if a, ok := n.transports[id].(transport.Batched); ok {
			a.AttachDataPath(n.eng)
		}
	}
}

// handleUpcall finishes what a worker handed over.
func (n *Node) handleUpcall(now time.Time, it rxItem) {
	switch it.kind {
	case rxProof:
		n.core.now = now
		n.peers.ProveFast(now, it.proof.Link)
	case rxPromote:
		n.core.now = now
		n.core.sess.PromoteFast(now, it.promote.Src, it.promote.Epoch)
	case rxFSP:
		u := it.fsp
		n.fences = append(n.fences, u.Fence)
		n.core.HandleOpenedFSP(now, u.Src, u.Counter, u.Msg, u.CE)
		u.Buf.Release()
	case rxLearn:
		// What the workers forwarded warms the cache as the loop's own
		// forwards do; routes are recomputed with what it taught.
		n.core.Router().Learn(now, it.learn.Msg)
		n.routesDirty = true
		it.learn.Buf.Release()
	case rxFrame:
		u := it.frame
		if u.Fence != nil {
			n.fences = append(n.fences, u.Fence)
		}
		if u.Arrived == 0 || !n.aqm.Drop(now, now.Sub(time.Unix(0, u.Arrived))) {
			n.core.HandleOpened(now, u.Link, u.Flags, wire.FMPInner{Timestamp: u.TS, Message: u.Msg})
		}
		u.Buf.Release()
	}
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
	c, v6 := n.eng.Stats(), n.eng.IPv6()
	return ctl.EngineView{Enabled: true, Workers: n.eng.Workers(), LinksPublished: n.peers.Published().Len(),
		RoutesPublished: n.eng.Forwarding().Len(),
		FramesOpened:    c.FramesOpened.Load(), FramesDropped: c.FramesDropped.Load(),
		Forwarded: c.Forwarded.Load(), Delivered: c.Delivered.Load(), Originated: v6.Originated.Load(),
		SessionsPublished: n.eng.PublishedLocal().Len(), ForwardMisses: c.ForwardMisses.Load(), ForwardErrors: c.ForwardErrors.Load(),
		Upcalls: c.Upcalls.Load(), UpcallsRefused: c.UpcallsRefused.Load(),
		RoutesRefused: n.routesRefused, RoutesExpired: n.routesExpired,
		EgressToLoop: map[string]uint64{"no_session": v6.MissNoSession.Load(), "warmup": v6.MissWarmup.Load(),
			"too_big": v6.MissTooBig.Load(), "no_route": v6.MissNoRoute.Load(), "frame_mtu": v6.MissFrameMTU.Load()}}
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
	f.OriginatedPackets += n.eng.IPv6().Originated.Load()
	f.OriginatedBytes += n.eng.IPv6().OriginatedBytes.Load()
	s.Congestion.CEForwarded += c.CEForwarded.Load()
	s.Congestion.CongestionDetected += c.CongestionSeen.Load()
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
		f.Done()
	}
	clear(n.fences)
	n.fences = n.fences[:0]
}

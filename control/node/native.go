package node

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/native"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/wire"
)

// NativeAPIOptions are node.native_api.*.
type NativeAPIOptions struct {
	Enabled bool
	Path    string
	Limits  native.Limits
	Debug   bool
}

// maxNativeQueue bounds the queue of datagrams clients wrote.
const maxNativeQueue = 16384

// initNative builds the native API's registry (always: show_native_flows
// answers with the API off too) and its outbound queue.
func (n *Node) initNative() {
	n.native = native.NewRegistry(n.opts.NativeAPI.Limits)
	l := n.native.Limits()
	// Every flow holds at most PerFlow datagrams in this queue (the
	// server's per-flow slots), so with the defaults (256 × 16) a send
	// into it never waits; the capacity is capped so a large max_flows
	// does not allocate it up front (past it, writers wait their turn).
	n.nativeOut = make(chan native.Outbound, min(l.MaxFlows*l.PerFlow, maxNativeQueue))
}

// startNative binds the API socket when node.native_api.enabled; a
// failure is logged and the node runs without it.
func (n *Node) startNative() {
	o := n.opts.NativeAPI
	n.updateNativeMax()
	if !o.Enabled {
		return
	}
	log := logging.WithTarget(n.log, "fips::native")
	if !native.Supported {
		log.Warn("node.native_api.enabled: the native datagram API is not built on this platform (no SCM_RIGHTS)")
		return
	}
	srv, err := native.Bind(native.Config{Path: o.Path, Limits: n.native.Limits(), Debug: o.Debug}, nativeHost{n}, log)
	if err != nil {
		log.Error("Native API socket failed to bind", "path", o.Path, "error", err)
		return
	}
	n.nativeSrv = srv
	n.bg.Go(func() {
		if err := srv.Serve(); err != nil {
			log.Warn("Native API socket stopped", "error", err)
		}
	})
}

// stopNative closes the API socket and every flow (after the loop).
func (n *Node) stopNative() {
	if n.nativeSrv != nil {
		n.nativeSrv.Close()
	}
}

// updateNativeMax is the payload limit flows report: the transport MTU
// less the FIPS encapsulation and the 4-byte port header (loop).
func (n *Node) updateNativeMax() {
	m := n.transportMTU() - session.FIPSOverhead - wire.FSPPortHeaderSize
	n.nativeMax.Store(uint32(max(m, 0)))
}

// nativeDeliver takes a DataPacket for a port no service bound: the
// native API's (loop). Port 256 with the IPv6 adapter off is dropped.
func (n *Node) nativeDeliver(now time.Time, src identity.NodeAddr, srcPort, dstPort uint16, payload []byte, _ bool) {
	if dstPort == native.PortIPv6Shim {
		n.core.undelivered++
		return
	}
	pk, ok := n.core.sess.RemoteKey(src)
	if !ok {
		if pk, ok = n.core.ids.Lookup(src); !ok {
			n.core.undelivered++
			return
		}
	}
	n.native.Deliver(src, pk, srcPort, dstPort, append([]byte(nil), payload...), now)
}

// sendNative sends one datagram a client wrote (loop).
func (n *Node) sendNative(now time.Time, o native.Outbound) {
	defer o.Done()
	c := &n.native.Counters
	if len(o.Payload) > int(n.nativeMax.Load()) {
		c.DropOversize++
		return
	}
	n.core.LearnIdentity(o.PubKey)
	if err := n.core.Send(now, o.Key.Peer, o.Key.Local, o.Key.Remote, o.Payload); err != nil {
		n.log.Debug("Failed to send a native datagram", "peer", o.Key.Peer.String(), "error", err)
		return
	}
	c.SentDatagrams++
	c.SentBytes += uint64(len(o.Payload))
}

// nativeHost is the node as the API server reaches it.
type nativeHost struct{ n *Node }

func (h nativeHost) Registry(ctx context.Context, f func(r *native.Registry, now time.Time)) error {
	r := request{f: func(now time.Time) any { f(h.n.native, now); return nil }, resp: make(chan any, 1)}
	select {
	case h.n.requests <- r:
	case <-h.n.stopped:
		return ErrShuttingDown
	case <-ctx.Done():
		return fmt.Errorf("native API request: %w", ctx.Err())
	}
	select {
	case <-r.resp:
		return nil
	case <-h.n.stopped:
		return ErrShuttingDown
	case <-ctx.Done():
		return fmt.Errorf("native API request: %w", ctx.Err())
	}
}

func (h nativeHost) Send(o native.Outbound) error {
	select {
	case h.n.nativeOut <- o:
		return nil
	case <-h.n.stopped:
		return ErrShuttingDown
	}
}

func (h nativeHost) MaxPayload() uint16 { return uint16(min(h.n.nativeMax.Load(), 65535)) }

func (h nativeHost) Npub() string { return h.n.id.Npub() }

// nativeStats is the native counter family.
func nativeStats(c native.Counters) ctl.NativeStatsJSON {
	return ctl.NativeStatsJSON{
		DropArrivalQueueFull: c.DropArrivalQueueFull, DropBacklogFull: c.DropBacklogFull,
		DropFlowQueueFull: c.DropFlowQueueFull, DropListenerGone: c.DropListenerGone,
		DropListenerNotReading: c.DropListenerNotReading, DropNoPort: c.DropNoPort,
		DropOversize: c.DropOversize, DropPendingQueueFull: c.DropPendingQueueFull,
		DropTooManyFlows: c.DropTooManyFlows, FlowsAccepted: c.FlowsAccepted, FlowsClosed: c.FlowsClosed,
		FlowsExpired: c.FlowsExpired, FlowsOpened: c.FlowsOpened, ReceivedBytes: c.ReceivedBytes,
		ReceivedDatagrams: c.ReceivedDatagrams, SentBytes: c.SentBytes, SentDatagrams: c.SentDatagrams,
	}
}

// nativeLimits is the native API's refusals at its bounds (ours).
func nativeLimits(c native.Counters) ctl.NativeLimitsJSON {
	return ctl.NativeLimitsJSON{DropClientLimit: c.DropClientLimit, RefusedClientLimit: c.RefusedClientLimit,
		RefusedTooManyFlows: c.RefusedTooMany, RefusedPortInUse: c.RefusedPorts + c.RefusedFlowTaken}
}

// showNativeFlows is show_native_flows (on the loop; the last published
// counters and no flows when the loop is not running).
func (n *Node) showNativeFlows(ctx context.Context) (any, error) {
	switch n.State() {
	case StateRunning, StateDegraded:
	default:
		return ctl.NativeFlowsJSON{Flows: []ctl.NativeFlowJSON{}, Listeners: []ctl.NativeListenerJSON{},
			Stats: n.Snapshot().Native}, nil
	}
	v, err := n.Do(ctx, func(now time.Time) any {
		out := ctl.NativeFlowsJSON{Flows: []ctl.NativeFlowJSON{}, Listeners: []ctl.NativeListenerJSON{},
			Stats: nativeStats(n.native.Counters)}
		for _, f := range n.native.Flows() {
			state := "pending_accept"
			if f.Established {
				state = "established"
			}
			out.Flows = append(out.Flows, ctl.NativeFlowJSON{FlowID: f.Flow, Peer: f.PubKey.Npub(),
				PeerAddr: hex.EncodeToString(f.Key.Peer[:]), LocalPort: f.Key.Local, RemotePort: f.Key.Remote,
				State: state, Queued: f.Queued, AgeMs: uint64(max(now.Sub(f.At).Milliseconds(), 0))})
		}
		for _, l := range n.native.Listeners() {
			out.Listeners = append(out.Listeners, ctl.NativeListenerJSON{LocalPort: l.Port, Backlog: l.Backlog})
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

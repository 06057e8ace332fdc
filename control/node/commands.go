package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/listening"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/rendezvous"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// ipv6Overhead is FIPS_IPV6_OVERHEAD: transport MTU − this = IPv6 MTU.
const ipv6Overhead = 77

// Register installs the node's control-socket commands.
func (n *Node) Register(r *ctl.Registry) {
	r.Register("show_status", func(context.Context, json.RawMessage) (any, error) { return n.showStatus(), nil })
	r.Register("show_peers", func(context.Context, json.RawMessage) (any, error) { return n.showPeers(), nil })
	r.Register("show_links", func(context.Context, json.RawMessage) (any, error) { return n.showLinks(), nil })
	r.Register("show_transports", func(context.Context, json.RawMessage) (any, error) { return n.showTransports(), nil })
	r.Register("show_connections", func(context.Context, json.RawMessage) (any, error) { return n.showConnections(), nil })
	r.Register("show_acl", func(context.Context, json.RawMessage) (any, error) { return n.showACL(), nil })
	r.Register("show_native_flows", func(ctx context.Context, _ json.RawMessage) (any, error) { return n.showNativeFlows(ctx) })
	// Host facts only (/proc, nft): answered off the loop, like upstream.
	r.Register("show_listening_sockets", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return listening.Show(ctx, n.id.IPv6()), nil
	})
	// The XDP maps are the kernel's: read off the loop.
	r.Register("show_bpf", func(context.Context, json.RawMessage) (any, error) { return n.BPF() })
	r.Register("connect", n.apiConnect)
	r.Register("disconnect", n.apiDisconnect)
	n.registerMesh(r)
	n.registerStats(r)
}

// ctlRegistry is the part of ctl.Registry the node registers into.
type ctlRegistry interface {
	Register(name string, h ctl.Handler)
}

func msSince(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixMilli())
}

// SetLocalLimits installs what fills show_status' local_limits beyond the
// node's own counters (the daemon's control socket and metrics endpoint).
// f is called on every show_status, off the event loop.
func (n *Node) SetLocalLimits(f func(*ctl.LocalLimits)) { n.localLimits.Store(&f) }

func (n *Node) localLimitsView() ctl.LocalLimits {
	var l ctl.LocalLimits
	if f := n.localLimits.Load(); f != nil {
		(*f)(&l)
	}
	l.ProbeReportsDropped = n.probeTab.evicted.Load()
	return l
}

func (n *Node) showStatus() ctl.StatusData {
	s := n.LiveSnapshot()
	exe, err := os.Executable()
	if err != nil {
		exe = "-"
	}
	d := ctl.StatusData{ShowStatus: ctl.ShowStatus{
		ConnectionCount: uint64(len(s.Connections)), ControlSocket: n.opts.ControlSocket,
		ExePath: exe, IPv6Addr: n.id.IPv6().String(), IsLeafOnly: n.opts.LeafOnly,
		IsRoot: s.Tree.IsRoot, Root: s.Tree.Root.String(), EstimatedMeshSize: s.MeshSize,
		LinkCount: uint64(len(s.Peers)), NodeAddr: n.id.NodeAddr().String(), Npub: n.id.Npub(),
		PeerCount: uint64(len(s.Peers)), SessionCount: uint64(s.Sessions), Persistent: n.opts.Persistent, PID: uint32(pid()), State: string(s.State),
		TransportCount: uint64(len(s.Transports)), TransportPeerCounts: ctl.Counts{}, TunName: s.TunName,
		TunState: s.TunState, Version: n.opts.Version, Sparklines: sparklines(s.Sparklines),
		Forwarding: forwardingJSON(s.RouteStats.Forwarding),
	}, LinkLayer: ctl.LinkLayerStats(s.PeerStats), ReceiveQueueDrops: s.RxDrops, ReceiveQueueAQMDrops: s.AQMDrops, Dataplane: s.Dataplane, LocalLimits: n.localLimitsView(),
		SessionLayer: sessionLayer(s), LANRendezvous: (*ctl.LANStats)(s.LAN)}
	if !s.Started.IsZero() {
		d.UptimeSecs = uint64(time.Since(s.Started).Seconds())
	}
	minMTU := 0
	for _, t := range s.Transports {
		d.TransportPeerCounts[t.Type] += 0 // configured types appear at 0
		if t.State == transport.StateUp && (minMTU == 0 || t.MTU < minMTU) {
			minMTU = t.MTU
		}
	}
	if minMTU == 0 {
		minMTU = 1280
	}
	d.EffectiveIPv6MTU = uint16(minMTU - ipv6Overhead)
	for _, p := range s.Peers {
		d.TransportPeerCounts[p.TransportType]++
	}
	return d
}

// forwardingJSON is show_status' forwarding family (the keys of
// show_metrics' forwarding, in upstream's order).
func forwardingJSON(f route.ForwardingStats) ctl.ForwardingStats {
	return ctl.ForwardingStats{DecodeErrorBytes: f.DecodeErrorBytes, DecodeErrorPackets: f.DecodeErrorPackets,
		DeliveredBytes: f.DeliveredBytes, DeliveredPackets: f.DeliveredPackets,
		DropMTUExceededBytes: f.DropMTUExceededBytes, DropMTUExceededPackets: f.DropMTUExceededPackets,
		DropNoRouteBytes: f.DropNoRouteBytes, DropNoRoutePackets: f.DropNoRoutePackets,
		DropSendErrorBytes: f.DropSendErrorBytes, DropSendErrorPackets: f.DropSendErrorPackets,
		ForwardedBytes: f.ForwardedBytes, ForwardedPackets: f.ForwardedPackets, OriginatedBytes: f.OriginatedBytes,
		OriginatedPackets: f.OriginatedPackets, ReceivedBytes: f.ReceivedBytes, ReceivedPackets: f.ReceivedPackets,
		RouteCrosslinkAscend: f.RouteCrosslinkAscend, RouteCrosslinkDescend: f.RouteCrosslinkDescend,
		RouteDirectPeer: f.RouteDirectPeer, RouteTreeDown: f.RouteTreeDown, RouteTreeDownCross: f.RouteTreeDownCross,
		RouteTreeUp: f.RouteTreeUp, TTLExhaustedBytes: f.TTLExhaustedBytes, TTLExhaustedPackets: f.TTLExhaustedPackets,
		WarmMalformedBytes: f.WarmMalformedBytes, WarmMalformedPackets: f.WarmMalformedPackets}
}

func (n *Node) showPeers() ctl.ShowPeers {
	s := n.LiveSnapshot()
	out := make(ctl.List[ctl.PeerInfo], 0, len(s.Peers))
	for _, p := range s.Peers {
		info := ctl.PeerInfo{
			NodeAddr: p.NodeAddr, Npub: p.Npub, DisplayName: n.displayName(p.Addr, p.Npub), IPv6Addr: p.IPv6,
			Connectivity: "connected", LinkID: p.LinkID, AuthenticatedAtMs: msSince(p.Since), LastSeenMs: msSince(p.LastRecv),
			TransportAddr: p.TransportAddr, Direction: string(p.Direction), TransportType: p.TransportType,
			Stats: ctl.TrafficStats{PacketsSent: p.Stats.PacketsSent, PacketsRecv: p.Stats.PacketsRecv,
				BytesSent: p.Stats.BytesSent, BytesRecv: p.Stats.BytesRecv},
			ReplaySuppressed: uint32(p.Stats.Replays), ConsecutiveDecryptFailures: uint32(p.DecryptFailures),
			Noise:       &ctl.NoiseCounters{HighestRecvCounter: p.HighestRecv, SendCounter: p.SendCounter},
			CurrentKBit: p.KBit, PostQuantum: p.PostQuantum, RekeyInProgress: p.RekeyInProgress, RekeyDraining: p.Draining,
			OurSessionIndex: fmt.Sprintf("%08x", p.OurIndex),
			HasTreePosition: p.TreeView.HasTreePosition, IsParent: p.TreeView.IsParent, IsChild: p.TreeView.IsChild,
			HasBloomFilter: p.Bloom.HasFilter, FilterSequence: p.Bloom.FilterSequence,
			MMP:        peerMMP(p.MMP),
			WireFormat: p.WireFormat, Profile: p.Profile,
		}
		info.NostrTraversal = nostrTraversal(s.Rendezvous.Failure(p.Npub))
		if p.TreeView.HasTreePosition {
			d := uint64(p.TreeView.Depth)
			info.TreeDepth = &d
			cost := 1.0
			if p.MMP.Quality != nil {
				cost = *p.MMP.Quality
			}
			e := ctl.Float(float64(p.TreeView.Depth) + cost)
			info.EffectiveDepth = &e
		}
		out = append(out, info)
	}
	return ctl.ShowPeers{Peers: out}
}

func (n *Node) showLinks() ctl.ShowLinks {
	s := n.LiveSnapshot()
	out := make(ctl.List[ctl.LinkInfo], 0, len(s.Peers)+len(s.Connections))
	for _, p := range s.Peers {
		pq := p.PostQuantum
		out = append(out, ctl.LinkInfo{LinkID: p.LinkID, TransportID: uint32(p.TransportID), RemoteAddr: p.TransportAddr,
			Direction: string(p.Direction), State: "connected", CreatedAtMs: msSince(p.Since), PostQuantum: &pq,
			Stats: ctl.LinkStats{PacketsSent: p.Stats.PacketsSent, PacketsRecv: p.Stats.PacketsRecv,
				BytesSent: p.Stats.BytesSent, BytesRecv: p.Stats.BytesRecv, LastRecvMs: msSince(p.LastRecv)}})
	}
	for _, c := range s.Connections {
		if c.Rekey {
			continue
		}
		out = append(out, ctl.LinkInfo{LinkID: c.LinkID, TransportID: uint32(c.Transport), RemoteAddr: c.Addr.String(),
			Direction: string(c.Direction), State: "connecting", CreatedAtMs: msSince(c.Started)})
	}
	return ctl.ShowLinks{Links: out}
}

func (n *Node) showTransports() ctl.ShowTransports {
	s := n.LiveSnapshot()
	out := make(ctl.List[ctl.TransportInfo], 0, len(s.Transports))
	for _, t := range s.Transports {
		out = append(out, ctl.TransportInfo{TransportID: uint32(t.ID), Type: t.Type, State: string(t.State),
			MTU: uint16(t.MTU), Name: t.Name, LocalAddr: t.LocalAddr, Stats: transportStats(t.Type, t.Stats),
			OnionAddress: t.Onion, TorMode: t.TorMode})
	}
	return ctl.ShowTransports{Transports: out}
}

func (n *Node) showConnections() ctl.ShowConnections {
	s := n.LiveSnapshot()
	out := make(ctl.List[ctl.ConnectionInfo], 0, len(s.Connections))
	for _, c := range s.Connections {
		state := "sent_msg1"
		if c.Rekey {
			state = "rekey_sent_msg1"
		}
		ci := ctl.ConnectionInfo{LinkID: c.LinkID, Direction: string(c.Direction), HandshakeState: state,
			StartedAtMs: msSince(c.Started), IdleMs: uint64(max(0, s.At.Sub(c.LastSent).Milliseconds())),
			ResendCount: uint32(c.Resends)}
		if !c.Anonymous { // upstream shows no expected_peer on an anonymous leg
			ci.ExpectedPeer = c.Expected.Npub()
		}
		out = append(out, ci)
	}
	return ctl.ShowConnections{Connections: out}
}

func (n *Node) showACL() ctl.ShowACL {
	s := n.LiveSnapshot()
	a := s.ACL
	if a == nil {
		a = &peer.ACLSnapshot{EffectiveMode: "default_open", DefaultDecision: "allow"}
	}
	return ctl.ShowACL{AllowAll: a.AllowAll, AllowEntries: a.AllowEntries, AllowFile: a.AllowFile,
		AllowFileEntries: a.AllowFileLines, DefaultDecision: a.DefaultDecision, DenyAll: a.DenyAll,
		DenyEntries: a.DenyEntries, DenyFile: a.DenyFile, DenyFileEntries: a.DenyFileLines,
		EffectiveMode: a.EffectiveMode, EnforcementActive: a.EnforcementActive}
}

func (n *Node) apiConnect(ctx context.Context, raw json.RawMessage) (any, error) {
	p, err := ctl.RequireParams("connect", raw)
	if err != nil {
		return nil, err
	}
	npub, err := p.String("npub")
	if err != nil {
		return nil, err
	}
	address, err := p.String("address")
	if err != nil {
		return nil, err
	}
	tsel, err := p.String("transport")
	if err != nil {
		return nil, err
	}
	pk, err := identity.DecodeNpub(npub)
	if err != nil {
		return nil, ctl.Errorf("invalid npub '%s': %v", npub, err)
	}
	t, err := n.transportForAddr(tsel, address)
	if err != nil {
		return nil, ctl.Errorf("%v", err)
	}
	// Resolve off the loop: DNS must not stall packet processing.
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	addr, err := t.ResolveAddr(rctx, address)
	cancel()
	if err != nil {
		return nil, ctl.Errorf("cannot resolve %s: %v", address, err)
	}
	// fips-go: upstream answers ok for a destination no packet can reach.
	if err := transport.CheckAddr(addr); err != nil {
		return nil, ctl.Errorf("invalid address %s: %v", address, err)
	}
	v, err := n.Do(ctx, func(now time.Time) any {
		refreshed := n.peers.Peer(pk.NodeAddr()) != nil
		if err := n.peers.Dial(now, pk, peer.Candidate{Transport: t.ID(), Addr: addr}); err != nil {
			return err
		}
		return refreshed
	})
	if err != nil {
		return nil, err
	}
	if e, ok := v.(error); ok {
		return nil, ctl.Errorf("%v", e)
	}
	return map[string]any{"npub": npub, "address": address, "transport": tsel, "refreshed": v.(bool)}, nil
}

func (n *Node) apiDisconnect(ctx context.Context, raw json.RawMessage) (any, error) {
	npub, pk, err := npubParam("disconnect", raw)
	if err != nil {
		return nil, err
	}
	v, err := n.Do(ctx, func(now time.Time) any {
		pe := n.peers.Peer(pk.NodeAddr())
		if pe == nil {
			return errPeerNotFound
		}
		// Removing the peer closes its connection once the Disconnect
		// is written.
		n.peers.Disconnect(now, pe, wire.DisconnectConfigurationChange, false)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if errors.Is(asErr(v), errPeerNotFound) {
		return nil, ctl.Errorf("peer not found: %s", npub)
	}
	return map[string]any{"npub": npub, "disconnected": true}, nil
}

var errPeerNotFound = errors.New("peer not found")

func asErr(v any) error {
	if e, ok := v.(error); ok {
		return e
	}
	return nil
}

// peerMMP renders the link metrics as show_peers's mmp object.
func peerMMP(m mmp.Snapshot) *ctl.PeerMMP {
	f := func(p *float64) *ctl.Float {
		if p == nil {
			return nil
		}
		return ctl.FloatPtr(*p)
	}
	return &ctl.PeerMMP{Mode: m.Mode, SrttMs: f(m.SRTTMs), LossRate: ctl.Float(m.LossRate), ETX: ctl.Float(m.ETX),
		GoodputBps: ctl.Float(m.GoodputBps), DeliveryRatioForward: ctl.Float(m.DeliveryRatioForward),
		DeliveryRatioReverse: ctl.Float(m.DeliveryRatioReverse), SmoothedLoss: f(m.SmoothedLoss),
		SmoothedETX: f(m.SmoothedETX), LQI: f(m.Quality)}
}

// npubParam reads a command's required "npub" parameter with upstream's
// error strings.
func npubParam(command string, raw json.RawMessage) (string, identity.PublicKey, error) {
	p, err := ctl.RequireParams(command, raw)
	if err != nil {
		return "", identity.PublicKey{}, err
	}
	npub, err := p.String("npub")
	if err != nil {
		return "", identity.PublicKey{}, err
	}
	pk, err := identity.DecodeNpub(npub)
	if err != nil {
		return "", identity.PublicKey{}, ctl.Errorf("invalid npub '%s': %v", npub, err)
	}
	return npub, pk, nil
}

// DisplayName is a peer's name for readers of a published snapshot (the
// Prometheus collector): its alias, else upstream's short npub. The
// show_* commands also consult the hosts file (Node.displayName).
func DisplayName(alias, npub string) string {
	if alias != "" {
		return alias
	}
	return ShortNpub(npub)
}

// connectionlessStats are the counters of a transport without
// connections (UDP): upstream's (packets, bytes, errors, mtu_exceeded,
// kernel_drops) and fips-go's (the queue and framing drops, and the
// connection counters every fips-go transport has, at 0).
type connectionlessStats struct {
	PacketsSent     uint64 `json:"packets_sent"`
	PacketsRecv     uint64 `json:"packets_recv"`
	BytesSent       uint64 `json:"bytes_sent"`
	BytesRecv       uint64 `json:"bytes_recv"`
	SendErrors      uint64 `json:"send_errors"`
	RecvErrors      uint64 `json:"recv_errors"`
	MTUExceeded     uint64 `json:"mtu_exceeded"`
	DroppedQueue    uint64 `json:"dropped_queue_full"`
	DroppedInvalid  uint64 `json:"dropped_invalid"`
	KernelDrops     uint64 `json:"kernel_drops"`
	ConnectionsUp   uint64 `json:"connections_active"`
	ConnectsRefused uint64 `json:"connections_refused"`
	ConnectFailures uint64 `json:"connect_failures"`
}

// ethernetStats are upstream's Ethernet counters (frames_too_short and
// frames_too_long, which upstream never counts, are 0 here too; what
// fips-go drops for framing is dropped_invalid) and fips-go's.
type ethernetStats struct {
	FramesSent  uint64 `json:"frames_sent"`
	FramesRecv  uint64 `json:"frames_recv"`
	BytesSent   uint64 `json:"bytes_sent"`
	BytesRecv   uint64 `json:"bytes_recv"`
	SendErrors  uint64 `json:"send_errors"`
	RecvErrors  uint64 `json:"recv_errors"`
	BeaconsSent uint64 `json:"beacons_sent"`
	BeaconsRecv uint64 `json:"beacons_recv"`
	// BeaconsKeyless (fips-go's): next's beacons among BeaconsRecv,
	// counted on a node that speaks next (absent while 0).
	BeaconsKeyless    uint64 `json:"beacons_keyless,omitempty"`
	FramesTooShort    uint64 `json:"frames_too_short"`
	FramesTooLong     uint64 `json:"frames_too_long"`
	MTUExceeded       uint64 `json:"mtu_exceeded"`
	DroppedQueue      uint64 `json:"dropped_queue_full"`
	DroppedInvalid    uint64 `json:"dropped_invalid"`
	KernelDrops       uint64 `json:"kernel_drops"`
	NeighboursRefused uint64 `json:"neighbours_refused"`
}

// transportStats is show_transports' stats object for a transport type:
// TCP's has upstream's connection counters and pool gauges too, and
// Ethernet's upstream's frame and beacon counters.
func transportStats(typ string, st transport.Stats) any {
	switch typ {
	case "tcp", "tor": // Tor runs on the TCP stream transport
		return st
	case "ethernet":
		return ethernetStats{FramesSent: st.PacketsSent, FramesRecv: st.PacketsRecv, BytesSent: st.BytesSent,
			BytesRecv: st.BytesRecv, SendErrors: st.SendErrors, RecvErrors: st.RecvErrors, BeaconsSent: st.BeaconsSent,
			BeaconsRecv: st.BeaconsRecv, BeaconsKeyless: st.BeaconsKeyless, MTUExceeded: st.MTUExceeded, DroppedQueue: st.DroppedQueue,
			DroppedInvalid: st.DroppedInvalid, KernelDrops: st.KernelDrops, NeighboursRefused: st.NeighboursRefused}
	}
	return connectionlessStats{PacketsSent: st.PacketsSent, PacketsRecv: st.PacketsRecv, BytesSent: st.BytesSent,
		BytesRecv: st.BytesRecv, SendErrors: st.SendErrors, RecvErrors: st.RecvErrors, MTUExceeded: st.MTUExceeded,
		DroppedQueue: st.DroppedQueue, DroppedInvalid: st.DroppedInvalid, KernelDrops: st.KernelDrops,
		ConnectionsUp: st.ConnectionsUp, ConnectsRefused: st.ConnectsRefused, ConnectFailures: st.ConnectFailures}
}

func nostrTraversal(f rendezvous.PeerFailure) ctl.NostrTraversal {
	nt := ctl.NostrTraversal{ConsecutiveFailures: f.ConsecutiveFailures}
	if f.CooldownUntilMs != 0 {
		v := f.CooldownUntilMs
		nt.CooldownUntilMs, nt.InCooldown = &v, true
	}
	if f.HasSkew {
		v := f.SkewMs
		nt.LastObservedSkewMs = &v
	}
	return nt
}

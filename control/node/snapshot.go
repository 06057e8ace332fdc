package node

import (
	"slices"
	"sort"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/history"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/rendezvous/lan"
	"github.com/fips-go/fips/control/tree"

	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
)

// Snapshot is an immutable view of the node, published by the loop for
// readers on other goroutines.
type Snapshot struct {
	At          time.Time
	State       State
	Started     time.Time
	Peers       []PeerView
	Connections []peer.Connection
	Transports  []TransportView
	PeerStats   peer.Stats
	ACL         *peer.ACLSnapshot
	RxDrops     uint64
	AQMDrops    uint64 // established frames dropped by receive-queue CoDel
	LinkMsgs    map[string]uint64
	Rejected    map[string]uint64
	Tree        tree.Snapshot
	Bloom       bloom.Snapshot
	Routing     route.Snapshot
	RouteStats  route.Stats
	IDCacheLen  int
	Sessions    int
	PQSessions  int // established sessions on post-quantum keys
	SessionMMP  []SessionMMPView

	CEReceived, KernelDropEvents uint64
	NoRouteLookups               uint64
	TunName, TunState            string
	IPv6                         ctl.IPv6Stats
	IDCacheMax                   int
	MeshSize                     *uint64
	// Native is the native datagram API's counters.
	Native       ctl.NativeStatsJSON
	NativeLimits ctl.NativeLimitsJSON
	// SessStats are the session layer's counters.
	SessStats session.Stats
	// Retries are the configured peers waiting for a redial.
	Retries []peer.RetryInfo
	// Keys of nodes the snapshot names (peers, self), for npubs and names.
	Names map[identity.NodeAddr]nameInfo
	// Dataplane is which dataplane runs and why.
	Dataplane ctl.DataplaneView
	// Sparklines are the stats history's tails as of its last sample;
	// History counts what it holds and refused.
	Sparklines history.Sparklines
	History    history.Stats
	// Rendezvous is Nostr discovery's state; nil when it is off.
	Rendezvous *RendezvousView
	// LAN is mDNS browsing's counters; nil when it is off.
	LAN *lan.Stats
}

type nameInfo struct {
	npub, alias string
}

// PeerView is one active peer.
type PeerView struct {
	Addr            identity.NodeAddr
	NodeAddr        string
	Npub            string
	Alias           string
	IPv6            string
	LinkID          uint64
	TransportID     transport.ID
	TransportType   string
	TransportAddr   string
	Direction       peer.Direction
	Since           time.Time
	LastRecv        time.Time
	KBit            bool
	PostQuantum     bool // the link's keys come from an ML-KEM-768 upgrade
	RekeyInProgress bool
	Draining        bool
	Stats           peer.PeerStats
	DecryptFailures int
	OurIndex        uint32
	SendCounter     uint64
	HighestRecv     uint64
	TreeView        tree.PeerView
	HasTreeView     bool
	Bloom           bloom.PeerInfo
	MMP             mmp.Snapshot
	// WireFormat is "v0" or "v1"; Profile the profile a v1 peer declared
	// ("" on v0 links).
	WireFormat, Profile string
}

// TransportView is one transport.
type TransportView struct {
	ID        transport.ID
	Type      string
	Name      string
	State     transport.State
	MTU       int
	LocalAddr string
	Stats     transport.Stats
	// Onion and TorMode: a Tor transport's onion service address ("" until
	// it is up) and mode.
	Onion, TorMode string
}

// hostNamer is a transport whose addresses can stand for host names
// (Tor: an onion is given an address of its own).
type hostNamer interface {
	HostName(transport.Addr) string
}

// addrName renders a peer's transport address as the operator wrote it:
// the host name it stands for, when it stands for one.
func (n *Node) addrName(id transport.ID, a transport.Addr) string {
	if hn, ok := n.transports[id].(hostNamer); ok {
		if name := hn.HostName(a); name != "" {
			return name
		}
	}
	return a.String()
}

func (n *Node) publishIfChanged(now time.Time) {
	// Packets change counters constantly; a snapshot at most every 100 ms
	// keeps readers fresh without rebuilding it per packet burst.
	// Peers coming or going are published at once.
	if s := n.snap.Load(); !n.core.dirty && s != nil && now.Sub(s.At) < 100*time.Millisecond {
		return
	}
	n.publish(now)
}

func (n *Node) publish(now time.Time) {
	n.core.dirty = false
	c := n.core
	s := &Snapshot{At: now, State: n.State(), Started: n.started, PeerStats: n.peers.Stats(),
		RxDrops: n.rxDrops.Load(), AQMDrops: n.aqm.Drops.Load() + n.engineAQMDrops(), LinkMsgs: map[string]uint64{}, Rejected: map[string]uint64{},
		Tree: c.tree.Snapshot(), Names: map[identity.NodeAddr]nameInfo{},
		Routing: c.route.Snapshot(now), RouteStats: c.route.Stats(), IDCacheLen: c.ids.Len(), IDCacheMax: c.ids.max,
		Sessions: c.sess.Len(), PQSessions: c.sess.PQLen(), CEReceived: c.ceReceived, KernelDropEvents: n.dropEvents,
		NoRouteLookups: c.noRouteLookups, SessStats: c.sess.Stats(),
		TunName: "-", TunState: n.tunState, IPv6: c.IPv6Stats(), Dataplane: n.dataplane,
		Sparklines: n.hist.Sparklines(), History: n.hist.Stats(), Native: nativeStats(n.native.Counters),
		NativeLimits: nativeLimits(n.native.Counters)}
	if n.nativeSrv != nil {
		s.NativeLimits.RefusedConnections = n.nativeSrv.Refused()
		s.NativeLimits.EvictedConnections = n.nativeSrv.Evicted()
	}
	s.Dataplane.Engine = n.engineView()
	s.Dataplane.OuterCE = n.outerCE.Load()
	if n.eng != nil {
		s.Dataplane.OuterCE += n.eng.Stats().OuterCE.Load()
		s.CEReceived += n.eng.Stats().CEDelivered.Load()
	}
	n.addEngineForwarding(&s.RouteStats)
	n.addFastIPv6(&s.IPv6)
	s.Routing.Forwarding = s.RouteStats.Forwarding
	if n.tunName != "" {
		s.TunName = n.tunName
	}
	s.IPv6.ReadQueueDrops = n.tunDrops.Load()
	s.IPv6.WriteErrors += n.tunWriteErrors // the workers' were added by addFastIPv6
	s.IPv6.ReadQueueAQMDrops = n.tunAQM.Drops.Load()
	for _, a := range sortedAddrs(c.smmp) {
		v := SessionMMPView{Remote: a, MMP: c.smmp[a].link.Snapshot()}
		if pk, ok := c.sess.RemoteKey(a); ok {
			v.Npub = pk.Npub()
		}
		s.SessionMMP = append(s.SessionMMP, v)
	}
	parent, hasParent := c.tree.Parent()
	s.Bloom = c.bloom.Snapshot(parent, !hasParent)
	if est, ok := c.bloom.MeshSizeEstimate(); ok {
		s.MeshSize = &est
	}
	s.Names[n.id.NodeAddr()] = nameInfo{npub: n.id.Npub()}
	for k, v := range c.rejected {
		s.Rejected[k] = v
	}
	n.peers.Peers(func(p *peer.Peer) {
		v := PeerView{
			Addr: p.NodeAddr, NodeAddr: p.NodeAddr.String(), Npub: p.PublicKey.Npub(), Alias: p.Alias,
			IPv6: p.NodeAddr.IPv6().String(), LinkID: p.LinkID, TransportID: p.Transport,
			TransportAddr: n.addrName(p.Transport, p.Addr), Direction: p.Direction, Since: p.Since, LastRecv: p.LastRecv(),
			KBit: p.KBit(), PostQuantum: p.PostQuantum(), RekeyInProgress: p.RekeyInProgress(), Draining: p.Draining(), Stats: p.Stats(),
			DecryptFailures: p.ConsecutiveDecryptFailures(), OurIndex: p.OurIndex(), SendCounter: p.SendCounter(),
			HighestRecv: p.HighestRecv(), WireFormat: p.LinkFormat(),
		}
		if p.V1() {
			v.Profile = p.Profile().String()
		}
		v.TreeView, v.HasTreeView = c.tree.PeerView(p.NodeAddr)
		v.Bloom, _ = c.bloom.Peer(p.NodeAddr)
		v.MMP = p.MMP().Snapshot()
		s.Names[p.NodeAddr] = nameInfo{npub: p.PublicKey.Npub(), alias: p.Alias}
		if t := n.transports[p.Transport]; t != nil {
			v.TransportType = t.Type()
		}
		s.Peers = append(s.Peers, v)
	})
	sort.Slice(s.Peers, func(i, j int) bool { return s.Peers[i].NodeAddr < s.Peers[j].NodeAddr })
	n.peers.Retries(func(r peer.RetryInfo) {
		s.Retries = append(s.Retries, r)
		if _, ok := s.Names[r.NodeAddr]; !ok {
			s.Names[r.NodeAddr] = nameInfo{npub: n.staticNpubs[r.NodeAddr], alias: r.Alias}
		}
	})
	n.peers.Connections(func(c peer.Connection) { s.Connections = append(s.Connections, c) })
	sort.Slice(s.Connections, func(i, j int) bool { return s.Connections[i].LinkID < s.Connections[j].LinkID })
	for _, id := range n.order {
		t := n.transports[id]
		tv := TransportView{ID: id, Type: t.Type(), Name: t.Name(), State: t.State(),
			MTU: t.MTU(), LocalAddr: t.LocalAddr(), Stats: t.Stats()}
		if svc, ok := t.(onionService); ok {
			tv.Onion = svc.OnionAddress()
		}
		if m, ok := t.(interface{ Mode() string }); ok && t.Type() == "tor" {
			tv.TorMode = m.Mode()
		}
		s.Transports = append(s.Transports, tv)
	}
	if a := n.peers.ACL(); a != nil {
		snap := a.Snapshot()
		s.ACL = &snap
	}
	for k, v := range n.core.linkMsgs {
		s.LinkMsgs[k.String()] = v
	}
	s.Rendezvous = n.rdvView(now)
	if n.lan != nil {
		st := n.lan.Stats()
		st.DialLimited = n.lanDialLimited
		s.LAN = &st
	}
	n.snap.Store(s)
}

// SessionMMPView is one session's metrics.
type SessionMMPView struct {
	Remote identity.NodeAddr
	Npub   string // "" until the remote's key is known
	MMP    mmp.Snapshot
}

func sortedAddrs[V any](m map[identity.NodeAddr]V) []identity.NodeAddr {
	out := make([]identity.NodeAddr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, identity.NodeAddr.Compare)
	return out
}

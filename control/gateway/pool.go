// Package gateway is fips-gateway's machinery: the virtual-address pool
// that stands in for mesh addresses on a LAN, the DNS listener that hands
// its addresses out, the control commands that report them and, on Linux,
// the nftables NAT and the proxy-NDP entries and route that carry LAN
// traffic to the mesh. It follows upstream FIPS's src/gateway.
package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fips-go/fips/control/logging"
)

// MaxPoolAddrs bounds the pool: prefixes wider than /112 still hand out at
// most this many addresses less one (the base address is never used), as
// upstream caps its pool at 2^16.
const MaxPoolAddrs = 1 << 16

// ErrInvalidCIDR is wrapped by NewPool for a pool that is not an IPv6
// "addr/len".
var ErrInvalidCIDR = errors.New("invalid CIDR")

// ErrInvalidPrefix is returned for a prefix length outside 1..128.
var ErrInvalidPrefix = errors.New("prefix length must be between 1 and 128")

// ExhaustedError is returned by Allocate when every address is mapped.
type ExhaustedError struct{ InUse int }

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("pool exhausted (%d addresses in use)", e.InUse)
}

// MappingState is where a mapping is in its life, with upstream's names.
type MappingState int

// Mapping states.
const (
	// Allocated: handed out by DNS, no conntrack session seen yet.
	Allocated MappingState = iota
	// Active: conntrack reports sessions through it.
	Active
	// Draining: idle past the TTL, reclaimed once the grace period ends
	// unless traffic resumes.
	Draining
)

func (s MappingState) String() string {
	switch s {
	case Allocated:
		return "Allocated"
	case Active:
		return "Active"
	case Draining:
		return "Draining"
	}
	return "MappingState(" + strconv.Itoa(int(s)) + ")"
}

// NodeAddr is the 16-byte node address the gateway keys mappings on. As
// upstream, it is recovered from the mesh address (fd + the node address's
// first 15 bytes), so its last byte is always zero.
type NodeAddr [16]byte

func (a NodeAddr) String() string { return fmt.Sprintf("%x", a[:]) }

// NodeAddrFromMesh derives the key of a mesh address; ok is false unless
// it is in fd00::/8.
func NodeAddrFromMesh(mesh netip.Addr) (NodeAddr, bool) {
	if !mesh.Is6() || mesh.Is4In6() {
		return NodeAddr{}, false
	}
	b := mesh.As16()
	if b[0] != 0xfd {
		return NodeAddr{}, false
	}
	var n NodeAddr
	copy(n[:15], b[1:])
	return n, true
}

// Mapping is one virtual address ↔ mesh address binding.
type Mapping struct {
	NodeAddr       NodeAddr
	VirtualIP      netip.Addr
	MeshAddr       netip.Addr
	DNSName        string
	State          MappingState
	Created        time.Time
	LastReferenced time.Time
	DrainStart     time.Time // zero unless Draining
	Sessions       uint32
	// Client is the LAN address whose query created the mapping (zero
	// when unknown); it counts against that client's share.
	Client netip.Addr
	// poolIdx and clientIdx are the mapping's places in the pool's
	// reclaim heaps (-1: not there).
	poolIdx, clientIdx int
}

// EventKind says what a pool Event asks of NAT and the network setup.
type EventKind int

// Event kinds.
const (
	MappingCreated EventKind = iota
	MappingRemoved
)

// Event is a mapping coming or going.
type Event struct {
	Kind      EventKind
	VirtualIP netip.Addr
	MeshAddr  netip.Addr
}

// Status is the pool's utilisation.
type Status struct {
	Total, Allocated, Active, Draining, Free int
	// Refused counts allocations turned away because the pool was full
	// (ours; upstream only logs them).
	Refused uint64
	// Evicted counts idle mappings (no sessions) reclaimed early to make
	// room: the least recently referenced, the pool's or, at its
	// MaxPerClient, the asking client's own. ClientRefused counts a
	// client's allocations refused because its share was all in use.
	// Both are fips-go's: upstream has no per-client bound.
	Evicted, ClientRefused uint64
}

// MappingInfo is a mapping as show_mappings reports it.
type MappingInfo struct {
	VirtualIP, MeshAddr  netip.Addr
	NodeAddr             NodeAddr
	DNSName              string
	State                MappingState
	Sessions             uint32
	AgeSecs, LastRefSecs uint64
}

// Conntrack counts the conntrack entries whose original destination is a
// virtual address.
type Conntrack interface {
	ActiveSessions(virtualIP netip.Addr) (uint32, error)
}

// Pool hands out virtual addresses from a prefix, one per mesh
// destination, and reclaims them once idle. It is not safe for concurrent
// use: the caller serialises (fips-gateway holds one mutex around it).
type Pool struct {
	available []netip.Addr // FIFO: allocate from the front, free to the back
	mappings  map[NodeAddr]*Mapping
	reverse   map[netip.Addr]NodeAddr
	ttl       time.Duration
	grace     time.Duration
	total     int
	refused   uint64
	// perClient counts the mappings each LAN client created; maxPerClient
	// bounds it for AllocateFor.
	perClient     map[netip.Addr]int
	maxPerClient  int
	evicted       uint64
	clientRefused uint64
	// lru holds the reclaimable mappings (no sessions, not Active) in
	// reclaim order, clientLRU each client's: reclaiming for room is
	// O(log n) however full the pool is.
	lru       lruHeap
	clientLRU map[netip.Addr]*lruHeap
	now       func() time.Time
	log       *slog.Logger
}

// PoolOptions configures NewPool.
type PoolOptions struct {
	CIDR      string // gateway.pool
	TTLSecs   uint64 // gateway.dns.ttl
	GraceSecs uint64 // gateway.pool_grace_period
	// MaxPerClient is gateway.dns.max_mappings_per_client (0: the
	// default, DefaultMaxPerClient).
	MaxPerClient int
	Now          func() time.Time
	Log          *slog.Logger
}

// NewPool builds the pool: the prefix's addresses after its base, at most
// MaxPoolAddrs-1 of them.
func NewPool(o PoolOptions) (*Pool, error) {
	base, bits, err := parseCIDR(o.CIDR)
	if err != nil {
		return nil, err
	}
	if bits == 0 || bits > 128 {
		return nil, ErrInvalidPrefix
	}
	n := uint64(MaxPoolAddrs)
	if hb := 128 - bits; hb < 16 {
		n = 1 << hb
	}
	p := &Pool{
		mappings:     make(map[NodeAddr]*Mapping),
		reverse:      make(map[netip.Addr]NodeAddr),
		perClient:    make(map[netip.Addr]int),
		clientLRU:    make(map[netip.Addr]*lruHeap),
		maxPerClient: o.MaxPerClient,
		ttl:          secs(o.TTLSecs),
		grace:        secs(o.GraceSecs),
		now:          o.Now,
		log:          o.Log,
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.maxPerClient <= 0 {
		p.maxPerClient = DefaultMaxPerClient
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.log = logging.WithTarget(p.log, "fips::gateway::pool")
	p.available = make([]netip.Addr, 0, n-1)
	for i := uint64(1); i < n; i++ {
		a, ok := addOffset(base, i)
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrInvalidCIDR, o.CIDR)
		}
		p.available = append(p.available, a)
	}
	p.total = len(p.available)
	p.log.Info("Virtual IP pool initialized", "cidr", o.CIDR, "addresses", p.total)
	return p, nil
}

// secs converts configured seconds, saturating far beyond any sane value.
func secs(s uint64) time.Duration {
	const maxSecs = uint64(1<<63-1) / uint64(time.Second)
	if s > maxSecs {
		s = maxSecs
	}
	return time.Duration(s) * time.Second
}

// parseCIDR is upstream's parse: exactly "addr/len", an IPv6 address (no
// zone) and a decimal length; the address is not masked.
func parseCIDR(s string) (netip.Addr, int, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 2 {
		return netip.Addr{}, 0, fmt.Errorf("%w: %s", ErrInvalidCIDR, s)
	}
	a, err := netip.ParseAddr(parts[0])
	if err != nil || !a.Is6() || a.Zone() != "" {
		return netip.Addr{}, 0, fmt.Errorf("%w: %s", ErrInvalidCIDR, s)
	}
	bits, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("%w: %s", ErrInvalidCIDR, s)
	}
	if bits > 128 {
		return netip.Addr{}, 0, ErrInvalidPrefix
	}
	return a, int(bits), nil
}

// addOffset is a+i as 128-bit integers; ok is false on overflow.
func addOffset(a netip.Addr, i uint64) (netip.Addr, bool) {
	b := a.As16()
	carry := i
	for k := 15; k >= 0 && carry > 0; k-- {
		s := uint64(b[k]) + (carry & 0xff)
		b[k] = byte(s)
		carry = carry>>8 + s>>8
	}
	if carry > 0 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom16(b), true
}

// Allocate returns the virtual address for a destination, handing out a
// new one (isNew) unless the destination already has one, whose TTL clock
// it then restarts. A full pool is an *ExhaustedError and is counted.
func (p *Pool) Allocate(node NodeAddr, mesh netip.Addr, dnsName string) (vip netip.Addr, isNew bool, err error) {
	now := p.now()
	if m, ok := p.mappings[node]; ok {
		m.LastReferenced = now
		p.reindex(m, false)
		return m.VirtualIP, false, nil
	}
	if len(p.available) == 0 {
		p.refused++
		return netip.Addr{}, false, &ExhaustedError{InUse: len(p.mappings)}
	}
	vip = p.available[0]
	p.available = p.available[1:]
	m := &Mapping{NodeAddr: node, VirtualIP: vip, MeshAddr: mesh, DNSName: dnsName,
		State: Allocated, Created: now, LastReferenced: now, poolIdx: -1, clientIdx: -1}
	p.mappings[node] = m
	p.reverse[vip] = node
	p.reindex(m, false)
	p.log.Info("Allocated virtual IP", "virtual_ip", vip, "mesh_addr", mesh, "dns_name", dnsName)
	return vip, true, nil
}

// DefaultMaxPerClient is how many mappings one LAN client's queries may
// hold by default (gateway.dns.max_mappings_per_client).
const DefaultMaxPerClient = 256

// AllocateFor is Allocate for a query from client (a LAN address), with
// bounds upstream lacks: a client already holding MaxPerClient mappings
// gets a new one only by giving up its own least recently referenced idle
// one (none idle: refused, counted as ClientRefused); a full pool reclaims
// its least recently referenced idle mapping rather than refuse everyone.
// removed lists the mappings reclaimed, whose NAT and NDP must go.
func (p *Pool) AllocateFor(client netip.Addr, node NodeAddr, mesh netip.Addr, dnsName string) (vip netip.Addr, isNew bool, removed []Event, err error) {
	if m, ok := p.mappings[node]; ok {
		m.LastReferenced = p.now()
		p.reindex(m, false)
		return m.VirtualIP, false, nil, nil
	}
	if client.IsValid() && p.perClient[client] >= p.maxPerClient {
		ev, ok := p.evictIdle(client, true)
		if !ok {
			p.clientRefused++
			return netip.Addr{}, false, nil, &ExhaustedError{InUse: p.perClient[client]}
		}
		removed = append(removed, ev)
	}
	if len(p.available) == 0 {
		if ev, ok := p.evictIdle(netip.Addr{}, false); ok {
			removed = append(removed, ev)
		}
	}
	vip, isNew, err = p.Allocate(node, mesh, dnsName)
	if err == nil && client.IsValid() {
		m := p.mappings[node]
		m.Client = client
		p.perClient[client]++
		p.reindex(m, false)
	}
	return vip, isNew, removed, err
}

// evictIdle frees the least recently referenced mapping without sessions
// that is not Active (of client only, when own), counted as Evicted: the
// first in the reclaim heap, O(log n).
func (p *Pool) evictIdle(client netip.Addr, own bool) (Event, bool) {
	lru := p.lru.oldest()
	if own {
		lru = nil
		if h := p.clientLRU[client]; h != nil {
			lru = h.oldest()
		}
	}
	if lru == nil {
		return Event{}, false
	}
	p.evicted++
	p.log.Debug("Evicted idle mapping for room", "virtual_ip", lru.VirtualIP, "mesh_addr", lru.MeshAddr, "client", lru.Client)
	return p.free(lru), true
}

// free releases a mapping's address and returns its MappingRemoved.
func (p *Pool) free(m *Mapping) Event {
	p.reindex(m, true)
	delete(p.mappings, m.NodeAddr)
	delete(p.reverse, m.VirtualIP)
	if m.Client.IsValid() {
		if p.perClient[m.Client]--; p.perClient[m.Client] <= 0 {
			delete(p.perClient, m.Client)
		}
	}
	p.available = append(p.available, m.VirtualIP)
	return Event{Kind: MappingRemoved, VirtualIP: m.VirtualIP, MeshAddr: m.MeshAddr}
}

// Tick drives the state machine (upstream's, every 10 s there): sessions
// seen pin a mapping and make it Active; a mapping idle past the TTL
// drains; a draining one with traffic again is Active with a fresh grace
// window next time; one drained past the grace period is freed, and a
// MappingRemoved event returned for it.
func (p *Pool) Tick(now time.Time, ct Conntrack) []Event {
	var free []NodeAddr
	for node, m := range p.mappings {
		n, err := ct.ActiveSessions(m.VirtualIP)
		if err != nil {
			n = 0
		}
		was, lastRef := reclaimable(m), m.LastReferenced
		m.Sessions = n
		if n > 0 {
			m.LastReferenced = now
		}
		switch m.State {
		case Allocated:
			if n > 0 {
				m.State = Active
				p.log.Debug("Mapping activated", "virtual_ip", m.VirtualIP, "sessions", n)
			} else if now.Sub(m.LastReferenced) > p.ttl {
				m.State, m.DrainStart = Draining, now
				p.log.Debug("Allocated mapping TTL expired, draining", "virtual_ip", m.VirtualIP)
			}
		case Active:
			if now.Sub(m.LastReferenced) > p.ttl {
				m.State, m.DrainStart = Draining, now
			}
		case Draining:
			if n > 0 {
				m.State, m.DrainStart = Active, time.Time{}
				p.log.Debug("Draining mapping recovered to active (traffic resumed)", "virtual_ip", m.VirtualIP, "sessions", n)
			} else if !m.DrainStart.IsZero() && now.Sub(m.DrainStart) > p.grace {
				free = append(free, node)
			}
		}
		if reclaimable(m) != was || !m.LastReferenced.Equal(lastRef) {
			p.reindex(m, false)
		}
	}
	var events []Event
	for _, node := range free {
		m := p.mappings[node]
		p.log.Info("Reclaimed virtual IP", "virtual_ip", m.VirtualIP, "mesh_addr", m.MeshAddr)
		events = append(events, p.free(m))
	}
	return events
}

// Status counts mappings by state.
func (p *Pool) Status() Status {
	s := Status{Total: p.total, Free: len(p.available), Refused: p.refused, Evicted: p.evicted, ClientRefused: p.clientRefused}
	for _, m := range p.mappings {
		switch m.State {
		case Allocated:
			s.Allocated++
		case Active:
			s.Active++
		case Draining:
			s.Draining++
		}
	}
	return s
}

// Mappings reports every mapping, ordered by virtual address.
func (p *Pool) Mappings(now time.Time) []MappingInfo {
	out := make([]MappingInfo, 0, len(p.mappings))
	for _, m := range p.mappings {
		out = append(out, MappingInfo{VirtualIP: m.VirtualIP, MeshAddr: m.MeshAddr, NodeAddr: m.NodeAddr,
			DNSName: m.DNSName, State: m.State, Sessions: m.Sessions,
			AgeSecs: wholeSecs(now.Sub(m.Created)), LastRefSecs: wholeSecs(now.Sub(m.LastReferenced))})
	}
	sortInfos(out)
	return out
}

func wholeSecs(d time.Duration) uint64 {
	if d < 0 {
		return 0
	}
	return uint64(d / time.Second)
}

// Lookup returns the mapping a virtual address belongs to.
func (p *Pool) Lookup(vip netip.Addr) (Mapping, bool) {
	node, ok := p.reverse[vip]
	if !ok {
		return Mapping{}, false
	}
	return *p.mappings[node], true
}

func sortInfos(s []MappingInfo) {
	slices.SortFunc(s, func(a, b MappingInfo) int { return a.VirtualIP.Compare(b.VirtualIP) })
}

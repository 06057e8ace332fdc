package native

import (
	"errors"
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// PendingDeadline is how long a flow announced on a listener waits to be
// taken by the listener's task before it is discarded (flows_expired).
const PendingDeadline = 5 * time.Second

// Registry refusals (each wrapped with upstream's message).
var (
	ErrPortTaken    = errors.New("port in use")
	ErrFlowTaken    = errors.New("flow exists")
	ErrNoPort       = errors.New("no ephemeral port free")
	ErrTooManyFlows = errors.New("node flow ceiling reached")
	// ErrClientLimit is fips-go's per-client bound
	// (node.native_api.max_flows_per_client).
	ErrClientLimit  = errors.New("client flow ceiling reached")
	ErrBacklogFull  = errors.New("listener backlog full")
	ErrNoPending    = errors.New("no pending flow")
	ErrBadPeer      = errors.New("invalid peer")
	ErrSocketPair   = errors.New("could not open a socket pair")
	ErrNoFlow       = errors.New("no such flow")
	ErrIO           = errors.New("write failed")
	ErrShuttingDown = errors.New("node is shutting down")
	ErrDebugOff     = errors.New("debug command disabled")
)

// FlowKey names a flow: the peer and both ports. It is what an inbound
// datagram is matched on.
type FlowKey struct {
	Peer   identity.NodeAddr
	Remote uint16
	Local  uint16
}

// ClientID identifies the program behind a setup call (its process id
// where the platform reports one), for the per-client bound.
type ClientID uint64

// Limits bound the registry (node.native_api.*).
type Limits struct {
	PerFlow  int // pending_per_flow: datagrams held per flow
	Backlog  int // flows announced on one listener and not yet taken
	MaxFlows int // flows on this node, pending and established
	// PerClient bounds the flows and listeners one client holds (0: a
	// quarter of MaxFlows, at least 1; MaxFlows: no per-client bound, as
	// upstream).
	PerClient int
}

// Arrival tells a listener's task a flow arrived.
type Arrival struct {
	Flow   uint64
	Key    FlowKey
	PubKey identity.PublicKey
}

// DropReason is why an inbound datagram (or a whole arriving flow) was
// dropped.
type DropReason uint8

// Drop reasons, upstream's eight plus fips-go's per-client bound.
const (
	DropNoPort DropReason = iota + 1
	DropBacklogFull
	DropTooManyFlows
	DropPendingQueueFull
	DropFlowQueueFull
	DropArrivalQueueFull
	DropListenerNotReading
	DropListenerGone
	DropClientLimit
)

// String is upstream's text for the reason (DropReason::as_str).
func (r DropReason) String() string {
	switch r {
	case DropNoPort:
		return "no listener or flow on that port"
	case DropBacklogFull:
		return "listener backlog full"
	case DropTooManyFlows:
		return "node flow ceiling reached"
	case DropPendingQueueFull, DropFlowQueueFull:
		return "queue full"
	case DropArrivalQueueFull:
		return "arrival queue full"
	case DropListenerNotReading:
		return "listener not reading arrivals"
	case DropListenerGone:
		return "listener closed"
	case DropClientLimit:
		return "client flow ceiling reached"
	}
	return "unknown"
}

// OutcomeKind is what Deliver did with a datagram.
type OutcomeKind uint8

// Delivery outcomes.
const (
	Delivered OutcomeKind = iota + 1 // onto an established flow's queue
	Announced                        // a new flow on a listener, datagram held
	Held                             // held for a flow not yet taken
	Dropped
)

// Outcome is Deliver's answer.
type Outcome struct {
	Kind   OutcomeKind
	Flow   uint64     // Announced, Held
	Reason DropReason // Dropped
}

// String is the debug arrive command's outcome text.
func (o Outcome) String() string {
	switch o.Kind {
	case Delivered:
		return "delivered"
	case Announced:
		return "announced"
	case Held:
		return "held"
	}
	return "dropped: " + o.Reason.String()
}

// Counters are upstream's native counter family (show_native_flows'
// stats, show_metrics' native) plus fips-go's refusals of the per-client
// bound.
type Counters struct {
	FlowsOpened, FlowsAccepted, FlowsClosed, FlowsExpired uint64

	SentDatagrams, SentBytes         uint64
	ReceivedDatagrams, ReceivedBytes uint64

	DropNoPort, DropBacklogFull, DropTooManyFlows         uint64
	DropPendingQueueFull, DropFlowQueueFull               uint64
	DropArrivalQueueFull, DropListenerNotReading          uint64
	DropListenerGone, DropOversize                        uint64
	DropClientLimit, RefusedClientLimit, RefusedTooMany   uint64
	OutboundBackpressured, RefusedPorts, RefusedFlowTaken uint64
}

// CountDrop counts one drop.
func (c *Counters) CountDrop(r DropReason) {
	switch r {
	case DropNoPort:
		c.DropNoPort++
	case DropBacklogFull:
		c.DropBacklogFull++
	case DropTooManyFlows:
		c.DropTooManyFlows++
	case DropPendingQueueFull:
		c.DropPendingQueueFull++
	case DropFlowQueueFull:
		c.DropFlowQueueFull++
	case DropArrivalQueueFull:
		c.DropArrivalQueueFull++
	case DropListenerNotReading:
		c.DropListenerNotReading++
	case DropListenerGone:
		c.DropListenerGone++
	case DropClientLimit:
		c.DropClientLimit++
	}
}

type listener struct {
	client   ClientID
	arrivals chan<- Arrival
	pending  []uint64
}

type flow struct {
	id     uint64
	client ClientID
	pubKey identity.PublicKey
	sink   chan []byte
	at     time.Time
}

type pending struct {
	key      FlowKey
	client   ClientID
	pubKey   identity.PublicKey
	listener uint16
	held     [][]byte
	at       time.Time
}

// owner of a local port: a listener (flow nil) or one connected flow.
type owner struct{ flow *FlowKey }

// Registry is which local ports are held and where an inbound datagram
// goes. It does no I/O and is not safe for concurrent use: the node's
// event loop owns it.
type Registry struct {
	limits    Limits
	ports     map[uint16]owner
	listeners map[uint16]*listener
	flows     map[FlowKey]*flow
	byID      map[uint64]FlowKey
	pending   map[uint64]*pending
	pendKey   map[FlowKey]uint64
	clients   map[ClientID]int
	nextFlow  uint64
	nextEph   uint16
	// Counters is the native counter family; the node adds the send side.
	Counters Counters
}

// NewRegistry is an empty registry; limits below 1 are raised to 1.
func NewRegistry(l Limits) *Registry {
	l.PerFlow, l.Backlog, l.MaxFlows = max(l.PerFlow, 1), max(l.Backlog, 1), max(l.MaxFlows, 1)
	if l.PerClient <= 0 {
		l.PerClient = max(l.MaxFlows/4, 1)
	}
	l.PerClient = min(l.PerClient, l.MaxFlows)
	return &Registry{limits: l, ports: map[uint16]owner{}, listeners: map[uint16]*listener{},
		flows: map[FlowKey]*flow{}, byID: map[uint64]FlowKey{}, pending: map[uint64]*pending{},
		pendKey: map[FlowKey]uint64{}, clients: map[ClientID]int{}, nextFlow: 1, nextEph: PortEphemeralMin}
}

// Limits are the registry's bounds.
func (r *Registry) Limits() Limits { return r.limits }

// FlowCount is the flows held, pending and established.
func (r *Registry) FlowCount() int { return len(r.flows) + len(r.pending) }

// PortCount is the local ports held.
func (r *Registry) PortCount() int { return len(r.ports) }

// ClientCount is what one client holds (flows, pending flows on its
// listeners, listeners).
func (r *Registry) ClientCount(c ClientID) int { return r.clients[c] }

func (r *Registry) claim(c ClientID) { r.clients[c]++ }

func (r *Registry) unclaim(c ClientID) {
	if r.clients[c] <= 1 {
		delete(r.clients, c)
		return
	}
	r.clients[c]--
}

func (r *Registry) clientFull(c ClientID) bool { return r.clients[c] >= r.limits.PerClient }

// Listen holds port (0: an ephemeral one) for client; arrivals hears of
// flows arriving on it.
func (r *Registry) Listen(c ClientID, port uint16, arrivals chan<- Arrival) (uint16, error) {
	if r.clientFull(c) {
		r.Counters.RefusedClientLimit++
		return 0, cmdErr(ErrClientLimit, "this client holds its maximum of %d flows and listeners", r.limits.PerClient)
	}
	port, err := r.localPort(port)
	if err != nil {
		return 0, err
	}
	r.ports[port] = owner{}
	r.listeners[port] = &listener{client: c, arrivals: arrivals}
	r.claim(c)
	return port, nil
}

func (r *Registry) localPort(port uint16) (uint16, error) {
	if port == 0 {
		return r.takeEphemeral()
	}
	if err := CheckBindable(port); err != nil {
		return 0, err
	}
	if _, held := r.ports[port]; held {
		r.Counters.RefusedPorts++
		return 0, cmdErr(ErrPortTaken, "port %d is already in use on this node", port)
	}
	return port, nil
}

func (r *Registry) takeEphemeral() (uint16, error) {
	for range 65536 - PortEphemeralMin {
		p := r.nextEph
		if p == 65535 {
			r.nextEph = PortEphemeralMin
		} else {
			r.nextEph++
		}
		if _, held := r.ports[p]; !held {
			return p, nil
		}
	}
	return 0, cmdErr(ErrNoPort, "no ephemeral port is free")
}

// Connect registers a flow from local (0: ephemeral) to pk:remote whose
// inbound datagrams go to sink. It returns the local port and flow id.
func (r *Registry) Connect(c ClientID, pk identity.PublicKey, remote, local uint16, sink chan []byte, now time.Time) (uint16, uint64, error) {
	if err := CheckBindable(remote); err != nil {
		return 0, 0, err
	}
	if r.FlowCount() >= r.limits.MaxFlows {
		r.Counters.RefusedTooMany++
		return 0, 0, cmdErr(ErrTooManyFlows, "this node holds its maximum of %d flows", r.limits.MaxFlows)
	}
	if r.clientFull(c) {
		r.Counters.RefusedClientLimit++
		return 0, 0, cmdErr(ErrClientLimit, "this client holds its maximum of %d flows and listeners", r.limits.PerClient)
	}
	port, err := r.localPort(local)
	if err != nil {
		return 0, 0, err
	}
	key := FlowKey{Peer: pk.NodeAddr(), Remote: remote, Local: port}
	if _, taken := r.flows[key]; taken {
		r.Counters.RefusedFlowTaken++
		return 0, 0, cmdErr(ErrFlowTaken, "a flow to that peer between ports %d and %d already exists", port, remote)
	}
	if _, taken := r.pendKey[key]; taken {
		r.Counters.RefusedFlowTaken++
		return 0, 0, cmdErr(ErrFlowTaken, "a flow to that peer between ports %d and %d already exists", port, remote)
	}
	id := r.nextFlow
	r.nextFlow++
	k := key
	r.ports[port] = owner{flow: &k}
	r.flows[key] = &flow{id: id, client: c, pubKey: pk, sink: sink, at: now}
	r.byID[id] = key
	r.claim(c)
	r.Counters.FlowsOpened++
	return port, id, nil
}

// Deliver decides where a datagram from pk (its node address src) on
// srcPort → dstPort goes, taking ownership of data. Outcomes are counted.
func (r *Registry) Deliver(src identity.NodeAddr, pk identity.PublicKey, srcPort, dstPort uint16, data []byte, now time.Time) Outcome {
	o := r.deliver(src, pk, srcPort, dstPort, data, now)
	if o.Kind == Dropped {
		r.Counters.CountDrop(o.Reason)
	} else {
		r.Counters.ReceivedDatagrams++
		r.Counters.ReceivedBytes += uint64(len(data))
	}
	return o
}

func (r *Registry) deliver(src identity.NodeAddr, pk identity.PublicKey, srcPort, dstPort uint16, data []byte, now time.Time) Outcome {
	key := FlowKey{Peer: src, Remote: srcPort, Local: dstPort}
	if id, ok := r.pendKey[key]; ok {
		if r.hold(id, data) {
			return Outcome{Kind: Held, Flow: id}
		}
		return Outcome{Kind: Dropped, Reason: DropPendingQueueFull}
	}
	if f := r.flows[key]; f != nil {
		select {
		case f.sink <- data:
			return Outcome{Kind: Delivered}
		default: // its client is not reading: its loss, never the node's
			return Outcome{Kind: Dropped, Reason: DropFlowQueueFull}
		}
	}
	l := r.listeners[dstPort]
	if l == nil {
		return Outcome{Kind: Dropped, Reason: DropNoPort}
	}
	if r.FlowCount() >= r.limits.MaxFlows {
		return Outcome{Kind: Dropped, Reason: DropTooManyFlows}
	}
	if len(l.pending) >= r.limits.Backlog {
		return Outcome{Kind: Dropped, Reason: DropBacklogFull}
	}
	if r.clientFull(l.client) {
		return Outcome{Kind: Dropped, Reason: DropClientLimit}
	}
	id := r.nextFlow
	select {
	case l.arrivals <- Arrival{Flow: id, Key: key, PubKey: pk}:
	default:
		return Outcome{Kind: Dropped, Reason: DropArrivalQueueFull}
	}
	r.nextFlow++
	r.pending[id] = &pending{key: key, client: l.client, pubKey: pk, listener: dstPort, held: [][]byte{data}, at: now}
	r.pendKey[key] = id
	l.pending = append(l.pending, id)
	r.claim(l.client)
	return Outcome{Kind: Announced, Flow: id}
}

func (r *Registry) hold(id uint64, data []byte) bool {
	p := r.pending[id]
	if p == nil || len(p.held) >= r.limits.PerFlow {
		return false
	}
	p.held = append(p.held, data)
	return true
}

// Accepted is a pending flow taken by its listener's task.
type Accepted struct {
	Key    FlowKey
	PubKey identity.PublicKey
	Held   [][]byte
}

// Accept promotes a pending flow to established, its inbound datagrams
// now going to sink, and returns what it held.
func (r *Registry) Accept(id uint64, sink chan []byte, now time.Time) (Accepted, error) {
	p := r.pending[id]
	if p == nil {
		return Accepted{}, cmdErr(ErrNoPending, "no pending flow %d", id)
	}
	r.dropPending(id)
	r.flows[p.key] = &flow{id: id, client: p.client, pubKey: p.pubKey, sink: sink, at: now}
	r.byID[id] = p.key
	r.Counters.FlowsAccepted++
	return Accepted{Key: p.key, PubKey: p.pubKey, Held: p.held}, nil
}

// dropPending forgets a pending flow but keeps its client claim.
func (r *Registry) dropPending(id uint64) *pending {
	p := r.pending[id]
	if p == nil {
		return nil
	}
	delete(r.pending, id)
	delete(r.pendKey, p.key)
	if l := r.listeners[p.listener]; l != nil {
		l.pending = slices.DeleteFunc(l.pending, func(x uint64) bool { return x == id })
	}
	return p
}

// Release forgets an established flow (its descriptor closed), freeing
// the local port it owns. It reports whether the flow existed.
func (r *Registry) Release(key FlowKey) bool {
	f := r.flows[key]
	if f == nil {
		return false
	}
	delete(r.flows, key)
	delete(r.byID, f.id)
	if o, ok := r.ports[key.Local]; ok && o.flow != nil && *o.flow == key {
		delete(r.ports, key.Local)
	}
	r.unclaim(f.client)
	r.Counters.FlowsClosed++
	return true
}

// Discard releases a flow its listener's task could not hand over.
func (r *Registry) Discard(key FlowKey, why DropReason) {
	if f := r.flows[key]; f != nil {
		delete(r.flows, key)
		delete(r.byID, f.id)
		r.unclaim(f.client)
	}
	r.Counters.CountDrop(why)
}

// ReleaseListener unbinds a listener; its pending flows go with it, flows
// already accepted from it stay.
func (r *Registry) ReleaseListener(port uint16) {
	l := r.listeners[port]
	if l == nil {
		return
	}
	if o, ok := r.ports[port]; ok && o.flow == nil {
		delete(r.ports, port)
	}
	for _, id := range slices.Clone(l.pending) {
		if p := r.dropPending(id); p != nil {
			r.unclaim(p.client)
		}
	}
	delete(r.listeners, port)
	r.unclaim(l.client)
}

// Expire discards pending flows older than PendingDeadline.
func (r *Registry) Expire(now time.Time) int {
	var n int
	for id, p := range r.pending {
		if now.Sub(p.at) >= PendingDeadline {
			r.dropPending(id)
			r.unclaim(p.client)
			n++
		}
	}
	r.Counters.FlowsExpired += uint64(n)
	return n
}

// FlowView is one flow as show_native_flows reports it.
type FlowView struct {
	Flow        uint64
	Key         FlowKey
	PubKey      identity.PublicKey
	Established bool
	Queued      int
	At          time.Time
}

// ListenerView is one listener: its port and its pending flows.
type ListenerView struct {
	Port    uint16
	Backlog int
}

// Flows lists every flow by id.
func (r *Registry) Flows() []FlowView {
	vs := make([]FlowView, 0, r.FlowCount())
	for key, f := range r.flows {
		vs = append(vs, FlowView{Flow: f.id, Key: key, PubKey: f.pubKey, Established: true, Queued: len(f.sink), At: f.at})
	}
	for id, p := range r.pending {
		vs = append(vs, FlowView{Flow: id, Key: p.key, PubKey: p.pubKey, Queued: len(p.held), At: p.at})
	}
	slices.SortFunc(vs, func(a, b FlowView) int { return cmpU64(a.Flow, b.Flow) })
	return vs
}

// Listeners lists every listener by port.
func (r *Registry) Listeners() []ListenerView {
	vs := make([]ListenerView, 0, len(r.listeners))
	for port, l := range r.listeners {
		vs = append(vs, ListenerView{Port: port, Backlog: len(l.pending)})
	}
	slices.SortFunc(vs, func(a, b ListenerView) int { return int(a.Port) - int(b.Port) })
	return vs
}

// Flow is the key and peer key of an established flow.
func (r *Registry) Flow(id uint64) (FlowKey, identity.PublicKey, bool) {
	key, ok := r.byID[id]
	if !ok {
		return FlowKey{}, identity.PublicKey{}, false
	}
	return key, r.flows[key].pubKey, true
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

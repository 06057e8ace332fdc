// Package transport defines what the node needs from a transport (UDP, TCP,
// and later Ethernet, Tor, BLE, AF_XDP): send one FMP packet to an address,
// hand received packets to the node, report MTU and state. Implementations
// live in fallback/ (portable sockets) and dataplane/ (Linux fast paths).
//
// A transport never interprets FMP beyond framing: authentication, peers
// and routing belong to the node.
package transport

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
)

// ID identifies a transport instance within one node. Receiver indices are
// allocated per transport, so (ID, index) names a link.
type ID uint32

// Addr is a remote transport address. It is comparable and allocation-free
// so it can key maps on the per-packet path. IP transports use IP; the
// Ethernet transport uses MAC (and leaves IP unset).
type Addr struct {
	IP netip.AddrPort
	// MAC is a link-layer address; the zero MAC means none.
	MAC MAC
}

// AddrFromMAC wraps a link-layer address.
func AddrFromMAC(m MAC) Addr { return Addr{MAC: m} }

// AddrFromIP wraps an IP address and port. A zone is kept on a
// link-local address only, as its interface index (an interface name is
// looked up; one that names no interface is kept as it is, and sends to
// it fail): see WithZoneIndex.
func AddrFromIP(ap netip.AddrPort) Addr {
	if ap.Addr().Zone() != "" {
		a, _ := canonicalZone(ap.Addr())
		ap = netip.AddrPortFrom(a, ap.Port())
	}
	return Addr{IP: ap}
}

// String renders the address as operators write it ("192.0.2.1:2121",
// "[fe80::1%3]:2121" for a link-local address reached on interface 3, as
// upstream prints it; "aa:bb:cc:dd:ee:ff" for a MAC, as upstream renders
// a 6-byte address).
func (a Addr) String() string {
	if !a.IP.IsValid() && !a.MAC.IsZero() {
		return a.MAC.String()
	}
	return a.IP.String()
}

// IsValid reports whether the address is set.
func (a Addr) IsValid() bool { return a.IP.IsValid() || !a.MAC.IsZero() }

// Packet is one received FMP packet. Data is owned by the receiver until
// it calls Buf.Release (when Buf is set), after which Data must not be
// touched: the transport reuses the buffer.
type Packet struct {
	Transport ID
	From      Addr
	Data      []byte
	Buf       *Buffer // nil: Data is garbage-collected as usual
	// Arrived is when the kernel received it (Unix ns), 0 when the
	// transport cannot tell: the node's queue management measures
	// queueing delay from it.
	Arrived int64
	// CE: the outer IP header carried ECN Congestion Experienced (the
	// transport read it with IP_RECVTOS / IPV6_RECVTCLASS).
	CE bool
}

// Buffer is a pooled receive buffer: transports that pool them hand one
// out with each Packet, and the receiver gives it back with Release once
// it no longer needs Data.
type Buffer struct {
	B    []byte
	pool *sync.Pool
}

// BufferPool hands out Buffers of one capacity.
type BufferPool struct{ p sync.Pool }

// NewBufferPool returns a pool of buffers of size bytes.
func NewBufferPool(size int) *BufferPool {
	bp := &BufferPool{}
	bp.p.New = func() any { return &Buffer{B: make([]byte, size), pool: &bp.p} }
	return bp
}

// Get returns a buffer of the pool's size (its contents are whatever the
// last user left).
func (bp *BufferPool) Get() *Buffer { return bp.p.Get().(*Buffer) }

// Copy copies b into a buffer from the pool: the buffer, its bytes, and
// false (and no buffer) when b does not fit one. The step every reader
// takes for a packet it hands on past its own buffers.
func (bp *BufferPool) Copy(b []byte) (*Buffer, []byte, bool) {
	buf := bp.Get()
	if len(b) > len(buf.B) {
		buf.Release()
		return nil, nil, false
	}
	return buf, buf.B[:copy(buf.B, b)], true
}

// Release returns b to its pool; a nil b or one from no pool is ignored.
func (b *Buffer) Release() {
	if b != nil && b.pool != nil {
		b.pool.Put(b)
	}
}

// Deliver hands a received packet to the node. It must not block; it
// returns false when the node's queue is full and the packet was dropped,
// so the transport can count the drop.
type Deliver func(Packet) bool

// State is a transport's lifecycle state as shown by show_transports.
type State string

// Transport states.
const (
	StateConfigured State = "configured"
	StateStarting   State = "starting"
	StateUp         State = "up"
	StateFailed     State = "failed"
	StateDown       State = "down"
)

// Transport is one running transport instance.
type Transport interface {
	ID() ID
	// Type is the config section name: "udp", "tcp", ….
	Type() string
	// Name is the instance name for named instances (transports.udp.<name>), or "".
	Name() string
	// MTU is the largest FMP packet this transport sends.
	MTU() int
	// LinkMTU is the MTU towards one address (TCP can learn it per connection).
	LinkMTU(Addr) int
	// LocalAddr is the bound address, for show_transports; "" when not bound.
	LocalAddr() string
	State() State
	// AcceptConnections says whether inbound handshakes (msg1 from strangers) are admitted.
	AcceptConnections() bool
	// Start binds and begins delivering received packets until ctx ends or Close.
	Start(ctx context.Context, deliver Deliver) error
	// Send transmits one FMP packet. It never blocks on the network for
	// long: connection-oriented transports queue behind a connection
	// attempt. A packet larger than LinkMTU fails with *MTUError.
	Send(to Addr, pkt []byte) error
	// CloseConnection drops any connection state for addr (no-op for UDP).
	CloseConnection(addr Addr)
	// ResolveAddr turns a configured peer address ("host:port") into an Addr.
	ResolveAddr(ctx context.Context, s string) (Addr, error)
	// Stats is a snapshot of the transport's counters for show_transports.
	Stats() Stats
	// Close stops the transport and releases its sockets; it waits for its goroutines.
	Close() error
}

// Reserver hands out room in a send queue: Reserve queues an n-byte
// packet to `to` and returns its bytes, which the caller fills (sealing
// in place) before its next call on the queue.
type Reserver interface {
	Reserve(to Addr, n int) ([]byte, error)
}

// Stats are counters every transport keeps.
type Stats struct {
	PacketsSent     uint64 `json:"packets_sent"`
	PacketsRecv     uint64 `json:"packets_recv"`
	BytesSent       uint64 `json:"bytes_sent"`
	BytesRecv       uint64 `json:"bytes_recv"`
	SendErrors      uint64 `json:"send_errors"`
	RecvErrors      uint64 `json:"recv_errors"`
	MTUExceeded     uint64 `json:"mtu_exceeded"`
	DroppedQueue    uint64 `json:"dropped_queue_full"`  // node queue full on delivery
	DroppedInvalid  uint64 `json:"dropped_invalid"`     // framing errors, punch packets, oversize
	KernelDrops     uint64 `json:"kernel_drops"`        // SO_RXQ_OVFL where available
	ConnectionsUp   uint64 `json:"connections_active"`  // connection-oriented only
	ConnectsRefused uint64 `json:"connections_refused"` // inbound over the cap, or accept off
	ConnectFailures uint64 `json:"connect_failures"`    // outbound dials that failed
	// Upstream's TCP counters: outbound connections made, inbound ones
	// admitted and refused (over max_inbound_connections), outbound dials
	// that timed out or were refused, and the connections open now by
	// direction.
	ConnectionsEstablished uint64 `json:"connections_established"`
	ConnectionsAccepted    uint64 `json:"connections_accepted"`
	ConnectionsRejected    uint64 `json:"connections_rejected"`
	ConnectTimeouts        uint64 `json:"connect_timeouts"`
	ConnectRefused         uint64 `json:"connect_refused"`
	PoolInbound            uint64 `json:"pool_inbound"`
	PoolOutbound           uint64 `json:"pool_outbound"`
	// UnauthenticatedClosed (fips-go) counts inbound connections closed
	// because no link authenticated on them within the deadline.
	UnauthenticatedClosed uint64 `json:"unauthenticated_closed"`
	// InboundSourceRefused (fips-go) counts inbound connections refused
	// because their source (IPv4 address, IPv6 /64) held its share of the
	// slots; UnauthenticatedEvicted (fips-go), unauthenticated inbound
	// connections closed to admit a newcomer when every slot was held.
	InboundSourceRefused   uint64 `json:"inbound_source_refused"`
	UnauthenticatedEvicted uint64 `json:"unauthenticated_evicted"`
	// ReplyDialsRefused (fips-go) counts handshake replies (msg2) for an
	// address with no connection, not dialled: they answer a msg1 on the
	// connection it came in on.
	ReplyDialsRefused uint64 `json:"reply_dials_refused"`
	// InvalidClosed (fips-go) counts inbound connections closed for an
	// invalid frame before any link authenticated on them.
	InvalidClosed uint64 `json:"invalid_closed"`
	// BeaconsSent and BeaconsRecv are upstream's Ethernet beacon
	// counters; NeighboursRefused (fips-go), beacons from new addresses
	// dropped because the neighbour buffer was full. Ethernet only:
	// omitted when 0, so other transports' stats do not grow them (and
	// the metrics endpoint does not export them yet).
	BeaconsSent       uint64 `json:"beacons_sent,omitempty"`
	BeaconsRecv       uint64 `json:"beacons_recv,omitempty"`
	NeighboursRefused uint64 `json:"neighbours_refused,omitempty"`
	// BeaconsKeyless (fips-go): upstream next's beacons, which name no
	// key (counted among BeaconsRecv; not learned from yet).
	BeaconsKeyless uint64 `json:"beacons_keyless,omitempty"`
}

// MTUError reports a send larger than the transport allows.
type MTUError struct {
	Size, MTU int
}

func (e *MTUError) Error() string {
	return fmt.Sprintf("packet of %d bytes exceeds transport MTU %d", e.Size, e.MTU)
}

// Errors transports return, wrapped.
var (
	ErrClosed         = errors.New("transport closed")
	ErrNotStarted     = errors.New("transport not started")
	ErrOutboundOnly   = errors.New("transport is outbound-only")
	ErrQueueFull      = errors.New("send queue full")
	ErrInvalidAddress = errors.New("invalid transport address")
	// ErrNoConnection: a reply (handshake msg2) for an address with no
	// connection, which a connection-oriented transport does not dial.
	ErrNoConnection = errors.New("no connection to reply on")
)

// Counters are the live counters behind Stats, safe for concurrent use;
// transports embed one and return Snapshot from Stats.
type Counters struct {
	PacketsSent, PacketsRecv     atomic.Uint64
	BytesSent, BytesRecv         atomic.Uint64
	SendErrors, RecvErrors       atomic.Uint64
	MTUExceeded                  atomic.Uint64
	DroppedQueue, DroppedInvalid atomic.Uint64
	KernelDrops                  atomic.Uint64
	ConnectionsUp                atomic.Int64
	ConnectsRefused              atomic.Uint64
	ConnectFailures              atomic.Uint64
	ConnectionsEstablished       atomic.Uint64
	ConnectionsAccepted          atomic.Uint64
	ConnectionsRejected          atomic.Uint64
	ConnectTimeouts              atomic.Uint64
	ConnectRefused               atomic.Uint64
	PoolInbound, PoolOutbound    atomic.Int64
}

// Snapshot reads every counter.
func (c *Counters) Snapshot() Stats {
	return Stats{
		PacketsSent: c.PacketsSent.Load(), PacketsRecv: c.PacketsRecv.Load(),
		BytesSent: c.BytesSent.Load(), BytesRecv: c.BytesRecv.Load(),
		SendErrors: c.SendErrors.Load(), RecvErrors: c.RecvErrors.Load(),
		MTUExceeded: c.MTUExceeded.Load(), DroppedQueue: c.DroppedQueue.Load(),
		DroppedInvalid: c.DroppedInvalid.Load(), KernelDrops: c.KernelDrops.Load(),
		ConnectionsUp:   uint64(max(0, c.ConnectionsUp.Load())),
		ConnectsRefused: c.ConnectsRefused.Load(), ConnectFailures: c.ConnectFailures.Load(),
		ConnectionsEstablished: c.ConnectionsEstablished.Load(), ConnectionsAccepted: c.ConnectionsAccepted.Load(),
		ConnectionsRejected: c.ConnectionsRejected.Load(), ConnectTimeouts: c.ConnectTimeouts.Load(),
		ConnectRefused: c.ConnectRefused.Load(),
		PoolInbound:    uint64(max(0, c.PoolInbound.Load())), PoolOutbound: uint64(max(0, c.PoolOutbound.Load())),
	}
}

// CheckDestination refuses an IP address no packet should be sent to: an
// invalid one, port 0, the unspecified address (which the kernel turns
// into "this host") and a multicast address. The error wraps
// ErrInvalidAddress.
func CheckDestination(ap netip.AddrPort) error {
	a := ap.Addr()
	switch {
	case !ap.IsValid():
		return fmt.Errorf("%w: no address", ErrInvalidAddress)
	case ap.Port() == 0:
		return fmt.Errorf("%w: port 0 is not a destination (want 1 to 65535)", ErrInvalidAddress)
	case a.IsUnspecified():
		return fmt.Errorf("%w: %s is the unspecified address, not a destination", ErrInvalidAddress, a)
	case a.IsMulticast():
		return fmt.Errorf("%w: %s is a multicast address", ErrInvalidAddress, a)
	}
	return nil
}

// CheckAddr is CheckDestination for an IP address; a MAC address is
// refused when it is all zeros, as upstream refuses it (broadcast and
// multicast MACs are sent to, as upstream does).
func CheckAddr(a Addr) error {
	if !a.IP.IsValid() && !a.MAC.IsZero() {
		return nil
	}
	return CheckDestination(a.IP)
}

// ListenNetwork picks the socket family for a bind address on proto
// ("udp" or "tcp"): an IPv4 bind is IPv4 only (as upstream), the IPv6
// wildcard is one dual-stack socket, a specific IPv6 address is IPv6 only.
func ListenNetwork(proto string, bind netip.AddrPort) string {
	a := bind.Addr()
	switch {
	case a.Is4():
		return proto + "4"
	case a.IsUnspecified():
		return proto
	default:
		return proto + "6"
	}
}

// The data half of a transport, in the spirit of wireguard-go's
// conn.Bind but with the roles turned: the transport owns the socket and
// its reader goroutines, the dataplane owns the per-packet work, and each
// reader is a dataplane worker running its packets to completion.

// DataPath is the dataplane as a transport's readers see it.
type DataPath interface {
	// NewWorker is called by each reader goroutine as it starts.
	NewWorker() DataWorker
}

// DataWorker is one reader goroutine's dataplane worker.
type DataWorker interface {
	// Receive offers one datagram, before any copy: b is writable and
	// valid only during the call. True: the worker consumed it; false:
	// the transport delivers it as usual (unchanged).
	// ce: the outer IP header carried Congestion Experienced.
	Receive(t ID, from Addr, b []byte, arrived int64, ce bool) bool
	// Flush ends a receive batch: what Receive queued is sent.
	Flush()
	// Close ends the worker (its reader is stopping).
	Close()
}

// Batched is a transport the dataplane runs on: its readers are
// dataplane workers (AttachDataPath, before Start), and each worker, and
// the node's loop, gets a send queue of its own on its socket
// (NewSender, once started), flushed once per batch. The UDP transport
// is one; TCP is not.
type Batched interface {
	AttachDataPath(DataPath)
	NewSender() (Sender, error)
}

// Sender is one goroutine's send queue on a transport. Not safe for
// concurrent use.
type Sender interface {
	Reserver
	// Flush sends what is queued.
	Flush()
	// Close flushes and releases the queue.
	Close()
}

// CheckStart is the check every transport's Start makes first: kind
// ("udp", "ethernet") names it in the error; deliver must be set, the
// transport not closed, and its state configured or failed (a failed
// Start may be retried).
func CheckStart(kind string, deliver Deliver, closed bool, state State) error {
	switch {
	case deliver == nil:
		return fmt.Errorf("%s: nil deliver", kind)
	case closed:
		return fmt.Errorf("%s: start: %w", kind, ErrClosed)
	case state != StateConfigured && state != StateFailed:
		return fmt.Errorf("%s: start: already %s", kind, state)
	}
	return nil
}

// CountBatch counts one flushed send batch: queued packets of bytes in
// all, of which the kernel took sent. The bytes of a batch that went out
// only in part are counted in proportion; the rest are send errors.
func (c *Counters) CountBatch(queued, sent int, bytes uint64) {
	c.PacketsSent.Add(uint64(sent))
	if sent == queued {
		c.BytesSent.Add(bytes)
		return
	}
	c.BytesSent.Add(bytes * uint64(sent) / uint64(max(queued, 1)))
	c.SendErrors.Add(uint64(max(queued-sent, 0)))
}

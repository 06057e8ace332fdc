// Package tcp is the portable TCP transport: one stream per remote
// address carrying FMP packets back to back with no length prefix; the
// receiver recovers packet boundaries from the FMP prefix alone
// (wire.ReadFMPPacket). A framing error means the stream cannot be
// resynchronised, so the connection is closed.
//
// Send never waits on the network. A packet for an address with no
// connection starts a dial in the background and waits in that
// connection's bounded queue (SendQueueLen packets); one writer goroutine
// per connection drains the queue, coalescing whatever is queued into one
// vectored write. Send copies the packet into a pooled buffer, so the
// caller may reuse pkt at once. Each received packet is copied into a
// right-sized slice that the node owns: one allocation per packet,
// acceptable for the fallback path.
//
// Inbound connections are keyed by their remote address: the node learns
// which peer it is from the handshake and replies to that address, which
// reuses the same stream.
package tcp

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// Defaults and limits (transports.tcp.* in fips.yaml).
const (
	DefaultMTU            = 1400
	DefaultConnectTimeout = 5 * time.Second
	DefaultKeepaliveSecs  = 30
	DefaultBufSize        = 2 << 20
	DefaultMaxInbound     = 256

	// MinMTU is the smallest MTU that can carry handshake msg1. Upstream
	// takes any u16; below this a link could never handshake.
	MinMTU = wire.FMPMsg1Size
	// MaxMTU is upstream's bound (the config field is a u16).
	MaxMTU = 65535

	// SendQueueLen bounds the packets waiting for one connection.
	SendQueueLen = 64
	// FirstFrameTimeout bounds the wait, from accept, for an inbound
	// connection's first complete FMP packet (upstream: 30 s), so silent
	// sockets cannot hold inbound slots.
	FirstFrameTimeout = 30 * time.Second
	// UnauthenticatedTimeout bounds the life, from accept, of an inbound
	// connection on which the node has not authenticated a link (see
	// Authenticated). A first frame alone proves nothing: without this,
	// connections that each send one frame and go idle hold every
	// inbound slot for good. Ours; upstream has no such deadline.
	UnauthenticatedTimeout = 30 * time.Second

	minPerSource   = 8        // floor of the derived per-source share
	readBufSize    = 16 << 10 // bufio buffer per connection
	maxWriteBatch  = 16       // packets per vectored write
	acceptBackoff  = 50 * time.Millisecond
	defaultNetwork = "tcp"
)

// Options configure one TCP transport instance. Start from Defaults: the
// zero value is not valid.
type Options struct {
	// BindAddr is a numeric "ip:port" to listen on; "" means outbound-only
	// with no listener. "0.0.0.0:p" listens on IPv4 only, "[::]:p" is one
	// dual-stack listener.
	BindAddr string
	// MTU is the largest FMP packet sent or accepted, MinMTU..MaxMTU.
	MTU int
	// ConnectTimeout bounds each outbound dial.
	ConnectTimeout time.Duration
	// NoDelay sets TCP_NODELAY.
	NoDelay bool
	// KeepaliveSecs is the idle time before TCP keepalive probes; 0 disables them.
	KeepaliveSecs int
	// RecvBufSize and SendBufSize are requested for SO_RCVBUF/SO_SNDBUF on
	// every connection; 0 leaves the OS default.
	RecvBufSize, SendBufSize int
	// MaxInboundConnections caps accepted connections held at once; 0
	// refuses every inbound connection.
	MaxInboundConnections int
	// MaxInboundPerSource caps the inbound connections one source holds
	// at once (an IPv4 address, an IPv6 /64); 0 means a quarter of
	// MaxInboundConnections, at least 8 (peers behind one NAT address on
	// a small hub keep working). Ours; upstream has no such cap.
	MaxInboundPerSource int

	// Kind is the transport type the instance reports (Type, logs):
	// "" means "tcp". The Tor transport runs on this one as "tor".
	Kind string
	// Dial, when set, opens each outbound stream instead of a direct TCP
	// connection (the Tor transport dials through SOCKS5); it is called
	// with a context bounded by ConnectTimeout.
	Dial func(ctx context.Context, to netip.AddrPort) (net.Conn, error)
	// Next also frames upstream next's version-1 packets (the node speaks
	// it: node.wire_format v1 or auto; docs/next.md §12.1), each packet by
	// its own version. Off, a version-1 packet ends the stream as
	// upstream master does.
	Next bool
}

// kind is Kind, or "tcp".
func (o Options) kind() string {
	if o.Kind == "" {
		return "tcp"
	}
	return o.Kind
}

// Defaults returns upstream's defaults (no listener).
func Defaults() Options {
	return Options{
		MTU:                   DefaultMTU,
		ConnectTimeout:        DefaultConnectTimeout,
		NoDelay:               true,
		KeepaliveSecs:         DefaultKeepaliveSecs,
		RecvBufSize:           DefaultBufSize,
		SendBufSize:           DefaultBufSize,
		MaxInboundConnections: DefaultMaxInbound,
	}
}

// Validate reports the first problem with o.
func (o Options) Validate() error {
	if o.BindAddr != "" {
		if _, err := netip.ParseAddrPort(o.BindAddr); err != nil {
			return fmt.Errorf("tcp: invalid bind address %q: %w", o.BindAddr, err)
		}
	}
	if o.MTU < MinMTU || o.MTU > MaxMTU {
		return fmt.Errorf("tcp: mtu %d out of range [%d, %d]", o.MTU, MinMTU, MaxMTU)
	}
	if o.ConnectTimeout <= 0 {
		return fmt.Errorf("tcp: connect timeout %v must be positive", o.ConnectTimeout)
	}
	if o.KeepaliveSecs < 0 {
		return fmt.Errorf("tcp: negative keepalive_secs %d", o.KeepaliveSecs)
	}
	if o.RecvBufSize < 0 || o.SendBufSize < 0 {
		return fmt.Errorf("tcp: negative socket buffer size (recv %d, send %d)", o.RecvBufSize, o.SendBufSize)
	}
	if o.MaxInboundConnections < 0 {
		return fmt.Errorf("tcp: negative max_inbound_connections %d", o.MaxInboundConnections)
	}
	if o.MaxInboundPerSource < 0 {
		return fmt.Errorf("tcp: negative inbound connections per source %d", o.MaxInboundPerSource)
	}
	return nil
}

// perSourceLimit is how many inbound connections one source may hold.
func (o Options) perSourceLimit() int {
	if o.MaxInboundPerSource > 0 {
		return o.MaxInboundPerSource
	}
	return max(minPerSource, o.MaxInboundConnections/4)
}

// sourceOf names an inbound connection's source for the per-source cap:
// the IPv4 address, or the IPv6 /64 (one host's usual share, chosen
// freely within it).
func sourceOf(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// conn is one connection, or one dial in progress, to a remote address.
type conn struct {
	addr    transport.Addr
	inbound bool
	source  netip.Prefix // inbound: for the per-source count
	seq     uint64       // inbound: admission order, oldest first evicted
	queue   chan *[]byte
	unsent  atomic.Int64  // queued packets not yet written or dropped
	done    chan struct{} // closed by teardown
	ctx     context.Context
	cancel  context.CancelFunc // aborts the dial

	// closing: CloseConnection asked for it while packets were queued;
	// the writer tears it down once they are out (flushTimer bounds that).
	closing atomic.Bool
	// sentMsg1 (inbound): its first frame was a msg1 (read, or seen
	// waiting in the socket), which the node has yet to judge; answered: the node sent a msg2 on it, so its msg1
	// passed the node's rate limits and DH. With every slot held, the
	// connections that are neither go first (see evictableLocked).
	sentMsg1, answered atomic.Bool
	// reading (inbound): its read loop has started, so whatever the
	// remote sent at once has been seen. Until then it is evicted after
	// connections that have had that chance and sent nothing valid.
	reading atomic.Bool

	// Guarded by Transport.mu.
	nc         net.Conn // nil while dialing
	mtu        int      // link MTU once connected
	down       bool
	authed     bool        // the node authenticated a link on it
	authTimer  *time.Timer // inbound: closes it unless authed in time
	flushTimer *time.Timer
}

// Transport is a TCP transport instance. It implements transport.Transport.
type Transport struct {
	id   transport.ID
	name string
	opts Options
	log  *slog.Logger

	// Seams for tests; fixed before Start.
	firstFrameTimeout time.Duration
	unauthTimeout     time.Duration
	dial              func(ctx context.Context, network, addr string) (net.Conn, error)
	onConnDown        func(transport.Addr)

	mu      sync.RWMutex
	state   transport.State
	started bool
	closed  bool
	ln      net.Listener
	local   string
	deliver transport.Deliver
	ctx     context.Context // ends at Close; parent of every dial
	cancel  context.CancelFunc
	stopCtx func() bool
	conns   map[transport.Addr]*conn
	inbound int
	// perSource counts inbound connections by source; inboundSeq
	// numbers admissions.
	perSource  map[netip.Prefix]int
	inboundSeq uint64
	wg         sync.WaitGroup

	bufs  sync.Pool
	rbufs *transport.BufferPool // received frames handed to the node
	stats transport.Counters
	// unauthClosed counts inbound connections closed for carrying no
	// authenticated link within unauthTimeout.
	unauthClosed atomic.Uint64
	// sourceRefused counts inbound connections refused because their
	// source held its share; unauthEvicted, unauthenticated ones closed
	// to make room for a newcomer when every slot was held.
	sourceRefused, unauthEvicted atomic.Uint64
	// replyDialsRefused counts msg2s for an address with no connection.
	replyDialsRefused atomic.Uint64
	// invalidClosed counts inbound connections closed for an invalid
	// frame before any link authenticated on them: one no inbound stream
	// starts with (a msg2), or one the node rejected (Rejected).
	invalidClosed atomic.Uint64
}

var _ transport.Transport = (*Transport)(nil)

// New validates opts and returns a transport in StateConfigured. A nil
// log means slog.Default().
func New(id transport.ID, name string, opts Options, log *slog.Logger) (*Transport, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log = transport.Logger(log, opts.kind(), id, name)
	t := &Transport{
		id:                id,
		name:              name,
		opts:              opts,
		log:               log,
		firstFrameTimeout: FirstFrameTimeout,
		unauthTimeout:     UnauthenticatedTimeout,
		state:             transport.StateConfigured,
		conns:             make(map[transport.Addr]*conn),
		perSource:         make(map[netip.Prefix]int),
		rbufs:             transport.NewBufferPool(max(opts.MTU, wire.FMPMsg1Size)),
	}
	t.dial = (&net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: -1}).DialContext
	if opts.Dial != nil {
		t.dial = func(ctx context.Context, _, addr string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return nil, fmt.Errorf("%s: dial %q: %w", opts.kind(), addr, transport.ErrInvalidAddress)
			}
			ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
			defer cancel()
			return opts.Dial(ctx, ap)
		}
	}
	mtu := opts.MTU
	t.bufs.New = func() any {
		b := make([]byte, 0, mtu)
		return &b
	}
	return t, nil
}

// ID implements transport.Transport.
func (t *Transport) ID() transport.ID { return t.id }

// Type implements transport.Transport.
func (t *Transport) Type() string { return t.opts.kind() }

// Name implements transport.Transport.
func (t *Transport) Name() string { return t.name }

// MTU implements transport.Transport.
func (t *Transport) MTU() int { return t.opts.MTU }

// LinkMTU is the MTU towards addr: on Linux, the smaller of MTU and the
// connection's TCP_MAXSEG once connected (never below MinMTU); MTU otherwise.
func (t *Transport) LinkMTU(addr transport.Addr) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.linkMTULocked(t.conns[addr])
}

func (t *Transport) linkMTULocked(c *conn) int {
	if c != nil && c.mtu > 0 {
		return c.mtu
	}
	return t.opts.MTU
}

// LocalAddr implements transport.Transport: the listener's address, or ""
// for an outbound-only transport.
func (t *Transport) LocalAddr() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.local
}

// State implements transport.Transport.
func (t *Transport) State() transport.State {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.state
}

// AcceptConnections implements transport.Transport: true when listening.
func (t *Transport) AcceptConnections() bool { return t.opts.BindAddr != "" }

// Stats implements transport.Transport.
func (t *Transport) Stats() transport.Stats {
	s := t.stats.Snapshot()
	s.UnauthenticatedClosed = t.unauthClosed.Load()
	s.InboundSourceRefused = t.sourceRefused.Load()
	s.UnauthenticatedEvicted = t.unauthEvicted.Load()
	s.ReplyDialsRefused = t.replyDialsRefused.Load()
	s.InvalidClosed = t.invalidClosed.Load()
	return s
}

// Start opens the listener, if any, and accepts until ctx ends or Close.
// A failed Start may be retried.
func (t *Transport) Start(ctx context.Context, deliver transport.Deliver) error {
	if deliver == nil {
		return errors.New("tcp: nil deliver")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("tcp: start: %w", transport.ErrClosed)
	}
	if t.state != transport.StateConfigured && t.state != transport.StateFailed {
		return fmt.Errorf("tcp: start: already %s", t.state)
	}
	t.state = transport.StateStarting
	if t.opts.BindAddr != "" {
		bind := netip.MustParseAddrPort(t.opts.BindAddr)
		bind = netip.AddrPortFrom(bind.Addr().Unmap(), bind.Port())
		lc := net.ListenConfig{KeepAlive: -1} // configured per connection
		ln, err := lc.Listen(context.Background(), transport.ListenNetwork("tcp", bind), bind.String())
		if err != nil {
			t.state = transport.StateFailed
			return fmt.Errorf("tcp: listen %s: %w", bind, err)
		}
		t.ln = ln
		t.local = ln.Addr().String()
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.deliver = deliver
	t.started = true
	if t.ln != nil {
		t.wg.Add(1)
		go t.acceptLoop(t.ln)
	}
	t.stopCtx = context.AfterFunc(ctx, func() { t.Close() })
	t.state = transport.StateUp
	t.log.Info("TCP transport started", "local_addr", t.local, "mtu", t.opts.MTU,
		"max_inbound", t.opts.MaxInboundConnections)
	return nil
}

// Send queues one FMP packet for addr, dialing in the background when no
// connection exists. It fails with *transport.MTUError above LinkMTU and
// with transport.ErrQueueFull when the connection's queue is full.
func (t *Transport) Send(to transport.Addr, pkt []byte) error {
	if !to.IsValid() {
		return fmt.Errorf("tcp: send: %w", transport.ErrInvalidAddress)
	}
	t.mu.RLock()
	if err := t.usableLocked(); err != nil {
		t.mu.RUnlock()
		return err
	}
	if c := t.conns[to]; c != nil {
		err := t.enqueueLocked(c, pkt)
		if err == nil && c.inbound && isMsg2(pkt) {
			c.answered.Store(true)
		}
		t.mu.RUnlock()
		return err
	}
	t.mu.RUnlock()

	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		return err
	}
	c := t.conns[to]
	if c == nil {
		if len(pkt) > t.opts.MTU { // no dial for a packet that cannot go
			t.stats.MTUExceeded.Add(1)
			return &transport.MTUError{Size: len(pkt), MTU: t.opts.MTU}
		}
		if isMsg2(pkt) {
			// A msg2 answers a msg1 on the connection it came in on; that
			// one is gone. Its address is the initiator's source port,
			// anyone's to choose: dialling it would let strangers who send
			// a msg1 and hang up have us open connections of their choice.
			t.replyDialsRefused.Add(1)
			return fmt.Errorf("tcp: send msg2 to %s: %w", to, transport.ErrNoConnection)
		}
		c = t.newConnLocked(to, false)
		t.conns[to] = c
		t.wg.Add(1)
		go t.dialAndRun(c)
		t.log.Debug("TCP connecting", "remote_addr", to.String())
	}
	return t.enqueueLocked(c, pkt)
}

// isMsg1Prefix reports whether p, an FMP prefix, is a msg1's (master's
// IK msg1 or next's XX msg1).
func isMsg1Prefix(p []byte) bool {
	plen := binary.LittleEndian.Uint16(p[2:])
	return p[0] == wire.FMPVersion<<4|wire.FMPPhaseMsg1 && plen == wire.FMPMsg1PayloadLen ||
		p[0] == wire.FMPVersionNext<<4|wire.FMPPhaseMsg1 && int(plen) == wire.FMPv1Msg1Size-wire.FMPPrefixSize
}

// isMsg2 reports whether pkt is an FMP handshake msg2 of either version.
func isMsg2(pkt []byte) bool {
	return len(pkt) > 0 && (pkt[0] == wire.FMPVersion<<4|wire.FMPPhaseMsg2 || pkt[0] == wire.FMPVersionNext<<4|wire.FMPPhaseMsg2)
}

func (t *Transport) usableLocked() error {
	switch {
	case t.closed:
		return fmt.Errorf("tcp: send: %w", transport.ErrClosed)
	case !t.started:
		return fmt.Errorf("tcp: send: %w", transport.ErrNotStarted)
	}
	return nil
}

// enqueueLocked copies pkt onto c's queue without blocking. t.mu is held
// (read or write), so teardown cannot drain c concurrently.
func (t *Transport) enqueueLocked(c *conn, pkt []byte) error {
	if mtu := t.linkMTULocked(c); len(pkt) > mtu {
		t.stats.MTUExceeded.Add(1)
		return &transport.MTUError{Size: len(pkt), MTU: mtu}
	}
	bp := t.bufs.Get().(*[]byte)
	*bp = append((*bp)[:0], pkt...)
	c.unsent.Add(1)
	select {
	case c.queue <- bp:
		return nil
	default:
		c.unsent.Add(-1)
		t.bufs.Put(bp)
		t.stats.SendErrors.Add(1)
		return fmt.Errorf("tcp: send to %s: %w", c.addr, transport.ErrQueueFull)
	}
}

func (t *Transport) newConnLocked(addr transport.Addr, inbound bool) *conn {
	ctx, cancel := context.WithCancel(t.ctx)
	return &conn{
		addr:    addr,
		inbound: inbound,
		queue:   make(chan *[]byte, SendQueueLen),
		done:    make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,
	}
}

// dialAndRun dials c's address, then becomes c's writer.
func (t *Transport) dialAndRun(c *conn) {
	defer t.wg.Done()
	nc, err := t.dial(c.ctx, defaultNetwork, transport.NetAddrPort(c.addr.IP).String())
	if err != nil {
		if c.ctx.Err() == nil { // not aborted by CloseConnection or Close
			t.stats.ConnectFailures.Add(1)
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
				t.stats.ConnectTimeouts.Add(1)
			case errors.Is(err, syscall.ECONNREFUSED):
				t.stats.ConnectRefused.Add(1)
			}
			t.log.Debug("TCP connect failed", "remote_addr", c.addr.String(), "err", err)
		}
		t.teardown(c)
		return
	}
	mtu := t.configure(nc)
	t.mu.Lock()
	if c.down {
		t.mu.Unlock()
		nc.Close()
		return
	}
	c.nc, c.mtu = nc, mtu
	t.stats.ConnectionsUp.Add(1)
	t.stats.ConnectionsEstablished.Add(1)
	t.stats.PoolOutbound.Add(1)
	t.wg.Add(1)
	t.mu.Unlock()
	t.log.Debug("TCP connection established", "remote_addr", c.addr.String(), "link_mtu", mtu)
	go t.readLoop(c, nc)
	t.writeLoop(c, nc)
}

// configure applies socket options and returns the link MTU. Failures
// only cost performance, so they are logged, not fatal.
func (t *Transport) configure(nc net.Conn) int {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return t.opts.MTU
	}
	var errs []error
	errs = append(errs, tc.SetNoDelay(t.opts.NoDelay))
	ka := net.KeepAliveConfig{Enable: false}
	if t.opts.KeepaliveSecs > 0 {
		// Only the idle time, as upstream; interval and count stay the OS's.
		ka = net.KeepAliveConfig{Enable: true, Idle: time.Duration(t.opts.KeepaliveSecs) * time.Second, Interval: -1, Count: -1}
	}
	errs = append(errs, tc.SetKeepAliveConfig(ka))
	if t.opts.RecvBufSize > 0 {
		errs = append(errs, tc.SetReadBuffer(t.opts.RecvBufSize))
	}
	if t.opts.SendBufSize > 0 {
		errs = append(errs, tc.SetWriteBuffer(t.opts.SendBufSize))
	}
	if err := errors.Join(errs...); err != nil {
		t.log.Warn("TCP socket options not fully applied", "remote_addr", nc.RemoteAddr().String(), "err", err)
	}
	mtu := t.opts.MTU
	if mss := maxSegment(tc); mss > 0 && mss < mtu {
		mtu = max(mss, MinMTU)
	}
	return mtu
}

// acceptLoop admits inbound connections until the listener closes.
func (t *Transport) acceptLoop(ln net.Listener) {
	defer t.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Warn("TCP accept error", "err", err)
			// Out of descriptors and the like: do not spin.
			tm := time.NewTimer(acceptBackoff)
			select {
			case <-t.ctx.Done():
				tm.Stop()
				return
			case <-tm.C:
			}
			continue
		}
		t.admit(nc)
	}
}

func (t *Transport) admit(nc net.Conn) {
	ap, err := netip.ParseAddrPort(nc.RemoteAddr().String())
	if err != nil {
		nc.Close()
		return
	}
	addr := transport.AddrFromIP(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))

	src := sourceOf(ap.Addr())

	// With every slot held, or the newcomer's source at its share, an
	// inbound connection on which no link has authenticated makes room
	// (of the newcomer's source when that is what is full): see
	// evictableLocked for which.
	// Only when every candidate slot carries an authenticated link is the
	// newcomer refused. Refusing newcomers alone would let anyone hold
	// every slot for good by opening a connection every
	// UnauthenticatedTimeout/max_inbound_connections; now a genuine peer
	// that sends its msg1 at once is answered within a round trip and is
	// then out of reach of connections that send nothing valid.
	t.mu.RLock()
	full := t.inbound >= t.opts.MaxInboundConnections
	srcFull := t.perSource[src] >= t.opts.perSourceLimit()
	var victim *conn
	if t.opts.MaxInboundConnections > 0 {
		switch {
		case srcFull:
			victim = t.evictableLocked(func(c *conn) bool { return c.source == src })
		case full:
			victim = t.evictableLocked(nil)
		}
	}
	t.mu.RUnlock()
	if (srcFull || full) && victim == nil {
		t.stats.ConnectsRefused.Add(1)
		t.stats.ConnectionsRejected.Add(1)
		if srcFull {
			t.sourceRefused.Add(1)
			t.log.Debug("refusing inbound TCP connection: its source holds its share of max_inbound_connections",
				"remote_addr", addr.String(), "source", src.String(), "max_per_source", t.opts.perSourceLimit())
		} else {
			t.log.Debug("refusing inbound TCP connection: max_inbound_connections reached",
				"remote_addr", addr.String(), "max", t.opts.MaxInboundConnections)
		}
		nc.Close()
		return
	}
	if victim != nil {
		t.unauthEvicted.Add(1)
		t.log.Debug("closing the oldest unauthenticated inbound TCP connection to admit a new one",
			"remote_addr", victim.addr.String(), "new_remote_addr", addr.String(), "rank", evictRank(victim))
		t.teardown(victim)
	}
	mtu := t.configure(nc)

	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		nc.Close()
		return
	}
	old := t.conns[addr]
	c := t.newConnLocked(addr, true)
	c.nc, c.mtu = nc, mtu
	t.inboundSeq++
	c.source, c.seq = src, t.inboundSeq
	t.conns[addr] = c
	t.inbound++
	t.perSource[src]++
	t.stats.ConnectionsUp.Add(1)
	t.stats.ConnectionsAccepted.Add(1)
	t.stats.PoolInbound.Add(1)
	t.wg.Add(2)
	if t.unauthTimeout > 0 {
		c.authTimer = time.AfterFunc(t.unauthTimeout, func() { t.expireUnauthenticated(c) })
	}
	t.mu.Unlock()
	if old != nil { // a stale entry under the same address
		t.teardown(old)
	}
	t.log.Debug("accepted inbound TCP connection", "remote_addr", addr.String(), "link_mtu", mtu)
	go t.readLoop(c, nc)
	go func() {
		defer t.wg.Done()
		t.writeLoop(c, nc)
	}()
}

// evictableLocked picks the inbound connection to close for a newcomer
// among those on which no link has authenticated (and that match, when
// match is set), oldest first in this order: those that had the chance
// to send a msg1 and did not; those not yet read (under a connection
// flood a read loop can wait its turn to run for longer than the flood
// takes to cycle through a source's share); those whose msg1 awaits the
// node's verdict; those the node answered. nil when none. A genuine peer
// sends its msg1 at once, so only connections that do the same, faster
// than the node answers it, can take its slot.
//
// Before one of the first two kinds goes, its socket is peeked at: a
// msg1 waiting there unread (its read loop has yet to run since it came:
// under a connection flood it can wait its turn for longer than the
// flood takes to cycle through a source's share) ranks it with the msg1
// senders, and the choice is made again — a few times at most, one
// syscall each.
func (t *Transport) evictableLocked(match func(*conn) bool) *conn {
	for range 8 {
		v := t.evictableAnyLocked(match)
		if v == nil || evictRank(v) >= 2 || v.nc == nil || !waitingMsg1(v.nc) {
			return v
		}
		v.sentMsg1.Store(true)
	}
	return t.evictableAnyLocked(match)
}

// evictableAnyLocked is evictableLocked without the peek.
func (t *Transport) evictableAnyLocked(match func(*conn) bool) *conn {
	var v *conn
	vr := 0
	for _, c := range t.conns {
		if !c.inbound || c.authed || c.down || (match != nil && !match(c)) {
			continue
		}
		r := evictRank(c)
		if v == nil || r < vr || (r == vr && c.seq < v.seq) {
			v, vr = c, r
		}
	}
	return v
}

func evictRank(c *conn) int {
	switch {
	case c.answered.Load():
		return 3
	case c.sentMsg1.Load():
		return 2
	case !c.reading.Load():
		return 1
	}
	return 0
}

// writeLoop writes queued packets until c is torn down.
func (t *Transport) writeLoop(c *conn, nc net.Conn) {
	batch := make([]*[]byte, 0, maxWriteBatch)
	var vec net.Buffers
	for {
		select {
		case <-c.done:
			return
		case bp := <-c.queue:
			batch = append(batch[:0], bp)
		}
	more:
		for len(batch) < maxWriteBatch {
			select {
			case bp := <-c.queue:
				batch = append(batch, bp)
			default:
				break more
			}
		}
		vec = vec[:0]
		n := 0
		for _, bp := range batch {
			vec = append(vec, *bp)
			n += len(*bp)
		}
		_, err := vec.WriteTo(nc)
		for i, bp := range batch {
			t.bufs.Put(bp)
			batch[i] = nil
		}
		c.unsent.Add(-int64(len(batch)))
		if err != nil {
			t.stats.SendErrors.Add(uint64(len(batch)))
			t.log.Debug("TCP write failed, closing connection", "remote_addr", c.addr.String(), "err", err)
			t.teardown(c)
			return
		}
		t.stats.PacketsSent.Add(uint64(len(batch)))
		t.stats.BytesSent.Add(uint64(n))
		if c.closing.Load() && c.unsent.Load() == 0 {
			t.teardown(c)
			return
		}
	}
}

// expireUnauthenticated closes an inbound connection on which no link was
// authenticated in time.
func (t *Transport) expireUnauthenticated(c *conn) {
	t.closeUnauthenticated(c, &t.unauthClosed, "no authenticated link on inbound TCP connection in time, closing it",
		"timeout", t.unauthTimeout)
}

// closeUnauthenticated closes c, counting it in n and logging msg with
// args, unless it is gone or a link authenticated on it meanwhile.
func (t *Transport) closeUnauthenticated(c *conn, n *atomic.Uint64, msg string, args ...any) {
	t.mu.RLock()
	skip := c.down || c.authed
	t.mu.RUnlock()
	if skip {
		return
	}
	n.Add(1)
	t.log.Debug(msg, append([]any{"remote_addr", c.addr.String()}, args...)...)
	t.teardown(c)
}

// Authenticated tells the transport that a frame from addr authenticated
// a link: its inbound connection is no longer subject to
// UnauthenticatedTimeout.
func (t *Transport) Authenticated(addr transport.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.conns[addr]; c != nil && !c.authed {
		c.authed = true
		if c.authTimer != nil {
			c.authTimer.Stop()
		}
	}
}

// Rejected tells the transport that the node found a frame from addr
// invalid (it did not parse, its handshake failed, its index or
// authentication tag matched no session). An inbound connection on which
// no link has authenticated is closed at once, and counted: it has shown
// it is not a FIPS peer's, and keeping it would only hold a slot.
// Connections carrying an authenticated link, and outbound ones, stay.
func (t *Transport) Rejected(addr transport.Addr) {
	t.mu.RLock()
	c := t.conns[addr]
	t.mu.RUnlock()
	if c != nil && c.inbound {
		t.closeInvalid(c, "the node rejected a frame on it")
	}
}

func (t *Transport) closeInvalid(c *conn, why string) {
	t.closeUnauthenticated(c, &t.invalidClosed, "invalid frame on unauthenticated inbound TCP connection, closing it",
		"reason", why)
}

// UnauthenticatedClosed counts inbound connections closed because no link
// was authenticated on them within UnauthenticatedTimeout.
func (t *Transport) UnauthenticatedClosed() uint64 { return t.unauthClosed.Load() }

// readLoop delivers FMP packets from nc until an error, then tears c down.
func (t *Transport) readLoop(c *conn, nc net.Conn) {
	defer t.wg.Done()
	br := bufio.NewReaderSize(nc, readBufSize)
	size := max(t.opts.MTU, wire.FMPMsg1Size)
	read := wire.ReadFMPPacket
	if t.opts.Next {
		size, read = max(size, wire.FMPv1StreamMax), wire.ReadFMPPacketAny
	}
	buf := make([]byte, size)
	mtu := uint16(t.opts.MTU)
	first := c.inbound && t.firstFrameTimeout > 0
	if first {
		nc.SetReadDeadline(time.Now().Add(t.firstFrameTimeout))
	}
	checkFirst := c.inbound
	c.reading.Store(true)
	for {
		pkt, err := read(br, buf, mtu)
		if err != nil {
			t.readFailed(c, err, first)
			t.teardown(c)
			return
		}
		if first {
			nc.SetReadDeadline(time.Time{})
			first = false
		}
		if checkFirst {
			checkFirst = false
			if pkt[0]&0x0f == wire.FMPPhaseMsg1 {
				c.sentMsg1.Store(true)
			}
			if pkt[0]&0x0f == wire.FMPPhaseMsg2 {
				// An inbound stream is an initiator's: it starts with a
				// msg1, or with frames of a link it had with us (its
				// earlier connection dropped). One starting with a msg2
				// is not a FIPS peer's. Later frames are the node's to
				// judge (Rejected).
				t.stats.DroppedInvalid.Add(1)
				t.closeInvalid(c, "first frame on an inbound connection is a msg2")
				t.teardown(c)
				return
			}
		}
		t.stats.PacketsRecv.Add(1)
		t.stats.BytesRecv.Add(uint64(len(pkt)))
		// A pooled copy the node releases once handled (see udp).
		pb := t.rbufs.Get()
		data := pb.B[:len(pkt)]
		copy(data, pkt)
		if !t.deliver(transport.Packet{Transport: t.id, From: c.addr, Data: data, Buf: pb}) {
			t.stats.DroppedQueue.Add(1)
			pb.Release()
		}
	}
}

// readFailed counts and logs why a connection's read side ended.
func (t *Transport) readFailed(c *conn, err error, firstFrame bool) {
	remote := c.addr.String()
	var de *wire.DecodeError
	switch {
	case errors.As(err, &de) && errors.Is(err, wire.ErrVersion):
		// Not FIPS at all (a TLS ClientHello reads as version 1): in
		// upstream's words, which its harness counts.
		t.stats.DroppedInvalid.Add(1)
		t.log.Debug("TCP receive error, removing connection", "remote_addr", remote,
			"error", "unknown FMP version: "+de.Detail)
	case errors.As(err, &de):
		t.stats.DroppedInvalid.Add(1)
		t.log.Debug("TCP framing error, closing connection", "remote_addr", remote, "err", err)
	case firstFrame && errors.Is(err, os.ErrDeadlineExceeded):
		t.log.Debug("no complete frame within the first-frame deadline, closing inbound connection",
			"remote_addr", remote, "timeout", t.firstFrameTimeout)
	case errors.Is(err, io.EOF):
		t.log.Debug("TCP connection closed by peer", "remote_addr", remote)
	case errors.Is(err, net.ErrClosed):
		// Closed here: CloseConnection, a write failure, or Close.
	default:
		t.stats.RecvErrors.Add(1)
		t.log.Debug("TCP receive error, closing connection", "remote_addr", remote, "err", err)
	}
}

// teardown removes c, closes its socket or aborts its dial, and drops
// (counting) whatever is still queued. It is idempotent.
func (t *Transport) teardown(c *conn) {
	t.mu.Lock()
	if c.down {
		t.mu.Unlock()
		return
	}
	c.down = true
	if t.conns[c.addr] == c {
		delete(t.conns, c.addr)
	}
	for _, tm := range []*time.Timer{c.authTimer, c.flushTimer} {
		if tm != nil {
			tm.Stop()
		}
	}
	if c.inbound {
		t.inbound--
		if t.perSource[c.source]--; t.perSource[c.source] <= 0 {
			delete(t.perSource, c.source)
		}
	}
	nc := c.nc
	if nc != nil {
		t.stats.ConnectionsUp.Add(-1)
		if c.inbound {
			t.stats.PoolInbound.Add(-1)
		} else {
			t.stats.PoolOutbound.Add(-1)
		}
	}
	t.mu.Unlock()

	c.cancel()
	close(c.done)
	if nc != nil {
		nc.Close()
	}
	// Send enqueues under t.mu and c is now unreachable, so this drain
	// sees every packet that will ever be queued (the writer may take
	// some first; it counts its own).
	for {
		select {
		case bp := <-c.queue:
			c.unsent.Add(-1)
			t.stats.SendErrors.Add(1)
			t.bufs.Put(bp)
			continue
		default:
		}
		break
	}
	if t.onConnDown != nil {
		t.onConnDown(c.addr)
	}
}

// CloseConnection closes the connection to addr, or abandons the dial.
// Packets already queued on an open connection (a Disconnect above all)
// are written first, for at most closeFlushTimeout.
func (t *Transport) CloseConnection(addr transport.Addr) {
	t.mu.Lock()
	c := t.conns[addr]
	if c == nil {
		t.mu.Unlock()
		return
	}
	if c.nc != nil && !c.down && c.unsent.Load() > 0 {
		if !c.closing.Swap(true) {
			c.flushTimer = time.AfterFunc(closeFlushTimeout, func() { t.teardown(c) })
		}
		t.mu.Unlock()
		t.log.Debug("TCP connection closing on request once its queue is written", "remote_addr", addr.String())
		return
	}
	t.mu.Unlock()
	t.log.Debug("TCP connection closed on request", "remote_addr", addr.String())
	t.teardown(c)
}

// ResolveAddr turns "host:port" into an address; host names are looked up
// each time (upstream's TCP transport keeps no cache) and the first
// answer is used.
func (t *Transport) ResolveAddr(ctx context.Context, s string) (transport.Addr, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return transport.Addr{}, fmt.Errorf("tcp: resolve %q: %w: %v", s, transport.ErrInvalidAddress, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || host == "" {
		return transport.Addr{}, fmt.Errorf("tcp: resolve %q: %w: want host:port with a numeric port", s, transport.ErrInvalidAddress)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		ips, lerr := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if lerr != nil {
			return transport.Addr{}, fmt.Errorf("tcp: resolve %q: %w: %v", s, transport.ErrInvalidAddress, lerr)
		}
		if len(ips) == 0 {
			return transport.Addr{}, fmt.Errorf("tcp: resolve %q: %w: no addresses", s, transport.ErrInvalidAddress)
		}
		ip = ips[0]
	}
	// A link-local peer needs its interface (or the one the listener is
	// bound to): fe80::1 names no host until then.
	var bind netip.Addr
	if ap, err := netip.ParseAddrPort(t.opts.BindAddr); err == nil {
		bind = ap.Addr()
	}
	if ip, err = transport.ScopeAddr(ip, bind); err != nil {
		return transport.Addr{}, fmt.Errorf("tcp: resolve %q: %w", s, err)
	}
	return transport.AddrFromIP(netip.AddrPortFrom(ip.Unmap(), uint16(port))), nil
}

// Close closes the listener and every connection and waits for all
// goroutines. It is idempotent; a closed transport cannot be restarted.
func (t *Transport) Close() error {
	var err error
	var conns []*conn
	t.mu.Lock()
	first := !t.closed
	t.closed = true // Send refuses from here on
	for _, c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	if !first {
		t.wg.Wait()
		return nil
	}
	// What was queued before Close (a shutdown's Disconnect frames above
	// all) still goes out: writers get closeFlushTimeout to empty their
	// queues before anything is cancelled or closed.
	deadline := time.Now().Add(closeFlushTimeout)
	for _, c := range conns {
		for t.connected(c) && c.unsent.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	t.mu.Lock()
	if t.stopCtx != nil {
		t.stopCtx()
	}
	if t.cancel != nil {
		t.cancel()
	}
	if t.ln != nil {
		err = t.ln.Close()
	}
	if t.started {
		t.log.Info("TCP transport stopped", "connections", len(conns))
	}
	t.local = ""
	t.state = transport.StateDown
	t.mu.Unlock()
	for _, c := range conns {
		t.teardown(c)
	}
	t.wg.Wait()
	return err
}

// closeFlushTimeout bounds how long Close waits for queued packets.
const closeFlushTimeout = time.Second

func (t *Transport) connected(c *conn) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return c.nc != nil && !c.down
}

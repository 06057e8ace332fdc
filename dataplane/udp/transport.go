package udp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane"
)

// Defaults and limits (transports.udp.* in fips.yaml).
const (
	DefaultBindAddr = "0.0.0.0:2121"
	DefaultMTU      = 1280
	DefaultBufSize  = 2 << 20 // SO_RCVBUF and SO_SNDBUF request

	// MinMTU is the smallest MTU that can carry handshake msg1. Upstream
	// takes any u16 here; below this a transport could never handshake.
	MinMTU = wire.FMPMsg1Size
	// MaxMTU is upstream's bound (the config field is a u16).
	MaxMTU = 65535

	// RecvHeadroom is how far past the MTU a received datagram may run.
	RecvHeadroom = 100

	outboundOnlyBind = "0.0.0.0:0"

	// After errRunPause consecutive receive errors the loop pauses errPause
	// between reads.
	errRunPause = 8
	errPause    = 10 * time.Millisecond
)

// Options configure one UDP transport instance. Start from Defaults: the
// zero value is not valid.
type Options struct {
	// BindAddr is a numeric "ip:port". "0.0.0.0:p" binds IPv4 only;
	// "[::]:p" binds one dual-stack socket. Ignored when OutboundOnly.
	BindAddr string
	// MTU is the largest FMP packet sent, MinMTU..MaxMTU.
	MTU int
	// RecvBufSize and SendBufSize are requested for SO_RCVBUF/SO_SNDBUF;
	// the kernel may clamp them. 0 leaves the OS default.
	RecvBufSize, SendBufSize int
	// OutboundOnly binds an ephemeral port (0.0.0.0:0) whatever BindAddr
	// says, and refuses inbound handshakes.
	OutboundOnly bool
	// AcceptConnections admits msg1 from strangers. Forced off by OutboundOnly.
	AcceptConnections bool
	// Workers is how many sockets (SO_REUSEPORT, each with its reader:
	// a dataplane worker) serve the port, 1..MaxWorkers; 0 means 1. The
	// kernel picks a socket by flow hash, so a peer's datagrams stay on
	// one worker. Linux only; elsewhere always 1.
	Workers int
}

// workerCount is how many sockets serve the port here.
func (t *Transport) workerCount() int {
	if multiSocket && t.opts.Workers > 1 {
		return t.opts.Workers
	}
	return 1
}

// MaxWorkers bounds Options.Workers.
const MaxWorkers = 64

// Defaults returns upstream's defaults.
func Defaults() Options {
	return Options{
		BindAddr:          DefaultBindAddr,
		MTU:               DefaultMTU,
		RecvBufSize:       DefaultBufSize,
		SendBufSize:       DefaultBufSize,
		AcceptConnections: true,
	}
}

// effectiveBind returns the address the socket binds.
func (o Options) effectiveBind() string {
	if o.OutboundOnly {
		return outboundOnlyBind
	}
	return o.BindAddr
}

// Validate reports the first problem with o.
func (o Options) Validate() error {
	if _, err := netip.ParseAddrPort(o.effectiveBind()); err != nil {
		return fmt.Errorf("udp: invalid bind address %q: %w", o.BindAddr, err)
	}
	if o.MTU < MinMTU || o.MTU > MaxMTU {
		return fmt.Errorf("udp: mtu %d out of range [%d, %d]", o.MTU, MinMTU, MaxMTU)
	}
	if o.Workers < 0 || o.Workers > MaxWorkers {
		return fmt.Errorf("udp: workers %d out of range [0, %d]", o.Workers, MaxWorkers)
	}
	if o.RecvBufSize < 0 || o.SendBufSize < 0 {
		return fmt.Errorf("udp: negative socket buffer size (recv %d, send %d)", o.RecvBufSize, o.SendBufSize)
	}
	return nil
}

// Transport is a UDP transport instance. It implements transport.Transport.
type Transport struct {
	id   transport.ID
	name string
	opts Options
	bind netip.AddrPort
	log  *slog.Logger

	mu      sync.Mutex
	state   transport.State
	conn    *net.UDPConn
	extra   []*net.UDPConn // the other SO_REUSEPORT sockets of the port
	local   string
	stopCtx func() bool
	wg      sync.WaitGroup

	// send is the socket Send uses; nil before Start and after Close.
	send   atomic.Pointer[net.UDPConn]
	closed atomic.Bool

	stats transport.Counters
	res   *resolver
	bufs  *transport.BufferPool // receive copies handed to the node
	// adopted is a socket bound elsewhere (a NAT-traversal punch) that
	// Start uses instead of binding; nil for a configured transport.
	adopted    *net.UDPConn
	wasAdopted bool // made by Adopt: its start line is upstream's for that

	// dp is the dataplane the reader runs (nil: every datagram goes to
	// Deliver); bc is the batched socket workers' senders write to.
	dp transport.DataPath
	bc atomic.Pointer[Conn]
}

var (
	_ transport.Batched = (*Transport)(nil)
)

// AttachDataPath implements transport.Batched; call it before Start.
func (t *Transport) AttachDataPath(dp transport.DataPath) {
	t.mu.Lock()
	t.dp = dp
	t.mu.Unlock()
}

// Batch sizes: messages per recvmmsg and per sendmmsg.
const (
	RecvBatch = 32
	SendBatch = 32
)

var _ transport.Transport = (*Transport)(nil)

// New validates opts and returns a transport in StateConfigured. A nil
// log means slog.Default().
func New(id transport.ID, name string, opts Options, log *slog.Logger) (*Transport, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	bind := netip.MustParseAddrPort(opts.effectiveBind())
	bind = netip.AddrPortFrom(bind.Addr().Unmap(), bind.Port())
	log = transport.Logger(log, "udp", id, name)
	return &Transport{
		id:    id,
		name:  name,
		opts:  opts,
		bind:  bind,
		log:   log,
		state: transport.StateConfigured,
		res:   newResolver(bind),
		bufs:  transport.NewBufferPool(opts.MTU + RecvHeadroom),
	}, nil
}

// Adopt wraps a socket that is already bound — the one a NAT-traversal
// punch opened, so the NAT mapping the peer reaches is kept — as a
// transport. opts.BindAddr and OutboundOnly are ignored; the rest (MTU,
// buffers, AcceptConnections) apply as to a configured instance. The
// transport owns conn from here: Close closes it, and so does a failed
// Start.
func Adopt(id transport.ID, name string, conn *net.UDPConn, opts Options, log *slog.Logger) (*Transport, error) {
	la, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, errors.New("udp: adopt: not a UDP socket")
	}
	ap := la.AddrPort()
	opts.BindAddr, opts.OutboundOnly = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String(), false
	t, err := New(id, name, opts, log)
	if err != nil {
		return nil, err
	}
	t.adopted, t.wasAdopted = conn, true
	return t, nil
}

// ID implements transport.Transport.
func (t *Transport) ID() transport.ID { return t.id }

// Type implements transport.Transport.
func (t *Transport) Type() string { return "udp" }

// Name implements transport.Transport.
func (t *Transport) Name() string { return t.name }

// MTU implements transport.Transport.
func (t *Transport) MTU() int { return t.opts.MTU }

// LinkMTU implements transport.Transport: UDP has one MTU for every address.
func (t *Transport) LinkMTU(transport.Addr) int { return t.opts.MTU }

// LocalAddr implements transport.Transport.
func (t *Transport) LocalAddr() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.local
}

// State implements transport.Transport.
func (t *Transport) State() transport.State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// AcceptConnections implements transport.Transport.
func (t *Transport) AcceptConnections() bool {
	return !t.opts.OutboundOnly && t.opts.AcceptConnections
}

// CloseConnection implements transport.Transport; UDP keeps no per-address state.
func (t *Transport) CloseConnection(transport.Addr) {}

// Stats implements transport.Transport.
func (t *Transport) Stats() transport.Stats { return t.stats.Snapshot() }

// Start binds the socket and starts the receive goroutine, which runs
// until ctx ends or Close is called. A failed Start may be retried.
func (t *Transport) Start(ctx context.Context, deliver transport.Deliver) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := transport.CheckStart("udp", deliver, t.closed.Load(), t.state); err != nil {
		return err
	}
	t.state = transport.StateStarting
	if t.opts.OutboundOnly && t.opts.BindAddr != "" && t.opts.BindAddr != outboundOnlyBind {
		t.log.Info("outbound_only set: bind_addr ignored, binding an ephemeral port",
			"bind_addr", t.opts.BindAddr, "bound", outboundOnlyBind)
	}
	workers := t.workerCount()
	conn := t.adopted
	if conn != nil {
		workers = 1 // an adopted (punched) socket is served alone
	}
	lc := net.ListenConfig{}
	if workers > 1 {
		lc.Control = reusePort
	}
	network := transport.ListenNetwork("udp", t.bind)
	if conn == nil {
		pc, err := lc.ListenPacket(context.Background(), network, t.bind.String())
		if err != nil {
			t.state = transport.StateFailed
			return fmt.Errorf("udp: bind %s: %w", t.bind, err)
		}
		conn = pc.(*net.UDPConn)
	}
	t.adopted = nil // a failed Start closes it: it cannot be retried
	if err := t.configure(conn, true); err != nil {
		conn.Close()
		t.state = transport.StateFailed
		return err
	}
	// The other sockets bind the port the first one got (an ephemeral
	// bind included).
	bound := conn.LocalAddr().String()
	var extra []*net.UDPConn
	fail := func(err error) error {
		conn.Close()
		for _, c := range extra {
			c.Close()
		}
		t.state = transport.StateFailed
		return err
	}
	for range workers - 1 {
		pc, err := lc.ListenPacket(context.Background(), network, bound)
		if err != nil {
			return fail(fmt.Errorf("udp: bind worker socket %s: %w", bound, err))
		}
		c := pc.(*net.UDPConn)
		extra = append(extra, c)
		if err := t.configure(c, false); err != nil {
			return fail(err)
		}
	}
	// Upstream's warning when the kernel refuses GSO (its encrypt
	// workers'); here once per socket, each of which falls back alone.
	gsoRefused := func(err error) {
		logging.WithTarget(t.log, "fips::node::encrypt_worker").Warn(
			"UDP_GSO refused by kernel; falling back to sendmmsg for life of process", "error", err)
	}
	var extraBC []*Conn
	for _, c := range extra {
		bc, err := Open(c, max(RecvBatch, SendBatch))
		if err != nil {
			return fail(err)
		}
		bc.SetGSORefused(gsoRefused)
		extraBC = append(extraBC, bc)
	}
	bc, err := Open(conn, max(RecvBatch, SendBatch))
	if err != nil {
		conn.Close()
		t.state = transport.StateFailed
		return err
	}
	bc.SetGSORefused(gsoRefused)
	t.log.Debug("UDP batching", "gso", bc.GSO(), "gro", bc.GRO(), "recv_batch", RecvBatch, "send_batch", SendBatch)
	t.conn = conn
	t.local = conn.LocalAddr().String()
	t.send.Store(conn)
	t.bc.Store(bc)
	t.extra = extra
	t.wg.Add(1 + len(extraBC))
	go t.readLoop(bc, deliver, t.dp)
	for _, c := range extraBC {
		go t.readLoop(c, deliver, t.dp)
	}
	t.stopCtx = context.AfterFunc(ctx, func() { t.Close() })
	t.state = transport.StateUp
	return nil
}

// configure sets socket buffers and the kernel drop counter, and logs what
// the kernel granted.
func (t *Transport) configure(conn *net.UDPConn, primary bool) error {
	if n := t.opts.RecvBufSize; n > 0 {
		if err := conn.SetReadBuffer(n); err != nil {
			return fmt.Errorf("udp: set recv buffer: %w", err)
		}
	}
	if n := t.opts.SendBufSize; n > 0 {
		if err := conn.SetWriteBuffer(n); err != nil {
			return fmt.Errorf("udp: set send buffer: %w", err)
		}
	}
	drops := "unsupported"
	if haveDropCounter {
		drops = "on"
		if err := enableDropCounting(conn); err != nil {
			drops = "off"
			t.log.Warn("SO_RXQ_OVFL unavailable: kernel drops will not be counted", "err", err)
		}
	}
	if !primary {
		return nil
	}
	started := "UDP transport started"
	if t.wasAdopted {
		started = "UDP transport adopted existing socket"
	}
	rcv, snd, err := grantedBufSizes(conn)
	if err != nil {
		t.log.Info(started, "local_addr", conn.LocalAddr().String(), "mtu", t.opts.MTU,
			"kernel_drop_counter", drops, "buffers", "unknown: "+err.Error())
		return nil
	}
	// Upstream's lines, from its socket-setup module.
	bl := logging.WithTarget(t.log, bufLogTarget)
	if rcv < t.opts.RecvBufSize {
		bl.Warn("UDP recv buffer clamped by kernel (increase net.core.rmem_max)",
			"requested", t.opts.RecvBufSize, "actual", rcv)
	}
	if snd < t.opts.SendBufSize {
		bl.Warn("UDP send buffer clamped by kernel (increase net.core.wmem_max)",
			"requested", t.opts.SendBufSize, "actual", snd)
	}
	t.log.Info(started, "local_addr", conn.LocalAddr().String(), "mtu", t.opts.MTU,
		"recv_buf", rcv, "send_buf", snd, "kernel_drop_counter", drops, "workers", t.workerCount())
	return nil
}

// readLoop delivers datagrams until the socket is closed.
func (t *Transport) readLoop(conn *Conn, deliver transport.Deliver, dp transport.DataPath) {
	defer t.wg.Done()
	var w transport.DataWorker
	if dp != nil {
		w = dp.NewWorker()
		defer w.Close()
	}
	limit := t.opts.MTU + RecvHeadroom
	// One byte over the limit shows an oversize datagram; a kernel that
	// coalesces runs (UDP_GRO) needs room for a whole run.
	size := limit + 1
	if conn.GRO() {
		size = MaxMessage
	}
	ms := make([]Message, RecvBatch)
	for i := range ms {
		ms[i].Buf = make([]byte, size)
	}
	handle := func(from netip.AddrPort, b []byte, arrived int64, ce bool) {
		t.stats.PacketsRecv.Add(1)
		t.stats.BytesRecv.Add(uint64(len(b)))
		if len(b) > limit {
			t.stats.DroppedInvalid.Add(1)
			t.log.Debug("dropping oversize UDP datagram", "from", from.String(), "limit", limit)
			return
		}
		if wire.IsPunchPacket(b) {
			t.stats.DroppedInvalid.Add(1)
			t.log.Debug("dropping stray punch probe/ack", "from", from.String())
			return
		}
		// The worker's, else a pooled copy: the node releases it once it
		// has handled the packet, so steady-state receive does not
		// allocate. The pool's buffers hold MTU+RecvHeadroom.
		p := transport.Packet{Transport: t.id, From: transport.AddrFromIP(from), Data: b, Arrived: arrived, CE: ce}
		if dataplane.Offer(w, t.bufs, deliver, p) == dataplane.Refused {
			t.stats.DroppedQueue.Add(1)
		}
	}
	errRun := 0
	for {
		n, drops, err := conn.ReadBatch(ms)
		if drops != 0 {
			t.stats.KernelDrops.Add(drops)
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if isMsgSize(err) { // Windows reports truncation as an error
				t.stats.PacketsRecv.Add(1)
				t.stats.DroppedInvalid.Add(1)
				continue
			}
			t.stats.RecvErrors.Add(1)
			t.log.Warn("UDP receive error", "err", err)
			if errRun++; errRun >= errRunPause {
				time.Sleep(errPause) // a persistent error must not spin a core
			}
			continue
		}
		errRun = 0
		for i := range n {
			m := &ms[i]
			from := netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port())
			if m.Trunc {
				t.stats.PacketsRecv.Add(1)
				t.stats.BytesRecv.Add(uint64(m.N))
				t.stats.DroppedInvalid.Add(1)
				t.log.Debug("dropping oversize UDP datagram", "from", from.String(), "limit", limit)
				continue
			}
			ce := m.ECN == ECNCE
			m.Split(func(b []byte) { handle(from, b, m.Stamp, ce) })
		}
		if w != nil {
			w.Flush()
		}
	}
}

// NewSender implements transport.Batched: a send queue with its
// own sendmmsg state on the transport's socket, for one worker.
func (t *Transport) NewSender() (transport.Sender, error) {
	bc := t.bc.Load()
	if bc == nil {
		return nil, fmt.Errorf("udp: sender: %w", transport.ErrNotStarted)
	}
	return &sender{t: t, q: NewWriterQueue(bc.NewWriter(SendBatch), SendBatch, min(t.opts.MTU, MaxMessage))}, nil
}

// sender is one goroutine's send queue (transport.Sender): a worker's,
// or the node loop's.
type sender struct {
	t     *Transport
	q     *SendQueue
	bytes uint64
}

func (s *sender) Reserve(to transport.Addr, n int) ([]byte, error) {
	t := s.t
	if t.send.Load() == nil {
		return nil, fmt.Errorf("udp: send: %w", transport.ErrClosed)
	}
	if n > t.opts.MTU {
		t.stats.MTUExceeded.Add(1)
		return nil, &transport.MTUError{Size: n, MTU: t.opts.MTU}
	}
	dst, err := t.destination(to, nil)
	if err != nil {
		return nil, err
	}
	// A full queue is not flushed here (b must stay valid until it is
	// filled): the next call that needs a new message flushes first.
	b, _, err := s.q.Reserve(dst, n)
	if errors.Is(err, ErrQueueFull) {
		s.Flush()
		b, _, err = s.q.Reserve(dst, n)
	}
	if err != nil {
		t.stats.SendErrors.Add(1)
		return nil, fmt.Errorf("udp: queue to %s: %w", to, err)
	}
	s.bytes += uint64(n)
	return b, nil
}

// Flush sends the queue and counts it. Datagrams the kernel refuses are
// counted as send errors (and logged at debug); bytes are counted in
// proportion when a batch went out only in part.
func (s *sender) Flush() {
	q, t := s.q, s.t
	if q.Datagrams == 0 {
		return
	}
	queued, bytes := q.Datagrams, s.bytes
	s.bytes = 0
	sent, err := q.Flush()
	t.stats.CountBatch(queued, sent, bytes)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		t.log.Debug("UDP batch send", "queued", queued, "sent", sent, "err", err)
	}
}

func (s *sender) Close() { s.Flush() }

// Send transmits one datagram. It fails with *transport.MTUError when pkt
// is larger than the MTU.
func (t *Transport) Send(to transport.Addr, pkt []byte) error {
	conn := t.send.Load()
	if conn == nil {
		if t.closed.Load() {
			return fmt.Errorf("udp: send: %w", transport.ErrClosed)
		}
		return fmt.Errorf("udp: send: %w", transport.ErrNotStarted)
	}
	dst, err := t.destination(to, pkt)
	if err != nil {
		return err
	}
	n, err := conn.WriteToUDPAddrPort(pkt, transport.NetAddrPort(dst))
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("udp: send: %w", transport.ErrClosed)
		}
		t.stats.SendErrors.Add(1)
		return fmt.Errorf("udp: send to %s: %w", to, err)
	}
	t.stats.PacketsSent.Add(1)
	t.stats.BytesSent.Add(uint64(n))
	return nil
}

// destination checks pkt against the MTU and to against the socket's
// family, and returns the address to send to.
func (t *Transport) destination(to transport.Addr, pkt []byte) (netip.AddrPort, error) {
	if len(pkt) > t.opts.MTU {
		t.stats.MTUExceeded.Add(1)
		return netip.AddrPort{}, &transport.MTUError{Size: len(pkt), MTU: t.opts.MTU}
	}
	if !to.IsValid() {
		return netip.AddrPort{}, fmt.Errorf("udp: send: %w", transport.ErrInvalidAddress)
	}
	dst := to.IP
	if t.bind.Addr().Is4() {
		if !dst.Addr().Unmap().Is4() {
			t.stats.SendErrors.Add(1)
			return netip.AddrPort{}, fmt.Errorf("udp: send to %s from an IPv4 socket: %w", to, transport.ErrInvalidAddress)
		}
		dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	}
	return dst, nil
}

// ResolveAddr turns "host:port" into an address. Numeric addresses are
// parsed directly; host names are looked up (in the socket's address
// family) and cached for 60 seconds.
func (t *Transport) ResolveAddr(ctx context.Context, s string) (transport.Addr, error) {
	ap, err := t.res.resolve(ctx, s)
	if err != nil {
		return transport.Addr{}, err
	}
	return transport.AddrFromIP(ap), nil
}

// Close stops the receive goroutine, closes the socket and waits. It is
// idempotent; a closed transport cannot be restarted.
func (t *Transport) Close() error {
	var err error
	t.mu.Lock()
	if !t.closed.Swap(true) {
		if t.stopCtx != nil {
			t.stopCtx()
		}
		t.send.Store(nil)
		for _, c := range t.extra {
			c.Close()
		}
		t.extra = nil
		if t.conn != nil {
			err = t.conn.Close()
			t.conn = nil
			t.log.Info("UDP transport stopped")
		}
		if t.adopted != nil { // never started
			err = t.adopted.Close()
			t.adopted = nil
		}
		t.local = ""
		t.state = transport.StateDown
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

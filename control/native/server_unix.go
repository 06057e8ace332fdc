//go:build linux || darwin || freebsd

package native

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
)

// Supported reports whether this platform builds the API server.
const Supported = true

// MaxConns bounds the setup connections served at once. When all are
// taken, a new connection closes the one that has waited longest without
// a command in progress (counted by Evicted); when every one is running
// a command, the new one is closed (counted by Refused). A connection
// carries setup calls only and owns nothing, so closing an idle one costs
// its client nothing it holds: upstream's client opens one per call.
const MaxConns = 64

// errCommandTooLarge ends a connection (nothing is written back).
var errCommandTooLarge = errors.New("native API command too large")

// Server is the native API socket.
type Server struct {
	cfg  Config
	host Host
	log  *slog.Logger
	ln   *net.UnixListener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	flows  map[uint64]*flowConn     // every flow the node holds a half of
	others map[*PacketConn]struct{} // listeners' halves, RPC connections
	conns  map[net.Conn]*connState
	closed bool

	sem     chan struct{}
	refused atomic.Uint64
	evicted atomic.Uint64
}

// connState is what eviction needs of a connection (under Server.mu).
type connState struct {
	busy  bool      // a command is being answered
	since time.Time // idle since
}

// flowConn is one flow's node-side half and what its reader counted.
type flowConn struct {
	id     uint64
	key    FlowKey
	pk     identity.PublicKey
	conn   *PacketConn
	sink   chan []byte
	done   chan struct{}
	slots  chan struct{} // datagrams handed to the node and not yet sent
	rxN    atomic.Uint64
	rxB    atomic.Uint64
	closed atomic.Bool
}

// Bind binds the API socket at cfg.Path (mode 0770, group fips). Serve
// then accepts connections.
func Bind(cfg Config, host Host, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := ctl.ListenUnix(cfg.Path, "native API", log)
	if err != nil {
		return nil, fmt.Errorf("native API socket %s: %w", cfg.Path, err)
	}
	ln.SetUnlinkOnClose(false)
	cfg.Limits = NewRegistry(cfg.Limits).Limits() // the floors the registry applies
	ctx, cancel := context.WithCancel(context.Background())
	log.Info("Native API socket listening", "path", cfg.Path)
	return &Server{cfg: cfg, host: host, log: log, ln: ln, ctx: ctx, cancel: cancel,
		flows: map[uint64]*flowConn{}, others: map[*PacketConn]struct{}{}, conns: map[net.Conn]*connState{},
		sem: make(chan struct{}, MaxConns)}, nil
}

// Refused is how many connections were closed on accept because
// MaxConns were open and all were running a command.
func (s *Server) Refused() uint64 { return s.refused.Load() }

// Evicted is how many idle connections were closed to make room.
func (s *Server) Evicted() uint64 { return s.evicted.Load() }

// admit takes a connection slot, evicting the longest-idle connection
// when all are taken; false: every connection is running a command.
func (s *Server) admit() bool {
	select {
	case s.sem <- struct{}{}:
		return true
	default:
	}
	s.mu.Lock()
	var victim net.Conn
	var oldest time.Time
	for c, st := range s.conns {
		if !st.busy && (victim == nil || st.since.Before(oldest)) {
			victim, oldest = c, st.since
		}
	}
	s.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Close() // its goroutine ends and gives the slot back
	s.evicted.Add(1)
	select {
	case s.sem <- struct{}{}:
		return true
	case <-time.After(time.Second):
		return false
	case <-s.ctx.Done():
		return false
	}
}

func (s *Server) setBusy(c net.Conn, busy bool) {
	s.mu.Lock()
	if st := s.conns[c]; st != nil {
		st.busy, st.since = busy, time.Now()
	}
	s.mu.Unlock()
}

// Path is the socket's path.
func (s *Server) Path() string { return s.cfg.Path }

// Serve accepts connections until Close.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Warn("Native API accept failed", "error", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.ctx.Done():
				return nil
			}
			continue
		}
		if !s.admit() {
			s.refused.Add(1)
			s.log.Debug("Native API connection refused: every connection is running a command", "max", MaxConns)
			c.Close()
			continue
		}
		if !s.track(c) {
			<-s.sem
			c.Close()
			return nil
		}
		s.wg.Go(func() {
			defer func() { <-s.sem }()
			defer s.untrack(c)
			if err := s.serveConn(c); err != nil {
				s.log.Debug("Native API connection ended", "error", err)
			}
		})
	}
}

// Close unbinds the socket and closes every flow and listener: their
// clients read end of file (EPIPE in upstream's client).
func (s *Server) Close() error {
	s.cancel()
	err := s.ln.Close()
	ctl.RemoveUnix(s.cfg.Path, s.log)
	s.mu.Lock()
	s.closed = true
	for _, f := range s.flows {
		f.conn.Close()
	}
	for p := range s.others {
		p.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = &connState{since: time.Now()}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// serveConn answers one connection's commands in order. The connection
// owns nothing: closing it releases no flow and no listener.
func (s *Server) serveConn(c *net.UnixConn) error {
	client := ClientID(0)
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { client = peerClient(int(fd)) })
	}
	r := bufio.NewReaderSize(c, 4096)
	for {
		line, err := readCommand(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		s.setBusy(c, true)
		reply, fd := s.answer(client, line)
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second)) // a client that reads no reply
		err = writeReply(c, reply.Line(), fd)
		s.setBusy(c, false)
		if fd != nil {
			fd.Close() // the client now holds the only copy
		}
		if err != nil {
			return err
		}
	}
}

// readCommand reads one newline-terminated line of at most MaxCommand
// bytes; a longer one, terminated or not, is errCommandTooLarge. A last
// line without a newline is still a command.
func readCommand(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		complete := err == nil
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		if len(line)+len(chunk) > MaxCommand {
			return nil, errCommandTooLarge
		}
		line = append(line, chunk...)
		switch {
		case complete:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// writeReply writes a reply line, its descriptor in the same sendmsg.
func writeReply(c *net.UnixConn, line []byte, fd *os.File) error {
	if fd == nil {
		_, err := c.Write(line)
		return err
	}
	n, _, err := c.WriteMsgUnix(line, unixRights(fd), nil)
	if err != nil {
		return fmt.Errorf("native API reply: %w", err)
	}
	if n < len(line) {
		_, err = c.Write(line[n:])
	}
	return err
}

// answer decides the reply to one command and the descriptor that goes
// with it. A bad command is a reply, never a dropped connection.
func (s *Server) answer(client ClientID, line []byte) (Reply, *os.File) {
	cmd, err := Parse(line)
	if err != nil {
		return Deny(err), nil
	}
	if name := DebugName(cmd); name != "" && !s.cfg.Debug {
		return Deny(cmdErr(ErrDebugOff, "'%s' is a debug command and is disabled; set node.native_api.debug_commands to enable it", name)), nil
	}
	switch c := cmd.(type) {
	case Connect:
		return s.connect(client, c)
	case Listen:
		return s.listen(client, c)
	case Stats:
		return s.stats(c), nil
	case Inject:
		return s.inject(c), nil
	case Arrive:
		return s.arrive(c), nil
	}
	return Deny(cmdErr(ErrUnknown, "unknown command")), nil // unreachable: Parse knows five
}

func (s *Server) onLoop(f func(r *Registry, now time.Time)) error {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	if err := s.host.Registry(ctx, f); err != nil {
		return cmdErr(ErrShuttingDown, "node is shutting down (%w)", err)
	}
	return nil
}

func (s *Server) connect(client ClientID, c Connect) (Reply, *os.File) {
	pk, err := identity.DecodeNpub(c.Peer)
	if err != nil {
		return Deny(cmdErr(ErrBadPeer, "invalid peer: %w", err)), nil
	}
	// The pair exists before the port is claimed: no rollback needed.
	ours, theirs, err := socketPair(s.cfg.Limits.PerFlow * ArrivalAllowance)
	if err != nil {
		return Deny(fmt.Errorf("could not open a flow: %w", err)), nil
	}
	f := &flowConn{pk: pk, conn: ours, sink: make(chan []byte, s.cfg.Limits.PerFlow),
		done: make(chan struct{}), slots: make(chan struct{}, s.cfg.Limits.PerFlow)}
	var local uint16
	var rerr error
	if err := s.onLoop(func(r *Registry, now time.Time) {
		local, f.id, rerr = r.Connect(client, pk, c.Remote, c.Local, f.sink, now)
	}); err != nil {
		rerr = err
	}
	if rerr != nil {
		ours.Close()
		theirs.Close()
		return Deny(rerr), nil
	}
	f.key = FlowKey{Peer: pk.NodeAddr(), Remote: c.Remote, Local: local}
	if !s.start(f) {
		theirs.Close()
		return Deny(ErrShuttingDown), nil
	}
	return OK(ConnectReply{FlowID: f.id, LocalPort: local, RemotePort: c.Remote, Peer: pk.Npub(),
		Node: s.host.Npub(), MaxPayload: s.host.MaxPayload()}), theirs
}

// start records a flow and runs its reader and writer.
func (s *Server) start(f *flowConn) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		f.conn.Close()
		s.release(f)
		return false
	}
	s.flows[f.id] = f
	s.mu.Unlock()
	s.wg.Go(func() { s.drain(f) })
	s.wg.Go(func() { s.feed(f) })
	return true
}

// release gives a flow's registry entry back.
func (s *Server) release(f *flowConn) {
	_ = s.onLoopDetached(func(r *Registry, _ time.Time) { r.Release(f.key) })
}

// onLoopDetached reaches the loop even while the server closes (a flow
// released at shutdown), bounded by a short deadline.
func (s *Server) onLoopDetached(f func(r *Registry, now time.Time)) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.host.Registry(ctx, f)
}

// drain forwards what the client writes on its flow to the node until
// the client closes it. At most PerFlow datagrams are in the node's
// hands at once: a flooding client waits on its own flow, and the
// node's queue is never filled by one client.
func (s *Server) drain(f *flowConn) {
	defer func() {
		f.closed.Store(true)
		s.release(f)
		s.mu.Lock()
		delete(s.flows, f.id)
		s.mu.Unlock()
		close(f.done)
		f.conn.Close()
	}()
	buf := make([]byte, MaxDatagram)
	for {
		n, err := f.conn.Recv(buf)
		if err != nil {
			return
		}
		f.rxN.Add(1)
		f.rxB.Add(uint64(n))
		select {
		case f.slots <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		p := make([]byte, n)
		copy(p, buf[:n])
		if s.host.Send(Outbound{Key: f.key, PubKey: f.pk, Payload: p, Done: func() { <-f.slots }}) != nil {
			return
		}
	}
}

// feed writes what the node delivered onto the client's descriptor. A
// client that does not read fills its own queue (PerFlow datagrams) and
// loses further datagrams itself, counted as drop_flow_queue_full.
func (s *Server) feed(f *flowConn) {
	for {
		select {
		case <-f.done:
			return
		case d := <-f.sink:
			if err := f.conn.Send(d); err != nil && !isNoBufs(err) {
				return
			}
		}
	}
}

func (s *Server) listen(client ClientID, l Listen) (Reply, *os.File) {
	ours, theirs, err := socketPair(s.cfg.Limits.Backlog * ArrivalAllowance)
	if err != nil {
		return Deny(fmt.Errorf("could not open a listener: %w", err)), nil
	}
	arrivals := make(chan Arrival, s.cfg.Limits.Backlog)
	var port uint16
	var rerr error
	if err := s.onLoop(func(r *Registry, _ time.Time) { port, rerr = r.Listen(client, l.Local, arrivals) }); err != nil {
		rerr = err
	}
	if rerr != nil {
		ours.Close()
		theirs.Close()
		return Deny(rerr), nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ours.Close()
		theirs.Close()
		return Deny(ErrShuttingDown), nil
	}
	s.others[ours] = struct{}{}
	s.mu.Unlock()
	s.wg.Go(func() { s.watch(port, ours, arrivals) })
	return OK(ListenReply{LocalPort: port, Node: s.host.Npub(), Backlog: uint(s.cfg.Limits.Backlog)}), theirs
}

// watch serves one listener until its client closes the descriptor:
// each arrival is handed over, and reading the node's half is how the
// close is seen.
func (s *Server) watch(port uint16, l *PacketConn, arrivals chan Arrival) {
	gone := make(chan struct{})
	s.wg.Go(func() {
		defer close(gone)
		buf := make([]byte, 512)
		for {
			if _, err := l.Recv(buf); err != nil {
				return // anything a client writes here is ignored
			}
		}
	})
	defer func() {
		_ = s.onLoopDetached(func(r *Registry, _ time.Time) { r.ReleaseListener(port) })
		s.mu.Lock()
		delete(s.others, l)
		s.mu.Unlock()
		l.Close()
		<-gone
	}()
	for {
		select {
		case <-gone:
			return
		case <-s.ctx.Done():
			return
		case a := <-arrivals:
			s.handOver(a, l)
		}
	}
}

// handOver wires an arriving flow and passes its descriptor to the
// listener's client: every held datagram onto the flow first, then the
// arrival message carrying the descriptor, so what arrived before the
// client could accept is there when it does. Both writes never wait.
func (s *Server) handOver(a Arrival, l *PacketConn) {
	ours, theirs, err := socketPair(s.cfg.Limits.PerFlow * ArrivalAllowance)
	if err != nil {
		s.log.Warn("Could not open a socket pair for an arriving flow", "error", err)
		return // the pending flow expires and is counted
	}
	f := &flowConn{id: a.Flow, pk: a.PubKey, conn: ours, sink: make(chan []byte, s.cfg.Limits.PerFlow),
		done: make(chan struct{}), slots: make(chan struct{}, s.cfg.Limits.PerFlow)}
	var acc Accepted
	var rerr error
	if err := s.onLoop(func(r *Registry, now time.Time) { acc, rerr = r.Accept(a.Flow, f.sink, now) }); err != nil {
		rerr = err
	}
	if rerr != nil {
		s.log.Debug("An arriving flow was gone before it could be wired", "error", rerr)
		ours.Close()
		theirs.Close()
		return
	}
	f.key = acc.Key
	fail := func(why DropReason) {
		ours.Close()
		theirs.Close()
		_ = s.onLoop(func(r *Registry, _ time.Time) { r.Discard(acc.Key, why) })
	}
	for _, d := range acc.Held {
		if err := ours.TrySend(d, nil); err != nil {
			fail(handoffDrop(err))
			return
		}
	}
	msg, _ := json.Marshal(ArrivalMessage{FlowID: a.Flow, Peer: acc.PubKey.Npub(), Node: s.host.Npub(),
		LocalPort: acc.Key.Local, RemotePort: acc.Key.Remote, MaxPayload: s.host.MaxPayload(), Held: len(acc.Held)})
	if err := l.TrySend(msg, theirs); err != nil {
		fail(handoffDrop(err))
		return
	}
	theirs.Close()
	s.start(f)
}

func (s *Server) flow(id uint64) *flowConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flows[id]
}

func (s *Server) stats(c Stats) Reply {
	f := s.flow(c.Flow)
	if f == nil {
		return Deny(cmdErr(ErrNoFlow, "no such flow: %d", c.Flow))
	}
	// What the client wrote before asking is counted: give the flow's
	// reader a moment to take what is already on the descriptor.
	for end := time.Now().Add(200 * time.Millisecond); f.conn.readable() && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	return OK(StatsReply{FlowID: c.Flow, LocalPort: f.key.Local, RxDatagrams: f.rxN.Load(),
		RxBytes: f.rxB.Load(), Closed: f.closed.Load()})
}

func (s *Server) inject(c Inject) Reply {
	f := s.flow(c.Flow)
	if f == nil {
		return Deny(cmdErr(ErrNoFlow, "no such flow: %d", c.Flow))
	}
	for i := range c.Repeat {
		if err := f.conn.Send(c.Data); err != nil {
			return Deny(cmdErr(ErrIO, "wrote %d of %d datagrams: %w", i, c.Repeat, err))
		}
	}
	return OK(InjectReply{FlowID: c.Flow, Datagrams: c.Repeat, Bytes: uint64(len(c.Data)) * uint64(c.Repeat)})
}

func (s *Server) arrive(c Arrive) Reply {
	pk, err := identity.DecodeNpub(c.Peer)
	if err != nil {
		return Deny(cmdErr(ErrBadPeer, "invalid peer: %w", err))
	}
	var o Outcome
	if err := s.onLoop(func(r *Registry, now time.Time) {
		o = r.Deliver(pk.NodeAddr(), pk, c.Src, c.Dst, c.Data, now)
	}); err != nil {
		return Deny(err)
	}
	rep := ArriveReply{Outcome: o.String()}
	if o.Kind == Announced || o.Kind == Held {
		id := o.Flow
		rep.FlowID = &id
	}
	return OK(rep)
}

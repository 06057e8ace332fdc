package ctl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fips-go/fips/control/logging"
)

// Defaults for [Config] fields left zero.
const (
	DefaultMaxConns       = 64
	DefaultMaxHandlers    = 4
	DefaultReadTimeout    = 5 * time.Second
	DefaultWriteTimeout   = 5 * time.Second
	DefaultHandlerTimeout = 5 * time.Second
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("ctl: server closed")

// ErrNotSocket is wrapped by Listen and CheckSocketPath when something
// other than a socket (a regular file, a directory, a symlink) is at the
// control socket path: it is never removed.
var ErrNotSocket = errors.New("not a socket")

// Config configures a [Server].
type Config struct {
	// Path is the Unix socket path (on Windows: the TCP port on 127.0.0.1,
	// as a decimal string). Empty means [DefaultSocketPath].
	Path string
	// MaxConns bounds the connections served at once; further connections
	// are answered "too many connections", closed and counted.
	MaxConns int
	// MaxHandlers bounds the handlers running at once (each may build a
	// large response); a request waits for a slot within HandlerTimeout.
	MaxHandlers    int
	ReadTimeout    time.Duration // whole-request read budget
	WriteTimeout   time.Duration // response write budget
	HandlerTimeout time.Duration // "query timeout" after this
	Logger         *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Path == "" {
		c.Path = DefaultSocketPath()
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxHandlers <= 0 {
		c.MaxHandlers = DefaultMaxHandlers
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.HandlerTimeout <= 0 {
		c.HandlerTimeout = DefaultHandlerTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Server is a bound control socket. Create it with [Listen], run it with
// Serve, stop it by cancelling Serve's context or with Close.
type Server struct {
	cfg      Config
	reg      *Registry
	log      *slog.Logger
	ln       net.Listener
	addr     string
	sockPath string // Unix socket file to remove at shutdown; "" for TCP

	sem       chan struct{}
	refuseSem chan struct{}
	refused   atomic.Uint64
	evicted   atomic.Uint64
	handlers  chan struct{}
	busy      atomic.Uint64
	wg        sync.WaitGroup // connection and handler goroutines

	// readers are the connections still waiting for their request line,
	// oldest first: when every slot is taken, a new connection evicts the
	// oldest of them, so idle connections cannot hold the socket.
	readersMu sync.Mutex
	readers   []*reader

	mu      sync.Mutex
	serving bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}

	cleanupOnce sync.Once
}

// Listen binds the control socket under the FIPS access policy — parent
// directory created if missing, stale socket removed (a live one is an
// error wrapping syscall.EADDRINUSE; anything at the path that is not a
// socket is left alone and is an error wrapping ErrNotSocket), socket mode 0770 and, for a parent
// this call created or a canonical runtime directory, parent mode 0750,
// both chowned to group fips when it exists — and returns a server that
// dispatches through reg.
func Listen(cfg Config, reg *Registry) (*Server, error) {
	return listenWith(cfg, reg, nil)
}

func listenWith(cfg Config, reg *Registry, chown func(string)) (*Server, error) {
	cfg.setDefaults()
	if reg == nil {
		reg = NewRegistry()
	}
	s := &Server{cfg: cfg, reg: reg, log: logging.WithTarget(cfg.Logger, "fips::control"), sem: make(chan struct{}, cfg.MaxConns), handlers: make(chan struct{}, cfg.MaxHandlers), refuseSem: make(chan struct{}, maxRefusers)}
	if chown == nil {
		chown = func(p string) { chownFipsGroup(p, s.log) }
	}
	ln, addr, sockPath, err := listenPlatform(cfg.Path, s.log, chown)
	if err != nil {
		return nil, err
	}
	s.ln, s.addr, s.sockPath = ln, addr, sockPath
	return s, nil
}

// Addr is where the server listens: the socket path, or 127.0.0.1:port.
func (s *Server) Addr() string { return s.addr }

// Refused is how many connections were turned away because MaxConns
// connections were already being served.
func (s *Server) Refused() uint64 { return s.refused.Load() }

// Evicted is how many connections that had not sent a complete request
// were closed to make room for a new one while every slot was taken.
func (s *Server) Evicted() uint64 { return s.evicted.Load() }

// Busy is how many requests were answered "query timeout" because no
// handler slot came free within the handler timeout.
func (s *Server) Busy() uint64 { return s.busy.Load() }

// Registry returns the registry the server dispatches through.
func (s *Server) Registry() *Registry { return s.reg }

// Serve accepts connections until ctx is cancelled or Close is called,
// then closes the listener, waits for every connection and handler in
// flight (requests still being read are answered "node shutting down";
// running handlers see their context cancelled), removes the socket file
// and returns nil.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.serving {
		s.mu.Unlock()
		return errors.New("ctl: Serve called twice")
	}
	s.serving = true
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	s.mu.Unlock()
	defer close(s.done)
	defer s.cancel()

	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()

	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			// Transient (EMFILE and the like): log, back off, keep going.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("Control socket accept failed", "error", err)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		backoff = 0
		if !acceptPeer(c, s.log) {
			c.Close()
			continue
		}
		if !s.acquire(ctx) {
			s.refuse(c)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			s.serveConn(ctx, c)
		}()
	}
	s.wg.Wait()
	s.cleanup()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// Close stops the server as cancelling Serve's context does and waits for
// Serve to finish; without Serve it closes the listener and removes the
// socket file.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	serving, cancel, done := s.serving, s.cancel, s.done
	s.mu.Unlock()
	if serving {
		cancel()
		<-done
		return nil
	}
	s.cleanup()
	return nil
}

func (s *Server) cleanup() {
	s.cleanupOnce.Do(func() {
		s.ln.Close()
		if s.sockPath != "" {
			removeSocketFile(s.sockPath, s.log)
		}
	})
}

// evictWait bounds how long the accept loop waits for an evicted idle
// connection to give up its slot.
const evictWait = time.Second

// acquire takes a connection slot. When every slot is taken it evicts the
// oldest connection still waiting for its request line (fipsctl sends its
// request as soon as it connects, so that is the idlest one) and waits
// for its slot; false when no connection is evictable or the slot does not
// come free in time.
func (s *Server) acquire(ctx context.Context) bool {
	select {
	case s.sem <- struct{}{}:
		return true
	default:
	}
	if !s.evictOldestReader() {
		return false
	}
	t := time.NewTimer(evictWait)
	defer t.Stop()
	select {
	case s.sem <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// reader is a connection reading its request.
type reader struct {
	c       net.Conn
	evicted atomic.Bool
}

func (s *Server) addReader(r *reader) {
	s.readersMu.Lock()
	s.readers = append(s.readers, r)
	s.readersMu.Unlock()
}

func (s *Server) removeReader(r *reader) {
	s.readersMu.Lock()
	defer s.readersMu.Unlock()
	for i, x := range s.readers {
		if x == r {
			s.readers = append(s.readers[:i], s.readers[i+1:]...)
			return
		}
	}
}

// evictOldestReader cuts the oldest pending read short: it is answered
// "too many connections" and its slot freed.
func (s *Server) evictOldestReader() bool {
	s.readersMu.Lock()
	if len(s.readers) == 0 {
		s.readersMu.Unlock()
		return false
	}
	r := s.readers[0]
	s.readers = s.readers[1:]
	s.readersMu.Unlock()
	r.evicted.Store(true)
	r.c.SetReadDeadline(time.Now())
	n := s.evicted.Add(1)
	if n&(n-1) == 0 {
		s.log.Warn("Control socket full: closing the longest-idle connection", "max", s.cfg.MaxConns, "evicted_total", n)
	}
	return true
}

// refuse turns away a connection over the MaxConns bound: counted, and
// answered "too many connections" by one of a few short-lived goroutines
// (closed unanswered when those are busy too).
func (s *Server) refuse(c net.Conn) {
	n := s.refused.Add(1)
	if n&(n-1) == 0 { // 1, 2, 4, 8 …: bounded log volume under a flood
		s.log.Warn("Control socket connection limit reached, refusing", "max", s.cfg.MaxConns, "refused_total", n)
	}
	select {
	case s.refuseSem <- struct{}{}:
	default:
		c.Close()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.refuseSem }()
		defer c.Close()
		b, _ := Fail(MsgTooManyConnections).MarshalJSON()
		c.SetWriteDeadline(time.Now().Add(lingerTimeout))
		if _, err := c.Write(append(b, '\n')); err != nil {
			return
		}
		linger(c)
	}()
}

// linger half-closes c and drains a little unread input before the caller
// closes it: closing with unread input resets the connection, which on
// some stacks discards the answer before the client reads it.
func linger(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c, lingerBytes)
}

// maxRefusers bounds the goroutines answering refused connections.
const maxRefusers = 8

func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	req, resp, ok := s.readRequest(ctx, c)
	unread := resp.Message == MsgRequestTooLarge
	if ok {
		resp = s.handle(ctx, req)
	}
	out, err := resp.MarshalJSON()
	if err != nil { // cannot happen: data was validated when it was built
		out, _ = Fail(MsgResponseClosed).MarshalJSON()
	}
	out = append(out, '\n')
	c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if _, err := c.Write(out); err != nil {
		s.log.Debug("Control socket write failed or timed out", "error", err)
		return
	}
	if unread {
		linger(c)
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// Bounds on draining a rejected request before closing.
const (
	lingerTimeout = 200 * time.Millisecond
	lingerBytes   = 64 << 10
)

// readRequest reads and decodes one request line. When it fails, resp is
// the error response to send.
func (s *Server) readRequest(ctx context.Context, c net.Conn) (req Request, resp Response, ok bool) {
	c.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	// Shutdown, or eviction by a newer connection when the socket is full,
	// aborts a pending read by pulling the deadline in.
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	rd := &reader{c: c}
	s.addReader(rd)
	line, err := readLine(c, MaxRequestSize)
	s.removeReader(rd)
	stop()
	switch {
	case errors.Is(err, errTooLarge):
		return req, Fail(MsgRequestTooLarge), false
	case errors.Is(err, os.ErrDeadlineExceeded):
		if ctx.Err() != nil {
			return req, Fail(MsgShuttingDown), false
		}
		if rd.evicted.Load() {
			return req, Fail(MsgTooManyConnections), false
		}
		return req, Fail(MsgReadTimeout), false
	case err != nil:
		return req, Fail(readErrorPrefix + osErrorText(err)), false
	case len(line) == 0:
		return req, Fail(MsgEmptyRequest), false
	case !utf8.Valid(line):
		return req, Fail(readErrorPrefix + invalidUTF8Detail), false
	}
	req, err = DecodeRequest(bytes.TrimSpace(line))
	if err != nil {
		return req, Fail(invalidRequestPrefix + err.Error()), false
	}
	return req, Response{}, true
}

var errTooLarge = errors.New("request too large")

// readLine reads up to and including the first '\n', or to EOF. More than
// max bytes without a complete line (or a line longer than max, newline
// included) is errTooLarge; the rest of the stream is never read.
func readLine(r io.Reader, limit int) ([]byte, error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := min(cap(buf), limit+1) - len(buf)
		n, err := r.Read(buf[len(buf) : len(buf)+room])
		if i := bytes.IndexByte(buf[len(buf):len(buf)+n], '\n'); i >= 0 {
			buf = buf[:len(buf)+i+1]
			if len(buf) > limit {
				return nil, errTooLarge
			}
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, errTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// handle dispatches a decoded request with the handler timeout.
func (s *Server) handle(ctx context.Context, req Request) Response {
	if ctx.Err() != nil {
		return Fail(MsgShuttingDown)
	}
	if _, ok := s.reg.Lookup(req.Command); !ok {
		return Fail(unknownCommandPrefix + req.Command)
	}
	hctx, cancel := context.WithTimeout(ctx, s.cfg.HandlerTimeout)
	defer cancel()
	// The slot is the handler goroutine's until the handler returns, even
	// after its client was told "query timeout".
	select {
	case s.handlers <- struct{}{}:
	case <-hctx.Done():
		if ctx.Err() != nil {
			return Fail(MsgShuttingDown)
		}
		if n := s.busy.Add(1); n&(n-1) == 0 { // 1, 2, 4 …: bounded log volume
			s.log.Warn("Control handlers all busy, request timed out waiting", "command", req.Command,
				"max", s.cfg.MaxHandlers, "timeout", s.cfg.HandlerTimeout, "busy_total", n)
		}
		return Fail(MsgQueryTimeout)
	}
	ch := make(chan Response, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.handlers }()
		ch <- s.reg.dispatch(hctx, req, s.log)
	}()
	select {
	case r := <-ch:
		return r
	case <-hctx.Done():
		select {
		case r := <-ch: // answered at the wire
			return r
		default:
		}
		if ctx.Err() != nil {
			return Fail(MsgShuttingDown)
		}
		s.log.Warn("Control handler timed out", "command", req.Command, "timeout", s.cfg.HandlerTimeout)
		return Fail(MsgQueryTimeout)
	}
}

// osErrorText is the innermost OS error text ("connection reset by peer"),
// without Go's "read unix …:" operation prefix.
func osErrorText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

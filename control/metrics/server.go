package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry is a registry holding the node collector and the Go runtime
// and process collectors (a registry of its own: nothing global).
func NewRegistry(src Source, o Options) (*prometheus.Registry, *Collector, error) {
	c, err := NewCollector(src, o)
	if err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	for _, col := range []prometheus.Collector{c, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(col); err != nil {
			return nil, nil, fmt.Errorf("metrics: register collector: %w", err)
		}
	}
	return reg, c, nil
}

// Handler answers GET /metrics from g in the Prometheus text format.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slogErrorLog{log},
		ErrorHandling: promhttp.ContinueOnError,
		// A scrape reads one snapshot; more than a few at once is a
		// misbehaving client.
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	return mux
}

type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) { l.log.Warn("metrics: " + fmt.Sprint(v...)) }

// MaxConns bounds the connections the endpoint holds at once (fips-go's
// endpoint; a scraper needs one). Past it a new connection is closed at
// once and counted: connections that send nothing would otherwise hold
// file descriptors the transports and the control socket need.
const MaxConns = 32

// Server is the /metrics HTTP endpoint.
type Server struct {
	ln  *limitListener
	srv *http.Server
	log *slog.Logger
}

// limitListener admits at most max connections at once and closes the
// rest as it accepts them.
type limitListener struct {
	net.Listener
	log     *slog.Logger
	max     int64
	open    atomic.Int64
	refused atomic.Uint64
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		n := l.refused.Add(1)
		c.Close()
		if n&(n-1) == 0 { // 1, 2, 4 …: bounded log volume
			l.log.Warn("metrics: connection limit reached, refusing", "max", l.max, "refused_total", n)
		}
	}
}

// limitConn gives its slot back when closed (once, however often Close
// is called).
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// Listen binds addr (metrics.listen) for h.
func Listen(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s: %w", addr, err)
	}
	lim := &limitListener{Listener: ln, log: log, max: MaxConns}
	return &Server{ln: lim, log: log, srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second,
		MaxHeaderBytes: 16 << 10}}, nil
}

// Refused counts connections closed because MaxConns were open.
func (s *Server) Refused() uint64 { return s.ln.refused.Load() }

// Open is how many connections the endpoint holds.
func (s *Server) Open() int { return int(s.ln.open.Load()) }

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers requests until ctx ends, then shuts the server down,
// giving requests in progress up to two seconds.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("metrics: shutdown: %w", err)
	}
	return nil
}

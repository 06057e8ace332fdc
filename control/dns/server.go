package dns

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/fips-go/fips/control/logging"
)

// DefaultAddr is the responder's default listen address
// ([dns.bind_addr]:dns.port).
const DefaultAddr = "[::1]:5354"

// maxQuery is the receive buffer: a longer datagram is truncated and then
// fails to parse, so it is dropped, as upstream's 512-byte buffer does.
const maxQuery = 512

// workers bounds how many queries are in flight at once.
const workers = 4

// Server is a running UDP responder (upstream serves no TCP).
type Server struct {
	conn   net.PacketConn
	res    *Resolver
	log    *slog.Logger
	ignore atomic.Int64 // ifindex whose queries are dropped; 0 = none

	answered, responses, unparsable, meshDropped atomic.Uint64

	// Exactly one of p6/p4 is set when arrival-interface reporting could
	// be enabled on this OS and socket family.
	p6 *ipv6.PacketConn
	p4 *ipv4.PacketConn

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Listen binds addr (DefaultAddr if empty; port 0 picks one) and serves r
// until ctx ends or Close is called. log nil means slog.Default().
func Listen(ctx context.Context, addr string, r *Resolver, log *slog.Logger) (*Server, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	if log == nil {
		log = slog.Default()
	}
	log = logging.WithTarget(log, "fips::upper::dns")
	var lc net.ListenConfig
	conn, err := lc.ListenPacket(ctx, "udp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{conn: conn, res: r, log: log}
	// Arrival-interface reporting (IPV6_RECVPKTINFO / IP_PKTINFO) works on
	// Linux, the BSDs and macOS; where x/net does not implement it (e.g.
	// Windows) the interface is unknown and, as upstream, nothing is
	// dropped.
	if ua, ok := conn.LocalAddr().(*net.UDPAddr); ok && ua.IP.To4() != nil {
		p := ipv4.NewPacketConn(conn)
		if p.SetControlMessage(ipv4.FlagInterface, true) == nil {
			s.p4 = p
		}
	} else {
		p := ipv6.NewPacketConn(conn)
		if p.SetControlMessage(ipv6.FlagInterface, true) == nil {
			s.p6 = p
		}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.ctx = ctx
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		s.conn.Close()
	}()
	s.wg.Add(workers)
	for range workers {
		go s.serve()
	}
	return s, nil
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.conn.LocalAddr() }

// Stats are the responder's counters.
type Stats struct {
	// Answered is the number of replies sent.
	Answered uint64
	// ResponsesIgnored counts datagrams that were themselves DNS responses
	// (QR bit set): never answered, so two responders, or a spoofed source
	// aimed at one, cannot keep a packet bouncing between them.
	ResponsesIgnored uint64
	// Unparsable counts datagrams that are not a DNS query with a question.
	Unparsable uint64
	// MeshDropped counts queries dropped because they arrived on the mesh
	// interface (see IgnoreIfIndex).
	MeshDropped uint64
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{Answered: s.answered.Load(), ResponsesIgnored: s.responses.Load(),
		Unparsable: s.unparsable.Load(), MeshDropped: s.meshDropped.Load()}
}

// IgnoreIfIndex makes the server silently drop queries that arrive on the
// interface with this index (fips0), so mesh peers cannot probe aliases
// through it. 0 turns the filter off. Queries whose arrival interface is
// unknown are always answered.
func (s *Server) IgnoreIfIndex(idx int) { s.ignore.Store(int64(idx)) }

// Close stops serving and waits for the server's goroutines.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.cancel()
		err = s.conn.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	s.wg.Wait()
	return err
}

func (s *Server) read(buf []byte) (n, ifindex int, src net.Addr, err error) {
	switch {
	case s.p6 != nil:
		var cm *ipv6.ControlMessage
		n, cm, src, err = s.p6.ReadFrom(buf)
		if cm != nil {
			ifindex = cm.IfIndex
		}
	case s.p4 != nil:
		var cm *ipv4.ControlMessage
		n, cm, src, err = s.p4.ReadFrom(buf)
		if cm != nil {
			ifindex = cm.IfIndex
		}
	default:
		n, src, err = s.conn.ReadFrom(buf)
	}
	return
}

func (s *Server) serve() {
	defer s.wg.Done()
	buf := make([]byte, maxQuery)
	for {
		n, ifindex, src, err := s.read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			s.log.Warn("DNS socket recv error", "error", err)
			continue
		}
		if ign := s.ignore.Load(); ign != 0 && ifindex != 0 && int64(ifindex) == ign {
			s.meshDropped.Add(1)
			s.log.Debug("dns query arrived on mesh interface, dropping", "src", src, "ifindex", ifindex)
			continue
		}
		if isResponse(buf[:n]) {
			s.responses.Add(1)
			s.log.Debug("dns datagram is a response, not a query; ignoring", "src", src)
			continue
		}
		out := s.res.AnswerWire(buf[:n])
		if out == nil {
			s.unparsable.Add(1)
			s.log.Debug("unparsable dns query, dropping", "len", n)
			continue
		}
		if _, err := s.conn.WriteTo(out, src); err != nil {
			s.log.Debug("dns send error", "err", err)
			continue
		}
		s.answered.Add(1)
	}
}

// isResponse reports whether a datagram carries a DNS header with the QR
// (response) bit set: byte 2, top bit. fips-go addition; upstream answers
// such packets like queries.
func isResponse(b []byte) bool { return len(b) >= 12 && b[2]&0x80 != 0 }

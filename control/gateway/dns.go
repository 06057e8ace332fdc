package gateway

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/fips-go/fips/control/logging"
)

// Upstream's DNS bounds.
const (
	UpstreamTimeout = 5 * time.Second
	MaxDNSSize      = 4096
	// MaxInflight bounds queries being answered at once (ours: upstream
	// answers one at a time); more are dropped and counted.
	MaxInflight = 64
)

// Resolver is the gateway's DNS listener: .fips names are resolved by the
// daemon's responder and answered with a pool address; anything else is
// REFUSED.
type Resolver struct {
	Upstream netip.AddrPort // gateway.dns.upstream
	TTL      uint32         // gateway.dns.ttl
	// Alloc maps a destination for a query from client (the LAN source
	// address; zero when unknown).
	Alloc func(client netip.Addr, node NodeAddr, mesh netip.Addr, name string) (netip.Addr, bool, error)
	// Created is called with MappingCreated for each new allocation
	// and should return once its NAT rules are in: the answer is sent
	// after it returns.
	Created func(ctx context.Context, ev Event)
	Log     *slog.Logger
	Timeout time.Duration // default UpstreamTimeout

	dropped atomic.Uint64
}

// Dropped counts queries dropped because MaxInflight were being answered.
func (r *Resolver) Dropped() uint64 { return r.dropped.Load() }

func (r *Resolver) log() *slog.Logger {
	if r.Log == nil {
		return logging.WithTarget(slog.Default(), "fips::gateway::dns")
	}
	return r.Log
}

// ListenAndServe binds listen (UDP) and answers until ctx ends.
func (r *Resolver) ListenAndServe(ctx context.Context, listen string) error {
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(ctx, "udp", listen)
	if err != nil {
		return fmt.Errorf("bind %s: %w", listen, err)
	}
	r.log().Info("Gateway DNS resolver listening", "addr", listen)
	return r.Serve(ctx, pc)
}

// Serve answers queries on pc until ctx ends, then closes it.
func (r *Resolver) Serve(ctx context.Context, pc net.PacketConn) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = pc.Close() })
	defer stop()
	sem := make(chan struct{}, MaxInflight)
	buf := make([]byte, MaxDNSSize)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				r.log().Info("DNS resolver shutting down")
				return nil
			}
			_ = pc.Close()
			return fmt.Errorf("dns read: %w", err)
		}
		select {
		case sem <- struct{}{}:
		default:
			r.dropped.Add(1)
			continue
		}
		q := append([]byte(nil), buf[:n]...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var client netip.Addr
			if ua, ok := from.(*net.UDPAddr); ok {
				client = ua.AddrPort().Addr().Unmap().WithZone("")
			}
			resp := r.HandleFrom(ctx, q, client)
			if resp == nil {
				return
			}
			if _, err := pc.WriteTo(resp, from); err != nil {
				r.log().Debug("Failed to send DNS response", "error", err)
			}
		}()
	}
}

// fipsName is the first question's name, lower-cased without its final
// dot, when it is under .fips.
func fipsName(m *dns.Msg) (string, bool) {
	if len(m.Question) == 0 {
		return "", false
	}
	n := strings.ToLower(strings.TrimSuffix(m.Question[0].Name, "."))
	if strings.HasSuffix(n, ".fips") {
		return n, true
	}
	return "", false
}

func reply(q *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.Id = q.Id
	m.Response = true
	m.RecursionAvailable = true
	m.Rcode = rcode
	m.Question = append([]dns.Question(nil), q.Question...)
	return m
}

func pack(m *dns.Msg) []byte {
	m.Compress = true
	b, err := m.Pack()
	if err != nil {
		return nil
	}
	return b
}

// Handle answers one query datagram from an unknown client; nil means no
// answer (it did not parse).
func (r *Resolver) Handle(ctx context.Context, query []byte) []byte {
	return r.HandleFrom(ctx, query, netip.Addr{})
}

// HandleFrom answers one query datagram from client.
func (r *Resolver) HandleFrom(ctx context.Context, query []byte, client netip.Addr) []byte {
	q := new(dns.Msg)
	if err := q.Unpack(query); err != nil {
		return nil
	}
	name, ok := fipsName(q)
	if !ok {
		r.log().Log(ctx, logging.LevelTrace, "Non-.fips query, returning REFUSED", "id", q.Id)
		return pack(reply(q, dns.RcodeRefused))
	}
	r.log().Debug("Forwarding .fips query to daemon", "name", name, "id", q.Id)
	up, err := r.askUpstream(ctx, q.Question[0], name)
	if err != nil {
		return pack(reply(q, dns.RcodeServerFailure))
	}
	if up.Rcode != dns.RcodeSuccess {
		r.log().Debug("Upstream returned non-success", "name", name, "rcode", dns.RcodeToString[up.Rcode])
		return pack(reply(q, up.Rcode))
	}
	var meshAddr netip.Addr
	for _, rr := range up.Answer {
		if a, ok := rr.(*dns.AAAA); ok {
			meshAddr, _ = netip.AddrFromSlice(a.AAAA.To16())
			break
		}
	}
	if !meshAddr.IsValid() {
		r.log().Debug("No AAAA record in upstream response", "name", name)
		return pack(reply(q, dns.RcodeServerFailure))
	}
	node, ok := NodeAddrFromMesh(meshAddr)
	if !ok {
		r.log().Warn("Upstream AAAA is not a FIPS mesh address, rejecting", "name", name, "mesh_addr", meshAddr)
		return pack(reply(q, dns.RcodeServerFailure))
	}
	vip, isNew, err := r.Alloc(client, node, meshAddr, name)
	if err != nil {
		r.log().Warn("Pool allocation failed", "error", err)
		return pack(reply(q, dns.RcodeServerFailure))
	}
	if isNew && r.Created != nil {
		r.Created(ctx, Event{Kind: MappingCreated, VirtualIP: vip, MeshAddr: meshAddr})
	}
	r.log().Debug("Resolved .fips query", "name", name, "virtual_ip", vip, "mesh_addr", meshAddr, "is_new", isNew)
	m := reply(q, dns.RcodeSuccess)
	qq := q.Question[0]
	switch qq.Qtype {
	case dns.TypeAAAA, dns.TypeANY:
		a := vip.As16()
		m.Answer = []dns.RR{&dns.AAAA{Hdr: dns.RR_Header{Name: qq.Name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: r.TTL},
			AAAA: net.IP(a[:])}}
	default:
		// NODATA: the name exists, not with this type; the SOA says how
		// long to cache that (RFC 2308 §2.2).
		serial := uint32(time.Now().Unix())
		t := r.TTL
		m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: qq.Name, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: t},
			Ns: "gateway.fips.", Mbox: "nobody.fips.", Serial: serial, Refresh: t, Retry: t, Expire: t, Minttl: t}}
	}
	return pack(m)
}

// errUpstream marks an upstream failure already logged.
var errUpstream = errors.New("upstream failed")

// askUpstream sends an AAAA query for the client's name (whatever type the
// client asked: mesh addresses are IPv6) under a fresh random ID from a
// socket connected to the upstream, and waits for the datagram that
// answers it: a response with that ID and the same single question.
func (r *Resolver) askUpstream(ctx context.Context, cq dns.Question, name string) (*dns.Msg, error) {
	var idb [2]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, fmt.Errorf("%w: %w", errUpstream, err)
	}
	id := binary.BigEndian.Uint16(idb[:])
	uq := new(dns.Msg)
	uq.Id = id
	uq.Question = []dns.Question{{Name: cq.Name, Qtype: dns.TypeAAAA, Qclass: cq.Qclass}}
	wire := pack(uq)
	if wire == nil {
		return nil, errUpstream
	}
	network := "udp6"
	if r.Upstream.Addr().Unmap().Is4() {
		network = "udp4"
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, r.Upstream.String())
	if err != nil {
		r.log().Warn("Failed to connect upstream socket", "error", err, "upstream", r.Upstream)
		return nil, fmt.Errorf("%w: %w", errUpstream, err)
	}
	defer c.Close()
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = UpstreamTimeout
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.Write(wire); err != nil {
		r.log().Warn("Failed to forward query to daemon", "error", err)
		return nil, fmt.Errorf("%w: %w", errUpstream, err)
	}
	want := strings.ToLower(dns.Fqdn(name))
	buf := make([]byte, MaxDNSSize)
	for {
		n, err := c.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				r.log().Warn("Upstream DNS timeout", "upstream", r.Upstream)
			} else {
				r.log().Warn("Upstream recv error", "error", err, "upstream", r.Upstream)
			}
			return nil, fmt.Errorf("%w: %w", errUpstream, err)
		}
		m := new(dns.Msg)
		if err := m.Unpack(buf[:n]); err != nil {
			r.log().Debug("Discarding unparseable upstream datagram", "name", name)
			continue
		}
		if m.Response && m.Id == id && len(m.Question) == 1 && m.Question[0].Qtype == dns.TypeAAAA &&
			m.Question[0].Qclass == cq.Qclass && strings.ToLower(m.Question[0].Name) == want {
			return m, nil
		}
		r.log().Debug("Discarding unsolicited upstream datagram", "name", name)
	}
}

package xdp

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/afxdp"
)

// AF_XDP transmission (dataplane.afxdp_transmit: xsk): a worker reading
// an AF_XDP socket seals what it forwards or sends straight into a TX
// frame of the socket on the destination's interface, behind an
// Ethernet/IP/UDP header built from the kernel's route and neighbour
// tables, and submits the batch on that socket's TX ring. What it cannot
// send that way — a destination routed elsewhere, a neighbour the kernel
// has not resolved, a datagram over the interface MTU, no free TX frame —
// goes through the UDP transport's own worker send queue, as without
// AF_XDP transmission.

// l2Route is how a destination is reached on the wire: the interface, the
// source address the kernel would choose, the two MACs and the MTU.
type l2Route struct {
	ifindex        int
	src            netip.Addr
	srcMAC, dstMAC net.HardwareAddr
	mtu            int
}

// errNoL2 is a destination the kernel tables do not take to a resolved
// neighbour on an Ethernet interface.
var errNoL2 = errors.New("no resolved Ethernet neighbour")

// xskDestTTL is how long a resolved destination is used before the
// kernel's tables are read again; xskMissTTL the same for one that could
// not be resolved. maxXSKDests bounds each sender's cache.
const (
	xskDestTTL  = 5 * time.Second
	xskMissTTL  = time.Second
	maxXSKDests = 1024
)

// xskTxCounts are one sender's counters: written by its worker only,
// read by show_bpf.
type xskTxCounts struct {
	frames, noRoute, tooBig, noFrame, cacheFull, resolves atomic.Uint64
}

func (c *xskTxCounts) addTo(v *ctl.XSKTxView) {
	v.Frames += c.frames.Load()
	v.FallbackNoRoute += c.noRoute.Load()
	v.FallbackTooBig += c.tooBig.Load()
	v.FallbackNoFrame += c.noFrame.Load()
	v.FallbackCacheFull += c.cacheFull.Load()
	v.Resolves += c.resolves.Load()
}

type xskDest struct {
	ok    bool
	h     afxdp.Header
	q     *afxdp.TxQueue
	mtu   int
	until int64
}

// xskSender is one worker's transport.Sender for one UDP transport.
type xskSender struct {
	fallback transport.Sender
	bind     netip.Addr // the transport's bound address; unspecified: the route's source
	port     uint16
	ecn      uint8
	queues   map[int]*afxdp.TxQueue // by ifindex: this worker's queue on that interface's socket
	resolve  func(dst netip.Addr) (l2Route, error)
	dests    map[netip.AddrPort]*xskDest
	counts   *xskTxCounts
	now      int64 // 0: read the clock at the next Reserve

	// The frame being filled: finished (header and checksums) at the
	// next Reserve or Flush, once the caller wrote its payload.
	cur struct {
		d    *xskDest
		addr uint64
		buf  []byte
		n    int
	}
}

// Reserve implements transport.Sender.
func (s *xskSender) Reserve(to transport.Addr, n int) ([]byte, error) {
	s.finish()
	if s.now == 0 {
		s.now = time.Now().UnixNano()
	}
	ap := to.IP
	d := s.dests[ap]
	if d == nil || s.now >= d.until {
		if d == nil && len(s.dests) >= maxXSKDests && !s.evict() {
			s.counts.cacheFull.Add(1)
			return s.fallback.Reserve(to, n)
		}
		d = s.refresh(ap, d)
	}
	if !d.ok {
		s.counts.noRoute.Add(1)
		return s.fallback.Reserve(to, n)
	}
	if d.h.Len()-14+n > d.mtu {
		s.counts.tooBig.Add(1)
		return s.fallback.Reserve(to, n)
	}
	addr, buf, ok := d.q.Frame()
	if !ok || d.h.Len()+n > len(buf) {
		if ok {
			d.q.Unused(addr)
		}
		s.counts.noFrame.Add(1)
		return s.fallback.Reserve(to, n)
	}
	s.cur.d, s.cur.addr, s.cur.buf, s.cur.n = d, addr, buf, n
	return buf[d.h.Len() : d.h.Len()+n], nil
}

// evict drops the expired destinations of a full cache and reports
// whether room was made.
func (s *xskSender) evict() bool {
	for ap, d := range s.dests {
		if s.now >= d.until {
			delete(s.dests, ap)
		}
	}
	return len(s.dests) < maxXSKDests
}

// refresh reads the kernel's tables for ap (d: its stale entry, or nil).
func (s *xskSender) refresh(ap netip.AddrPort, d *xskDest) *xskDest {
	if d == nil {
		d = &xskDest{}
		s.dests[ap] = d
	}
	s.counts.resolves.Add(1)
	d.ok, d.until = false, s.now+int64(xskMissTTL)
	// A link-local destination keeps its zone: the route is asked for on
	// that interface.
	r, err := s.resolve(ap.Addr().Unmap())
	if err != nil {
		return d
	}
	q := s.queues[r.ifindex]
	if q == nil {
		return d
	}
	src := s.bind
	if !src.IsValid() || src.IsUnspecified() {
		src = r.src
	}
	h, err := afxdp.NewHeader(r.srcMAC, r.dstMAC, netip.AddrPortFrom(src, s.port), netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), s.ecn)
	if err != nil {
		return d
	}
	d.ok, d.h, d.q, d.mtu, d.until = true, h, q, r.mtu, s.now+int64(xskDestTTL)
	return d
}

// finish completes the frame being filled and submits it.
func (s *xskSender) finish() {
	d := s.cur.d
	if d == nil {
		return
	}
	s.cur.d = nil
	d.h.Finish(s.cur.buf, s.cur.n)
	d.q.Submit(s.cur.addr, d.h.Len()+s.cur.n)
	s.counts.frames.Add(1)
}

// Flush implements transport.Sender: every queue's batch goes out.
func (s *xskSender) Flush() {
	s.finish()
	for _, q := range s.queues {
		q.Flush()
	}
	s.fallback.Flush()
	s.now = 0
}

// Close implements transport.Sender.
func (s *xskSender) Close() {
	s.Flush()
	s.fallback.Close()
}

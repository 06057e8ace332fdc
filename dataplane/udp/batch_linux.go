//go:build linux

package udp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/internal/mmsg"
)

// oobSize holds a UDP_GRO, an SO_RXQ_OVFL, an SCM_TIMESTAMPNS and an
// IP_TOS or IPV6_TCLASS control message.
var oobSize = unix.CmsgSpace(4)*3 + unix.CmsgSpace(sizeofTimespec)

// Conn is batched I/O on one UDP socket. ReadBatch belongs to one
// goroutine and WriteBatch to one (they may be different); more writers
// each take a Writer of their own (NewWriter).
type Conn struct {
	rc  syscall.RawConn
	v6  bool // AF_INET6 socket (IPv4 peers as v4-mapped addresses)
	gro bool
	// gso is switched off by the first writer a GSO send fails for;
	// onGSORefused (SetGSORefused) hears of it once.
	gso          atomic.Bool
	onGSORefused func(error)

	r batchState
	w *Writer
	// lastOvfl is the SO_RXQ_OVFL counter last seen (reader only).
	lastOvfl uint32
	// The function handed to RawConn.Read, made once: a closure built per
	// call would be allocated per call.
	readFn func(fd uintptr) bool
}

// Writer is one goroutine's sendmmsg state on a Conn: its own syscall
// arguments, so several goroutines can send batches on one socket.
type Writer struct {
	c       *Conn
	s       batchState
	writeFn func(fd uintptr) bool
}

// NewWriter makes a Writer of up to batch messages per call.
func (c *Conn) NewWriter(batch int) *Writer {
	w := &Writer{c: c, s: newBatchState(max(1, min(batch, 1024)))}
	w.writeFn = func(fd uintptr) bool { return w.s.call(unix.SYS_SENDMMSG, fd) }
	return w
}

func (c *Conn) defaultWriter() *Writer { return c.w }

// GSO reports whether the writer's socket sends runs as one message.
func (w *Writer) GSO() bool { return w.c.GSO() }

// batchState is one direction's preallocated syscall arguments.
type batchState struct {
	k     int // messages in this call
	n     int // messages the kernel handled
	errno syscall.Errno
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for either family
	oob   []byte
}

// call runs one recvmmsg or sendmmsg on s's first k messages; false
// asks the runtime to wait until the socket is ready.
func (s *batchState) call(trap uintptr, fd uintptr) bool {
	var done bool
	s.n, s.errno, done = mmsg.Call(trap, fd, s.hdrs, s.k)
	return done
}

func newBatchState(n int) batchState {
	s := batchState{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n), oob: make([]byte, n*oobSize)}
	for i := range s.hdrs {
		s.hdrs[i].Hdr.Iov = &s.iovs[i]
		s.hdrs[i].Hdr.SetIovlen(1)
		s.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&s.names[i]))
	}
	return s
}

// Open prepares batched I/O of up to batch messages per call on c:
// UDP_GRO is switched on when the kernel has it, and UDP_SEGMENT is used
// when getsockopt says it exists.
func Open(c *net.UDPConn, batch int) (*Conn, error) {
	if batch < 1 || batch > 1024 {
		return nil, fmt.Errorf("udp: batch size %d out of range [1, 1024]", batch)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udp: %w", err)
	}
	conn := &Conn{rc: rc, r: newBatchState(batch)}
	conn.readFn = func(fd uintptr) bool { return conn.r.call(unix.SYS_RECVMMSG, fd) }
	conn.w = conn.NewWriter(batch)
	var serr error
	if err := rc.Control(func(fd uintptr) {
		sa, err := unix.Getsockname(int(fd))
		if err != nil {
			serr = err
			return
		}
		_, conn.v6 = sa.(*unix.SockaddrInet6)
		if _, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT); err == nil {
			conn.gso.Store(true)
		}
		if unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil {
			conn.gro = true
		}
		// Arrival times for queueing-delay control; without them Stamp is 0.
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		// The outer ECN codepoint: underlay CE becomes FMP CE. IPv4
		// datagrams on a dual-stack socket report IP_TOS as well.
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		if conn.v6 {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		}
	}); err != nil {
		return nil, fmt.Errorf("udp: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("udp: getsockname: %w", serr)
	}
	return conn, nil
}

// GSO reports whether WriteBatch sends runs as one UDP_SEGMENT message.
func (c *Conn) GSO() bool { return c.gso.Load() }

// SetGSORefused sets what is called, once, when the kernel refuses a GSO
// send and the socket falls back to one datagram per message. Set it
// before the first write.
func (c *Conn) SetGSORefused(f func(error)) { c.onGSORefused = f }

// GRO reports whether received runs may arrive coalesced (Segment > 0);
// receive buffers then need MaxMessage bytes.
func (c *Conn) GRO() bool { return c.gro }

// ReadBatch blocks until at least one message arrives, then fills up to
// len(ms) of them (each ms[i].Buf is the buffer to fill). It returns how
// many it filled and how many datagrams the kernel dropped for a full
// receive queue since the last report (SO_RXQ_OVFL, when enabled).
func (c *Conn) ReadBatch(ms []Message) (n int, drops uint64, err error) {
	k := min(len(ms), len(c.r.hdrs))
	if k == 0 {
		return 0, 0, nil
	}
	s := &c.r
	for i := range k {
		h := &s.hdrs[i]
		s.iovs[i].Base = unsafe.SliceData(ms[i].Buf)
		s.iovs[i].SetLen(len(ms[i].Buf))
		h.Hdr.Namelen = unix.SizeofSockaddrInet6
		h.Hdr.Control = &s.oob[i*oobSize]
		h.Hdr.SetControllen(oobSize)
		h.Hdr.Flags = 0
		h.Len = 0
	}
	s.k = k
	if err := c.rc.Read(c.readFn); err != nil {
		return 0, 0, err
	}
	if s.errno != 0 {
		return 0, 0, &net.OpError{Op: "recvmmsg", Net: "udp", Err: s.errno}
	}
	n = s.n
	for i := range n {
		h := &s.hdrs[i]
		m := &ms[i]
		m.N = int(h.Len)
		m.Trunc = h.Hdr.Flags&unix.MSG_TRUNC != 0
		m.Addr = sockaddrToAddrPort(&s.names[i])
		cm := parseCmsgs(s.oob[i*oobSize : i*oobSize+int(h.Hdr.Controllen)])
		seg, ovfl, haveOvfl := cm.segment, cm.ovfl, cm.haveOvfl
		m.Segment, m.Stamp, m.ECN = seg, cm.stamp, cm.ecn
		if haveOvfl {
			drops += uint64(ovfl - c.lastOvfl) // a wrapping u32
			c.lastOvfl = ovfl
		}
	}
	return n, drops, nil
}

// WriteBatch sends ms (Segment > 0: a GSO run) and returns how many
// datagrams the kernel accepted. A message the kernel refuses is skipped
// and the rest still go; the first such error is returned.
func (c *Conn) WriteBatch(ms []Message) (sent int, err error) { return c.w.WriteBatch(ms) }

// WriteBatch is Conn.WriteBatch on the writer's own state.
func (w *Writer) WriteBatch(ms []Message) (sent int, err error) {
	c := w.c
	for len(ms) > 0 {
		k := min(len(ms), len(w.s.hdrs))
		s := &w.s
		for i := range k {
			m := &ms[i]
			h := &s.hdrs[i]
			s.iovs[i].Base = unsafe.SliceData(m.Buf)
			s.iovs[i].SetLen(len(m.Buf))
			h.Hdr.Namelen = c.putSockaddr(&s.names[i], m.Addr)
			h.Hdr.Flags = 0
			if m.segments() > 1 {
				oob := s.oob[i*oobSize : (i+1)*oobSize]
				putSegmentCmsg(oob, uint16(m.Segment))
				h.Hdr.Control = &oob[0]
				h.Hdr.SetControllen(unix.CmsgSpace(2))
			} else {
				h.Hdr.Control = nil
				h.Hdr.SetControllen(0)
			}
		}
		s.k = k
		if werr := c.rc.Write(w.writeFn); werr != nil {
			return sent, werr
		}
		n, errno := s.n, s.errno
		for i := range n {
			sent += ms[i].segments()
		}
		ms = ms[n:]
		if errno == 0 {
			if n == 0 {
				return sent, &net.OpError{Op: "sendmmsg", Net: "udp", Err: unix.EIO}
			}
			continue
		}
		// ms[0] failed. A GSO message refused (a device without checksum
		// offload answers EIO) turns GSO off and goes again datagram by
		// datagram; any other refusal skips that message.
		if ms[0].segments() > 1 && (errno == unix.EIO || errno == unix.EINVAL) {
			if c.gso.CompareAndSwap(true, false) && c.onGSORefused != nil {
				c.onGSORefused(errno)
			}
			n, e := w.writeSplit(&ms[0])
			sent += n
			if err == nil && e != nil {
				err = e
			}
		} else if err == nil {
			err = &net.OpError{Op: "sendmmsg", Net: "udp", Err: errno}
		}
		ms = ms[1:]
	}
	return sent, err
}

// writeSplit sends a GSO message's datagrams one message each.
func (w *Writer) writeSplit(m *Message) (int, error) {
	var one [1]Message
	sent := 0
	var first error
	b := m.Buf
	for len(b) > 0 {
		n := min(m.Segment, len(b))
		one[0] = Message{Buf: b[:n], Addr: m.Addr}
		s, err := w.WriteBatch(one[:])
		sent += s
		if first == nil && err != nil {
			first = err
		}
		b = b[n:]
	}
	return sent, first
}

func (c *Conn) putSockaddr(sa *unix.RawSockaddrInet6, ap netip.AddrPort) uint32 {
	addr := ap.Addr()
	if !c.v6 {
		if !addr.Unmap().Is4() {
			return 0 // no IPv4 address: the kernel refuses the message (EDESTADDRREQ)
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:], ap.Port())
		sa4.Addr = addr.Unmap().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family = unix.AF_INET6
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
	sa.Flowinfo = 0
	sa.Addr = addr.As16()
	// A link-local destination goes out on the interface its zone names.
	sa.Scope_id = transport.ZoneIndex(addr)
	return unix.SizeofSockaddrInet6
}

func sockaddrToAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	case unix.AF_INET6:
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		// The kernel sets the scope of a link-local source (the interface
		// it arrived on), and 0 for any other: the reply needs it.
		return netip.AddrPortFrom(transport.WithZoneIndex(netip.AddrFrom16(sa.Addr), sa.Scope_id), port)
	}
	return netip.AddrPort{}
}

// sizeofTimespec is struct timespec's size: two native longs.
const sizeofTimespec = int(unsafe.Sizeof(unix.Timespec{}))

// timespecNano reads a struct timespec (native longs) as Unix ns.
func timespecNano(b []byte) int64 {
	if sizeofTimespec == 16 {
		return int64(binary.NativeEndian.Uint64(b))*1e9 + int64(binary.NativeEndian.Uint64(b[8:]))
	}
	return int64(int32(binary.NativeEndian.Uint32(b)))*1e9 + int64(int32(binary.NativeEndian.Uint32(b[4:])))
}

func putSegmentCmsg(b []byte, size uint16) {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.IPPROTO_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], size)
}

// cmsgs is what parseCmsgs found.
type cmsgs struct {
	segment  int    // UDP_GRO segment size, 0 if absent
	ovfl     uint32 // SO_RXQ_OVFL counter
	haveOvfl bool
	stamp    int64 // SCM_TIMESTAMPNS arrival time (Unix ns), 0 if absent
	ecn      uint8 // from IP_TOS or IPV6_TCLASS, ECNNotECT if absent
}

// parseCmsgs finds the UDP_GRO segment size, the SO_RXQ_OVFL counter,
// the SCM_TIMESTAMPNS arrival time and the outer ECN codepoint (IP_TOS,
// one byte; IPV6_TCLASS, an int) in a received control buffer, without
// allocating.
func parseCmsgs(b []byte) (c cmsgs) {
	hdr := unix.CmsgLen(0)
	for len(b) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hdr || l > len(b) {
			return
		}
		switch {
		case h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO && l >= hdr+4:
			c.segment = int(binary.NativeEndian.Uint32(b[hdr:]))
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && l >= hdr+4:
			c.ovfl, c.haveOvfl = binary.NativeEndian.Uint32(b[hdr:]), true
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= hdr+sizeofTimespec:
			c.stamp = timespecNano(b[hdr:])
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS && l >= hdr+1:
			c.ecn = b[hdr] & 3
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && l >= hdr+4:
			c.ecn = uint8(binary.NativeEndian.Uint32(b[hdr:])) & 3
		}
		next := unix.CmsgSpace(l - hdr)
		if next > len(b) {
			return
		}
		b = b[next:]
	}
	return
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// segments is how many datagrams m carries.
func (m *Message) segments() int {
	if m.Segment <= 0 || m.Segment >= len(m.Buf) {
		return 1
	}
	return (len(m.Buf) + m.Segment - 1) / m.Segment
}

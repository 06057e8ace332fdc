//go:build linux

package ethernet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/internal/mmsg"
)

// Supported: Linux has AF_PACKET.
const Supported = true

// htons is v in network byte order, as sockaddr_ll and socket() take it.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// packetSocket is an AF_PACKET SOCK_DGRAM socket bound to one interface
// and one EtherType, on the runtime's poller.
type packetSocket struct {
	f       *os.File
	rc      syscall.RawConn
	ifindex int32
	proto   uint16 // network order
	mac     transport.MAC
	mtu     int
	isUp    bool
	r       batchState
	readFn  func(fd uintptr) bool
}

// openLink opens and binds the packet socket. The interface is looked up
// in the calling thread's network namespace.
func openLink(iface string, ethertype uint16, rcvbuf, sndbuf int) (link, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("ethernet: interface not found: %s: %w", iface, err)
	}
	var mac transport.MAC
	if len(ifi.HardwareAddr) != len(mac) {
		return nil, fmt.Errorf("ethernet: interface %s has no 6-byte hardware address (%d bytes)", iface, len(ifi.HardwareAddr))
	}
	copy(mac[:], ifi.HardwareAddr)
	proto := htons(ethertype)
	// Protocol 0 receives nothing until bind names the EtherType and the
	// interface: no frame of another interface is queued in between.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("ethernet: AF_PACKET requires CAP_NET_RAW capability (run as root or use: setcap cap_net_raw=ep <binary>): %w", err)
		}
		return nil, fmt.Errorf("ethernet: socket(AF_PACKET): %w", err)
	}
	fail := func(err error) (link, error) {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		return fail(fmt.Errorf("ethernet: bind(AF_PACKET, %s): %w", iface, err))
	}
	if rcvbuf > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); err != nil {
			return fail(fmt.Errorf("ethernet: setsockopt(SO_RCVBUF): %w", err))
		}
	}
	if sndbuf > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sndbuf); err != nil {
			return fail(fmt.Errorf("ethernet: setsockopt(SO_SNDBUF): %w", err))
		}
	}
	f := os.NewFile(uintptr(fd), "packet:"+iface)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ethernet: %w", err)
	}
	s := &packetSocket{f: f, rc: rc, ifindex: int32(ifi.Index), proto: proto, mac: mac, mtu: ifi.MTU,
		isUp: ifi.Flags&net.FlagUp != 0, r: newBatchState(RecvBatch)}
	s.readFn = func(fd uintptr) bool { return s.r.call(unix.SYS_RECVMMSG, fd) }
	return s, nil
}

func (s *packetSocket) hwAddr() transport.MAC { return s.mac }
func (s *packetSocket) ifMTU() int            { return s.mtu }
func (s *packetSocket) index() int            { return int(s.ifindex) }
func (s *packetSocket) up() bool              { return s.isUp }
func (s *packetSocket) close() error          { return s.f.Close() }

// drops reads PACKET_STATISTICS, which the kernel zeroes on each read.
func (s *packetSocket) drops() (uint64, error) {
	var n uint64
	var serr error
	if err := s.rc.Control(func(fd uintptr) {
		st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err != nil {
			serr = err
			return
		}
		n = uint64(st.Drops)
	}); err != nil {
		return 0, err
	}
	return n, serr
}

// batchState is one direction's preallocated recvmmsg/sendmmsg arguments.
type batchState struct {
	k, n  int
	errno syscall.Errno
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrLinklayer
}

func newBatchState(n int) batchState {
	s := batchState{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), names: make([]unix.RawSockaddrLinklayer, n)}
	for i := range s.hdrs {
		s.hdrs[i].Hdr.Iov = &s.iovs[i]
		s.hdrs[i].Hdr.SetIovlen(1)
		s.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&s.names[i]))
	}
	return s
}

// call runs one recvmmsg or sendmmsg on the first k messages; false asks
// the poller to wait until the socket is ready.
func (s *batchState) call(trap uintptr, fd uintptr) bool {
	var done bool
	s.n, s.errno, done = mmsg.Call(trap, fd, s.hdrs, s.k)
	return done
}

// readBatch blocks until a frame arrives, then fills up to len(fs).
func (s *packetSocket) readBatch(fs []frame) (int, error) {
	b := &s.r
	k := min(len(fs), len(b.hdrs))
	if k == 0 {
		return 0, nil
	}
	for i := range k {
		h := &b.hdrs[i]
		b.iovs[i].Base = unsafe.SliceData(fs[i].Buf)
		b.iovs[i].SetLen(len(fs[i].Buf))
		h.Hdr.Namelen = unix.SizeofSockaddrLinklayer
		h.Hdr.Flags = 0
		h.Len = 0
	}
	b.k = k
	if err := s.rc.Read(s.readFn); err != nil {
		return 0, err
	}
	if b.errno != 0 {
		err := &net.OpError{Op: "recvmmsg", Net: "packet", Err: b.errno}
		if b.errno == unix.ENETDOWN {
			return 0, fmt.Errorf("%w: %w", errLinkDown, err)
		}
		return 0, err
	}
	for i := range b.n {
		h, f, sa := &b.hdrs[i], &fs[i], &b.names[i]
		f.N = int(h.Len)
		f.Trunc = h.Hdr.Flags&unix.MSG_TRUNC != 0 || f.N > len(f.Buf)
		f.N = min(f.N, len(f.Buf))
		f.Outgoing = sa.Pkttype == unix.PACKET_OUTGOING
		copy(f.MAC[:], sa.Addr[:6])
	}
	return b.n, nil
}

// packetWriter is one goroutine's sendmmsg state.
type packetWriter struct {
	s       *packetSocket
	b       batchState
	writeFn func(fd uintptr) bool
}

func (s *packetSocket) newWriter(batch int) frameWriter {
	w := &packetWriter{s: s, b: newBatchState(max(1, min(batch, 1024)))}
	for i := range w.b.names {
		sa := &w.b.names[i]
		sa.Family = unix.AF_PACKET
		sa.Protocol = s.proto
		sa.Ifindex = s.ifindex
		sa.Halen = 6
	}
	w.writeFn = func(fd uintptr) bool { return w.b.call(unix.SYS_SENDMMSG, fd) }
	return w
}

// writeBatch sends fs and returns how many frames the kernel took; one
// it refuses is skipped and the rest still go, the first error returned.
func (w *packetWriter) writeBatch(fs []frame) (sent int, err error) {
	b := &w.b
	for len(fs) > 0 {
		k := min(len(fs), len(b.hdrs))
		for i := range k {
			h := &b.hdrs[i]
			b.iovs[i].Base = unsafe.SliceData(fs[i].Buf)
			b.iovs[i].SetLen(len(fs[i].Buf))
			copy(b.names[i].Addr[:6], fs[i].MAC[:])
			h.Hdr.Namelen = unix.SizeofSockaddrLinklayer
			h.Hdr.Flags = 0
		}
		b.k = k
		if werr := w.s.rc.Write(w.writeFn); werr != nil {
			return sent, werr
		}
		sent += b.n
		fs = fs[b.n:]
		if b.errno == 0 {
			if b.n == 0 {
				return sent, &net.OpError{Op: "sendmmsg", Net: "packet", Err: unix.EIO}
			}
			continue
		}
		if err == nil {
			err = &net.OpError{Op: "sendmmsg", Net: "packet", Err: b.errno}
		}
		fs = fs[1:] // the frame the kernel refused
	}
	return sent, err
}

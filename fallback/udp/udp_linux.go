//go:build linux

package udp

import (
	"encoding/binary"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// haveDropCounter: Linux reports receive-queue overflows with SO_RXQ_OVFL.
const haveDropCounter = true

// enableDropCounting asks the kernel to attach the socket's cumulative
// drop counter to received datagrams (it does so once there has been a
// drop). Older kernels lack it; that is not fatal.
func enableDropCounting(conn *net.UDPConn) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
	}); err != nil {
		return err
	}
	return serr
}

// receiver reads datagrams with recvmsg so the SO_RXQ_OVFL counter can be
// read from the ancillary data. It is used by one goroutine.
type receiver struct {
	conn *net.UDPConn
	oob  []byte
	last uint32 // last counter value seen
}

func newReceiver(conn *net.UDPConn) *receiver {
	return &receiver{conn: conn, oob: make([]byte, unix.CmsgSpace(4))}
}

// recv reads one datagram into buf and returns how many kernel drops
// happened since the previous report.
func (r *receiver) recv(buf []byte) (int, netip.AddrPort, uint64, error) {
	n, oobn, _, from, err := r.conn.ReadMsgUDPAddrPort(buf, r.oob)
	if err != nil {
		return 0, netip.AddrPort{}, 0, err
	}
	var drops uint64
	if c, ok := parseRXQOverflow(r.oob[:oobn]); ok {
		drops = uint64(c - r.last) // the counter is a wrapping u32
		r.last = c
	}
	return n, from, drops, nil
}

// parseRXQOverflow finds the SO_RXQ_OVFL counter in a control-message
// buffer without allocating.
func parseRXQOverflow(b []byte) (uint32, bool) {
	const lenSize = unix.SizeofCmsghdr - 8 // cmsg_len is size_t; level and type are int32
	hdr := unix.CmsgLen(0)
	for len(b) >= hdr {
		var l int
		if lenSize == 8 {
			l = int(binary.NativeEndian.Uint64(b))
		} else {
			l = int(binary.NativeEndian.Uint32(b))
		}
		if l < hdr || l > len(b) {
			return 0, false
		}
		level := int32(binary.NativeEndian.Uint32(b[lenSize:]))
		typ := int32(binary.NativeEndian.Uint32(b[lenSize+4:]))
		if level == unix.SOL_SOCKET && typ == unix.SO_RXQ_OVFL && l >= hdr+4 {
			return binary.NativeEndian.Uint32(b[hdr:]), true
		}
		next := unix.CmsgSpace(l - hdr)
		if next >= len(b) {
			break
		}
		b = b[next:]
	}
	return 0, false
}

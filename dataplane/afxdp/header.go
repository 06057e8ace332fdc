package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrHeader: the addresses given to NewHeader cannot make a frame.
var ErrHeader = errors.New("afxdp: cannot build the frame header")

// Header is the Ethernet, IP and UDP header of the frames one socket
// sends to one destination: a template built once (when the neighbour is
// resolved) and completed per frame by Finish with the lengths and the
// checksums.
type Header struct {
	b      [14 + 40 + 8]byte
	n      int
	v6     bool
	pseudo uint64 // the pseudo-header's addresses and protocol, summed
}

// NewHeader builds the template: Ethernet from src to dst MAC, IPv4
// (DF, TTL 64) or IPv6 (hop limit 64) from src to dst with the ECN
// codepoint ecn (0–3), UDP between their ports. Both addresses are of
// one family.
func NewHeader(srcMAC, dstMAC net.HardwareAddr, src, dst netip.AddrPort, ecn uint8) (Header, error) {
	var h Header
	if len(srcMAC) != 6 || len(dstMAC) != 6 {
		return h, fmt.Errorf("%w: MAC lengths %d and %d", ErrHeader, len(srcMAC), len(dstMAC))
	}
	if ecn > 3 {
		return h, fmt.Errorf("%w: ECN codepoint %d", ErrHeader, ecn)
	}
	sa, da := src.Addr().Unmap(), dst.Addr().Unmap()
	copy(h.b[0:], dstMAC)
	copy(h.b[6:], srcMAC)
	var udp []byte
	switch {
	case sa.Is4() && da.Is4():
		binary.BigEndian.PutUint16(h.b[12:], 0x0800)
		ip := h.b[14:34]
		ip[0], ip[1] = 0x45, ecn
		binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
		ip[8], ip[9] = 64, 17
		a4, b4 := sa.As4(), da.As4()
		copy(ip[12:], a4[:])
		copy(ip[16:], b4[:])
		h.pseudo = sum(0, ip[12:20]) + 17
		udp, h.n = h.b[34:42], 42
	case sa.Is6() && da.Is6() && !sa.Is4In6() && !da.Is4In6():
		h.v6 = true
		binary.BigEndian.PutUint16(h.b[12:], 0x86dd)
		ip := h.b[14:54]
		binary.BigEndian.PutUint32(ip[0:], 6<<28|uint32(ecn)<<20)
		ip[6], ip[7] = 17, 64
		a16, b16 := sa.As16(), da.As16()
		copy(ip[8:], a16[:])
		copy(ip[24:], b16[:])
		h.pseudo = sum(0, ip[8:40]) + 17
		udp, h.n = h.b[54:62], 62
	default:
		return h, fmt.Errorf("%w: %v to %v", ErrHeader, sa, da)
	}
	binary.BigEndian.PutUint16(udp[0:], src.Port())
	binary.BigEndian.PutUint16(udp[2:], dst.Port())
	return h, nil
}

// Len is the header's length: where the payload starts in a frame.
func (h *Header) Len() int { return h.n }

// Finish writes the header into frame, whose payload of n bytes is
// already at frame[h.Len():], with its lengths and checksums; the frame
// is h.Len()+n bytes. frame must hold them and n must fit the IP length
// field (the caller checks the MTU first).
func (h *Header) Finish(frame []byte, n int) {
	copy(frame, h.b[:h.n])
	ulen := 8 + n
	var udp []byte
	if h.v6 {
		binary.BigEndian.PutUint16(frame[18:], uint16(ulen))
		udp = frame[54 : 54+ulen]
	} else {
		ip := frame[14:34]
		binary.BigEndian.PutUint16(ip[2:], uint16(20+ulen))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], ^fold(sum(0, ip)))
		udp = frame[34 : 34+ulen]
	}
	binary.BigEndian.PutUint16(udp[4:], uint16(ulen))
	udp[6], udp[7] = 0, 0
	c := ^fold(sum(h.pseudo+uint64(ulen), udp))
	if c == 0 {
		c = 0xffff // zero means "no checksum" (RFC 768)
	}
	binary.BigEndian.PutUint16(udp[6:], c)
}

// sum adds b to acc as big-endian 16-bit words (one's complement, folded
// later), eight bytes at a time.
func sum(acc uint64, b []byte) uint64 {
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		acc += v>>32 + v&0xffffffff
		b = b[8:]
	}
	if len(b) >= 4 {
		acc += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// fold reduces a sum to 16 bits with end-around carry.
func fold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

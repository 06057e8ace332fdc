package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Errors of ParseUDP; match with errors.Is.
var (
	ErrShort    = errors.New("afxdp: frame ends inside a header")
	ErrNotUDP   = errors.New("afxdp: not an IPv4/IPv6 UDP datagram")
	ErrFragment = errors.New("afxdp: IPv4 fragment or IPv6 extension header")
	ErrLength   = errors.New("afxdp: UDP length disagrees with the frame")
	// ErrNotSupported: no AF_XDP on this operating system.
	ErrNotSupported = errors.New("afxdp: AF_XDP is supported on Linux only")
)

// Datagram is the UDP datagram in an Ethernet frame.
type Datagram struct {
	Src     netip.AddrPort // IPv4 as a 4-byte address
	DstPort uint16
	ECN     uint8  // the outer ECN codepoint (0–3)
	Payload []byte // aliases the frame
}

// ParseUDP finds the UDP datagram in an Ethernet frame: IPv4 with any
// IHL, not a fragment, or IPv6 without extension headers (what xdp_fips
// redirects). The UDP length, not the frame, bounds the payload (Ethernet
// pads short frames).
func ParseUDP(f []byte) (Datagram, error) {
	if len(f) < 14 {
		return Datagram{}, fmt.Errorf("%w: %d bytes", ErrShort, len(f))
	}
	var d Datagram
	var l4 []byte
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		ip := f[14:]
		if len(ip) < 20 {
			return Datagram{}, fmt.Errorf("%w: IPv4 header", ErrShort)
		}
		hl := int(ip[0]&0xf) * 4
		if ip[0]>>4 != 4 || hl < 20 {
			return Datagram{}, fmt.Errorf("%w: IPv4 version/IHL %#x", ErrNotUDP, ip[0])
		}
		if len(ip) < hl {
			return Datagram{}, fmt.Errorf("%w: IPv4 options", ErrShort)
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return Datagram{}, ErrFragment
		}
		if ip[9] != 17 {
			return Datagram{}, fmt.Errorf("%w: protocol %d", ErrNotUDP, ip[9])
		}
		d.ECN = ip[1] & 3
		d.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), 0)
		l4 = ip[hl:]
	case 0x86dd:
		ip := f[14:]
		if len(ip) < 40 {
			return Datagram{}, fmt.Errorf("%w: IPv6 header", ErrShort)
		}
		if ip[0]>>4 != 6 {
			return Datagram{}, fmt.Errorf("%w: IPv6 version %d", ErrNotUDP, ip[0]>>4)
		}
		switch ip[6] {
		case 17:
		case 0, 43, 44, 51, 60, 135:
			return Datagram{}, ErrFragment
		default:
			return Datagram{}, fmt.Errorf("%w: next header %d", ErrNotUDP, ip[6])
		}
		d.ECN = (ip[1] >> 4) & 3
		d.Src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(ip[8:24])).Unmap(), 0)
		l4 = ip[40:]
	default:
		return Datagram{}, fmt.Errorf("%w: EtherType %#04x", ErrNotUDP, binary.BigEndian.Uint16(f[12:]))
	}
	if len(l4) < 8 {
		return Datagram{}, fmt.Errorf("%w: UDP header", ErrShort)
	}
	ulen := int(binary.BigEndian.Uint16(l4[4:]))
	if ulen < 8 || ulen > len(l4) {
		return Datagram{}, fmt.Errorf("%w: UDP length %d, %d bytes", ErrLength, ulen, len(l4))
	}
	d.Src = netip.AddrPortFrom(d.Src.Addr(), binary.BigEndian.Uint16(l4[0:]))
	d.DstPort = binary.BigEndian.Uint16(l4[2:])
	d.Payload = l4[8:ulen]
	return d, nil
}

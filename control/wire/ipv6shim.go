package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// The IPv6 shim (DataPacket port 256) carries an IPv6 packet with its
// header squeezed from 40 to 7 bytes. Both addresses are dropped because the
// session already names both ends (fd00::/8 addresses derive from
// NodeAddrs), and payload_length because the FSP plaintext length gives it:
//
//	[0]    format = 0x00
//	[1..5] IPv6 header bytes 0..3 verbatim (version, traffic class, flow label)
//	[5]    next_header
//	[6]    hop_limit
//	[7..]  the payload after the 40-byte IPv6 header
//
// Bytes 1..5 are the original bytes, not separate TC and flow label fields
// as upstream's design notes draw them.

// IPv6 shim constants.
const (
	IPv6HeaderSize           = 40
	IPv6ShimFormatCompressed = 0x00
	IPv6ShimHeaderSize       = 7 // format + 4 verbatim + next_header + hop_limit

	// IPv6ShimSavings is how much smaller the shim makes a packet.
	IPv6ShimSavings = IPv6HeaderSize - IPv6ShimHeaderSize

	ipv6MaxPayload = 0xFFFF // payload_length is 16 bits; no jumbograms
)

// IsIPv6 reports whether pkt is long enough for an IPv6 header and says
// version 6.
func IsIPv6(pkt []byte) bool { return len(pkt) >= IPv6HeaderSize && pkt[0]>>4 == 6 }

// IPv6Src and IPv6Dst are the addresses of an IPv6 packet of at least
// IPv6HeaderSize bytes (checked by the caller).
func IPv6Src(pkt []byte) netip.Addr { return netip.AddrFrom16([16]byte(pkt[8:24])) }

// IPv6Dst: see IPv6Src.
func IPv6Dst(pkt []byte) netip.Addr { return netip.AddrFrom16([16]byte(pkt[24:40])) }

// IPv6Shim is a view of a shim payload.
type IPv6Shim struct {
	// VerTCFlow is IPv6 header bytes 0..3 as the sender had them. The
	// version nibble is not trusted: decompression forces it to 6.
	VerTCFlow  [4]byte
	NextHeader uint8
	HopLimit   uint8
	Payload    []byte // the upper-layer payload
}

// ParseIPv6Shim decodes a shim payload (the DataPacket payload of port 256).
func ParseIPv6Shim(b []byte) (IPv6Shim, error) {
	const msg = "IPv6 shim"
	if len(b) < IPv6ShimHeaderSize {
		return IPv6Shim{}, errTruncated(msg, "", len(b), IPv6ShimHeaderSize)
	}
	if b[0] != IPv6ShimFormatCompressed {
		return IPv6Shim{}, errValue(msg, "format", fmt.Sprintf("got 0x%02x, want 0x00", b[0]))
	}
	if n := len(b) - IPv6ShimHeaderSize; n > ipv6MaxPayload {
		return IPv6Shim{}, errLength(msg, "payload", n, ipv6MaxPayload)
	}
	s := IPv6Shim{NextHeader: b[5], HopLimit: b[6], Payload: b[IPv6ShimHeaderSize:len(b):len(b)]}
	copy(s.VerTCFlow[:], b[1:5])
	return s, nil
}

// TrafficClass is the 8-bit traffic class (DSCP and ECN).
func (s IPv6Shim) TrafficClass() uint8 { return s.VerTCFlow[0]<<4 | s.VerTCFlow[1]>>4 }

// FlowLabel is the 20-bit flow label.
func (s IPv6Shim) FlowLabel() uint32 {
	return uint32(s.VerTCFlow[1]&0x0F)<<16 | uint32(s.VerTCFlow[2])<<8 | uint32(s.VerTCFlow[3])
}

// Len is the shim's encoded size.
func (s IPv6Shim) Len() int { return IPv6ShimHeaderSize + len(s.Payload) }

// MarshalTo writes the shim payload.
func (s IPv6Shim) MarshalTo(b []byte) (int, error) {
	n := s.Len()
	if len(b) < n {
		return 0, errBuffer("IPv6 shim", len(b), n)
	}
	// Payload first: b may overlap s.Payload (see CompressIPv6).
	copy(b[IPv6ShimHeaderSize:], s.Payload)
	b[0] = IPv6ShimFormatCompressed
	copy(b[1:5], s.VerTCFlow[:])
	b[5] = s.NextHeader
	b[6] = s.HopLimit
	return n, nil
}

// DecompressedLen is the size of the rebuilt IPv6 packet.
func (s IPv6Shim) DecompressedLen() int { return IPv6HeaderSize + len(s.Payload) }

// DecompressTo rebuilds the IPv6 packet into b. src is the fd00::/8 address
// of the session's remote end, dst our own.
func (s IPv6Shim) DecompressTo(b []byte, src, dst [16]byte) (int, error) {
	n := s.DecompressedLen()
	if len(b) < n {
		return 0, errBuffer("IPv6 packet", len(b), n)
	}
	if len(s.Payload) > ipv6MaxPayload {
		return 0, errLength("IPv6 shim", "payload", len(s.Payload), ipv6MaxPayload)
	}
	// Payload first so that b may overlap the shim (in-place decompression
	// into the 33 bytes before it).
	copy(b[IPv6HeaderSize:], s.Payload)
	b[0] = s.VerTCFlow[0]&0x0F | 0x60
	copy(b[1:4], s.VerTCFlow[1:])
	binary.BigEndian.PutUint16(b[4:], uint16(len(s.Payload)))
	b[6] = s.NextHeader
	b[7] = s.HopLimit
	copy(b[8:24], src[:])
	copy(b[24:40], dst[:])
	return n, nil
}

// CompressIPv6 writes the shim form of the IPv6 packet pkt into dst and
// returns its length, len(pkt) - 33. The packet's addresses and
// payload_length field are not looked at. dst may overlap pkt; in
// particular dst = pkt[IPv6ShimSavings:] compresses in place without moving
// the payload.
func CompressIPv6(dst, pkt []byte) (int, error) {
	const msg = "IPv6 packet"
	if len(pkt) < IPv6HeaderSize {
		return 0, errTruncated(msg, "", len(pkt), IPv6HeaderSize)
	}
	if v := pkt[0] >> 4; v != 6 {
		return 0, errKind(ErrVersion, msg, "version", fmt.Sprintf("got %d, want 6", v))
	}
	if n := len(pkt) - IPv6HeaderSize; n > ipv6MaxPayload {
		return 0, errLength(msg, "payload", n, ipv6MaxPayload)
	}
	// The header fields are read into s before MarshalTo writes anything.
	s := IPv6Shim{NextHeader: pkt[6], HopLimit: pkt[7], Payload: pkt[IPv6HeaderSize:]}
	copy(s.VerTCFlow[:], pkt[:4])
	return s.MarshalTo(dst)
}

// DecompressIPv6 rebuilds into dst the IPv6 packet carried by the shim
// payload shim, whose source address is src and destination dstAddr, and
// returns its length, len(shim) + 33. dst may overlap shim; dst =
// buf[0:] with shim = buf[IPv6ShimSavings:] decompresses in place.
func DecompressIPv6(dst, shim []byte, src, dstAddr [16]byte) (int, error) {
	s, err := ParseIPv6Shim(shim)
	if err != nil {
		return 0, err
	}
	return s.DecompressTo(dst, src, dstAddr)
}

// MarkIPv6ECNCE sets the ECN field of an IPv6 packet's traffic class to CE
// (0b11) when the packet is ECN-capable, ECT(0) or ECT(1), as RFC 3168
// requires; Not-ECT packets are left alone. It reports whether the packet is
// ECN-capable, that is whether it now carries CE. No checksum covers the
// traffic class, so nothing else changes.
func MarkIPv6ECNCE(pkt []byte) bool {
	if len(pkt) < 2 {
		return false
	}
	// The traffic class straddles bytes 0 and 1; its ECN bits are bits 5:4
	// of byte 1.
	if pkt[1]&0x30 == 0 {
		return false
	}
	pkt[1] |= 0x30
	return true
}

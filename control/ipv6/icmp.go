package ipv6

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// ProtoICMPv6 is the IPv6 next-header value for ICMPv6.
const ProtoICMPv6 = 58

// ICMPv6 message types used by this package (RFC 4443).
const (
	TypeDestUnreachable = 1
	TypePacketTooBig    = 2
)

// Destination Unreachable codes (RFC 4443 §3.1).
const (
	CodeNoRoute            uint8 = 0
	CodeAdminProhibited    uint8 = 1
	CodeBeyondScope        uint8 = 2
	CodeAddressUnreachable uint8 = 3
	CodePortUnreachable    uint8 = 4
	CodeSourcePolicy       uint8 = 5
	CodeRejectRoute        uint8 = 6
)

// HopLimit is the hop limit of every ICMPv6 error this package builds.
const HopLimit = 64

const (
	icmpHeaderLen = 8
	// maxQuote is how much of the invoking packet fits in a MinMTU error.
	maxQuote = MinMTU - ipv6HeaderLen - icmpHeaderLen
)

// Errors returned by the builders. All are sentinel values for errors.Is.
var (
	// ErrTooShort: the offending packet is shorter than an IPv6 header.
	ErrTooShort = errors.New("ipv6: packet shorter than IPv6 header")
	// ErrNotIPv6: the offending packet's version nibble is not 6.
	ErrNotIPv6 = errors.New("ipv6: not an IPv6 packet")
	// ErrSuppressed: RFC 4443 §2.4(e) forbids an error for this packet
	// (unspecified or multicast source, multicast destination, or the
	// packet is itself an ICMPv6 error).
	ErrSuppressed = errors.New("ipv6: ICMPv6 error suppressed for this packet")
	// ErrBadSource: the address the error is to come from is not IPv6.
	ErrBadSource = errors.New("ipv6: error source address is not IPv6")
	// ErrBadCode: the Destination Unreachable code is not one of 0..6.
	ErrBadCode = errors.New("ipv6: unknown Destination Unreachable code")
)

// ShouldSendICMPError reports whether an ICMPv6 error may be sent about
// pkt, as upstream's should_send_icmp_error: pkt must be a full IPv6
// header with version 6, a source that is neither unspecified nor
// multicast, a destination that is not multicast, and must not itself be an
// ICMPv6 error message (type < 128).
func ShouldSendICMPError(pkt []byte) bool {
	return suppressCheck(pkt, true) == nil
}

// suppressCheck validates pkt as the invoking packet of an ICMPv6 error.
// checkDst adds the multicast-destination rule, which upstream applies to
// Destination Unreachable (via should_send_icmp_error) but not inside its
// Packet Too Big builder.
func suppressCheck(pkt []byte, checkDst bool) error {
	if len(pkt) < ipv6HeaderLen {
		return ErrTooShort
	}
	if pkt[0]>>4 != 6 {
		return ErrNotIPv6
	}
	src := pkt[8:24]
	if src[0] == 0xff || isZero(src) {
		return ErrSuppressed
	}
	if checkDst && pkt[24] == 0xff {
		return ErrSuppressed
	}
	if pkt[6] == ProtoICMPv6 && len(pkt) > ipv6HeaderLen && pkt[ipv6HeaderLen] < 128 {
		return ErrSuppressed
	}
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// BuildDestUnreachable appends to dst a complete IPv6 packet carrying an
// ICMPv6 Destination Unreachable (type 1) with the given code, from src to
// the offending packet's source, quoting as much of offending as keeps the
// whole packet within 1280 bytes. Upstream sends these from the node's own
// FIPS address with CodeNoRoute, for packets to non-FIPS destinations and
// for mesh destinations that cannot be reached.
//
// It refuses (ErrSuppressed) exactly the packets ShouldSendICMPError
// refuses. On error dst is returned unchanged.
func BuildDestUnreachable(dst []byte, code uint8, src netip.Addr, offending []byte) ([]byte, error) {
	if code > CodeRejectRoute {
		return dst, ErrBadCode
	}
	if err := suppressCheck(offending, true); err != nil {
		return dst, err
	}
	return build(dst, TypeDestUnreachable, code, 0, src, offending)
}

// BuildPacketTooBig appends to dst a complete IPv6 packet carrying an
// ICMPv6 Packet Too Big (type 2, code 0) reporting mtu, from src to the
// offending packet's source, quoting as much of offending as keeps the
// whole packet within 1280 bytes.
//
// Upstream passes the offending packet's destination as src, so that the
// local kernel sees the message as coming from a remote router (Linux
// ignores PTBs from its own addresses), and mtu = EffectiveMTU.
//
// Like upstream's builder it refuses (ErrSuppressed) unspecified or
// multicast sources and ICMPv6 error messages; unlike Destination
// Unreachable it does not check for a multicast destination.
func BuildPacketTooBig(dst []byte, mtu uint32, src netip.Addr, offending []byte) ([]byte, error) {
	if err := suppressCheck(offending, false); err != nil {
		return dst, err
	}
	return build(dst, TypePacketTooBig, 0, mtu, src, offending)
}

func build(dst []byte, typ, code uint8, word uint32, src netip.Addr, offending []byte) ([]byte, error) {
	if !src.Is6() {
		return dst, ErrBadSource
	}
	quote := min(len(offending), maxQuote)
	icmpLen := icmpHeaderLen + quote
	total := ipv6HeaderLen + icmpLen

	start := len(dst)
	dst = append(dst, make([]byte, total)...)
	p := dst[start:]

	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:6], uint16(icmpLen))
	p[6] = ProtoICMPv6
	p[7] = HopLimit
	s := src.As16()
	copy(p[8:24], s[:])
	copy(p[24:40], offending[8:24])

	m := p[ipv6HeaderLen:]
	m[0] = typ
	m[1] = code
	binary.BigEndian.PutUint32(m[4:8], word)
	copy(m[icmpHeaderLen:], offending[:quote])

	binary.BigEndian.PutUint16(m[2:4], l4Checksum(p[8:24], p[24:40], ProtoICMPv6, m))
	return dst, nil
}

// l4Checksum computes the RFC 8200 §8.1 upper-layer checksum of msg,
// whose checksum field must be zero.
func l4Checksum(src, dstAddr []byte, proto uint8, msg []byte) uint16 {
	var sum uint32
	sum = addWords(sum, src)
	sum = addWords(sum, dstAddr)
	n := uint32(len(msg))
	sum += n>>16 + n&0xffff
	sum += uint32(proto)
	sum = addWords(sum, msg)
	return ^fold(sum)
}

func addWords(sum uint32, b []byte) uint32 {
	i := 0
	for ; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
		if sum >= 0x80000000 {
			sum = uint32(fold(sum))
		}
	}
	if i < len(b) {
		sum += uint32(b[i]) << 8
	}
	return sum
}

func fold(sum uint32) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

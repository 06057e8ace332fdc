package ipv6

import (
	"encoding/binary"
	"math/bits"
)

const (
	protoTCP = 6
	protoUDP = 17

	tcpFlagSYN = 0x02
	tcpOptEnd  = 0
	tcpOptNOP  = 1
	tcpOptMSS  = 2
)

// ClampMSS lowers the MSS option of an IPv6 TCP segment with SYN set (SYN
// or SYN-ACK) to maxMSS when it is larger, and then fixes the TCP checksum.
// It reports whether it changed pkt.
//
// As upstream, it acts only when the IPv6 next header is TCP directly
// (packets with extension headers are left alone), when maxMSS is non-zero,
// and when the TCP data offset is sane; the option walk stops at End of
// Option List, at a malformed or truncated option, and at the first MSS
// option. An MSS option whose length is not 4 is skipped. Packets without
// an MSS option are left alone. It never panics on any input.
//
// The checksum is recomputed over the whole segment, as upstream does (this
// also repairs partial checksums left by checksum offload). If the IPv6
// payload length does not describe the buffer, so that a full recomputation
// is impossible, the checksum is updated incrementally (RFC 1624) instead,
// so a changed packet never carries a stale checksum.
func ClampMSS(pkt []byte, maxMSS uint16) bool {
	if len(pkt) < ipv6HeaderLen || pkt[0]>>4 != 6 || pkt[6] != protoTCP || maxMSS == 0 {
		return false
	}
	if len(pkt) < ipv6HeaderLen+tcpHeaderMin {
		return false
	}
	tcp := pkt[ipv6HeaderLen:]
	if tcp[13]&tcpFlagSYN == 0 {
		return false
	}
	hlen := int(tcp[12]>>4) * 4
	if hlen < tcpHeaderMin || hlen > len(tcp) {
		return false
	}
	for i := tcpHeaderMin; i < hlen; {
		kind := tcp[i]
		if kind == tcpOptEnd {
			return false
		}
		if kind == tcpOptNOP {
			i++
			continue
		}
		if i+1 >= hlen {
			return false
		}
		olen := int(tcp[i+1])
		if olen < 2 || i+olen > hlen {
			return false
		}
		if kind == tcpOptMSS && olen == 4 {
			cur := binary.BigEndian.Uint16(tcp[i+2 : i+4])
			if cur <= maxMSS {
				return false
			}
			binary.BigEndian.PutUint16(tcp[i+2:i+4], maxMSS)
			if !RecalculateL4Checksum(pkt) {
				old, upd := cur, maxMSS
				if (i+2)%2 == 1 {
					// A field at an odd offset straddles two checksum
					// words; its contribution is byte-swapped.
					old, upd = bits.ReverseBytes16(old), bits.ReverseBytes16(upd)
				}
				incrementalUpdate(tcp[16:18], old, upd)
			}
			return true
		}
		i += olen
	}
	return false
}

// incrementalUpdate applies RFC 1624 eqn. 3 (HC' = ~(~HC + ~m + m')) to
// the checksum field csum after a 16-bit word changed from old to new.
func incrementalUpdate(csum []byte, old, new uint16) {
	hc := binary.BigEndian.Uint16(csum)
	sum := uint32(^hc) + uint32(^old) + uint32(new)
	binary.BigEndian.PutUint16(csum, ^fold(sum))
}

// RecalculateL4Checksum recomputes, in place, the TCP or UDP checksum of
// an IPv6 packet whose next header is TCP or UDP directly, over the payload
// length the IPv6 header states. It reports whether it wrote a checksum; it
// does nothing (false) for other protocols, a zero or overlong payload
// length, or a payload too short for the transport header. A computed UDP
// checksum of zero is sent as 0xffff (RFC 768).
func RecalculateL4Checksum(pkt []byte) bool {
	if len(pkt) < ipv6HeaderLen || pkt[0]>>4 != 6 {
		return false
	}
	plen := int(binary.BigEndian.Uint16(pkt[4:6]))
	if plen == 0 || ipv6HeaderLen+plen > len(pkt) {
		return false
	}
	proto := pkt[6]
	var off int
	switch {
	case proto == protoTCP && plen >= tcpHeaderMin:
		off = ipv6HeaderLen + 16
	case proto == protoUDP && plen >= 8:
		off = ipv6HeaderLen + 6
	default:
		return false
	}
	pkt[off], pkt[off+1] = 0, 0
	c := l4Checksum(pkt[8:24], pkt[24:40], proto, pkt[ipv6HeaderLen:ipv6HeaderLen+plen])
	if c == 0 && proto == protoUDP {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(pkt[off:off+2], c)
	return true
}

package ipv6

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// mkPacket builds an IPv6 packet with the given next header and payload.
func mkPacket(src, dst string, nh uint8, payload []byte) []byte {
	p := make([]byte, 40+len(payload))
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:6], uint16(len(payload)))
	p[6] = nh
	p[7] = 64
	s := netip.MustParseAddr(src).As16()
	d := netip.MustParseAddr(dst).As16()
	copy(p[8:24], s[:])
	copy(p[24:40], d[:])
	copy(p[40:], payload)
	return p
}

// verifyL4 checks, independently of the package's checksum code, that the
// upper-layer checksum of an IPv6 packet (no extension headers) is valid:
// the one's-complement sum of pseudo-header and message, checksum
// included, must be 0xffff. It sums byte by byte into a uint64.
func verifyL4(t *testing.T, pkt []byte) {
	t.Helper()
	plen := int(pkt[4])<<8 | int(pkt[5])
	if 40+plen != len(pkt) {
		t.Fatalf("payload length %d does not match packet length %d", plen, len(pkt))
	}
	var buf []byte
	buf = append(buf, pkt[8:40]...)
	buf = append(buf, byte(plen>>24), byte(plen>>16), byte(plen>>8), byte(plen))
	buf = append(buf, 0, 0, 0, pkt[6])
	buf = append(buf, pkt[40:]...)
	var s uint64
	for i := 0; i < len(buf); i++ {
		if i%2 == 0 {
			s += uint64(buf[i]) * 256
		} else {
			s += uint64(buf[i])
		}
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	if s != 0xffff {
		t.Fatalf("upper-layer checksum invalid: folded sum %#x", s)
	}
}

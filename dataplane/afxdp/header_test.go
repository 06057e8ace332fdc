package afxdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"
)

// refChecksum is RFC 1071 the slow way: 16-bit words, end-around carry.
func refChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// udpPseudo is the pseudo-header the checksum covers, built the slow way.
func udpPseudo(src, dst netip.Addr, ulen int) []byte {
	var p []byte
	p = append(p, src.AsSlice()...)
	p = append(p, dst.AsSlice()...)
	if src.Is4() {
		p = append(p, 0, 17, byte(ulen>>8), byte(ulen))
	} else {
		p = append(p, byte(ulen>>24), byte(ulen>>16), byte(ulen>>8), byte(ulen), 0, 0, 0, 17)
	}
	return p
}

func checkFrame(t *testing.T, f []byte, src, dst netip.AddrPort, ecn uint8, payload []byte) {
	t.Helper()
	d, err := ParseUDP(f)
	if err != nil {
		t.Fatalf("ParseUDP: %v", err)
	}
	if d.Src != src || d.DstPort != dst.Port() || d.ECN != ecn || !bytes.Equal(d.Payload, payload) {
		t.Fatalf("parsed %+v, want from %v to port %d ECN %d, %d bytes", d, src, dst.Port(), ecn, len(payload))
	}
	var udp []byte
	if src.Addr().Is4() {
		ip := f[14:34]
		if refChecksum(ip) != 0xffff {
			t.Fatalf("IPv4 header checksum does not verify: %x", ip)
		}
		if binary.BigEndian.Uint16(ip[6:]) != 0x4000 || ip[8] != 64 {
			t.Fatalf("IPv4 flags/TTL: %x", ip)
		}
		udp = f[34:]
	} else {
		udp = f[54:]
		if f[21] != 64 {
			t.Fatalf("hop limit %d", f[21])
		}
	}
	if c := refChecksum(append(udpPseudo(src.Addr(), dst.Addr(), len(udp)), udp...)); c != 0xffff {
		t.Fatalf("UDP checksum does not verify (sum %#x)", c)
	}
}

// TestHeaderFinishMakesValidFrames: frames Finish completes parse back to
// what was given, and their IPv4 header and UDP checksums verify against
// a plain RFC 1071 implementation, for both families and every payload
// length parity.
func TestHeaderFinishMakesValidFrames(t *testing.T) {
	macA, macB := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	for _, c := range []struct{ src, dst string }{
		{"10.0.0.1:2121", "10.0.0.2:40000"},
		{"[fd00::1]:2121", "[fd00::2]:40000"},
		{"[fe80::1]:65535", "[2001:db8::ffff]:1"},
	} {
		src, dst := netip.MustParseAddrPort(c.src), netip.MustParseAddrPort(c.dst)
		for _, ecn := range []uint8{0, 2} {
			h, err := NewHeader(macA, macB, src, dst, ecn)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 2, 7, 8, 9, 1399, 1400, 1472} {
				payload := make([]byte, n)
				for i := range payload {
					payload[i] = byte(i*7 + n)
				}
				f := make([]byte, h.Len()+n)
				copy(f[h.Len():], payload)
				h.Finish(f, n)
				if !bytes.Equal(f[:6], macB) || !bytes.Equal(f[6:12], macA) {
					t.Fatalf("MACs %x", f[:12])
				}
				checkFrame(t, f, src, dst, ecn, payload)
			}
		}
	}
}

// TestNewHeaderRefusesBadInput: mixed families, bad MACs and ECN values
// are ErrHeader.
func TestNewHeaderRefusesBadInput(t *testing.T) {
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	v4, v6 := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("[fd00::1]:1")
	for name, err := range map[string]error{
		"mixed":   func() error { _, err := NewHeader(mac, mac, v4, v6, 0); return err }(),
		"short":   func() error { _, err := NewHeader(mac[:5], mac, v4, v4, 0); return err }(),
		"ecn":     func() error { _, err := NewHeader(mac, mac, v4, v4, 4); return err }(),
		"invalid": func() error { _, err := NewHeader(mac, mac, netip.AddrPort{}, v4, 0); return err }(),
	} {
		if !errors.Is(err, ErrHeader) {
			t.Errorf("%s: %v, want ErrHeader", name, err)
		}
	}
}

// FuzzHeaderChecksum: for any payload and addresses, the fast sum agrees
// with the reference and the frame verifies.
func FuzzHeaderChecksum(f *testing.F) {
	f.Add([]byte("hello"), uint16(1), uint16(2), true)
	f.Add(bytes.Repeat([]byte{0xff}, 1401), uint16(65535), uint16(65535), false)
	f.Fuzz(func(t *testing.T, payload []byte, sp, dp uint16, v4 bool) {
		if len(payload) > 9000 {
			return
		}
		if refChecksum(payload) != fold(sum(0, payload)) && !(refChecksum(payload) == 0xffff && fold(sum(0, payload)) == 0) &&
			!(refChecksum(payload) == 0 && fold(sum(0, payload)) == 0xffff) {
			t.Fatalf("sum %#x, reference %#x", fold(sum(0, payload)), refChecksum(payload))
		}
		src, dst := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
		if v4 {
			src, dst = netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("192.168.0.9")
		}
		mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
		h, err := NewHeader(mac, mac, netip.AddrPortFrom(src, sp), netip.AddrPortFrom(dst, dp), 1)
		if err != nil {
			t.Fatal(err)
		}
		fr := make([]byte, h.Len()+len(payload))
		copy(fr[h.Len():], payload)
		h.Finish(fr, len(payload))
		checkFrame(t, fr, netip.AddrPortFrom(src, sp), netip.AddrPortFrom(dst, dp), 1, payload)
	})
}

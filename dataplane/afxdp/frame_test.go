package afxdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

func eth(typ uint16, l3 []byte) []byte {
	b := make([]byte, 14, 14+len(l3))
	binary.BigEndian.PutUint16(b[12:], typ)
	return append(b, l3...)
}

func udpHdr(sport, dport uint16, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	return append(b, payload...)
}

func v4(tos uint8, opts []byte, proto uint8, l4 []byte) []byte {
	hl := 20 + len(opts)
	b := make([]byte, hl, hl+len(l4))
	b[0] = 4<<4 | uint8(hl/4)
	b[1] = tos
	b[9] = proto
	copy(b[12:], []byte{10, 0, 0, 1})
	copy(b[16:], []byte{10, 0, 0, 2})
	copy(b[20:], opts)
	return append(b, l4...)
}

func v6(tclass uint8, next uint8, l4 []byte) []byte {
	b := make([]byte, 40, 40+len(l4))
	binary.BigEndian.PutUint32(b, 6<<28|uint32(tclass)<<20|0x12345)
	b[6] = next
	copy(b[8:], netip.MustParseAddr("2001:db8::7").AsSlice())
	return append(b, l4...)
}

func TestParseUDP(t *testing.T) {
	pl := []byte("fmp frame bytes")
	mapped := v6(0, 17, udpHdr(1, 2, pl))
	copy(mapped[8:], netip.MustParseAddr("::ffff:192.0.2.9").AsSlice())
	for _, c := range []struct {
		name  string
		frame []byte
		src   string
		ecn   uint8
		err   error
	}{
		{"ipv4", eth(0x0800, v4(0xb8|3, nil, 17, udpHdr(4000, 2121, pl))), "10.0.0.1:4000", 3, nil},
		{"ipv4 options", eth(0x0800, v4(2, []byte{1, 1, 1, 0}, 17, udpHdr(4000, 2121, pl))), "10.0.0.1:4000", 2, nil},
		{"ipv4 padded", append(eth(0x0800, v4(0, nil, 17, udpHdr(4000, 2121, pl))), 0, 0, 0, 0), "10.0.0.1:4000", 0, nil},
		{"ipv6", eth(0x86dd, v6(0x21, 17, udpHdr(5, 2121, pl))), "[2001:db8::7]:5", 1, nil},
		{"ipv6 v4-mapped", eth(0x86dd, mapped), "192.0.2.9:1", 0, nil},
		{"arp", eth(0x0806, make([]byte, 28)), "", 0, ErrNotUDP},
		{"runt", make([]byte, 13), "", 0, ErrShort},
		{"ipv4 short", eth(0x0800, make([]byte, 19)), "", 0, ErrShort},
		{"ipv4 tcp", eth(0x0800, v4(0, nil, 6, make([]byte, 20))), "", 0, ErrNotUDP},
		{"ipv4 ihl 4", eth(0x0800, append([]byte{0x44}, make([]byte, 30)...)), "", 0, ErrNotUDP},
		{"ipv4 options cut", eth(0x0800, append([]byte{0x4f}, make([]byte, 30)...)), "", 0, ErrShort},
		{"ipv4 fragment", func() []byte {
			f := eth(0x0800, v4(0, nil, 17, udpHdr(1, 2, pl)))
			f[14+6] = 0x20
			return f
		}(), "", 0, ErrFragment},
		{"ipv6 short", eth(0x86dd, make([]byte, 39)), "", 0, ErrShort},
		{"ipv6 hop-by-hop", eth(0x86dd, v6(0, 0, make([]byte, 16))), "", 0, ErrFragment},
		{"ipv6 icmp", eth(0x86dd, v6(0, 58, make([]byte, 16))), "", 0, ErrNotUDP},
		{"udp short", eth(0x0800, v4(0, nil, 17, make([]byte, 7))), "", 0, ErrShort},
		{"udp length beyond", func() []byte {
			f := eth(0x0800, v4(0, nil, 17, udpHdr(1, 2, pl)))
			binary.BigEndian.PutUint16(f[14+20+4:], 100)
			return f
		}(), "", 0, ErrLength},
		{"udp length 7", func() []byte {
			f := eth(0x0800, v4(0, nil, 17, udpHdr(1, 2, pl)))
			binary.BigEndian.PutUint16(f[14+20+4:], 7)
			return f
		}(), "", 0, ErrLength},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseUDP(c.frame)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("error %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Src.String() != c.src || d.ECN != c.ecn || !bytes.Equal(d.Payload, pl) {
				t.Errorf("got %s ecn %d payload %q", d.Src, d.ECN, d.Payload)
			}
		})
	}
}

func FuzzParseUDP(f *testing.F) {
	f.Add(eth(0x0800, v4(3, nil, 17, udpHdr(1, 2, []byte("x")))))
	f.Add(eth(0x86dd, v6(3, 17, udpHdr(1, 2, []byte("x")))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseUDP(b)
		if err != nil {
			return
		}
		if d.ECN > 3 || len(d.Payload) > len(b) {
			t.Fatalf("%+v from %d bytes", d, len(b))
		}
	})
}

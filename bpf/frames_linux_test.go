package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// Frame builders for the Program.Run tests: Ethernet, IPv4 (with options),
// IPv6 and UDP headers around real FMP packets from control/wire.

const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
	etherARP  = 0x0806
	etherVLAN = 0x8100

	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

var (
	srcMAC = [6]byte{0x02, 0, 0, 0, 0, 1}
	dstMAC = [6]byte{0x02, 0, 0, 0, 0, 2}
)

func ethernet(etherType uint16, l3 []byte) []byte {
	b := make([]byte, 14, 14+len(l3))
	copy(b[0:], dstMAC[:])
	copy(b[6:], srcMAC[:])
	binary.BigEndian.PutUint16(b[12:], etherType)
	return append(b, l3...)
}

// ipv4 builds an IPv4 header with len(opts) bytes of options (a multiple
// of 4), a valid checksum, and l4 after it.
func ipv4(src [4]byte, proto uint8, opts, l4 []byte) []byte {
	hl := 20 + len(opts)
	b := make([]byte, hl, hl+len(l4))
	b[0] = 4<<4 | uint8(hl/4)
	binary.BigEndian.PutUint16(b[2:], uint16(hl+len(l4)))
	binary.BigEndian.PutUint16(b[4:], 0x1234)
	b[8] = 64
	b[9] = proto
	copy(b[12:], src[:])
	copy(b[16:], []byte{192, 0, 2, 1})
	copy(b[20:], opts)
	var sum uint32
	for i := 0; i < hl; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[10:], ^uint16(sum))
	return append(b, l4...)
}

func ipv6(src [16]byte, next uint8, l4 []byte) []byte {
	b := make([]byte, 40, 40+len(l4))
	b[0] = 6 << 4
	binary.BigEndian.PutUint16(b[4:], uint16(len(l4)))
	b[6] = next
	b[7] = 64
	copy(b[8:], src[:])
	copy(b[24:], []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
	return append(b, l4...)
}

// udp builds a UDP header whose length field covers payload (checksum 0:
// XDP runs before the stack verifies it).
func udp(dport uint16, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], 40000)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	return append(b, payload...)
}

func msg1(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, wire.FMPMsg1Size)
	m := wire.FMPMsg1{SenderIndex: 0x01020304, Noise: make([]byte, wire.IKMsg1Size)}
	if _, err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func msg2(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, wire.FMPMsg2Size)
	m := wire.FMPMsg2{SenderIndex: 5, ReceiverIndex: 0x01020304, Noise: make([]byte, wire.IKMsg2Size)}
	if _, err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// established is a phase-0 frame to receiver index idx with a plaintext of
// n bytes (ciphertext and tag are zeros: the program never looks at them).
func established(t *testing.T, flags uint8, idx uint32, n int) []byte {
	t.Helper()
	f := wire.FMPFrame{Flags: flags, ReceiverIndex: idx, Counter: 7, Sealed: make([]byte, n+wire.FMPTagSize)}
	b := make([]byte, f.Len())
	if _, err := f.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// with returns a copy of b with f applied.
func with(b []byte, f func([]byte)) []byte {
	c := append([]byte(nil), b...)
	f(c)
	return c
}

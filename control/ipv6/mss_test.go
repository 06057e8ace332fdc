package ipv6

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// mkTCP builds an IPv6 TCP segment with the given flags and option bytes
// (padded to a multiple of 4) and a valid checksum.
func mkTCP(flags uint8, opts []byte, payload []byte) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, 0)
	}
	hdr := make([]byte, 20, 20+len(opts))
	binary.BigEndian.PutUint16(hdr[0:2], 12345)
	binary.BigEndian.PutUint16(hdr[2:4], 80)
	binary.BigEndian.PutUint32(hdr[4:8], 1000)
	hdr[12] = byte((20+len(opts))/4) << 4
	hdr[13] = flags
	binary.BigEndian.PutUint16(hdr[14:16], 8192)
	seg := append(append(hdr, opts...), payload...)
	p := mkPacket("fd00::1", "fd00::2", 6, seg)
	if !RecalculateL4Checksum(p) {
		panic("checksum")
	}
	return p
}

func mssOpt(v uint16) []byte { return []byte{2, 4, byte(v >> 8), byte(v)} }

func mssAt(p []byte, off int) uint16 { return binary.BigEndian.Uint16(p[40+off:]) }

func TestClampSYN(t *testing.T) {
	for _, flags := range []uint8{0x02, 0x12} { // SYN, SYN-ACK
		p := mkTCP(flags, mssOpt(1460), nil)
		verifyL4(t, p)
		if !ClampMSS(p, 1143) {
			t.Fatal("not clamped")
		}
		if mssAt(p, 22) != 1143 {
			t.Fatalf("mss %d", mssAt(p, 22))
		}
		verifyL4(t, p)
	}
}

func TestClampUpstreamCase(t *testing.T) {
	p := mkTCP(0x02, mssOpt(1460), nil)
	if !ClampMSS(p, 1200) || mssAt(p, 22) != 1200 {
		t.Fatal("1460 -> 1200 failed")
	}
	verifyL4(t, p)
}

func TestClampNoChange(t *testing.T) {
	cases := map[string][]byte{
		"smaller mss":   mkTCP(0x02, mssOpt(1000), nil),
		"equal mss":     mkTCP(0x02, mssOpt(1200), nil),
		"no options":    mkTCP(0x02, nil, nil),
		"no mss":        mkTCP(0x02, []byte{1, 1, 4, 2, 3, 3, 7}, nil), // NOP NOP SACK-perm WS
		"ack only":      mkTCP(0x10, mssOpt(1460), nil),
		"mss after eol": mkTCP(0x02, append([]byte{0, 0, 0, 0}, mssOpt(1460)...), nil),
		"mss len 5":     mkTCP(0x02, []byte{2, 5, 0xff, 0xff, 0, 1, 1, 1}, nil),
		"opt len 1":     mkTCP(0x02, append([]byte{8, 1, 0, 0}, mssOpt(1460)...), nil),
		"opt overruns":  mkTCP(0x02, []byte{8, 40, 0, 0, 2, 4, 0xff, 0xff}, nil),
		"kind at end":   mkTCP(0x02, []byte{1, 1, 1, 8}, nil),
	}
	for name, p := range cases {
		orig := append([]byte(nil), p...)
		if ClampMSS(p, 1200) {
			t.Errorf("%s: clamped", name)
		}
		if !bytes.Equal(p, orig) {
			t.Errorf("%s: modified", name)
		}
	}
	p := mkTCP(0x02, mssOpt(1460), nil)
	if ClampMSS(p, 0) || mssAt(p, 22) != 1460 {
		t.Fatal("zero ceiling must not clamp")
	}
}

func TestClampOddLayouts(t *testing.T) {
	// NOPs, SACK-permitted and window scale before MSS; timestamp too.
	opts := []byte{1, 1, 4, 2, 1, 3, 3, 7, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0}
	opts = append(opts, mssOpt(9000)...)
	p := mkTCP(0x02, opts, []byte("payload!x")) // odd-length payload
	off := 20 + len(opts) - 4
	if !ClampMSS(p, 1340) || mssAt(p, off+2) != 1340 {
		t.Fatalf("not clamped at offset %d", off)
	}
	verifyL4(t, p)

	// MSS at an odd offset within the header.
	p = mkTCP(0x12, append([]byte{1}, mssOpt(65535)...), nil)
	if !ClampMSS(p, 1203-60) || mssAt(p, 23) != 1143 {
		t.Fatal("odd offset not clamped")
	}
	verifyL4(t, p)

	// Only the first MSS option is considered.
	p = mkTCP(0x02, append(mssOpt(1000), mssOpt(1460)...), nil)
	if ClampMSS(p, 1200) || mssAt(p, 26) != 1460 {
		t.Fatal("second MSS touched")
	}
}

func TestClampSkipsExtensionHeadersAndNonTCP(t *testing.T) {
	p := mkTCP(0x02, mssOpt(1460), nil)
	for _, nh := range []uint8{0, 17, 43, 44, 60} {
		q := append([]byte(nil), p...)
		q[6] = nh
		if ClampMSS(q, 1200) {
			t.Fatalf("next header %d clamped", nh)
		}
	}
	q := append([]byte(nil), p...)
	q[0] = 0x45
	if ClampMSS(q, 1200) {
		t.Fatal("IPv4 clamped")
	}
}

func TestClampBadDataOffset(t *testing.T) {
	for _, doff := range []byte{0, 4, 15} {
		p := mkTCP(0x02, mssOpt(1460), nil)
		p[52] = doff << 4
		if ClampMSS(p, 1200) {
			t.Fatalf("data offset %d clamped", doff)
		}
	}
	for n := 0; n < 64; n++ {
		p := mkTCP(0x02, mssOpt(1460), nil)
		if n < len(p) {
			ClampMSS(p[:n], 1200) // must not panic
		}
	}
}

// With a payload length that does not describe the buffer, the full
// recomputation is impossible; the incremental update must still leave a
// valid checksum.
func TestClampIncrementalFallback(t *testing.T) {
	for _, pre := range [][]byte{{1, 1, 1}, {1, 1}, {1}, nil} { // odd and even offsets
		p := mkTCP(0x02, append(append([]byte(nil), pre...), mssOpt(1460)...), []byte{9, 8, 7})
		want := append([]byte(nil), p...)
		binary.BigEndian.PutUint16(p[4:6], 0xffff) // overlong
		if !ClampMSS(p, 1200) {
			t.Fatal("not clamped")
		}
		copy(p[4:6], want[4:6])
		verifyL4(t, p)
		// And it equals what a full recomputation gives.
		binary.BigEndian.PutUint16(want[40+20+len(pre)+2:], 1200)
		RecalculateL4Checksum(want)
		if !bytes.Equal(p, want) {
			t.Fatalf("prefix %d: incremental differs from full:\n% x\n% x", len(pre), p, want)
		}
	}
}

func TestClampRepairsPartialChecksum(t *testing.T) {
	p := mkTCP(0x02, mssOpt(1460), nil)
	p[56], p[57] = 0x8e, 0xce // bogus, as from checksum offload
	if !ClampMSS(p, 1200) {
		t.Fatal("not clamped")
	}
	verifyL4(t, p)
}

func TestRecalculateL4Checksum(t *testing.T) {
	udp := mkPacket("fd00::1", "fd00::2", 17, []byte{0, 53, 0, 53, 0, 11, 0xaa, 0xbb, 1, 2, 3})
	if !RecalculateL4Checksum(udp) {
		t.Fatal("udp")
	}
	verifyL4(t, udp)
	if RecalculateL4Checksum(mkPacket("fd00::1", "fd00::2", 58, make([]byte, 8))) {
		t.Fatal("icmp recomputed")
	}
	if RecalculateL4Checksum(mkPacket("fd00::1", "fd00::2", 6, make([]byte, 19))) {
		t.Fatal("short tcp recomputed")
	}
	// Find a UDP payload whose checksum computes to zero: it must be sent as 0xffff.
	base := mkPacket("fd00::1", "fd00::2", 17, []byte{0, 1, 0, 2, 0, 10, 0, 0, 0, 0})
	RecalculateL4Checksum(base)
	c := binary.BigEndian.Uint16(base[46:48])
	// Adding c to the data word makes the sum 0xffff, so the checksum 0.
	binary.BigEndian.PutUint16(base[48:50], c)
	RecalculateL4Checksum(base)
	if got := binary.BigEndian.Uint16(base[46:48]); got != 0xffff {
		t.Fatalf("zero UDP checksum sent as %#x", got)
	}
}

func FuzzClampMSS(f *testing.F) {
	f.Add(mkTCP(0x02, mssOpt(1460), nil), uint16(1200))
	f.Add(mkTCP(0x12, []byte{1, 1, 4, 2, 2, 4, 0xff, 0xff}, []byte{1}), uint16(1143))
	f.Add([]byte{0x60, 0, 0, 0, 0, 0, 6}, uint16(1))
	f.Fuzz(func(t *testing.T, pkt []byte, max uint16) {
		orig := append([]byte(nil), pkt...)
		validBefore := len(pkt) >= 60 && pkt[0]>>4 == 6 && pkt[6] == 6 &&
			int(binary.BigEndian.Uint16(pkt[4:6]))+40 == len(pkt) && l4Valid(pkt)
		changed := ClampMSS(pkt, max)
		if !changed && !bytes.Equal(pkt, orig) {
			t.Fatal("modified without reporting a change")
		}
		if changed && validBefore {
			verifyL4(t, pkt)
		}
	})
}

func l4Valid(p []byte) bool {
	q := append([]byte(nil), p...)
	if !RecalculateL4Checksum(q) {
		return false
	}
	return bytes.Equal(q, p)
}

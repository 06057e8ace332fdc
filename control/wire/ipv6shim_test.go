package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// fspIPv6Packet is upstream's build_ipv6_packet: a 40-byte header with the
// given fields and a correct payload_length, then the payload.
func fspIPv6Packet(tc uint8, flow uint32, nextHeader, hopLimit uint8, src, dst, payload []byte) []byte {
	pkt := []byte{
		0x60 | tc>>4,
		tc<<4 | byte(flow>>16)&0x0F,
		byte(flow >> 8),
		byte(flow),
	}
	pkt = binary.BigEndian.AppendUint16(pkt, uint16(len(payload)))
	pkt = append(pkt, nextHeader, hopLimit)
	pkt = append(pkt, src...)
	pkt = append(pkt, dst...)
	return append(pkt, payload...)
}

func fspSampleSrc() [16]byte {
	return [16]byte{0xfd, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f}
}

func fspSampleDst() [16]byte {
	return [16]byte{0xfd, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f}
}

func fspCompress(t testing.TB, pkt []byte) []byte {
	t.Helper()
	out := make([]byte, len(pkt)-wire.IPv6ShimSavings)
	n, err := wire.CompressIPv6(out, pkt)
	if err != nil {
		t.Fatalf("CompressIPv6: %v", err)
	}
	if n != len(out) {
		t.Fatalf("CompressIPv6 wrote %d, want %d", n, len(out))
	}
	if _, err := wire.CompressIPv6(out[:n-1], pkt); !errors.Is(err, wire.ErrBufferTooSmall) {
		t.Fatalf("short buffer: %v", err)
	}
	return out
}

func fspDecompress(t testing.TB, shim []byte, src, dst [16]byte) []byte {
	t.Helper()
	out := make([]byte, len(shim)+wire.IPv6ShimSavings)
	n, err := wire.DecompressIPv6(out, shim, src, dst)
	if err != nil {
		t.Fatalf("DecompressIPv6: %v", err)
	}
	if n != len(out) {
		t.Fatalf("DecompressIPv6 wrote %d, want %d", n, len(out))
	}
	if _, err := wire.DecompressIPv6(out[:n-1], shim, src, dst); !errors.Is(err, wire.ErrBufferTooSmall) {
		t.Fatalf("short buffer: %v", err)
	}
	return out
}

func fspShimRoundTrip(t *testing.T, pkt []byte) []byte {
	t.Helper()
	src, dst := fspSampleSrc(), fspSampleDst()
	c := fspCompress(t, pkt)
	equal(t, "decompress(compress(p))", fspDecompress(t, c, src, dst), pkt)
	return c
}

func TestIPv6ShimLayout(t *testing.T) {
	// test_compression_saves_bytes: 140 → 107, saving 33.
	src, dst := fspSampleSrc(), fspSampleDst()
	payload := fill(100, 0xAA)
	pkt := fspIPv6Packet(0, 0, 17, 64, src[:], dst[:], payload)
	if len(pkt) != 140 {
		t.Fatalf("packet is %d bytes", len(pkt))
	}
	c := fspShimRoundTrip(t, pkt)
	if len(c) != 107 || len(pkt)-len(c) != 33 || wire.IPv6ShimSavings != 33 {
		t.Fatalf("compressed to %d bytes", len(c))
	}
	want := cat(
		mustHex(t, "00"),          // format
		mustHex(t, "60 00 00 00"), // IPv6 bytes 0..3 verbatim
		mustHex(t, "11 40"),       // next_header UDP, hop_limit 64
		payload)
	equal(t, "shim", c, want)

	s, err := wire.ParseIPv6Shim(c)
	if err != nil {
		t.Fatal(err)
	}
	if s.NextHeader != 17 || s.HopLimit != 64 || s.Len() != 107 || s.DecompressedLen() != 140 {
		t.Errorf("got %+v", s)
	}
	equal(t, "re-encoded", marshal(t, s), c)
}

func TestIPv6ShimFields(t *testing.T) {
	src, dst := fspSampleSrc(), fspSampleDst()
	// test_preserves_traffic_class: TC 0xAB lands in bytes 0 and 1.
	pkt := fspIPv6Packet(0xAB, 0, 17, 64, src[:], dst[:], []byte{1, 2, 3})
	c := fspShimRoundTrip(t, pkt)
	equal(t, "verbatim TC", c[1:5], mustHex(t, "6a b0 00 00"))
	s, _ := wire.ParseIPv6Shim(c)
	if s.TrafficClass() != 0xAB || s.FlowLabel() != 0 {
		t.Errorf("TC %#x flow %#x", s.TrafficClass(), s.FlowLabel())
	}
	// test_preserves_flow_label: 0xFEDCB.
	pkt = fspIPv6Packet(0, 0xFEDCB, 17, 64, src[:], dst[:], []byte{1})
	c = fspShimRoundTrip(t, pkt)
	equal(t, "verbatim flow", c[1:5], mustHex(t, "60 0f ed cb"))
	s, _ = wire.ParseIPv6Shim(c)
	if s.FlowLabel() != 0xFEDCB || s.TrafficClass() != 0 {
		t.Errorf("flow %#x", s.FlowLabel())
	}
	// test_preserves_tc_and_flow_label_combined.
	c = fspShimRoundTrip(t, fspIPv6Packet(0xFF, 0xFFFFF, 17, 64, src[:], dst[:], []byte{1}))
	equal(t, "max TC and flow", c[1:5], mustHex(t, "6f ff ff ff"))
	// test_preserves_next_header_* and test_preserves_hop_limit.
	fspShimRoundTrip(t, fspIPv6Packet(0, 0, 6, 64, src[:], dst[:], make([]byte, 20)))
	d := fspDecompress(t, fspCompress(t, fspIPv6Packet(0, 0, 58, 255, src[:], dst[:], make([]byte, 8))), src, dst)
	if d[6] != 58 || d[7] != 255 {
		t.Errorf("ICMPv6: %x", d[:8])
	}
	for _, hl := range []byte{0, 1, 64, 128, 255} {
		fspShimRoundTrip(t, fspIPv6Packet(0, 0, 17, hl, src[:], dst[:], []byte{1}))
	}
	// test_roundtrip_empty_payload: format + residual only.
	if c := fspShimRoundTrip(t, fspIPv6Packet(0, 0, 59, 1, src[:], dst[:], nil)); len(c) != wire.IPv6ShimHeaderSize {
		t.Errorf("empty payload compressed to %d", len(c))
	}
	// test_roundtrip_large_payload.
	fspShimRoundTrip(t, fspIPv6Packet(0, 0, 6, 128, src[:], dst[:], fill(1400, 0x55)))
	// test_payload_length_reconstructed: big-endian 256 at bytes 4..6.
	d = fspDecompress(t, fspCompress(t, fspIPv6Packet(0, 0, 17, 64, src[:], dst[:], fill(256, 0xBB))), src, dst)
	equal(t, "payload_length", d[4:6], mustHex(t, "01 00"))
}

func TestIPv6ShimAddressesFromContext(t *testing.T) {
	// test_addresses_from_context: the rebuilt addresses are the session's,
	// whatever the original packet said.
	pkt := fspIPv6Packet(0, 0, 17, 64, fill(16, 0xAA), fill(16, 0xBB), []byte{1, 2})
	src, dst := fspSampleSrc(), fspSampleDst()
	d := fspDecompress(t, fspCompress(t, pkt), src, dst)
	equal(t, "src", d[8:24], src[:])
	equal(t, "dst", d[24:40], dst[:])
	equal(t, "ver/TC/flow", d[0:4], pkt[0:4])
	equal(t, "payload", d[40:], pkt[40:])
	if d[6] != pkt[6] || d[7] != pkt[7] {
		t.Error("next_header/hop_limit")
	}
	// Compression ignores the original payload_length; decompression
	// writes the true one.
	binary.BigEndian.PutUint16(pkt[4:], 999)
	d = fspDecompress(t, fspCompress(t, pkt), src, dst)
	equal(t, "payload_length", d[4:6], mustHex(t, "00 02"))
}

func TestIPv6ShimVersionForced(t *testing.T) {
	// The version nibble of the residual is not trusted: always 6 out.
	shim := mustHex(t, "00 0a bc de f0 06 40 ff")
	d := fspDecompress(t, shim, fspSampleSrc(), fspSampleDst())
	equal(t, "header start", d[:8], mustHex(t, "6a bc de f0 00 01 06 40"))
}

func TestIPv6ShimInPlace(t *testing.T) {
	src, dst := fspSampleSrc(), fspSampleDst()
	pkt := fspIPv6Packet(0xB2, 0xABCDE, 6, 61, src[:], dst[:], fill(300, 0x3C))
	orig := bytes.Clone(pkt)
	// Compress in place: the shim ends where the packet ends.
	n, err := wire.CompressIPv6(pkt[wire.IPv6ShimSavings:], pkt)
	if err != nil || n != len(pkt)-wire.IPv6ShimSavings {
		t.Fatalf("in-place compress: %d %v", n, err)
	}
	equal(t, "in-place shim", pkt[wire.IPv6ShimSavings:], fspCompress(t, orig))
	// And back, into the same buffer.
	n, err = wire.DecompressIPv6(pkt, pkt[wire.IPv6ShimSavings:], src, dst)
	if err != nil || n != len(pkt) {
		t.Fatalf("in-place decompress: %d %v", n, err)
	}
	equal(t, "in-place round trip", pkt, orig)

	// Overlaps the other way: shim written before the packet start, and
	// decompression to a later offset of the same buffer.
	buf := make([]byte, 2*len(orig))
	copy(buf[len(orig):], orig)
	n, err = wire.CompressIPv6(buf[len(orig)-5:], buf[len(orig):])
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "shifted compress", buf[len(orig)-5:len(orig)-5+n], fspCompress(t, orig))
	n, err = wire.DecompressIPv6(buf[len(orig)-3:], buf[len(orig)-5:len(orig)-5+n], src, dst)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "shifted decompress", buf[len(orig)-3:len(orig)-3+n], orig)
}

func TestIPv6ShimRejects(t *testing.T) {
	src, dst := fspSampleSrc(), fspSampleDst()
	out := make([]byte, 2000)
	// test_compress_rejects_non_ipv6.
	pkt := fspIPv6Packet(0, 0, 17, 64, src[:], dst[:], []byte{1})
	pkt[0] = 0x40
	_, err := wire.CompressIPv6(out, pkt)
	wantKind(t, err, wire.ErrVersion)
	// test_compress_rejects_short_packet.
	for _, p := range [][]byte{fill(39, 0x60), nil} {
		_, err := wire.CompressIPv6(out, p)
		wantKind(t, err, wire.ErrTruncated)
	}
	// test_decompress_rejects_unknown_format.
	_, err = wire.DecompressIPv6(out, mustHex(t, "01 00 00 00 00 00 00"), src, dst)
	wantKind(t, err, wire.ErrValue)
	// test_decompress_rejects_short_payload.
	for _, s := range [][]byte{make([]byte, 6), nil} {
		_, err := wire.DecompressIPv6(out, s, src, dst)
		wantKind(t, err, wire.ErrTruncated)
	}
	// payload_length is 16 bits: more cannot be rebuilt.
	big := make([]byte, wire.IPv6HeaderSize+0x10000)
	big[0] = 0x60
	_, err = wire.CompressIPv6(make([]byte, len(big)), big)
	wantKind(t, err, wire.ErrLength)
	_, err = wire.ParseIPv6Shim(make([]byte, wire.IPv6ShimHeaderSize+0x10000))
	wantKind(t, err, wire.ErrLength)
	// Exactly 0xFFFF is fine.
	big = big[:wire.IPv6HeaderSize+0xFFFF]
	c := fspCompress(t, big)
	d := fspDecompress(t, c, [16]byte{}, [16]byte{})
	equal(t, "max payload_length", d[4:6], mustHex(t, "ff ff"))
}

func TestMarkIPv6ECNCE(t *testing.T) {
	ecnOf := func(p []byte) byte { return (p[0]&0x0F<<4 | p[1]>>4) & 0x03 }
	withECN := func(ecn byte) []byte {
		p := make([]byte, 40)
		p[0] = 0x60 | ecn>>4
		p[1] = ecn << 4
		return p
	}
	for _, c := range []struct {
		name       string
		in, out    byte
		ecnCapable bool
	}{
		{"ECT(0)", 0b10, 0b11, true},
		{"ECT(1)", 0b01, 0b11, true},
		{"Not-ECT", 0b00, 0b00, false},
		{"CE", 0b11, 0b11, true},
	} {
		p := withECN(c.in)
		if got := wire.MarkIPv6ECNCE(p); got != c.ecnCapable || ecnOf(p) != c.out {
			t.Errorf("%s: returned %v, ECN %02b", c.name, got, ecnOf(p))
		}
	}
	// mark_ipv6_ecn_ce_marks_only_ect (proto/fsp/tests/core.rs).
	p := []byte{0x60, 0x20, 0, 0}
	wire.MarkIPv6ECNCE(p)
	if p[1]&0x30 != 0x30 {
		t.Errorf("ECT(0) not marked: %x", p)
	}
	p = []byte{0x60, 0x00, 0, 0}
	wire.MarkIPv6ECNCE(p)
	if p[1]&0x30 != 0 {
		t.Errorf("Not-ECT marked: %x", p)
	}
	// test_mark_ecn_ce_preserves_dscp_and_flow_label: TC 0xB2 → 0xB3.
	p = make([]byte, 40)
	copy(p, mustHex(t, "6b 2a bc de"))
	wire.MarkIPv6ECNCE(p)
	equal(t, "DSCP and flow kept", p[:4], mustHex(t, "6b 3a bc de"))
	// test_mark_ecn_ce_short_packet: no panic, no change.
	for _, s := range [][]byte{{0x60}, {}} {
		before := bytes.Clone(s)
		if wire.MarkIPv6ECNCE(s) || !bytes.Equal(s, before) {
			t.Errorf("short packet %x changed", before)
		}
	}
}

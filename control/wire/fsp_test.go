package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Helpers shared by the FSP, signal, MMP and IPv6 shim test files; prefixed
// so they cannot clash with helpers of other files in this package.

// fspCoords is upstream's make_coords.
func fspCoords(ids ...byte) wire.Coords {
	addrs := make([]identity.NodeAddr, len(ids))
	for i, v := range ids {
		addrs[i] = addrOf(v)
	}
	return wire.CoordsOf(addrs...)
}

// fspWireCoords is count u16le then the entries, built by hand.
func fspWireCoords(ids ...byte) []byte {
	out := le16(uint16(len(ids)))
	for _, v := range ids {
		a := addrOf(v)
		out = append(out, a[:]...)
	}
	return out
}

// fspSameMemory reports whether view lies inside buf (a view, not a copy).
func fspSameMemory(view, buf []byte) bool {
	if len(view) == 0 {
		return true
	}
	for i := range buf {
		if &buf[i] == &view[0] {
			return i+len(view) <= len(buf)
		}
	}
	return false
}

// XK messages for the digest's §7.2 inputs (msg1 from the digest, msg2 and
// msg3 as derived in control/noise/vectors_test.go); real handshakes make
// better payloads than filler.
const (
	fspXKMsg1 = "023c72addb4fdf09af94f0c94d7fe92a386a7e70cf8a1d85916386bb2535c7b1b1"
	fspXKMsg2 = "032c0b7cf95324a07d05398b240174dc0c2be444d96b159aa6c7f7b1e66868099117c17da5a3f0e612169fb855540e05070b20619ced637177"
	fspXKMsg3 = "af47e233a1046af6ce1b1124ce175b519cb5e81470f7074cde745fa3e131e462dcc0d68d60557e6e391e05bef77cf6c4325fa0b9014ba025e9dc0f9a020cc785eaf1fc8c7a2e949ace"
)

func TestFSPSizes(t *testing.T) {
	// test_wire_sizes, the XK sizes of test_xk_message_sizes, and the
	// port header.
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"prefix", wire.FSPPrefixSize, 4},
		{"header", wire.FSPHeaderSize, 12},
		{"inner header", wire.FSPInnerHeaderSize, 6},
		{"encrypted min", wire.FSPEncryptedMinSize, 28},
		{"tag", wire.FSPTagSize, 16},
		{"port header", wire.FSPPortHeaderSize, 4},
		{"XK msg1", wire.XKMsg1Size, 33},
		{"XK msg2", wire.XKMsg2Size, 57},
		{"XK msg3", wire.XKMsg3Size, 73},
		{"SessionMsg3", wire.SessionMsg3Size, 80},
		{"IPv6 shim port", int(wire.FSPPortIPv6Shim), 256},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if wire.FSPFlagCP != 0x01 || wire.FSPFlagK != 0x02 || wire.FSPFlagU != 0x04 || wire.FSPInnerFlagSP != 0x01 {
		t.Errorf("flag bits CP=%#x K=%#x U=%#x SP=%#x", wire.FSPFlagCP, wire.FSPFlagK, wire.FSPFlagU, wire.FSPInnerFlagSP)
	}
	if len(mustHex(t, fspXKMsg1)) != wire.XKMsg1Size || len(mustHex(t, fspXKMsg2)) != wire.XKMsg2Size || len(mustHex(t, fspXKMsg3)) != wire.XKMsg3Size {
		t.Fatal("XK vectors have the wrong sizes")
	}
}

func TestFSPFlags(t *testing.T) {
	// test_fsp_flags_roundtrip: the three defined bits survive.
	for b := 0; b <= 7; b++ {
		if got := wire.FSPFlagsFromByte(byte(b)); byte(got) != byte(b) {
			t.Errorf("FSPFlagsFromByte(%#x) = %#x", b, got)
		}
	}
	// test_fsp_flags_ignores_reserved_bits.
	f := wire.FSPFlagsFromByte(0xFF)
	if f != 0x07 || !f.CoordsPresent() || !f.KeyEpoch() || !f.Unencrypted() {
		t.Errorf("FSPFlagsFromByte(0xFF) = %#x", f)
	}
	// test_fsp_flags_individual_bits.
	for _, c := range []struct {
		b         byte
		cp, k, u  bool
		wantFlags wire.FSPFlags
	}{
		{0x01, true, false, false, wire.FSPFlagCP},
		{0x02, false, true, false, wire.FSPFlagK},
		{0x04, false, false, true, wire.FSPFlagU},
		{0x00, false, false, false, 0},
	} {
		f := wire.FSPFlagsFromByte(c.b)
		if f != c.wantFlags || f.CoordsPresent() != c.cp || f.KeyEpoch() != c.k || f.Unencrypted() != c.u {
			t.Errorf("flags %#x: got %#x cp=%v k=%v u=%v", c.b, f, f.CoordsPresent(), f.KeyEpoch(), f.Unencrypted())
		}
	}
	// test_fsp_inner_flags_roundtrip and _ignores_reserved.
	for _, c := range []struct {
		b    byte
		want wire.FSPInnerFlags
		sp   bool
	}{{0x00, 0x00, false}, {0x01, 0x01, true}, {0xFE, 0x00, false}, {0xFF, 0x01, true}} {
		f := wire.FSPInnerFlagsFromByte(c.b)
		if f != c.want || f.SpinBit() != c.sp {
			t.Errorf("FSPInnerFlagsFromByte(%#x) = %#x (sp %v)", c.b, f, f.SpinBit())
		}
	}
}

func TestFSPPrefixPinned(t *testing.T) {
	// test_common_prefix_parse_* and test_all_message_types_through_prefix.
	for _, c := range []struct {
		hex   string
		phase uint8
		flags wire.FSPFlags
		plen  uint16
		kind  wire.FSPKind
	}{
		{"00 01 40 00", 0, wire.FSPFlagCP, 64, wire.FSPKindEncrypted},
		{"01 00 50 00", 1, 0, 80, wire.FSPKindSetup},
		{"00 04 22 00", 0, wire.FSPFlagU, 34, wire.FSPKindSignal},
		{"00 00 10 00", 0, 0, 16, wire.FSPKindEncrypted},
		{"02 00 21 00", 2, 0, 33, wire.FSPKindAck},
		{"03 00 49 00", 3, 0, 73, wire.FSPKindMsg3},
		{"00 05 22 00", 0, wire.FSPFlagU | wire.FSPFlagCP, 34, wire.FSPKindSignal}, // U wins, as upstream dispatches
	} {
		b := mustHex(t, c.hex)
		p, err := wire.ParseFSPPrefix(b)
		if err != nil {
			t.Fatalf("%s: %v", c.hex, err)
		}
		if p.Version != 0 || p.Phase != c.phase || p.Flags != c.flags || p.PayloadLen != c.plen {
			t.Errorf("%s: got %+v", c.hex, p)
		}
		kind, err := wire.ClassifyFSP(b)
		if err != nil || kind != c.kind {
			t.Errorf("%s: ClassifyFSP = %v, %v; want %v", c.hex, kind, err, c.kind)
		}
		equal(t, c.hex+" re-encoded", marshal(t, p), b)
	}
	if p, _ := wire.ParseFSPPrefix(mustHex(t, "00 01 40 00")); !p.Flags.CoordsPresent() || p.Flags.Unencrypted() {
		t.Error("CP prefix: has_coords / is_unencrypted wrong")
	}

	// test_common_prefix_too_short.
	_, err := wire.ParseFSPPrefix([]byte{0, 0, 0})
	wantKind(t, err, wire.ErrTruncated)
	_, err = wire.ClassifyFSP([]byte{0, 0, 0})
	wantKind(t, err, wire.ErrTruncated)
	_, err = wire.ClassifyFSP(mustHex(t, "10 00 00 00"))
	wantKind(t, err, wire.ErrVersion)
	_, err = wire.ClassifyFSP(mustHex(t, "04 00 00 00"))
	wantKind(t, err, wire.ErrPhase)
}

// fspEncryptedVector builds by hand an encrypted message with CP|K,
// counter 0xDEADBEEF12345678, src coords [1,2,F0], dest coords [3,F0] and a
// 20-byte ciphertext+tag filler (payload_len 4).
func fspEncryptedVector(t testing.TB) []byte {
	return cat(
		mustHex(t, "00 03 04 00"),             // ver 0 phase 0, CP|K, payload_len 4
		mustHex(t, "78 56 34 12 ef be ad de"), // counter LE
		fspWireCoords(1, 2, 0xF0),             // src_coords (not authenticated)
		fspWireCoords(3, 0xF0),                // dest_coords
		fill(4, 0xC1), fill(16, 0x7A))         // ciphertext(4) || tag(16)
}

func TestFSPEncryptedLayout(t *testing.T) {
	b := fspEncryptedVector(t)
	if len(b) != 12+2+48+2+32+20 {
		t.Fatalf("vector is %d bytes", len(b))
	}
	m, err := wire.ParseFSPEncrypted(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Flags != wire.FSPFlagCP|wire.FSPFlagK || m.Header.PayloadLen != 4 || m.Header.Counter != 0xDEADBEEF12345678 {
		t.Errorf("header %+v", m.Header)
	}
	if m.SrcCoords.Len() != 3 || m.SrcCoords.At(0) != addrOf(1) || m.SrcCoords.At(2) != addrOf(0xF0) {
		t.Errorf("src coords %x", []byte(m.SrcCoords))
	}
	if m.DestCoords.Len() != 2 || m.DestCoords.At(0) != addrOf(3) {
		t.Errorf("dest coords %x", []byte(m.DestCoords))
	}
	// AAD is the first 12 bytes only; the coordinates are outside it.
	equal(t, "AAD", m.AAD(), b[:12])
	equal(t, "ciphertext", m.Ciphertext, b[len(b)-20:])
	if !fspSameMemory(m.AAD(), b) || !fspSameMemory(m.Ciphertext, b) || !fspSameMemory(m.SrcCoords, b) {
		t.Error("parse copied instead of returning views")
	}
	if m.HeaderLen() != len(b)-20 {
		t.Errorf("HeaderLen = %d", m.HeaderLen())
	}
	equal(t, "re-encoded", marshal(t, m), b)

	// MarshalHeaderTo leaves the ciphertext for an in-place seal.
	hdr := make([]byte, m.HeaderLen())
	if n, err := m.MarshalHeaderTo(hdr); err != nil || n != len(hdr) {
		t.Fatalf("MarshalHeaderTo: %d, %v", n, err)
	}
	equal(t, "MarshalHeaderTo", hdr, b[:len(hdr)])
	if _, err := m.MarshalHeaderTo(hdr[:len(hdr)-1]); !errors.Is(err, wire.ErrBufferTooSmall) {
		t.Errorf("short header buffer: %v", err)
	}

	// FSPHeader alone writes exactly the AAD.
	equal(t, "FSPHeader", marshal(t, m.Header), b[:12])
}

func TestFSPEncryptedUpstreamVectors(t *testing.T) {
	// test_build_fsp_header: counter 1000, CP, payload_len 200.
	h := marshal(t, wire.FSPHeader{Flags: wire.FSPFlagCP, PayloadLen: 200, Counter: 1000})
	equal(t, "build_fsp_header", h, mustHex(t, "00 01 c8 00 e8 03 00 00 00 00 00 00"))

	// test_header_roundtrip with the CP counts at 0 (upstream's header-only
	// parser never looked past byte 12; this one reads the coordinates).
	ct := fill(1234+16, 0xFF)
	b := cat(mustHex(t, "00 03 d2 04"), le64(0xDEADBEEF12345678), mustHex(t, "00 00 00 00"), ct)
	m, err := wire.ParseFSPEncrypted(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Counter != 0xDEADBEEF12345678 || m.Header.PayloadLen != 1234 || m.SrcCoords.Len() != 0 || m.DestCoords.Len() != 0 {
		t.Errorf("got %+v", m.Header)
	}
	equal(t, "empty CP coords re-encoded", marshal(t, m), b)

	// test_build_fsp_encrypted: no CP, payload 10, ciphertext 26.
	b = cat(mustHex(t, "00 00 0a 00"), le64(0), fill(26, 0xCC))
	m, err = wire.ParseFSPEncrypted(b)
	if err != nil || len(m.Ciphertext) != 26 || m.HeaderLen() != 12 {
		t.Fatalf("no-CP message: %v, %d", err, len(m.Ciphertext))
	}

	// test_coord_cache_warming_encrypted_msg_with_coords (forwarding.rs):
	// header(0, CP, 20), coords [01, F0] and [02, F0], 36 bytes of CC.
	b = cat(mustHex(t, "00 01 14 00"), le64(0), fspWireCoords(1, 0xF0), fspWireCoords(2, 0xF0), fill(36, 0xCC))
	m, err = wire.ParseFSPEncrypted(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.SrcCoords.At(0) != addrOf(1) || m.DestCoords.At(0) != addrOf(2) || m.DestCoords.At(1) != addrOf(0xF0) {
		t.Error("transit warm vector: coordinates")
	}

	// test_coord_cache_warming_short_inner_payload_is_dropped_not_panic:
	// CP payloads of 4..27 bytes are below the encrypted minimum.
	for n := 4; n <= 27; n++ {
		b := append(mustHex(t, "00 01 00 00"), make([]byte, n-4)...)
		_, err := wire.ParseFSPEncrypted(b)
		wantKind(t, err, wire.ErrTruncated)
	}
}

func TestFSPEncryptedRejects(t *testing.T) {
	good := fspEncryptedVector(t)
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		// test_encrypted_header_too_short / _wrong_phase / _wrong_version / _u_flag_rejected.
		{"27 bytes", make([]byte, 27), wire.ErrTruncated},
		{"phase 1", append([]byte{0x01}, make([]byte, 27)...), wire.ErrPhase},
		{"version 1", append([]byte{0x10}, make([]byte, 27)...), wire.ErrVersion},
		{"U flag", append([]byte{0x00, 0x04}, make([]byte, 26)...), wire.ErrFlags},
		{"src coords cut", mod(func(b []byte) []byte { b[12] = 9; return b }), wire.ErrTruncated},
		{"dest coords cut", mod(func(b []byte) []byte { b[12+2+48] = 5; return b }), wire.ErrTruncated},
		{"no room for tag", mod(func(b []byte) []byte { return b[:len(b)-5] }), wire.ErrTruncated},
		{"payload_len high", mod(func(b []byte) []byte { b[2] = 5; return b }), wire.ErrLength},
		{"payload_len low", mod(func(b []byte) []byte { b[2] = 3; return b }), wire.ErrLength},
	} {
		_, err := wire.ParseFSPEncrypted(c.b)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		t.Run(c.name, func(t *testing.T) { wantKind(t, err, c.kind) })
	}

	// Reserved flag bits are ignored, but the AAD keeps them: it is what
	// the sender sealed.
	b := mod(func(b []byte) []byte { b[1] |= 0xF8; return b })
	m, err := wire.ParseFSPEncrypted(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Flags != wire.FSPFlagCP|wire.FSPFlagK || m.AAD()[1] != 0xFB {
		t.Errorf("reserved bits: flags %#x, aad[1] %#x", m.Header.Flags, m.AAD()[1])
	}
}

// fspSetupVector is a SessionSetup built by hand: flags 0, src [1,2,F0],
// dest [3,F0] and the XK msg1 vector: 44 + 16·5 = 124 bytes.
func fspSetupVector(t testing.TB) []byte {
	return cat(
		mustHex(t, "01 00 78 00"), // phase 1, flags 0, payload_len 120
		mustHex(t, "00"),          // session flags
		fspWireCoords(1, 2, 0xF0),
		fspWireCoords(3, 0xF0),
		mustHex(t, "21 00"), // handshake_len 33
		mustHex(t, fspXKMsg1))
}

func TestSessionSetupLayout(t *testing.T) {
	b := fspSetupVector(t)
	if len(b) != 44+16*5 {
		t.Fatalf("vector is %d bytes", len(b))
	}
	s, err := wire.ParseSessionSetup(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Flags != 0 || s.SrcCoords.Len() != 3 || s.DestCoords.Len() != 2 || s.DestCoords.At(0) != addrOf(3) {
		t.Errorf("got %+v", s)
	}
	equal(t, "handshake", s.Handshake, mustHex(t, fspXKMsg1))
	if !fspSameMemory(s.Handshake, b) || !fspSameMemory(s.SrcCoords, b) {
		t.Error("parse copied instead of returning views")
	}
	if s.Len() != len(b) {
		t.Errorf("Len = %d", s.Len())
	}
	equal(t, "re-encoded", marshal(t, s), b)

	// Built from fields: byte0 01, byte1 00, payload_len = len - 4
	// (test_session_setup_encode_decode), flags REQUEST_ACK|BIDIRECTIONAL.
	s = wire.SessionSetup{
		Flags:      wire.SessionFlagRequestAck | wire.SessionFlagBidirectional,
		SrcCoords:  fspCoords(1, 2, 0),
		DestCoords: fspCoords(3, 4, 0),
		Handshake:  mustHex(t, fspXKMsg1),
	}
	enc := marshal(t, s)
	if enc[0] != 0x01 || enc[1] != 0x00 || int(binary.LittleEndian.Uint16(enc[2:])) != len(enc)-4 || enc[4] != 0x03 {
		t.Errorf("prefix %x", enc[:5])
	}
	back, err := wire.ParseSessionSetup(enc)
	if err != nil {
		t.Fatal(err)
	}
	if back.Flags != s.Flags || !bytes.Equal(back.SrcCoords, s.SrcCoords) || !bytes.Equal(back.DestCoords, s.DestCoords) {
		t.Errorf("round trip %+v", back)
	}

	// test_session_setup_deep_coords: 11 src entries, 5 dest entries.
	s = wire.SessionSetup{SrcCoords: fspCoords(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), DestCoords: fspCoords(20, 21, 22, 23, 24), Handshake: fill(33, 0x55)}
	enc = marshal(t, s)
	if len(enc) != 44+16*16 {
		t.Errorf("deep setup is %d bytes", len(enc))
	}
	back, err = wire.ParseSessionSetup(enc)
	if err != nil || back.SrcCoords.Len() != 11 || back.DestCoords.At(4) != addrOf(24) {
		t.Errorf("deep coords: %v %+v", err, back)
	}

	// Reserved session-flag bits are dropped, as SessionFlags::from_byte does.
	b[4] = 0xFF
	if s, err := wire.ParseSessionSetup(b); err != nil || s.Flags != 0x03 {
		t.Errorf("flags 0xFF: %v %#x", err, s.Flags)
	}
}

// fspHandshakeRejects runs the malformations SessionSetup and SessionAck
// share against a good vector with nSrc and nDest coordinate entries.
func fspHandshakeRejects(t *testing.T, good []byte, nSrc, nDest int, parse func([]byte) error) {
	t.Helper()
	destOff := 5 + 2 + 16*nSrc
	hsOff := destOff + 2 + 16*nDest
	mod := func(f func(b []byte) []byte) []byte {
		b := f(bytes.Clone(good))
		return b
	}
	setPlen := func(b []byte) []byte { binary.LittleEndian.PutUint16(b[2:], uint16(len(b)-4)); return b }
	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		{"empty", nil, wire.ErrTruncated},
		{"prefix only", setPlen(bytes.Clone(good[:4])), wire.ErrTruncated},
		{"flags only", setPlen(bytes.Clone(good[:5])), wire.ErrTruncated},
		{"version 1", mod(func(b []byte) []byte { b[0] |= 0x10; return b }), wire.ErrVersion},
		{"wrong phase", mod(func(b []byte) []byte { b[0] = 0x03; return b }), wire.ErrPhase},
		{"payload_len over", mod(func(b []byte) []byte { b[2]++; return b }), wire.ErrTruncated},
		{"payload_len under", mod(func(b []byte) []byte { b[2]--; return b }), wire.ErrLength},
		{"src count 0", mod(func(b []byte) []byte {
			return setPlen(cat(b[:5], le16(0), b[destOff:]))
		}), wire.ErrValue},
		{"dest count 0", mod(func(b []byte) []byte {
			return setPlen(cat(b[:destOff], le16(0), b[hsOff:]))
		}), wire.ErrValue},
		{"src coords cut", setPlen(bytes.Clone(good[:destOff-1])), wire.ErrTruncated},
		{"handshake_len missing", setPlen(bytes.Clone(good[:hsOff+1])), wire.ErrTruncated},
		// Upstream's endpoint refuses any handshake size but XK's; its unit
		// tests feed 82-byte (IK-era) and empty payloads to the bare decoder.
		{"handshake 82 bytes", mod(func(b []byte) []byte {
			return setPlen(cat(b[:hsOff], le16(82), fill(82, 0xAA)))
		}), wire.ErrLength},
		{"handshake empty", mod(func(b []byte) []byte { return setPlen(cat(b[:hsOff], le16(0))) }), wire.ErrLength},
		{"handshake cut", setPlen(bytes.Clone(good[:len(good)-1])), wire.ErrTruncated},
		{"trailing byte", setPlen(append(bytes.Clone(good), 0)), wire.ErrLength},
	} {
		err := parse(c.b)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		t.Run(c.name, func(t *testing.T) { wantKind(t, err, c.kind) })
	}
	// The prefix flags byte is reserved in handshake phases: ignored.
	if err := parse(mod(func(b []byte) []byte { b[1] = 0xFF; return b })); err != nil {
		t.Errorf("prefix flags 0xFF: %v", err)
	}
}

func TestSessionSetupRejects(t *testing.T) {
	fspHandshakeRejects(t, fspSetupVector(t), 3, 2, func(b []byte) error {
		_, err := wire.ParseSessionSetup(b)
		return err
	})
}

// fspAckVector is a SessionAck built by hand: flags 0, src (the
// acknowledger's) [7,8,F0], dest (the initiator's) [3,4,F0] and the XK msg2
// vector: 68 + 16·6 = 164 bytes.
func fspAckVector(t testing.TB) []byte {
	return cat(
		mustHex(t, "02 00 a0 00"), // phase 2, flags 0, payload_len 160
		mustHex(t, "00"),
		fspWireCoords(7, 8, 0xF0),
		fspWireCoords(3, 4, 0xF0),
		mustHex(t, "39 00"), // handshake_len 57
		mustHex(t, fspXKMsg2))
}

func TestSessionAckLayout(t *testing.T) {
	b := fspAckVector(t)
	if len(b) != 68+16*6 {
		t.Fatalf("vector is %d bytes", len(b))
	}
	a, err := wire.ParseSessionAck(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Flags != 0 || a.SrcCoords.At(0) != addrOf(7) || a.DestCoords.At(1) != addrOf(4) {
		t.Errorf("got %+v", a)
	}
	equal(t, "handshake", a.Handshake, mustHex(t, fspXKMsg2))
	equal(t, "re-encoded", marshal(t, a), b)

	// test_session_ack_encode_decode: byte0 02, byte1 00.
	enc := marshal(t, wire.SessionAck{SrcCoords: fspCoords(7, 8, 0), DestCoords: fspCoords(3, 4, 0), Handshake: fill(57, 0xBB)})
	if enc[0] != 0x02 || enc[1] != 0x00 || int(binary.LittleEndian.Uint16(enc[2:])) != len(enc)-4 {
		t.Errorf("prefix %x", enc[:4])
	}
	// The Ack's flags byte is reserved; upstream keeps it as received.
	b[4] = 0x5A
	if a, err := wire.ParseSessionAck(b); err != nil || a.Flags != 0x5A {
		t.Errorf("flags 0x5A: %v %#x", err, a.Flags)
	} else {
		equal(t, "flags kept", marshal(t, a), b)
	}
}

func TestSessionAckRejects(t *testing.T) {
	fspHandshakeRejects(t, fspAckVector(t), 3, 3, func(b []byte) error {
		_, err := wire.ParseSessionAck(b)
		return err
	})
	// A Setup is not an Ack.
	_, err := wire.ParseSessionAck(fspSetupVector(t))
	wantKind(t, err, wire.ErrPhase)
}

func TestSessionMsg3Layout(t *testing.T) {
	b := cat(
		mustHex(t, "03 00 4c 00"), // phase 3, flags 0, payload_len 76
		mustHex(t, "00"),          // reserved flags
		mustHex(t, "49 00"),       // handshake_len 73
		mustHex(t, fspXKMsg3))
	if len(b) != 80 {
		t.Fatalf("vector is %d bytes", len(b))
	}
	m, err := wire.ParseSessionMsg3(b)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "handshake", m.Handshake, mustHex(t, fspXKMsg3))
	if m.Flags != 0 || m.Len() != wire.SessionMsg3Size {
		t.Errorf("got flags %#x len %d", m.Flags, m.Len())
	}
	equal(t, "re-encoded", marshal(t, m), b)
	// test_session_msg3_encode_decode.
	enc := marshal(t, wire.SessionMsg3{Handshake: fill(73, 0xCC)})
	equal(t, "prefix", enc[:7], mustHex(t, "03 00 4c 00 00 49 00"))

	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		// test_session_msg3_decode_too_short.
		{"empty", nil, wire.ErrTruncated},
		{"flags only", mustHex(t, "03 00 01 00 00"), wire.ErrTruncated},
		{"handshake_len cut", mustHex(t, "03 00 02 00 00 49"), wire.ErrTruncated},
		// test_session_msg3_empty_handshake feeds the bare decoder; the
		// endpoint refuses it.
		{"empty handshake", mustHex(t, "03 00 03 00 00 00 00"), wire.ErrLength},
		{"handshake 72", cat(mustHex(t, "03 00 4b 00 00 48 00"), fill(72, 1)), wire.ErrLength},
		{"handshake cut", cat(mustHex(t, "03 00 4b 00 00 49 00"), fill(72, 1)), wire.ErrTruncated},
		{"trailing", cat(mustHex(t, "03 00 4d 00 00 49 00"), fill(74, 1)), wire.ErrLength},
		{"payload_len 75", append(mustHex(t, "03 00 4b 00"), b[4:]...), wire.ErrLength},
		{"phase 1", append(mustHex(t, "01 00 4c 00"), b[4:]...), wire.ErrPhase},
		{"version 2", append(mustHex(t, "23 00 4c 00"), b[4:]...), wire.ErrVersion},
	} {
		_, err := wire.ParseSessionMsg3(c.b)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		t.Run(c.name, func(t *testing.T) { wantKind(t, err, c.kind) })
	}
}

func TestFSPInner(t *testing.T) {
	// test_inner_header_prepend_strip: ts 12345, DataPacket, SP, AA BB CC.
	b := mustHex(t, "39 30 00 00 10 01 aa bb cc")
	in, err := wire.ParseFSPInner(b)
	if err != nil {
		t.Fatal(err)
	}
	if in.Timestamp != 12345 || in.MsgType != wire.SessionMsgDataPacket || !in.Flags.SpinBit() {
		t.Errorf("got %+v", in)
	}
	equal(t, "body", in.Body, mustHex(t, "aa bb cc"))
	if !fspSameMemory(in.Body, b) {
		t.Error("body copied")
	}
	equal(t, "re-encoded", marshal(t, in), b)

	// test_inner_header_empty_payload.
	in, err = wire.ParseFSPInner(mustHex(t, "00 00 00 00 13 00"))
	if err != nil || in.MsgType != wire.SessionMsgPathMtuNotification || len(in.Body) != 0 {
		t.Errorf("empty body: %v %+v", err, in)
	}
	// Reserved inner-flag bits are dropped.
	in, _ = wire.ParseFSPInner(mustHex(t, "00 00 00 00 14 fe"))
	if in.Flags != 0 {
		t.Errorf("inner flags 0xFE → %#x", in.Flags)
	}
	// Unknown types still parse: receivers account for them before dropping.
	in, err = wire.ParseFSPInner(mustHex(t, "01 00 00 00 99 00"))
	if err != nil || in.MsgType.Known() {
		t.Errorf("type 0x99: %v known=%v", err, in.MsgType.Known())
	}
	// test_inner_header_too_short.
	for _, n := range []int{0, 5} {
		_, err := wire.ParseFSPInner(make([]byte, n))
		wantKind(t, err, wire.ErrTruncated)
	}
	// MarshalTo with a nil body writes just the header, for in-place bodies.
	h := marshal(t, wire.FSPInner{Timestamp: 0x01020304, MsgType: wire.SessionMsgCoordsWarmup, Flags: wire.FSPInnerFlagSP})
	equal(t, "header only", h, mustHex(t, "04 03 02 01 14 01"))
}

func TestSessionMessageType(t *testing.T) {
	// test_session_message_type_roundtrip / _new_values / _display / _invalid.
	for _, c := range []struct {
		t    wire.SessionMessageType
		b    byte
		name string
	}{
		{wire.SessionMsgDataPacket, 0x10, "DataPacket"},
		{wire.SessionMsgSenderReport, 0x11, "SenderReport"},
		{wire.SessionMsgReceiverReport, 0x12, "ReceiverReport"},
		{wire.SessionMsgPathMtuNotification, 0x13, "PathMtuNotification"},
		{wire.SessionMsgCoordsWarmup, 0x14, "CoordsWarmup"},
	} {
		if byte(c.t) != c.b || c.t.String() != c.name || !c.t.Known() {
			t.Errorf("%#x: %q known=%v", c.b, c.t, c.t.Known())
		}
	}
	for _, b := range []byte{0xFF, 0x99, 0x20, 0x22, 0x0F, 0x15} {
		if wire.SessionMessageType(b).Known() {
			t.Errorf("%#x known", b)
		}
	}
}

func TestDataPacket(t *testing.T) {
	// The IPv6 shim sends src_port = dst_port = 256, 00 01 on the wire.
	b := mustHex(t, "00 01 00 01 00 60 00 00 00 11 40")
	d, err := wire.ParseDataPacket(b)
	if err != nil {
		t.Fatal(err)
	}
	if d.SrcPort != wire.FSPPortIPv6Shim || d.DstPort != wire.FSPPortIPv6Shim || len(d.Payload) != 7 || !fspSameMemory(d.Payload, b) {
		t.Errorf("got %+v", d)
	}
	equal(t, "re-encoded", marshal(t, d), b)
	// Little-endian ports: 1024 → 00 04, 0xBEEF → ef be.
	equal(t, "ports", marshal(t, wire.DataPacket{SrcPort: 1024, DstPort: 0xBEEF}), mustHex(t, "00 04 ef be"))
	for _, n := range []int{0, 3} {
		_, err := wire.ParseDataPacket(make([]byte, n))
		wantKind(t, err, wire.ErrTruncated)
	}
}

func TestPathMtuNotification(t *testing.T) {
	b := marshal(t, wire.PathMtuNotification{PathMTU: 1400})
	equal(t, "1400", b, mustHex(t, "78 05"))
	for _, mtu := range []uint16{0, 1280, 1500, 0xFFFF} {
		p, err := wire.ParsePathMtuNotification(marshal(t, wire.PathMtuNotification{PathMTU: mtu}))
		if err != nil || p.PathMTU != mtu {
			t.Errorf("%d: %v %d", mtu, err, p.PathMTU)
		}
	}
	// test_path_mtu_notification_too_short.
	for _, b := range [][]byte{nil, {0}} {
		_, err := wire.ParsePathMtuNotification(b)
		wantKind(t, err, wire.ErrTruncated)
	}
	_, err := wire.ParsePathMtuNotification([]byte{1, 2, 3})
	wantKind(t, err, wire.ErrLength)
}

func TestCoordsWarmup(t *testing.T) {
	if _, err := wire.ParseCoordsWarmup(nil); err != nil {
		t.Fatal(err)
	}
	if n, err := (wire.CoordsWarmup{}).MarshalTo(nil); n != 0 || err != nil {
		t.Fatalf("MarshalTo: %d %v", n, err)
	}
	_, err := wire.ParseCoordsWarmup([]byte{0})
	wantKind(t, err, wire.ErrLength)
}

// TestFSPShimDataPacketOffsets checks the §5 budget: an IPv6 packet of
// L upper-layer bytes becomes an FSP message of 12 + 6 + 4 + 7 + L + 16
// bytes whose payload_len is 17 + L.
func TestFSPShimDataPacketOffsets(t *testing.T) {
	const L = 100
	ip := fspIPv6Packet(0, 0, 17, 64, fill(16, 0xA1), fill(16, 0xB2), fill(L, 0x5C))
	plain := make([]byte, wire.FSPInnerHeaderSize+wire.FSPPortHeaderSize+len(ip)-wire.IPv6ShimSavings)
	off, _ := wire.FSPInner{Timestamp: 7, MsgType: wire.SessionMsgDataPacket}.MarshalTo(plain)
	off2, _ := wire.DataPacket{SrcPort: 256, DstPort: 256}.MarshalTo(plain[off:])
	n, err := wire.CompressIPv6(plain[off+off2:], ip)
	if err != nil {
		t.Fatal(err)
	}
	if off+off2+n != 17+L || len(plain) != 17+L {
		t.Fatalf("plaintext is %d bytes, want %d", off+off2+n, 17+L)
	}
	m := wire.FSPEncrypted{Header: wire.FSPHeader{PayloadLen: uint16(len(plain))}, Ciphertext: make([]byte, len(plain)+wire.FSPTagSize)}
	if m.Len()-len(ip) != 77-16-4-36-16 { // FIPS_IPV6_OVERHEAD minus the FMP parts
		t.Errorf("FSP message is %d bytes for a %d-byte IPv6 packet", m.Len(), len(ip))
	}
	// The offsets of §5, relative to the start of the FSP payload (56 in
	// the UDP datagram): ts at 12, msg_type 16, inner_flags 17, ports 18/20,
	// shim format 22, verbatim IPv6 bytes 23..27, upper payload at 29.
	pkt := marshal(t, m)
	copy(pkt[12:], plain) // stand-in for the seal: same offsets
	if pkt[16] != 0x10 || !bytes.Equal(pkt[18:22], mustHex(t, "00 01 00 01")) || pkt[22] != 0x00 ||
		!bytes.Equal(pkt[23:27], ip[:4]) || pkt[27] != 17 || pkt[28] != 64 || pkt[29] != 0x5C {
		t.Errorf("offsets: %x", pkt[:30])
	}
}

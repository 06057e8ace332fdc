package wire_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/fips-go/fips/control/wire"
)

// Frame builders shaped like upstream's framing.rs test helpers.

func fmpStreamEstablished(plen uint16) []byte {
	b := make([]byte, 32+int(plen))
	b[0], b[1] = 0x00, 0x00
	b[2], b[3] = byte(plen), byte(plen>>8)
	for i := 4; i < len(b); i++ {
		b[i] = byte(i)
	}
	return b
}

func fmpStreamMsg1() []byte {
	b := fill(114, 0xAA)
	b[0], b[1], b[2], b[3] = 0x01, 0x00, 110, 0
	return b
}

func fmpStreamMsg2() []byte {
	b := fill(69, 0xBB)
	b[0], b[1], b[2], b[3] = 0x02, 0x00, 65, 0
	return b
}

func TestReadFMPPacket(t *testing.T) {
	buf := make([]byte, 2048)
	for name, frame := range map[string][]byte{
		"established":     fmpStreamEstablished(64),
		"msg1":            fmpStreamMsg1(),
		"msg2":            fmpStreamMsg2(),
		"zero payload":    fmpStreamEstablished(0),
		"at mtu boundary": fmpStreamEstablished(1400 - 32),
	} {
		t.Run(name, func(t *testing.T) {
			// One byte at a time proves the reader copes with short reads.
			got, err := wire.ReadFMPPacket(iotest.OneByteReader(bytes.NewReader(frame)), buf, 1400)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "packet", got, frame)
		})
	}
	if n := len(fmpStreamEstablished(0)); n != 32 {
		t.Fatalf("empty established frame is %d bytes", n)
	}
}

func TestReadFMPPacketSequence(t *testing.T) {
	// test_read_multiple_packets
	msg1, est, msg2 := fmpStreamMsg1(), fmpStreamEstablished(32), fmpStreamMsg2()
	r := bytes.NewReader(cat(msg1, est, msg2))
	buf := make([]byte, 1400)
	for i, want := range [][]byte{msg1, est, msg2} {
		got, err := wire.ReadFMPPacket(r, buf, 1400)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		equal(t, "packet", got, want)
	}
	// The stream ends cleanly between packets.
	if _, err := wire.ReadFMPPacket(r, buf, 1400); err != io.EOF {
		t.Fatalf("at end: %v, want io.EOF", err)
	}
}

func TestReadFMPPacketErrors(t *testing.T) {
	buf := make([]byte, 4096)
	withPrefix := func(b0 byte, plen uint16, extra int) []byte {
		return cat([]byte{b0, 0, byte(plen), byte(plen >> 8)}, make([]byte, extra))
	}
	for _, c := range []struct {
		name string
		in   []byte
		mtu  uint16
		kind error
	}{
		// test_unknown_version_error: a TLS ClientHello reads as version 1.
		{"TLS ClientHello", cat([]byte{0x16}, make([]byte, 99)), 1400, wire.ErrVersion},
		// test_unknown_phase_error
		{"phase 5", withPrefix(0x05, 10, 96), 1400, wire.ErrPhase},
		{"phase 3", withPrefix(0x03, 10, 96), 1400, wire.ErrPhase},
		// test_payload_too_large: mtu 100 allows 68.
		{"plen 100 mtu 100", withPrefix(0x00, 100, 200), 100, wire.ErrLength},
		{"plen 69 mtu 100", withPrefix(0x00, 69, 200), 100, wire.ErrLength},
		// test_payload_one_over_mtu
		{"plen 1369 mtu 1400", withPrefix(0x00, 1369, 2000), 1400, wire.ErrLength},
		// An MTU below 32 allows only empty frames (upstream saturates).
		{"plen 1 mtu 20", withPrefix(0x00, 1, 100), 20, wire.ErrLength},
		// test_handshake_size_mismatch_msg1 / _msg2
		{"msg1 plen 50", withPrefix(0x01, 50, 196), 1400, wire.ErrLength},
		{"msg2 plen 50", withPrefix(0x02, 50, 196), 1400, wire.ErrLength},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.ReadFMPPacket(bytes.NewReader(c.in), buf, c.mtu)
			wantKind(t, err, c.kind)
			_, err = wire.SplitFMPStream(c.in, c.mtu)
			wantKind(t, err, c.kind)
		})
	}
	if _, err := wire.ReadFMPPacket(bytes.NewReader(withPrefix(0x00, 0, 28)), buf, 20); err != nil {
		t.Fatalf("empty frame under tiny mtu: %v", err)
	}
	// Handshake sizes do not depend on the MTU, and their flags are not
	// the stream reader's business.
	m1 := fmpStreamMsg1()
	m1[1] = 0xff
	if got, err := wire.ReadFMPPacket(bytes.NewReader(m1), buf, 64); err != nil || len(got) != 114 {
		t.Fatalf("msg1 under mtu 64: %d %v", len(got), err)
	}

	// test_eof_on_prefix / test_eof_on_body
	if _, err := wire.ReadFMPPacket(bytes.NewReader([]byte{0, 0}), buf, 1400); err != io.ErrUnexpectedEOF {
		t.Fatalf("eof in prefix: %v", err)
	}
	if _, err := wire.ReadFMPPacket(bytes.NewReader(fmpStreamMsg1()[:10]), buf, 1400); err != io.ErrUnexpectedEOF {
		t.Fatalf("eof in body: %v", err)
	}
	if _, err := wire.ReadFMPPacket(bytes.NewReader(fmpStreamMsg1()[:4]), buf, 1400); err != io.ErrUnexpectedEOF {
		t.Fatalf("eof right after prefix: %v", err)
	}
	// I/O errors pass through unchanged.
	boom := errors.New("boom")
	if _, err := wire.ReadFMPPacket(iotest.ErrReader(boom), buf, 1400); err != boom {
		t.Fatalf("reader error: %v", err)
	}
	// A buffer smaller than the packet is the caller's mistake, not the peer's.
	if _, err := wire.ReadFMPPacket(bytes.NewReader(fmpStreamMsg1()), buf[:100], 1400); !errors.Is(err, wire.ErrBufferTooSmall) {
		t.Fatalf("small buffer: %v", err)
	}
}

func TestSplitFMPStream(t *testing.T) {
	est, msg2 := fmpStreamEstablished(10), fmpStreamMsg2()
	stream := cat(est, msg2)
	// Every strict prefix of the first packet asks for more.
	for n := 0; n < len(est); n++ {
		p, err := wire.SplitFMPStream(stream[:n], 1400)
		if p != nil || err != nil {
			t.Fatalf("%d bytes: %x %v", n, p, err)
		}
	}
	p, err := wire.SplitFMPStream(stream, 1400)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "first", p, est)
	p, err = wire.SplitFMPStream(stream[len(p):], 1400)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "second", p, msg2)

	n, err := wire.FMPStreamPacketLen(est, 1400)
	if err != nil || n != 42 {
		t.Fatalf("FMPStreamPacketLen = %d, %v", n, err)
	}
	_, err = wire.FMPStreamPacketLen(est[:3], 1400)
	wantKind(t, err, wire.ErrTruncated)
}

func TestEthernetData(t *testing.T) {
	// test_frame_type_data_prefix
	want := []byte{0x00, 0x04, 0x00, 1, 2, 3, 4}
	equal(t, "data frame", marshal(t, wire.EthernetData{Packet: []byte{1, 2, 3, 4}}), want)

	// test_data_frame_padding_trimmed: NIC pads the 7-byte frame to 46.
	padded := append(append([]byte(nil), want...), make([]byte, 46-7)...)
	p, err := wire.ParseEthernetData(padded)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "packet", p.Packet, []byte{1, 2, 3, 4})
	if p.Len() != 7 {
		t.Fatalf("Len %d", p.Len())
	}
	// An FMP frame round-trips through the wrapper.
	frame := mustHex(t, fmpFirstFrameHex)
	e := marshal(t, wire.EthernetData{Packet: frame})
	if len(e) != 3+37 || e[1] != 37 || e[2] != 0 {
		t.Fatalf("wrapped: %x", e)
	}
	if p, err := wire.ParseEthernetData(e); err != nil || !bytes.Equal(p.Packet, frame) {
		t.Fatalf("%v", err)
	}
	// A zero-length data frame is accepted by the framing (FMP drops it later).
	if p, err := wire.ParseEthernetData([]byte{0, 0, 0}); err != nil || len(p.Packet) != 0 {
		t.Fatalf("empty: %v", err)
	}

	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		{"2 bytes", []byte{0, 1}, wire.ErrTruncated},
		{"length past end", []byte{0, 5, 0, 1, 2, 3, 4}, wire.ErrTruncated},
		{"beacon type", []byte{1, 0, 0}, wire.ErrType},
		{"type 2", []byte{2, 0, 0}, wire.ErrType},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.ParseEthernetData(c.b)
			wantKind(t, err, c.kind)
		})
	}
	if _, err := (wire.EthernetData{Packet: make([]byte, 0x10000)}).MarshalTo(make([]byte, 0x10010)); !errors.Is(err, wire.ErrValue) {
		t.Fatalf("oversize: %v", err)
	}
}

func TestEthernetBeacon(t *testing.T) {
	xonly := mustHex(t, "84bf7562262bbd6940085748f3be6afa52ae317155181ece31b66351ccffa4b0")
	want := cat([]byte{0x01, 0x01}, xonly)
	got := marshal(t, wire.EthernetBeacon{XOnly: xonly})
	// test_build_parse_beacon / test_beacon_size
	equal(t, "beacon", got, want)
	if len(got) != 34 || wire.EthernetBeaconSize != 34 {
		t.Fatalf("beacon is %d bytes", len(got))
	}
	p, err := wire.ParseEthernetBeacon(append(append([]byte(nil), want...), make([]byte, 12)...))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "xonly", p.XOnly, xonly)

	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		// test_parse_beacon_too_short
		{"2 bytes", []byte{0x01, 0x01}, wire.ErrTruncated},
		{"empty", nil, wire.ErrTruncated},
		{"33 bytes", want[:33], wire.ErrTruncated},
		// test_parse_beacon_wrong_type
		{"data type", cat([]byte{0x00}, want[1:]), wire.ErrType},
		{"version 2", cat([]byte{0x01, 0x02}, xonly), wire.ErrVersion},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.ParseEthernetBeacon(c.b)
			wantKind(t, err, c.kind)
		})
	}
}

func TestPunchPackets(t *testing.T) {
	// test_is_punch_packet_helper
	for _, c := range []struct {
		b    []byte
		want bool
	}{
		{[]byte{0x4E, 0x50, 0x54, 0x43, 0xAA, 0xBB}, true},
		{[]byte{0x4E, 0x50, 0x54, 0x41}, true},
		{[]byte("NPTC"), true},
		{[]byte("NPTA"), true},
		{[]byte{0x01, 0x02, 0x03, 0x04}, false},
		{[]byte{0x4E, 0x50, 0x54}, false},
		{nil, false},
		{[]byte("NPTB"), false},
		{[]byte{0x43, 0x54, 0x50, 0x4E}, false}, // little-endian magic is not a punch
		{mustHex(t, fmpFirstFrameHex), false},
	} {
		if got := wire.IsPunchPacket(c.b); got != c.want {
			t.Errorf("IsPunchPacket(%x) = %v", c.b, got)
		}
	}

	// The 24-byte probe: magic, sequence (both big-endian), session hash.
	hash := fill(16, 0xc3)
	want := cat([]byte("NPTC"), []byte{0, 0, 1, 2}, hash)
	got := marshal(t, wire.PunchPacket{Sequence: 0x0102, SessionHash: hash})
	equal(t, "probe", got, want)
	ack := marshal(t, wire.PunchPacket{Ack: true, Sequence: 0x0102, SessionHash: hash})
	equal(t, "ack", ack, cat([]byte("NPTA"), want[4:]))
	p, err := wire.ParsePunchPacket(append(ack, 0xff))
	if err != nil || !p.Ack || p.Sequence != 0x0102 || !bytes.Equal(p.SessionHash, hash) {
		t.Fatalf("%+v %v", p, err)
	}
	_, err = wire.ParsePunchPacket(want[:23])
	wantKind(t, err, wire.ErrTruncated)
	_, err = wire.ParsePunchPacket(cat([]byte("NPTX"), want[4:]))
	wantKind(t, err, wire.ErrType)
}

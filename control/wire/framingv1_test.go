package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
)

func TestFMPv1StreamFraming(t *testing.T) {
	msg1 := make([]byte, FMPv1Msg1Size)
	FMPv1Handshake{Phase: FMPPhaseMsg1, Noise: make([]byte, XXMsg1Size)}.MarshalTo(msg1)
	msg2 := make([]byte, FMPv1Msg2MinSize+26)
	FMPv1Handshake{Phase: FMPPhaseMsg2, Noise: make([]byte, XXMsg2Size+26)}.MarshalTo(msg2)
	msg3 := make([]byte, FMPv1Msg3MinSize)
	FMPv1Handshake{Phase: FMPPhaseMsg3, Noise: make([]byte, XXMsg3Size)}.MarshalTo(msg3)
	frame := make([]byte, FMPFrameMinSize+100)
	PutFMPv1FrameHeader(frame, 0, 1, 2, 100)
	stream := bytes.Join([][]byte{msg1, msg2, msg3, frame}, nil)
	for i, want := range [][]byte{msg1, msg2, msg3, frame} {
		p, err := SplitFMPv1Stream(stream, 1500)
		if err != nil || !bytes.Equal(p, want) {
			t.Fatalf("packet %d: %d bytes %v, want %d", i, len(p), err, len(want))
		}
		stream = stream[len(p):]
	}
	if p, err := SplitFMPv1Stream(msg2[:50], 1500); p != nil || err != nil {
		t.Errorf("partial msg2: %v %v", p, err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		{"version 0", []byte{0x01, 0, 110, 0}, ErrVersion},
		{"TLS ClientHello", []byte{0x16, 0x03, 0x01, 0x02}, ErrPhase},
		{"msg1 payload_len 38", []byte{0x11, 0, 38, 0}, ErrLength},
		{"msg2 below its minimum", []byte{0x12, 0, 113, 0}, ErrLength},
		{"msg3 above our maximum", []byte{0x13, 0, 0xff, 0xff}, ErrLength},
		{"frame above the MTU", []byte{0x10, 0, 0xd0, 0x05}, ErrLength},
	} {
		if _, err := FMPv1StreamPacketLen(c.b, 1500); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
}

func TestEthernetV1(t *testing.T) {
	b := make([]byte, 60)
	n, err := EthernetData{Packet: []byte{1, 2, 3, 4}}.MarshalV1To(b)
	if err != nil || n != 8 || hex.EncodeToString(b[:8]) != "0000040001020304" {
		t.Fatalf("%x %d %v", b[:8], n, err)
	}
	b[1] = 0x80                      // reserved flags are ignored
	d, err := ParseEthernetDataV1(b) // padded to 60
	if err != nil || !bytes.Equal(d.Packet, []byte{1, 2, 3, 4}) {
		t.Fatalf("%x %v", d.Packet, err)
	}
	b[2] = 57
	if _, err := ParseEthernetDataV1(b); !errors.Is(err, ErrTruncated) {
		t.Errorf("length past the frame: %v", err)
	}
	beacon := AppendEthernetBeaconV1(nil)
	if hex.EncodeToString(beacon) != "0100010001" {
		t.Fatalf("beacon %x", beacon)
	}
	if err := ParseEthernetBeaconV1(append(beacon, make([]byte, 41)...)); err != nil {
		t.Errorf("padded beacon: %v", err)
	}
	for _, c := range []struct {
		hex  string
		kind error
	}{{"01000100", ErrTruncated}, {"0000010001", ErrType}, {"0100000001", ErrLength}, {"0100010002", ErrVersion}} {
		if err := ParseEthernetBeaconV1(unhex(t, c.hex)); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.hex, err, c.kind)
		}
	}
	// A master beacon is 34 bytes [0x01][0x01][key]: as a v1 beacon its
	// length field is key bytes 0–1 and its version byte key byte 2, so
	// it passes only when that key byte happens to be 1 (docs/next.md).
	master := make([]byte, EthernetBeaconSize)
	EthernetBeacon{XOnly: bytes.Repeat([]byte{0x02}, 32)}.MarshalTo(master)
	if err := ParseEthernetBeaconV1(master); err == nil {
		t.Error("a master beacon with key byte 2 ≠ 1 read as a v1 beacon")
	}
}

// The discriminators of docs/next.md §15.2 on frames of both formats,
// including a version-0 frame whose length's low byte is 0 (512 bytes).
func TestEthernetFormats(t *testing.T) {
	for _, c := range []struct {
		name string
		plen int
		k    uint8
	}{{"short", 40, 0}, {"512 bytes, flags K|CE|SP", 512, FMPFlagK | FMPFlagCE | FMPFlagSP}, {"1024", 1024, 0}} {
		pkt := make([]byte, c.plen)
		if _, err := PutFMPFrameHeader(pkt, c.k, 1, 2, c.plen-FMPFrameMinSize); err != nil {
			t.Fatal(err)
		}
		v0 := make([]byte, c.plen+EthernetDataHeaderSize)
		EthernetData{Packet: pkt}.MarshalTo(v0)
		if v := EthernetDataVersion(v0); v != FMPVersion {
			t.Errorf("%s: v0 frame read as version %d", c.name, v)
		}
		pkt1 := append([]byte{}, pkt...)
		pkt1[0] = FMPVersionNext << 4
		v1 := make([]byte, c.plen+EthernetV1HeaderSize)
		EthernetData{Packet: pkt1}.MarshalV1To(v1)
		if v := EthernetDataVersion(v1); v != FMPVersionNext {
			t.Errorf("%s: v1 frame read as version %d", c.name, v)
		}
	}
	master := make([]byte, EthernetBeaconSize)
	EthernetBeacon{XOnly: bytes.Repeat([]byte{0x01}, 32)}.MarshalTo(master)
	if v, ok := EthernetBeaconFormat(master); !ok || v != FMPVersion {
		t.Errorf("master beacon (key bytes 0x01, which a v1 parse would accept): %d %v", v, ok)
	}
	if v, ok := EthernetBeaconFormat(AppendEthernetBeaconV1(nil)); !ok || v != FMPVersionNext {
		t.Errorf("next beacon: %d %v", v, ok)
	}
	if _, ok := EthernetBeaconFormat([]byte{1, 2, 3}); ok {
		t.Error("junk read as a beacon")
	}
}

func FuzzFMPv1Stream(f *testing.F) {
	f.Add([]byte{0x12, 0, 114, 0})
	f.Add([]byte{0x11, 0, 37, 0, 1, 2, 3})
	f.Add([]byte{0x01, 0, 110, 0})
	f.Add([]byte{0x16, 3, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := SplitFMPv1Stream(b, 1500)
		if err == nil && p != nil && (len(p) < FMPPrefixSize || len(p) > len(b)) {
			t.Fatalf("split %d of %d", len(p), len(b))
		}
		if d, err := ParseEthernetDataV1(b); err == nil && len(d.Packet) > len(b)-EthernetV1HeaderSize {
			t.Fatal("packet past the frame")
		}
		_ = ParseEthernetBeaconV1(b)
		// A stream of either version: the packet read is the one its
		// own version's framing splits off.
		buf := make([]byte, 70000)
		read, rerr := ReadFMPPacketAny(bytes.NewReader(b), buf, 1500)
		split, serr := SplitFMPStream(b, 1500)
		if len(b) > 0 && b[0]>>4 == FMPVersionNext {
			split, serr = SplitFMPv1Stream(b, 1500)
		}
		switch {
		case split != nil:
			if rerr != nil || !bytes.Equal(read, split) {
				t.Fatalf("read %x (%v), split %x", read, rerr, split)
			}
		case serr != nil:
			var de *DecodeError
			if !errors.As(rerr, &de) {
				t.Fatalf("split error %v, read error %v", serr, rerr)
			}
		default:
			if rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
				t.Fatalf("incomplete input, read %v", rerr)
			}
		}
	})
}

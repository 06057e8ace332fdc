package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// Vectors from upstream's tests on branch next (src/proto/fmp/wire.rs and
// src/proto/fmp/tests/wire.rs): the ver+phase bytes, sizes and payload
// codec cases, and the negotiation payloads testing/vectors/noise_xx.py
// encrypts.
func TestNegotiationVectors(t *testing.T) {
	for _, c := range []struct {
		name string
		n    Negotiation
		hex  string
	}{
		{"roundtrip 1..3 0x2a", Negotiation{VersionMin: 1, VersionMax: 3, Features: 0x2a}, "00132a00000000000000"},
		{"two TLVs", Negotiation{VersionMin: 0, VersionMax: 1, TLVs: []TLV{{1, []byte{0xaa, 0xbb}}, {256, []byte{1, 2, 3, 4}}}},
			"00010000000000000000" + "01000200aabb" + "0001040001020304"},
		{"unknown TLV kept", Negotiation{VersionMax: 1, TLVs: []TLV{{9999, []byte{0xff, 0xfe, 0xfd}}}}, "00010000000000000000" + "0f270300fffefd"},
		{"xx msg2 payload", Negotiation{VersionMin: 1, VersionMax: 1, Features: 0x78}, "00117800000000000000"},
		{"xx msg3 payload", Negotiation{VersionMin: 1, VersionMax: 1, Features: 0x78}.WithRekeyOf(0x01020304), "00117800000000000000" + "0100040004030201"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.n.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(b); got != c.hex {
				t.Fatalf("encoded %s, want %s", got, c.hex)
			}
			d, err := ParseNegotiation(b)
			if err != nil {
				t.Fatal(err)
			}
			if d.VersionMin != c.n.VersionMin || d.VersionMax != c.n.VersionMax || d.Features != c.n.Features || len(d.TLVs) != len(c.n.TLVs) {
				t.Fatalf("decoded %+v, want %+v", d, c.n)
			}
			for i := range d.TLVs {
				if d.TLVs[i].Field != c.n.TLVs[i].Field || !bytes.Equal(d.TLVs[i].Value, c.n.TLVs[i].Value) {
					t.Errorf("TLV %d: %+v, want %+v", i, d.TLVs[i], c.n.TLVs[i])
				}
			}
		})
	}
	n, _ := ParseNegotiation(unhex(t, "00117800000000000000"+"0100040004030201"))
	if idx, ok, err := n.RekeyOf(); idx != 0x01020304 || !ok || err != nil {
		t.Errorf("RekeyOf %#x %v %v", idx, ok, err)
	}
	if p, err := n.Profile(); p != ProfileFull || err != nil {
		t.Errorf("profile %v %v", p, err)
	}
	if n.Features&FMPFeatProvidesSR == 0 || n.Features&FMPFeatWantsRR == 0 {
		t.Error("feature bits 3–6 not set in 0x78")
	}
}

func TestNegotiationRejects(t *testing.T) {
	for _, c := range []struct {
		name, hex string
		kind      error
	}{
		{"short", "0011780000000000", ErrTruncated},
		{"format 1", "01117800000000000000", ErrVersion},
		{"min above max", "00537800000000000000", ErrValue},
		{"truncated TLV header", "00117800000000000000" + "0100", ErrTruncated},
		{"TLV past the end", "00117800000000000000" + "01000500040302", ErrTruncated},
	} {
		if _, err := ParseNegotiation(unhex(t, c.hex)); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	many := unhex(t, "00010000000000000000")
	for range MaxNegotiationTLVs + 1 {
		many = append(many, 7, 0, 0, 0)
	}
	if _, err := ParseNegotiation(many); !errors.Is(err, ErrValue) {
		t.Errorf("%d TLVs: %v", MaxNegotiationTLVs+1, err)
	}
	bad, _ := ParseNegotiation(unhex(t, "00117800000000000000"+"01000300040302"))
	if _, ok, err := bad.RekeyOf(); !ok || !errors.Is(err, ErrLength) {
		t.Errorf("3-byte rekey marker: %v %v", ok, err)
	}
	leaf3, _ := ParseNegotiation(unhex(t, "00110300000000000000"))
	if _, err := leaf3.Profile(); !errors.Is(err, ErrValue) {
		t.Errorf("profile 3: %v", err)
	}
}

func TestFMPv1Handshakes(t *testing.T) {
	noise1 := bytes.Repeat([]byte{0xbb}, XXMsg1Size)
	m1 := FMPv1Handshake{Phase: FMPPhaseMsg1, SenderIndex: 0xabcdef01, Noise: noise1}
	b := make([]byte, m1.Len())
	if n, err := m1.MarshalTo(b); err != nil || n != FMPv1Msg1Size {
		t.Fatalf("msg1: %d %v", n, err)
	}
	if got := hex.EncodeToString(b[:8]); got != "1100250001efcdab" {
		t.Errorf("msg1 header %s, want 11 00 2500 01efcdab", got)
	}
	for _, c := range []struct {
		phase uint8
		extra int
		first byte
	}{{FMPPhaseMsg2, 0, 0x12}, {FMPPhaseMsg2, 26, 0x12}, {FMPPhaseMsg3, 0, 0x13}, {FMPPhaseMsg3, 34, 0x13}} {
		_, _, min, _, _ := fmpv1Shape(c.phase)
		h := FMPv1Handshake{Phase: c.phase, SenderIndex: 7, ReceiverIndex: 0x12345678, Noise: bytes.Repeat([]byte{0xcc}, min+c.extra)}
		b := make([]byte, h.Len())
		if _, err := h.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		if b[0] != c.first || int(b[2])|int(b[3])<<8 != len(b)-4 {
			t.Errorf("phase %d: prefix % x for %d bytes", c.phase, b[:4], len(b))
		}
		d, err := ParseFMPv1Handshake(b)
		if err != nil || d.Phase != c.phase || d.SenderIndex != 7 || d.ReceiverIndex != 0x12345678 || !bytes.Equal(d.Noise, h.Noise) {
			t.Errorf("phase %d: %+v %v", c.phase, d, err)
		}
	}
	if d, err := ParseFMPv1Handshake(b); err != nil || d.SenderIndex != 0xabcdef01 || !bytes.Equal(d.Noise, noise1) {
		t.Errorf("msg1: %+v %v", d, err)
	}
	// Version 0's msg1 (0x01) is refused as a version, not misread.
	v0 := append([]byte{}, b...)
	v0[0] = 0x01
	if _, err := ParseFMPv1Handshake(v0); !errors.Is(err, ErrVersion) {
		t.Errorf("v0 msg1: %v", err)
	}
	if v := PacketVersion(b); v != FMPVersionNext {
		t.Errorf("version %d", v)
	}
}

func TestFMPv1Rejects(t *testing.T) {
	msg2 := func(extra int) []byte {
		h := FMPv1Handshake{Phase: FMPPhaseMsg2, Noise: make([]byte, XXMsg2Size+extra)}
		b := make([]byte, 12+len(h.Noise))
		putFMPPrefix(b, FMPVersionNext, FMPPhaseMsg2, 0, uint16(len(b)-4))
		copy(b[12:], h.Noise)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		{"phase 4", []byte{0x14, 0, 0, 0}, ErrPhase},
		{"msg2 short", msg2(0)[:FMPv1Msg2MinSize-1], ErrTruncated},
		{"msg2 payload under a tag", msg2(15), ErrLength},
		{"msg2 too long", msg2(FMPv1HandshakeMaxExtra + 1), ErrLength},
		{"flags", func() []byte { b := msg2(0); b[1] = 1; return b }(), ErrFlags},
		{"payload_len", func() []byte { b := msg2(0); b[2]++; return b }(), ErrLength},
	} {
		if _, err := ParseFMPv1Handshake(c.b); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	if _, err := (FMPv1Handshake{Phase: FMPPhaseMsg2, Noise: make([]byte, XXMsg2Size+3)}).MarshalTo(make([]byte, 200)); !errors.Is(err, ErrValue) {
		t.Errorf("marshal a 3-byte payload: %v", err)
	}
}

func TestFMPv1Frame(t *testing.T) {
	b := make([]byte, FMPHeaderSize+48)
	if _, err := PutFMPv1FrameHeader(b, FMPFlagCE, 0x12345678, 42, 32); err != nil {
		t.Fatal(err)
	}
	if b[0] != 0x10 || b[1] != FMPFlagCE {
		t.Fatalf("header % x", b[:4])
	}
	f, err := ParseFMPv1Frame(b)
	if err != nil || f.ReceiverIndex != 0x12345678 || f.Counter != 42 || f.PayloadLen() != 32 || !bytes.Equal(f.AAD(), b[:16]) {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := ParseFMPFrame(b); !errors.Is(err, ErrVersion) {
		t.Errorf("v1 frame parsed as v0: %v", err)
	}
	b[0] = 0x00
	if _, err := ParseFMPv1Frame(b); !errors.Is(err, ErrVersion) {
		t.Errorf("v0 frame parsed as v1: %v", err)
	}
}

func FuzzParseNegotiation(f *testing.F) {
	f.Add(unhex(f, "00117800000000000000"+"0100040004030201"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseNegotiation(b)
		if err != nil {
			return
		}
		out, err := n.Append(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("re-encoded %x (%v), from %x", out, err, b)
		}
	})
}

func FuzzParseFMPv1Handshake(f *testing.F) {
	f.Add(append([]byte{0x11, 0, 37, 0, 1, 2, 3, 4}, make([]byte, 33)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseFMPv1Handshake(b)
		if err != nil {
			return
		}
		out := make([]byte, h.Len())
		if _, err := h.MarshalTo(out); err != nil || !bytes.Equal(out, b) {
			t.Fatalf("re-encoded %x (%v), from %x", out, err, b)
		}
	})
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

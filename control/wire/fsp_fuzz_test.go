package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// fspCheckDecode is the fuzz oracle of the FSP-side decoders. A failed
// decode must be a *DecodeError. A successful one must re-encode to canon:
// the input with its reserved bits and bytes cleared, which is the only
// freedom these decoders allow (every length is exact).
func fspCheckDecode(t *testing.T, canon []byte, v marshaler, err error) {
	t.Helper()
	if err != nil {
		var de *wire.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("error %q (%T) is not a *DecodeError", err, err)
		}
		return
	}
	if v.Len() != len(canon) {
		t.Fatalf("decoded %d bytes into a value of Len %d", len(canon), v.Len())
	}
	out := make([]byte, len(canon))
	if n, err := v.MarshalTo(out); err != nil || n != len(out) {
		t.Fatalf("re-encode: %d, %v", n, err)
	}
	if !bytes.Equal(out, canon) {
		t.Fatalf("re-encode differs:\n  in %x\n out %x", canon, out)
	}
}

func fspIsDecodeError(t *testing.T, err error) {
	t.Helper()
	var de *wire.DecodeError
	if err != nil && !errors.As(err, &de) {
		t.Fatalf("error %q (%T) is not a *DecodeError", err, err)
	}
}

// fspCanon copies in and applies f to the copy when it is long enough.
func fspCanon(in []byte, min int, f func(b []byte)) []byte {
	c := bytes.Clone(in)
	if len(c) >= min {
		f(c)
	}
	return c
}

// fspSeeds adds each seed and its one-byte truncation.
func fspSeeds(f *testing.F, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
		if len(s) > 0 {
			f.Add(s[:len(s)-1])
		}
	}
}

func fspSet(b []byte, i int, v byte) []byte { b = bytes.Clone(b); b[i] = v; return b }

func FuzzParseFSPPrefix(f *testing.F) {
	fspSeeds(f, []byte{0x00, 0x01, 0x40, 0x00}, []byte{0x01, 0x00, 0x50, 0x00}, []byte{0x00, 0x04, 0x22, 0x00, 0x20}, nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := wire.ParseFSPPrefix(in)
		if err != nil {
			fspIsDecodeError(t, err)
			return
		}
		fspCheckDecode(t, in[:4], p, nil)
	})
}

func FuzzClassifyFSP(f *testing.F) {
	fspSeeds(f, []byte{0x00, 0x01, 0x40, 0x00}, []byte{0x03, 0x00, 0x4c, 0x00}, []byte{0x00, 0x05, 0, 0},
		[]byte{0x14, 0, 0, 0}, []byte{0x07, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		k, err := wire.ClassifyFSP(in)
		fspIsDecodeError(t, err)
		if err != nil {
			return
		}
		// The kind decides which parser applies: no other parser may
		// accept the packet.
		_, encErr := wire.ParseFSPEncrypted(in)
		_, setupErr := wire.ParseSessionSetup(in)
		_, ackErr := wire.ParseSessionAck(in)
		_, msg3Err := wire.ParseSessionMsg3(in)
		_, sigErr := wire.ParseRoutingSignalType(in)
		for kind, err := range map[wire.FSPKind]error{
			wire.FSPKindEncrypted: encErr, wire.FSPKindSetup: setupErr, wire.FSPKindAck: ackErr,
			wire.FSPKindMsg3: msg3Err, wire.FSPKindSignal: sigErr,
		} {
			if kind != k && err == nil {
				t.Fatalf("classified %v but the %v parser accepts it", k, kind)
			}
		}
	})
}

func FuzzParseFSPEncrypted(f *testing.F) {
	good := fspEncryptedVector(f)
	noCP := cat([]byte{0x00, 0x02, 0x01, 0x00}, le64(7), fill(17, 0xEE))
	emptyCP := cat([]byte{0x00, 0x01, 0x00, 0x00}, le64(1), []byte{0, 0, 0, 0}, fill(16, 0xEE))
	fspSeeds(f, good, noCP, emptyCP, fspSet(good, 1, 0xFB), fspSet(good, 1, 0x04), fspSet(good, 2, 9),
		fspSet(good, 12, 0xFF), make([]byte, 28), nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ParseFSPEncrypted(in)
		fspCheckDecode(t, fspCanon(in, 2, func(b []byte) { b[1] &= 0x07 }), m, err)
		if err == nil {
			if !bytes.Equal(m.AAD(), in[:12]) || !bytes.Equal(m.Ciphertext, in[m.HeaderLen():]) ||
				int(m.Header.PayloadLen)+wire.FSPTagSize != len(m.Ciphertext) {
				t.Fatalf("views: aad %x, %d ciphertext bytes after %d", m.AAD(), len(m.Ciphertext), m.HeaderLen())
			}
		}
	})
}

func FuzzParseSessionSetup(f *testing.F) {
	good := fspSetupVector(f)
	fspSeeds(f, good, fspSet(good, 1, 0xFF), fspSet(good, 4, 0xFF), fspSet(good, 5, 0), fspSet(good, 2, 0),
		marshal(f, wire.SessionSetup{SrcCoords: fspCoords(9), DestCoords: fspCoords(9), Handshake: fill(33, 1)}),
		append(bytes.Clone(good), 0), []byte{0x01, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := wire.ParseSessionSetup(in)
		fspCheckDecode(t, fspCanon(in, 5, func(b []byte) { b[1] = 0; b[4] &= 0x03 }), s, err)
	})
}

func FuzzParseSessionAck(f *testing.F) {
	good := fspAckVector(f)
	fspSeeds(f, good, fspSet(good, 1, 0xFF), fspSet(good, 4, 0xA5), fspSet(good, 5, 0), fspSet(good, 3, 1),
		append(bytes.Clone(good), 0), []byte{0x02, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := wire.ParseSessionAck(in)
		fspCheckDecode(t, fspCanon(in, 2, func(b []byte) { b[1] = 0 }), a, err)
	})
}

func FuzzParseSessionMsg3(f *testing.F) {
	good := marshal(f, wire.SessionMsg3{Handshake: mustHex(f, fspXKMsg3)})
	fspSeeds(f, good, fspSet(good, 1, 0x80), fspSet(good, 4, 0x11), fspSet(good, 5, 0x48),
		append(bytes.Clone(good), 0), []byte{0x03, 0x00, 0x01, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ParseSessionMsg3(in)
		fspCheckDecode(t, fspCanon(in, 2, func(b []byte) { b[1] = 0 }), m, err)
	})
}

// The `next` variants: XX msg2 of 106 bytes or more, msg3 of 73 or
// more; re-encoding gives the same bytes and the handshake stays in range.
func FuzzParseSessionAckXX(f *testing.F) {
	good := marshal(f, wire.SessionAck{SrcCoords: fspCoords(2), DestCoords: fspCoords(3), Handshake: fill(wire.XXMsg2Size+26, 7)})
	fspSeeds(f, good, fspSet(good, 1, 0xFF), fspSet(good, 5, 0),
		marshal(f, wire.SessionAck{SrcCoords: fspCoords(1), DestCoords: fspCoords(1), Handshake: fill(wire.XXMsg2Size, 1)}),
		marshal(f, wire.SessionAck{SrcCoords: fspCoords(1), DestCoords: fspCoords(1), Handshake: fill(wire.XKMsg2Size, 1)}),
		append(bytes.Clone(good), 0), []byte{0x02, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := wire.ParseSessionAckXX(in)
		fspCheckDecode(t, fspCanon(in, 2, func(b []byte) { b[1] = 0 }), a, err)
		if err == nil && (len(a.Handshake) < wire.XXMsg2Size || len(a.Handshake) > wire.XXMsg2Size+wire.FMPv1HandshakeMaxExtra) {
			t.Fatalf("handshake of %d bytes accepted", len(a.Handshake))
		}
	})
}

func FuzzParseSessionMsg3XX(f *testing.F) {
	good := marshal(f, wire.SessionMsg3{Handshake: fill(wire.XXMsg3Size+26, 3)})
	fspSeeds(f, good, fspSet(good, 1, 0x80), fspSet(good, 5, 0x48),
		marshal(f, wire.SessionMsg3{Handshake: mustHex(f, fspXKMsg3)}),
		append(bytes.Clone(good), 0), []byte{0x03, 0x00, 0x01, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ParseSessionMsg3XX(in)
		fspCheckDecode(t, fspCanon(in, 2, func(b []byte) { b[1] = 0 }), m, err)
		if err == nil && (len(m.Handshake) < wire.XXMsg3Size || len(m.Handshake) > wire.XXMsg3Size+wire.FMPv1HandshakeMaxExtra) {
			t.Fatalf("handshake of %d bytes accepted", len(m.Handshake))
		}
	})
}

func FuzzParseFSPInner(f *testing.F) {
	fspSeeds(f, mustHex(f, "39 30 00 00 10 01 aa bb cc"), mustHex(f, "00 00 00 00 14 ff"), make([]byte, 5), nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ParseFSPInner(in)
		fspCheckDecode(t, fspCanon(in, 6, func(b []byte) { b[5] &= 0x01 }), m, err)
	})
}

func FuzzParseDataPacket(f *testing.F) {
	fspSeeds(f, mustHex(f, "00 01 00 01 00 60 00 00 00 11 40"), mustHex(f, "00 04 ef be"), nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := wire.ParseDataPacket(in)
		fspCheckDecode(t, in, d, err)
	})
}

func FuzzParsePathMtuNotification(f *testing.F) {
	fspSeeds(f, mustHex(f, "78 05"), mustHex(f, "78 05 00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := wire.ParsePathMtuNotification(in)
		fspCheckDecode(t, in, p, err)
	})
}

func FuzzParseCoordsWarmup(f *testing.F) {
	fspSeeds(f, nil, []byte{0})
	f.Fuzz(func(t *testing.T, in []byte) {
		w, err := wire.ParseCoordsWarmup(in)
		fspCheckDecode(t, in, w, err)
	})
}

func FuzzParseSessionSenderReport(f *testing.F) {
	good := cat([]byte{0, 0}, fspSRFields(f))
	fspSeeds(f, good, fspSet(good, 0, 0xFF), append(bytes.Clone(good), 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := wire.ParseSessionSenderReport(in)
		fspCheckDecode(t, fspCanon(in, 2, func(b []byte) { clear(b[:2]) }), r, err)
	})
}

func FuzzParseSessionReceiverReport(f *testing.F) {
	good := cat([]byte{0, 0}, fspRRFields(f))
	fspSeeds(f, good, fspSet(good, 36, 0xFF), append(bytes.Clone(good), 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := wire.ParseSessionReceiverReport(in)
		fspCheckDecode(t, fspCanon(in, 38, func(b []byte) { clear(b[:2]); clear(b[36:38]) }), r, err)
	})
}

func FuzzParseSenderReport(f *testing.F) {
	good := cat([]byte{1, 0, 0, 0}, fspSRFields(f))
	fspSeeds(f, good, fspSet(good, 2, 0xFF), fspSet(good, 0, 2), append(bytes.Clone(good), 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := wire.ParseSenderReport(in)
		fspCheckDecode(t, fspCanon(in, 4, func(b []byte) { clear(b[1:4]) }), r, err)
	})
}

func FuzzParseReceiverReport(f *testing.F) {
	good := cat([]byte{2, 0, 0, 0}, fspRRFields(f))
	fspSeeds(f, good, fspSet(good, 39, 0xFF), fspSet(good, 0, 1), append(bytes.Clone(good), 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := wire.ParseReceiverReport(in)
		fspCheckDecode(t, fspCanon(in, 40, func(b []byte) { clear(b[1:4]); clear(b[38:40]) }), r, err)
	})
}

// fspSignalSeeds are one good packet of each signal and some near misses.
func fspSignalSeeds(f *testing.F) [][]byte {
	cr := marshal(f, wire.CoordsRequired{DestAddr: addrOf(0xAA), Reporter: addrOf(0xBB)})
	pb := marshal(f, wire.PathBroken{DestAddr: addrOf(1), Reporter: addrOf(2), LastKnownCoords: fspCoords(1, 0xF0)})
	pb0 := marshal(f, wire.PathBroken{})
	me := marshal(f, wire.MtuExceeded{DestAddr: addrOf(1), Reporter: addrOf(2), MTU: 1400})
	return [][]byte{cr, pb, pb0, me, fspSet(cr, 1, 0xFF), fspSet(cr, 5, 0xFF), fspSet(pb, 38, 3),
		fspSet(me, 4, 0x23), fspSet(me, 1, 0), append(bytes.Clone(cr), 0), []byte{0, 4, 1, 0, 0x20}}
}

func fspSignalCanon(in []byte) []byte {
	return fspCanon(in, 6, func(b []byte) { b[1], b[5] = 0x04, 0 })
}

func FuzzParseRoutingSignalType(f *testing.F) {
	fspSeeds(f, fspSignalSeeds(f)...)
	f.Fuzz(func(t *testing.T, in []byte) {
		typ, err := wire.ParseRoutingSignalType(in)
		fspIsDecodeError(t, err)
		if err == nil && (typ < wire.SignalCoordsRequired || typ > wire.SignalMtuExceeded) {
			t.Fatalf("accepted type %v", typ)
		}
	})
}

func FuzzParseCoordsRequired(f *testing.F) {
	fspSeeds(f, fspSignalSeeds(f)...)
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := wire.ParseCoordsRequired(in)
		fspCheckDecode(t, fspSignalCanon(in), c, err)
	})
}

func FuzzParsePathBroken(f *testing.F) {
	fspSeeds(f, fspSignalSeeds(f)...)
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := wire.ParsePathBroken(in)
		fspCheckDecode(t, fspSignalCanon(in), p, err)
	})
}

func FuzzParseMtuExceeded(f *testing.F) {
	fspSeeds(f, fspSignalSeeds(f)...)
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ParseMtuExceeded(in)
		fspCheckDecode(t, fspSignalCanon(in), m, err)
	})
}

// FuzzDecompressIPv6 checks the shim decoder and that compressing what it
// rebuilt gives the shim back, with the version nibble forced to 6.
func FuzzDecompressIPv6(f *testing.F) {
	fspSeeds(f, mustHex(f, "00 60 00 00 00 11 40 aa bb"), mustHex(f, "00 0a bc de f0 06 40"),
		mustHex(f, "01 60 00 00 00 11 40"), make([]byte, 6), nil)
	src, dst := fspSampleSrc(), fspSampleDst()
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := wire.ParseIPv6Shim(in)
		fspCheckDecode(t, in, s, err)
		out := make([]byte, len(in)+wire.IPv6ShimSavings)
		n, err := wire.DecompressIPv6(out, in, src, dst)
		fspIsDecodeError(t, err)
		if err != nil {
			return
		}
		out = out[:n]
		if int(binary.BigEndian.Uint16(out[4:])) != len(out)-wire.IPv6HeaderSize ||
			!bytes.Equal(out[8:24], src[:]) || !bytes.Equal(out[24:40], dst[:]) {
			t.Fatalf("rebuilt header %x", out[:40])
		}
		back := make([]byte, len(in))
		if m, err := wire.CompressIPv6(back, out); err != nil || m != len(in) {
			t.Fatalf("compress(decompress): %d %v", m, err)
		}
		want := fspCanon(in, 2, func(b []byte) { b[1] = b[1]&0x0F | 0x60 })
		equal(t, "compress(decompress(s))", back, want)
	})
}

// FuzzCompressIPv6 checks decompress(compress(p)) == p, p's payload_length
// corrected (compression does not read it), in place as well as between
// buffers, and that ECN marking never panics.
func FuzzCompressIPv6(f *testing.F) {
	src, dst := fspSampleSrc(), fspSampleDst()
	fspSeeds(f, fspIPv6Packet(0xAB, 0xFEDCB, 17, 64, src[:], dst[:], fill(100, 0xAA)),
		fspIPv6Packet(0, 0, 59, 1, src[:], dst[:], nil), fspSet(fspIPv6Packet(0, 0, 6, 1, src[:], dst[:], []byte{1}), 0, 0x40),
		make([]byte, 40), nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		shim := make([]byte, len(in))
		n, err := wire.CompressIPv6(shim, in)
		fspIsDecodeError(t, err)
		if err != nil {
			return
		}
		shim = shim[:n]
		var s, d [16]byte
		copy(s[:], in[8:24])
		copy(d[:], in[24:40])
		want := bytes.Clone(in)
		binary.BigEndian.PutUint16(want[4:], uint16(len(in)-wire.IPv6HeaderSize))
		out := make([]byte, len(in))
		if m, err := wire.DecompressIPv6(out, shim, s, d); err != nil || m != len(in) {
			t.Fatalf("decompress(compress): %d %v", m, err)
		}
		equal(t, "decompress(compress(p))", out, want)

		inPlace := bytes.Clone(in)
		if m, err := wire.CompressIPv6(inPlace[wire.IPv6ShimSavings:], inPlace); err != nil || m != n {
			t.Fatalf("in-place compress: %d %v", m, err)
		}
		equal(t, "in-place compress", inPlace[wire.IPv6ShimSavings:], shim)
		if m, err := wire.DecompressIPv6(inPlace, inPlace[wire.IPv6ShimSavings:], s, d); err != nil || m != len(in) {
			t.Fatalf("in-place decompress: %d %v", m, err)
		}
		equal(t, "in-place round trip", inPlace, want)

		ecn := want[1] & 0x30
		if marked := wire.MarkIPv6ECNCE(want); marked != (ecn != 0) || (marked && want[1]&0x30 != 0x30) {
			t.Fatalf("ECN %02b: marked %v, now %x", ecn>>4, marked, want[1])
		}
	})
}

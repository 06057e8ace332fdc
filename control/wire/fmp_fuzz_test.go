package wire_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

type fmpCodec interface {
	Len() int
	MarshalTo([]byte) (int, error)
}

// fmpCheckDecode is the shared fuzz oracle. A failed decode must be a
// *DecodeError. A successful one must re-encode to the bytes it came
// from: all of them when exact, else the first Len() (decoders that skip
// trailing bytes or padding, as upstream's do).
func fmpCheckDecode(t *testing.T, in []byte, v fmpCodec, err error, exact bool) {
	t.Helper()
	if err != nil {
		var de *wire.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("error %q (%T) is not a *DecodeError", err, err)
		}
		return
	}
	n := v.Len()
	if n > len(in) || (exact && n != len(in)) {
		t.Fatalf("decoded %d input bytes into a value of Len %d", len(in), n)
	}
	out := make([]byte, n)
	if w, err := v.MarshalTo(out); err != nil || w != n {
		t.Fatalf("re-encode: %d, %v", w, err)
	}
	if !bytes.Equal(out, in[:n]) {
		t.Fatalf("re-encode differs:\n  in %x\n out %x", in[:n], out)
	}
}

// fmpSeeds adds each seed, plus every one-byte truncation of it, to f.
func fmpSeeds(f *testing.F, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
		if len(s) > 0 {
			f.Add(s[:len(s)-1])
		}
	}
}

func fmpMust(f *testing.F, v fmpCodec) []byte {
	b := make([]byte, v.Len())
	if _, err := v.MarshalTo(b); err != nil {
		f.Fatal(err)
	}
	return b
}

func fmpSeedFrame(f *testing.F) []byte { return mustHex(f, fmpFirstFrameHex) }

func FuzzParseFMPPrefix(f *testing.F) {
	fmpSeeds(f, []byte{0x00, 0x04, 0x20, 0x00}, []byte{0x16, 0x03, 0x01, 0x02, 0x00}, nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := wire.ParseFMPPrefix(in)
		fmpCheckDecode(t, in, p, err, false)
	})
}

func FuzzParseFMPMsg1(f *testing.F) {
	good := fmpMust(f, wire.FMPMsg1{SenderIndex: 0xDEADBEEF, Noise: mustHex(f, fmpIKMsg1Vector)})
	flags := append([]byte(nil), good...)
	flags[1] = 1
	plen := append([]byte(nil), good...)
	plen[2] = 111
	fmpSeeds(f, good, flags, plen, append(append([]byte(nil), good...), 0), fill(114, 0x02))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ParseFMPMsg1(in)
		fmpCheckDecode(t, in, m, err, true)
		if err == nil {
			_ = cat(m.Ephemeral(), m.EncryptedStatic(), m.EncryptedEpoch())
		}
	})
}

func FuzzParseFMPMsg2(f *testing.F) {
	good := fmpMust(f, wire.FMPMsg2{SenderIndex: 1, ReceiverIndex: 2, Noise: mustHex(f, fmpIKMsg2Vector)})
	ver := append([]byte(nil), good...)
	ver[0] = 0x12
	fmpSeeds(f, good, ver, fill(69, 0x00), append(append([]byte(nil), good...), 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ParseFMPMsg2(in)
		fmpCheckDecode(t, in, m, err, true)
		if err == nil {
			_ = cat(m.Ephemeral(), m.EncryptedEpoch())
		}
	})
}

func FuzzParseFMPFrame(f *testing.F) {
	good := fmpSeedFrame(f)
	bad := append([]byte(nil), good...)
	bad[2] = 6
	fmpSeeds(f, good, bad, fill(32, 0), fill(32, 0x10), fmpStreamEstablished(100))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := wire.ParseFMPFrame(in)
		fmpCheckDecode(t, in, fr, err, true)
		if err == nil && (len(fr.AAD()) != 16 || fr.PayloadLen() < 0) {
			t.Fatalf("aad %d payload %d", len(fr.AAD()), fr.PayloadLen())
		}
	})
}

func FuzzParseFMPInner(f *testing.F) {
	fmpSeeds(f, []byte{1, 0, 0, 0, 0x51}, []byte{0x39, 0x30, 0, 0, 0x10, 0xaa, 0xbb}, []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := wire.ParseFMPInner(in)
		fmpCheckDecode(t, in, p, err, true)
		if err == nil {
			_ = p.Type().String()
		}
	})
}

func FuzzParseSessionDatagram(f *testing.F) {
	good := fmpMust(f, wire.SessionDatagram{TTL: 64, PathMTU: 1280, Src: addrOf(1), Dest: addrOf(2), Payload: []byte{0, 0, 5, 0}})
	fmpSeeds(f, good, good[:36], []byte{0x00}, []byte{0x01, 64})
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := wire.ParseSessionDatagram(in)
		fmpCheckDecode(t, in, d, err, true)
	})
}

func FuzzParseTreeAnnounce(f *testing.F) {
	node := addrOf(7)
	root := fmpTreeAnnounceBytes(1, 5000, node, []wire.AncestryEntry{{NodeAddr: node, Sequence: 1, Timestamp: 5000}}, fill(64, 9))
	deep := fmpTreeAnnounceBytes(5, 10000, addrOf(2), []wire.AncestryEntry{
		{NodeAddr: addrOf(9), Sequence: 5}, {NodeAddr: addrOf(2), Sequence: 4}, {NodeAddr: addrOf(1), Sequence: 3},
	}, fill(64, 1))
	zero := append([]byte(nil), root...)
	zero[34] = 0
	big := append([]byte(nil), root...)
	big[34], big[35] = 0xff, 0xff
	fmpSeeds(f, root, deep, zero, big, append(append([]byte(nil), deep...), 1, 2, 3), []byte{0x10, 0x02})
	f.Fuzz(func(t *testing.T, in []byte) {
		ta, err := wire.ParseTreeAnnounce(in)
		fmpCheckDecode(t, in, ta, err, false)
		if err != nil {
			return
		}
		if verr := ta.Validate(); verr != nil {
			var de *wire.DecodeError
			if !errors.As(verr, &de) {
				t.Fatalf("Validate error %T", verr)
			}
		}
		if sb := ta.SigningBytes(nil); len(sb) != wire.DeclarationSigningSize {
			t.Fatalf("signing bytes %d", len(sb))
		}
	})
}

func FuzzParseFilterAnnounce(f *testing.F) {
	filter := make([]byte, 1024)
	wire.BloomSet(filter, addrOf(42), 5)
	good := fmpMust(f, wire.FilterAnnounce{Sequence: 500, HashCount: 5, SizeClass: 1, Filter: filter})
	sc0 := fmpMust(f, wire.FilterAnnounce{Sequence: 1, HashCount: 5, SizeClass: 0, Filter: make([]byte, 512)})
	hc0 := append([]byte(nil), good...)
	hc0[9] = 0
	fmpSeeds(f, good, sc0, hc0, append(append([]byte(nil), good...), 0), good[:11])
	f.Fuzz(func(t *testing.T, in []byte) {
		fa, err := wire.ParseFilterAnnounce(in)
		fmpCheckDecode(t, in, fa, err, true)
	})
}

func FuzzParseLookupRequest(f *testing.F) {
	good := fmpMust(f, wire.LookupRequest{RequestID: 12345, Target: addrOf(10), Origin: addrOf(20), TTL: 7, MinMTU: 1386, OriginCoords: wire.CoordsOf(addrOf(20), addrOf(0))})
	zero := cat(good[:44], []byte{0, 0})
	fmpSeeds(f, good, zero, append(append([]byte(nil), good...), 9), good[:45])
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := wire.ParseLookupRequest(in)
		fmpCheckDecode(t, in, r, err, false)
	})
}

func FuzzParseLookupResponse(f *testing.F) {
	good := fmpMust(f, wire.LookupResponse{RequestID: 999, Target: addrOf(42), PathMTU: 0xffff, TargetCoords: wire.CoordsOf(addrOf(42), addrOf(1), addrOf(0)), Proof: fill(64, 7)})
	zero := cat(good[:27], []byte{0, 0}, fill(64, 7))
	fmpSeeds(f, good, zero, append(append([]byte(nil), good...), 9), good[:93])
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := wire.ParseLookupResponse(in)
		fmpCheckDecode(t, in, r, err, false)
		if err == nil {
			if pb := r.ProofBytes(nil); len(pb) != 26+len(r.TargetCoords) {
				t.Fatalf("proof bytes %d", len(pb))
			}
		}
	})
}

func FuzzParseDisconnect(f *testing.F) {
	fmpSeeds(f, []byte{0x50, 0x00}, []byte{0x50, 0x07}, []byte{0x50, 0xff}, []byte{0x50, 0x80}, []byte{0x50, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := wire.ParseDisconnect(in)
		if err == nil && !wire.DisconnectReason(in[1]).Known() {
			// Unknown codes decode to Other, so they re-encode as 0xff.
			if d.Reason != wire.DisconnectOther {
				t.Fatalf("unknown reason %#x decoded as %v", in[1], d.Reason)
			}
			return
		}
		fmpCheckDecode(t, in, d, err, false)
	})
}

func FuzzParseHeartbeat(f *testing.F) {
	fmpSeeds(f, []byte{0x51}, []byte{0x51, 0x00}, []byte{0x50})
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := wire.ParseHeartbeat(in)
		fmpCheckDecode(t, in, h, err, false)
	})
}

// FuzzFMPStream checks the three stream entry points agree: the packet
// SplitFMPStream finds is what ReadFMPPacket reads, and its length is what
// FMPStreamPacketLen says.
func FuzzFMPStream(f *testing.F) {
	for _, s := range [][]byte{
		cat(fmpStreamMsg1(), fmpStreamEstablished(3)),
		fmpStreamMsg2(), fmpStreamEstablished(0), {0x16, 3, 1}, {0x05, 0, 10, 0},
		{0x00, 0, 0xff, 0xff}, {0x01, 0, 50, 0},
	} {
		f.Add(s, uint16(1400))
	}
	f.Add(fmpStreamEstablished(100), uint16(100))
	f.Fuzz(func(t *testing.T, in []byte, mtu uint16) {
		split, serr := wire.SplitFMPStream(in, mtu)
		buf := make([]byte, 70000)
		read, rerr := wire.ReadFMPPacket(bytes.NewReader(in), buf, mtu)
		n, lerr := wire.FMPStreamPacketLen(in, mtu)
		for _, err := range []error{serr, lerr} {
			var de *wire.DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("error %q (%T) is not a *DecodeError", err, err)
			}
		}
		switch {
		case split != nil:
			if rerr != nil || !bytes.Equal(split, read) || lerr != nil || n != len(split) {
				t.Fatalf("split %d bytes, read %d (%v), len %d (%v)", len(split), len(read), rerr, n, lerr)
			}
			if !bytes.Equal(split, in[:len(split)]) {
				t.Fatal("split is not the head of the input")
			}
		case serr != nil:
			if !errors.Is(rerr, serr.(*wire.DecodeError).Kind) {
				t.Fatalf("split error %v, read error %v", serr, rerr)
			}
		default: // incomplete
			if rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
				t.Fatalf("incomplete input but read gave %v", rerr)
			}
		}
	})
}

func FuzzParseEthernetData(f *testing.F) {
	fmpSeeds(f, []byte{0, 4, 0, 1, 2, 3, 4}, append([]byte{0, 4, 0, 1, 2, 3, 4}, make([]byte, 39)...),
		[]byte{0, 0, 0}, []byte{0, 0xff, 0xff}, []byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := wire.ParseEthernetData(in)
		fmpCheckDecode(t, in, e, err, false)
	})
}

func FuzzParseEthernetBeacon(f *testing.F) {
	good := cat([]byte{1, 1}, fill(32, 0x84))
	fmpSeeds(f, good, append(append([]byte(nil), good...), make([]byte, 12)...), cat([]byte{1, 2}, good[2:]), cat([]byte{0}, good[1:]))
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := wire.ParseEthernetBeacon(in)
		fmpCheckDecode(t, in, b, err, false)
	})
}

func FuzzParsePunchPacket(f *testing.F) {
	probe := cat([]byte("NPTC"), []byte{0, 0, 0, 1}, fill(16, 3))
	fmpSeeds(f, probe, cat([]byte("NPTA"), probe[4:]), cat([]byte("NPTX"), probe[4:]), []byte("NPTC"))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := wire.ParsePunchPacket(in)
		fmpCheckDecode(t, in, p, err, false)
		if err == nil && !wire.IsPunchPacket(in) {
			t.Fatal("parsed punch packet not recognised by IsPunchPacket")
		}
	})
}

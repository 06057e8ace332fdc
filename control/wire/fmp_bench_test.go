package wire_test

import (
	"bytes"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// fmpDecoderCase is one decoder run on one valid input.
type fmpDecoderCase struct {
	name string
	in   []byte
	run  func(b []byte) error
}

// fmpSink keeps decoded values alive so the compiler cannot drop the work.
var fmpSink int

func fmpDecoderCases(tb testing.TB) []fmpDecoderCase {
	node := addrOf(7)
	ta := fmpTreeAnnounceBytes(1, 5000, addrOf(2), []wire.AncestryEntry{
		{NodeAddr: node, Sequence: 1, Timestamp: 5000}, {NodeAddr: addrOf(2)}, {NodeAddr: addrOf(1)},
	}, fill(64, 9))
	filter := make([]byte, 1024)
	wire.BloomSet(filter, node, 5)
	enc := func(v fmpCodec) []byte {
		b := make([]byte, v.Len())
		if _, err := v.MarshalTo(b); err != nil {
			tb.Fatal(err)
		}
		return b
	}
	frame1400 := fmpStreamEstablished(1400 - 32)
	return []fmpDecoderCase{
		{"FMPPrefix", []byte{0, 4, 32, 0}, func(b []byte) error {
			p, err := wire.ParseFMPPrefix(b)
			fmpSink += int(p.PayloadLen)
			return err
		}},
		{"FMPMsg1", enc(wire.FMPMsg1{SenderIndex: 1, Noise: make([]byte, 106)}), func(b []byte) error {
			m, err := wire.ParseFMPMsg1(b)
			fmpSink += len(m.Noise)
			return err
		}},
		{"FMPMsg2", enc(wire.FMPMsg2{SenderIndex: 1, ReceiverIndex: 2, Noise: make([]byte, 57)}), func(b []byte) error {
			m, err := wire.ParseFMPMsg2(b)
			fmpSink += len(m.Noise)
			return err
		}},
		{"FMPFrame", frame1400, func(b []byte) error {
			fr, err := wire.ParseFMPFrame(b)
			fmpSink += len(fr.Sealed)
			return err
		}},
		{"FMPInner", []byte{1, 0, 0, 0, 0x51}, func(b []byte) error {
			in, err := wire.ParseFMPInner(b)
			fmpSink += len(in.Message)
			return err
		}},
		{"SessionDatagram", enc(wire.SessionDatagram{TTL: 64, Src: addrOf(1), Dest: addrOf(2), Payload: make([]byte, 1200)}), func(b []byte) error {
			d, err := wire.ParseSessionDatagram(b)
			fmpSink += len(d.Payload)
			return err
		}},
		{"TreeAnnounce", ta, func(b []byte) error {
			t, err := wire.ParseTreeAnnounce(b)
			if err != nil {
				return err
			}
			fmpSink += t.Ancestry.Len()
			return t.Validate()
		}},
		{"FilterAnnounce", enc(wire.FilterAnnounce{Sequence: 1, HashCount: 5, SizeClass: 1, Filter: filter}), func(b []byte) error {
			f, err := wire.ParseFilterAnnounce(b)
			fmpSink += len(f.Filter)
			return err
		}},
		{"LookupRequest", enc(wire.LookupRequest{RequestID: 1, TTL: 64, OriginCoords: wire.CoordsOf(addrOf(3), addrOf(1))}), func(b []byte) error {
			r, err := wire.ParseLookupRequest(b)
			fmpSink += r.OriginCoords.Len()
			return err
		}},
		{"LookupResponse", enc(wire.LookupResponse{RequestID: 1, PathMTU: 0xffff, TargetCoords: wire.CoordsOf(addrOf(3), addrOf(1)), Proof: make([]byte, 64)}), func(b []byte) error {
			r, err := wire.ParseLookupResponse(b)
			fmpSink += len(r.Proof)
			return err
		}},
		{"Disconnect", []byte{0x50, 0x02}, func(b []byte) error {
			d, err := wire.ParseDisconnect(b)
			fmpSink += int(d.Reason)
			return err
		}},
		{"Heartbeat", []byte{0x51}, func(b []byte) error {
			_, err := wire.ParseHeartbeat(b)
			return err
		}},
		{"FMPStreamSplit", frame1400, func(b []byte) error {
			p, err := wire.SplitFMPStream(b, 1400)
			fmpSink += len(p)
			return err
		}},
		{"FMPStreamRead", frame1400, func() func([]byte) error {
			var r bytes.Reader
			buf := make([]byte, 1400)
			return func(b []byte) error {
				r.Reset(b)
				p, err := wire.ReadFMPPacket(&r, buf, 1400)
				fmpSink += len(p)
				return err
			}
		}()},
		{"EthernetData", enc(wire.EthernetData{Packet: frame1400}), func(b []byte) error {
			e, err := wire.ParseEthernetData(b)
			fmpSink += len(e.Packet)
			return err
		}},
		{"EthernetBeacon", cat([]byte{1, 1}, make([]byte, 32)), func(b []byte) error {
			e, err := wire.ParseEthernetBeacon(b)
			fmpSink += len(e.XOnly)
			return err
		}},
		{"PunchPacket", enc(wire.PunchPacket{Sequence: 1, SessionHash: make([]byte, 16)}), func(b []byte) error {
			p, err := wire.ParsePunchPacket(b)
			if wire.IsPunchPacket(b) {
				fmpSink += int(p.Sequence)
			}
			return err
		}},
	}
}

// TestFMPDecodersDoNotAllocate holds the package promise that decoding a
// valid message costs no allocation, for every FMP-side decoder and the
// bloom bit function.
func TestFMPDecodersDoNotAllocate(t *testing.T) {
	for _, c := range fmpDecoderCases(t) {
		if err := c.run(c.in); err != nil {
			t.Fatalf("%s: seed does not decode: %v", c.name, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.run(c.in) }); n != 0 {
			t.Errorf("%s: %.1f allocs per decode, want 0", c.name, n)
		}
	}

	addr := addrOf(42)
	var bits [wire.BloomHashCount]uint32
	filter := make([]byte, wire.BloomFilterBytes)
	for name, f := range map[string]func(){
		"BloomBits":   func() { fmpSink += len(wire.BloomBits(bits[:0], addr, wire.BloomHashCount)) },
		"BloomSet":    func() { wire.BloomSet(filter, addr, wire.BloomHashCount) },
		"BloomTest":   func() { _ = wire.BloomTest(filter, addr, wire.BloomHashCount) },
		"BloomHashes": func() { h, _ := wire.BloomHashes(addr); fmpSink += int(h & 1) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %.1f allocs per call, want 0", name, n)
		}
	}

	// Encoding into a caller buffer does not allocate either.
	d := wire.SessionDatagram{TTL: 64, Payload: make([]byte, 1200)}
	buf := make([]byte, d.Len())
	if n := testing.AllocsPerRun(100, func() { _, _ = d.MarshalTo(buf) }); n != 0 {
		t.Errorf("SessionDatagram.MarshalTo: %.1f allocs", n)
	}
	var ta wire.TreeAnnounce
	for _, c := range fmpDecoderCases(t) {
		if c.name == "TreeAnnounce" {
			ta, _ = wire.ParseTreeAnnounce(c.in)
		}
	}
	sb := make([]byte, 0, wire.DeclarationSigningSize)
	if n := testing.AllocsPerRun(100, func() { sb = ta.SigningBytes(sb[:0]) }); n != 0 {
		t.Errorf("TreeAnnounce.SigningBytes: %.1f allocs", n)
	}
}

func BenchmarkFMPDecode(b *testing.B) {
	for _, c := range fmpDecoderCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				if err := c.run(c.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBloomBits(b *testing.B) {
	b.ReportAllocs()
	addr, _ := identity.ParseNodeAddr(fmpGoldenNodeAddr)
	var bits [wire.BloomHashCount]uint32
	for b.Loop() {
		fmpSink += len(wire.BloomBits(bits[:0], addr, wire.BloomHashCount))
	}
}

func BenchmarkBloomTest(b *testing.B) {
	b.ReportAllocs()
	addr, _ := identity.ParseNodeAddr(fmpGoldenNodeAddr)
	filter := make([]byte, wire.BloomFilterBytes)
	wire.BloomSet(filter, addr, wire.BloomHashCount)
	for b.Loop() {
		if !wire.BloomTest(filter, addr, wire.BloomHashCount) {
			b.Fatal("missing")
		}
	}
}

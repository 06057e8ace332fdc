package wire_test

import (
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// fspDecoderCase is one decoder run on one valid input.
type fspDecoderCase struct {
	name string
	in   []byte
	run  func(b []byte) error
}

// fspSink keeps decoded values alive so the compiler cannot drop the work.
var fspSink int

func fspDecoderCases(tb testing.TB) []fspDecoderCase {
	src, dst := fspSampleSrc(), fspSampleDst()
	ip1280 := fspIPv6Packet(0, 0x12345, 6, 64, src[:], dst[:], fill(1280-40, 0x33))
	shim1280 := fspCompress(tb, ip1280)
	// A full-size data message: 1280-byte IPv6 packet, CP coords of depth 4.
	data := cat(mustHex(tb, "00 01"), le16(uint16(6+4+len(shim1280))), le64(99),
		fspWireCoords(1, 2, 3, 4), fspWireCoords(5, 6, 7, 4), fill(6+4+len(shim1280)+16, 0xEE))
	inner := cat(mustHex(tb, "01 00 00 00 10 01 00 01 00 01"), shim1280)
	return []fspDecoderCase{
		{"FSPPrefix", []byte{0, 1, 64, 0}, func(b []byte) error {
			p, err := wire.ParseFSPPrefix(b)
			fspSink += int(p.PayloadLen)
			return err
		}},
		{"ClassifyFSP", data, func(b []byte) error {
			k, err := wire.ClassifyFSP(b)
			fspSink += int(k)
			return err
		}},
		{"FSPEncrypted", data, func(b []byte) error {
			m, err := wire.ParseFSPEncrypted(b)
			fspSink += len(m.Ciphertext) + len(m.AAD())
			return err
		}},
		{"SessionSetup", fspSetupVector(tb), func(b []byte) error {
			s, err := wire.ParseSessionSetup(b)
			fspSink += len(s.Handshake)
			return err
		}},
		{"SessionAck", fspAckVector(tb), func(b []byte) error {
			a, err := wire.ParseSessionAck(b)
			fspSink += len(a.Handshake)
			return err
		}},
		{"SessionMsg3", marshal(tb, wire.SessionMsg3{Handshake: mustHex(tb, fspXKMsg3)}), func(b []byte) error {
			m, err := wire.ParseSessionMsg3(b)
			fspSink += len(m.Handshake)
			return err
		}},
		{"FSPInner", inner, func(b []byte) error {
			in, err := wire.ParseFSPInner(b)
			fspSink += len(in.Body)
			return err
		}},
		{"DataPacket", inner[6:], func(b []byte) error {
			d, err := wire.ParseDataPacket(b)
			fspSink += len(d.Payload)
			return err
		}},
		{"PathMtuNotification", []byte{0x78, 0x05}, func(b []byte) error {
			p, err := wire.ParsePathMtuNotification(b)
			fspSink += int(p.PathMTU)
			return err
		}},
		{"CoordsWarmup", nil, func(b []byte) error {
			_, err := wire.ParseCoordsWarmup(b)
			return err
		}},
		{"SessionSenderReport", cat([]byte{0, 0}, fspSRFields(tb)), func(b []byte) error {
			r, err := wire.ParseSessionSenderReport(b)
			fspSink += int(r.IntervalBytesSent)
			return err
		}},
		{"SessionReceiverReport", cat([]byte{0, 0}, fspRRFields(tb)), func(b []byte) error {
			r, err := wire.ParseSessionReceiverReport(b)
			fspSink += int(r.Jitter)
			return err
		}},
		{"SenderReport", cat([]byte{1, 0, 0, 0}, fspSRFields(tb)), func(b []byte) error {
			r, err := wire.ParseSenderReport(b)
			fspSink += int(r.IntervalBytesSent)
			return err
		}},
		{"ReceiverReport", cat([]byte{2, 0, 0, 0}, fspRRFields(tb)), func(b []byte) error {
			r, err := wire.ParseReceiverReport(b)
			fspSink += int(r.Jitter)
			return err
		}},
		{"RoutingSignalType", marshal(tb, wire.MtuExceeded{MTU: 1280}), func(b []byte) error {
			t, err := wire.ParseRoutingSignalType(b)
			fspSink += int(t)
			return err
		}},
		{"CoordsRequired", marshal(tb, wire.CoordsRequired{DestAddr: addrOf(1), Reporter: addrOf(2)}), func(b []byte) error {
			c, err := wire.ParseCoordsRequired(b)
			fspSink += int(c.Reporter[0])
			return err
		}},
		{"PathBroken", marshal(tb, wire.PathBroken{LastKnownCoords: fspCoords(1, 2, 3)}), func(b []byte) error {
			p, err := wire.ParsePathBroken(b)
			fspSink += len(p.LastKnownCoords)
			return err
		}},
		{"MtuExceeded", marshal(tb, wire.MtuExceeded{MTU: 1280}), func(b []byte) error {
			m, err := wire.ParseMtuExceeded(b)
			fspSink += int(m.MTU)
			return err
		}},
		{"IPv6Shim", shim1280, func(b []byte) error {
			s, err := wire.ParseIPv6Shim(b)
			fspSink += len(s.Payload)
			return err
		}},
	}
}

// fspShimBuffers returns a 1280-byte IPv6 packet, its shim, and output
// buffers for both directions.
func fspShimBuffers(tb testing.TB) (ip, shim, ipOut, shimOut []byte) {
	src, dst := fspSampleSrc(), fspSampleDst()
	ip = fspIPv6Packet(0, 0, 6, 64, src[:], dst[:], fill(1280-40, 0x33))
	shim = fspCompress(tb, ip)
	return ip, shim, make([]byte, len(ip)), make([]byte, len(shim))
}

func TestFSPZeroAlloc(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	for _, c := range fspDecoderCases(t) {
		if err := c.run(c.in); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.run(c.in) }); n != 0 {
			t.Errorf("%s: %.1f allocs per decode, want 0", c.name, n)
		}
	}

	// The shim both ways into caller buffers, and ECN marking.
	ip, shim, ipOut, shimOut := fspShimBuffers(t)
	src, dst := fspSampleSrc(), fspSampleDst()
	for name, f := range map[string]func(){
		"CompressIPv6":   func() { n, _ := wire.CompressIPv6(shimOut, ip); fspSink += n },
		"DecompressIPv6": func() { n, _ := wire.DecompressIPv6(ipOut, shim, src, dst); fspSink += n },
		"MarkIPv6ECNCE":  func() { _ = wire.MarkIPv6ECNCE(ipOut) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %.1f allocs per call, want 0", name, n)
		}
	}

	// Every encoder writes into a caller buffer without allocating.
	buf := make([]byte, 2048)
	for _, m := range []marshaler{
		wire.FSPPrefix{Phase: 1},
		wire.FSPHeader{Flags: wire.FSPFlagK, PayloadLen: 10, Counter: 5},
		wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP}, SrcCoords: fspCoords(1, 2), DestCoords: fspCoords(3), Ciphertext: fill(1300, 1)},
		wire.SessionSetup{SrcCoords: fspCoords(1, 2), DestCoords: fspCoords(3), Handshake: fill(33, 1)},
		wire.SessionAck{SrcCoords: fspCoords(1, 2), DestCoords: fspCoords(3), Handshake: fill(57, 1)},
		wire.SessionMsg3{Handshake: fill(73, 1)},
		wire.FSPInner{MsgType: wire.SessionMsgDataPacket, Body: fill(100, 1)},
		wire.DataPacket{SrcPort: 256, DstPort: 256, Payload: fill(100, 1)},
		wire.PathMtuNotification{PathMTU: 1280},
		wire.SessionSenderReport{SenderReport: fspSampleSR()},
		wire.SessionReceiverReport{ReceiverReport: fspSampleRR()},
		fspSampleSR(),
		fspSampleRR(),
		wire.CoordsRequired{},
		wire.PathBroken{LastKnownCoords: fspCoords(1, 2)},
		wire.MtuExceeded{MTU: 1280},
	} {
		if n := testing.AllocsPerRun(100, func() { n, _ := m.MarshalTo(buf); fspSink += n }); n != 0 {
			t.Errorf("%T.MarshalTo: %.1f allocs", m, n)
		}
	}
}

func BenchmarkFSPDecode(b *testing.B) {
	for _, c := range fspDecoderCases(b) {
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

func BenchmarkCompressIPv6(b *testing.B) {
	ip, _, _, shimOut := fspShimBuffers(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(ip)))
	for b.Loop() {
		if _, err := wire.CompressIPv6(shimOut, ip); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecompressIPv6(b *testing.B) {
	_, shim, ipOut, _ := fspShimBuffers(b)
	src, dst := fspSampleSrc(), fspSampleDst()
	b.ReportAllocs()
	b.SetBytes(int64(len(ipOut)))
	for b.Loop() {
		if _, err := wire.DecompressIPv6(ipOut, shim, src, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFSPEncryptedMarshalHeader(b *testing.B) {
	m := wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP | wire.FSPFlagK, PayloadLen: 1257, Counter: 1}, SrcCoords: fspCoords(1, 2, 3, 4), DestCoords: fspCoords(5, 6, 7, 4)}
	buf := make([]byte, m.HeaderLen())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.MarshalHeaderTo(buf); err != nil {
			b.Fatal(err)
		}
	}
}

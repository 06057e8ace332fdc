package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// v1Handshake is an FMP version-1 (upstream next) handshake packet of
// phase with a Noise part of n bytes (zeros: the program never reads it).
func v1Handshake(t *testing.T, phase uint8, n int) []byte {
	t.Helper()
	h := wire.FMPv1Handshake{Phase: phase, SenderIndex: 9, ReceiverIndex: 0x01020304, Noise: make([]byte, n)}
	b := make([]byte, h.Len())
	if _, err := h.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// v1Data is a next Ethernet data frame from mac: [0][flags 0][len LE][pkt].
func v1Data(t *testing.T, mac [6]byte, pkt []byte, pad int) []byte {
	t.Helper()
	b := ethernet(etherFIPS, nil)
	copy(b[6:], mac[:])
	f := make([]byte, wire.EthernetV1HeaderSize+len(pkt))
	if _, err := (wire.EthernetData{Packet: pkt}).MarshalV1To(f); err != nil {
		t.Fatal(err)
	}
	return append(append(b, f...), make([]byte, pad)...)
}

// TestVerdictsNext: with SetNext the program takes upstream next's FMP
// version 1 beside version 0 — established 0x10 frames by receiver index,
// XX msg1 (41 bytes), msg2 (118+) and msg3 (85+) through the source's
// bucket — and drops malformed ones; without it every version-1 packet is
// BadVersion, as before.
func TestVerdictsNext(t *testing.T) {
	obj := load(t, Options{})
	configure(t, obj, 1000, 1000)
	if err := obj.AddLink(knownV, 3); err != nil {
		t.Fatal(err)
	}
	v4 := func(l4 []byte) []byte { return ethernet(etherIPv4, ipv4(srcV4, protoUDP, nil, l4)) }
	v6 := func(l4 []byte) []byte { return ethernet(etherIPv6, ipv6(srcV6, protoUDP, l4)) }
	m1 := v1Handshake(t, wire.FMPPhaseMsg1, wire.XXMsg1Size)
	m2 := v1Handshake(t, wire.FMPPhaseMsg2, wire.XXMsg2Size+26)
	m3 := v1Handshake(t, wire.FMPPhaseMsg3, wire.XXMsg3Size+26)
	est := with(established(t, 0, knownV, 40), func(b []byte) { b[0] = 0x10 })
	if len(m1) != 41 || len(m2) != 144 || len(m3) != 111 {
		t.Fatalf("sizes %d %d %d", len(m1), len(m2), len(m3))
	}

	run(t, obj, v4(udp(portA, m1)), ReasonBadVersion)
	run(t, obj, v6(udp(portA, est)), ReasonBadVersion)
	if err := obj.SetNext(true); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		frame []byte
		want  Reason
	}{
		{"msg1", v4(udp(portA, m1)), ReasonHandshake},
		{"msg2", v6(udp(portB, m2)), ReasonHandshake},
		{"msg2 without payload", v4(udp(portA, v1Handshake(t, wire.FMPPhaseMsg2, wire.XXMsg2Size))), ReasonHandshake},
		{"msg3", v4(udp(portA, m3)), ReasonHandshake},
		{"msg3 rekey (TLV)", v6(udp(portA, v1Handshake(t, wire.FMPPhaseMsg3, wire.XXMsg3Size+34))), ReasonHandshake},
		{"msg1 40 bytes", v4(udp(portA, m1[:40])), ReasonBadLength},
		{"msg1 42 bytes", v4(udp(portA, append(append([]byte(nil), m1...), 0))), ReasonBadLength},
		{"msg1 payload_len 38", v4(udp(portA, with(m1, func(b []byte) { b[2] = 38 }))), ReasonBadLength},
		{"msg2 117 bytes", v4(udp(portA, with(m2[:117], func(b []byte) { b[2] = 113 }))), ReasonBadLength},
		{"msg2 payload_len off", v4(udp(portA, with(m2, func(b []byte) { b[2]++ }))), ReasonBadLength},
		{"msg2 at the payload bound", v4(udp(portA, v1Handshake(t, wire.FMPPhaseMsg2, wire.XXMsg2Size+1040))), ReasonHandshake},
		{"msg2 beyond the payload bound", v4(udp(portA, with(append(v1Handshake(t, wire.FMPPhaseMsg2, wire.XXMsg2Size+1040), 0),
			func(b []byte) { binary.LittleEndian.PutUint16(b[2:], uint16(len(b)-4)) }))), ReasonBadLength},
		{"msg3 84 bytes", v4(udp(portA, with(m3[:84], func(b []byte) { b[2] = 80 }))), ReasonBadLength},
		{"msg3 flags", v6(udp(portA, with(m3, func(b []byte) { b[1] = 0x01 }))), ReasonBadFlags},
		{"phase 4", v4(udp(portA, with(m1, func(b []byte) { b[0] = 0x14 }))), ReasonBadPhase},
		{"version 0 phase 3", v4(udp(portA, with(m3, func(b []byte) { b[0] = 0x03 }))), ReasonBadPhase},
		{"version 2", v4(udp(portA, with(m1, func(b []byte) { b[0] = 0x21 }))), ReasonBadVersion},
		{"established known", v4(udp(portA, est)), ReasonLinkKernel},
		{"established unknown", v6(udp(portA, with(established(t, 0, knownV+1, 40), func(b []byte) { b[0] = 0x10 }))), ReasonUnknownIndex},
		{"established payload_len off", v4(udp(portA, with(est, func(b []byte) { b[2]++ }))), ReasonBadLength},
		// Version 0 is judged as before.
		{"v0 msg1", v4(udp(portA, msg1(t))), ReasonHandshake},
		{"v0 established", v4(udp(portA, established(t, 0, knownV, 40))), ReasonLinkKernel},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, obj, c.frame, c.want) })
	}
	// Off again: version 1 is dropped.
	if err := obj.SetNext(false); err != nil {
		t.Fatal(err)
	}
	run(t, obj, v4(udp(portA, m3)), ReasonBadVersion)
}

// TestEthernetNext: on an Ethernet transport's interface with SetNext,
// next's data frames (4-byte header, told from master's 3-byte one by
// their version-1 FMP byte) and 5-byte beacons are judged; master's keep
// their verdicts; without SetNext next's are dropped.
func TestEthernetNext(t *testing.T) {
	eth, _ := inNetns(t)
	onEth := on(eth)
	obj := load(t, Options{})
	if err := obj.SetEthernet(eth, etherFIPS); err != nil {
		t.Fatal(err)
	}
	configure(t, obj, 1000, 1000)
	if err := obj.AddLink(knownV, 0); err != nil {
		t.Fatal(err)
	}
	est := with(established(t, 0, knownV, 40), func(b []byte) { b[0] = 0x10 })
	m1 := v1Handshake(t, wire.FMPPhaseMsg1, wire.XXMsg1Size)
	beaconV1 := append(append(ethernet(etherFIPS, nil), wire.AppendEthernetBeaconV1(nil)...), make([]byte, 41)...)
	copy(beaconV1[6:], srcMAC[:])

	runCtx(t, obj, v1Data(t, srcMAC, m1, 0), onEth, ReasonBadVersion)
	runCtx(t, obj, beaconV1, onEth, ReasonBadBeacon)
	if err := obj.SetNext(true); err != nil {
		t.Fatal(err)
	}
	mac9 := [6]byte{0x02, 0, 0, 0, 0, 9}
	cases := []struct {
		name  string
		frame []byte
		want  Reason
	}{
		{"v1 msg1", v1Data(t, srcMAC, m1, 19), ReasonHandshake},
		{"v1 msg3", v1Data(t, mac9, v1Handshake(t, wire.FMPPhaseMsg3, wire.XXMsg3Size+26), 0), ReasonHandshake},
		{"v1 established", v1Data(t, srcMAC, est, 0), ReasonLinkKernel},
		{"v1 length beyond frame", with(v1Data(t, srcMAC, est, 0), func(b []byte) { b[16]++ }), ReasonEthShort},
		{"v1 beacon", beaconV1, ReasonBeacon},
		{"v1 beacon length 0", with(beaconV1, func(b []byte) { b[16], b[17] = 0, 0 }), ReasonBadBeacon},
		{"v1 beacon version 2", with(beaconV1, func(b []byte) { b[18] = 2 }), ReasonBadBeacon},
		{"v1 beacon flags", with(beaconV1, func(b []byte) { b[15] = 4 }), ReasonBadBeacon},
		{"beacon 2 bytes", append(ethernet(etherFIPS, nil), 1, 0), ReasonBadBeacon},
		// master's frames are judged as before beside next's.
		{"v0 msg1", fipsData(srcMAC, msg1(t), 0), ReasonHandshake},
		{"v0 established", fipsData(mac9, established(t, 0, knownV, 0), 14), ReasonLinkKernel},
		{"v0 beacon", beacon(srcMAC, 1), ReasonBeacon},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCtx(t, obj, c.frame, onEth, c.want) })
	}
}

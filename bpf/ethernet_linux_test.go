package bpf

import (
	"encoding/binary"
	"fmt"
	"testing"
)

const etherFIPS = 0x2121

// fipsData is a FIPS Ethernet data frame from mac carrying pkt: type 0,
// the packet's length (u16 little-endian), the packet, then pad bytes of
// padding as a NIC adds to short frames.
func fipsData(mac [6]byte, pkt []byte, pad int) []byte {
	b := ethernet(etherFIPS, nil)
	copy(b[6:], mac[:])
	b = append(b, 0, 0, 0)
	binary.LittleEndian.PutUint16(b[15:], uint16(len(pkt)))
	b = append(b, pkt...)
	return append(b, make([]byte, pad)...)
}

// beacon is a FIPS Ethernet beacon from mac: type 1, version, a key.
func beacon(mac [6]byte, version byte) []byte {
	b := ethernet(etherFIPS, nil)
	copy(b[6:], mac[:])
	b = append(b, 1, version)
	for i := range 32 {
		b = append(b, byte(i+1))
	}
	return b
}

// onLo is a frame arriving on the loopback device (ifindex 1 in every
// network namespace; also where BPF_PROG_TEST_RUN puts a frame without a
// context), which the bucket tests name an Ethernet interface.
var onLo = &xdpMd{IngressIfindex: 1}

func on(ifindex int) *xdpMd { return &xdpMd{IngressIfindex: uint32(ifindex)} }

// TestEthernetVerdicts covers the Ethernet transport's branch: data frames
// judged as FMP, beacons, junk of the FIPS EtherType dropped, and the
// EtherType taking that branch only on an interface SetEthernet named.
func TestEthernetVerdicts(t *testing.T) {
	eth, other := inNetns(t)
	onEth := on(eth)
	obj := load(t, Options{})
	// Before any config: disabled. An Ethernet interface alone enables
	// the program, UDP ports or not.
	m1 := msg1(t)
	run(t, obj, fipsData(srcMAC, m1, 0), ReasonDisabled)
	if err := obj.SetEthernet(eth, etherFIPS); err != nil {
		t.Fatal(err)
	}
	runCtx(t, obj, fipsData(srcMAC, m1, 0), onEth, ReasonHandshake)
	runCtx(t, obj, ethernet(etherIPv4, ipv4(srcV4, protoUDP, nil, udp(portA, m1))), onEth, ReasonOtherPort)
	configure(t, obj, 1000, 1000)
	if err := obj.AddLink(knownV, 0); err != nil {
		t.Fatal(err)
	}
	est := established(t, 0, knownV, 40)
	mac9 := [6]byte{0x02, 0, 0, 0, 0, 9}
	cases := []struct {
		name  string
		frame []byte
		want  Reason
	}{
		{"established known", fipsData(srcMAC, est, 0), ReasonLinkKernel},
		{"established padded", fipsData(mac9, established(t, 0, knownV, 0), 14), ReasonLinkKernel},
		{"established unknown", fipsData(srcMAC, established(t, 0, knownV+1, 40), 0), ReasonUnknownIndex},
		{"established payload_len +1", fipsData(srcMAC, with(est, func(b []byte) { b[2]++ }), 0), ReasonBadLength},
		{"msg1", fipsData(srcMAC, m1, 0), ReasonHandshake},
		{"msg2", fipsData(mac9, msg2(t), 0), ReasonHandshake},
		{"msg1 flags", fipsData(srcMAC, with(m1, func(b []byte) { b[1] = 1 }), 0), ReasonBadFlags},
		{"msg1 as phase 3", fipsData(srcMAC, with(m1, func(b []byte) { b[0] = 3 }), 0), ReasonBadPhase},
		{"version 1", fipsData(srcMAC, with(m1, func(b []byte) { b[0] = 0x11 }), 0), ReasonBadVersion},
		{"3-byte packet", fipsData(srcMAC, []byte{0, 0, 0}, 40), ReasonFMPShort},
		{"empty packet", fipsData(srcMAC, nil, 0), ReasonFMPShort},
		{"type only", append(ethernet(etherFIPS, nil), 0), ReasonEthShort},
		{"length cut", append(ethernet(etherFIPS, nil), 0, 5), ReasonEthShort},
		{"no payload", ethernet(etherFIPS, nil), ReasonEthShort},
		{"length beyond frame", with(fipsData(srcMAC, est, 0), func(b []byte) { b[15]++ }), ReasonEthShort},
		{"type 2", append(ethernet(etherFIPS, nil), 2, 0, 0, 0), ReasonEthBadType},
		{"type 0xff", append(ethernet(etherFIPS, nil), 0xff), ReasonEthBadType},
		{"beacon", beacon(srcMAC, 1), ReasonBeacon},
		{"beacon padded", append(beacon(mac9, 1), make([]byte, 12)...), ReasonBeacon},
		{"beacon version 2", beacon(srcMAC, 2), ReasonBadBeacon},
		{"beacon 33 bytes", beacon(srcMAC, 1)[:14+33], ReasonBadBeacon},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCtx(t, obj, c.frame, onEth, c.want) })
	}
	// The same frames on another interface, or of another EtherType, are
	// not the Ethernet transport's: the IP path passes them.
	runCtx(t, obj, fipsData(srcMAC, est, 0), on(other), ReasonNotIP)
	runCtx(t, obj, with(fipsData(srcMAC, est, 0), func(b []byte) { b[13] = 0x22 }), onEth, ReasonNotIP)
	// Another EtherType on the same interface: from then on the old one
	// is not FIPS there.
	if err := obj.SetEthernet(eth, 0x88b5); err != nil {
		t.Fatal(err)
	}
	runCtx(t, obj, fipsData(srcMAC, est, 0), onEth, ReasonNotIP)
	runCtx(t, obj, with(fipsData(srcMAC, est, 0), func(b []byte) { b[12], b[13] = 0x88, 0xb5 }), onEth, ReasonLinkKernel)
	// Removing the last Ethernet interface without UDP ports disables.
	if err := obj.SetConfig(nil, 1, 1); err != nil {
		t.Fatal(err)
	}
	runCtx(t, obj, beacon(srcMAC, 1), onEth, ReasonNotIP) // still enabled by the Ethernet interface (of EtherType 0x88b5)
	if err := obj.SetEthernet(eth, 0); err != nil {
		t.Fatal(err)
	}
	runCtx(t, obj, beacon(srcMAC, 1), onEth, ReasonDisabled)
}

// TestEthernetTokenBuckets: handshakes and beacons each have a bucket per
// source MAC, independent of each other and of other MACs.
func TestEthernetTokenBuckets(t *testing.T) {
	obj := load(t, Options{})
	configure(t, obj, 2, 3) // 3 at once, then 2 per second
	if err := obj.SetEthernet(1, etherFIPS); err != nil {
		t.Fatal(err)
	}
	if err := obj.setClock(100e9); err != nil {
		t.Fatal(err)
	}
	a, b := [6]byte{0x02, 0, 0, 0, 0, 0xa}, [6]byte{0x02, 0, 0, 0, 0, 0xb}
	steps := []struct {
		frame []byte
		want  []Reason
	}{
		{beacon(a, 1), []Reason{ReasonBeacon, ReasonBeacon, ReasonBeacon, ReasonBeaconLimited}},
		{fipsData(a, msg1(t), 0), []Reason{ReasonHandshake, ReasonHandshake, ReasonHandshake, ReasonRateLimited}},
		{beacon(b, 1), []Reason{ReasonBeacon, ReasonBeacon, ReasonBeacon, ReasonBeaconLimited}},
		{fipsData(b, msg2(t), 0), []Reason{ReasonHandshake, ReasonHandshake, ReasonHandshake, ReasonRateLimited}},
	}
	for i, st := range steps {
		for j, r := range st.want {
			t.Run(fmt.Sprintf("step%d/%d", i, j), func(t *testing.T) { runCtx(t, obj, st.frame, onLo, r) })
		}
	}
	// Half a second later: one more of each for a.
	if err := obj.setClock(100e9 + 5e8); err != nil {
		t.Fatal(err)
	}
	runCtx(t, obj, beacon(a, 1), onLo, ReasonBeacon)
	runCtx(t, obj, beacon(a, 1), onLo, ReasonBeaconLimited)
	runCtx(t, obj, fipsData(a, msg1(t), 0), onLo, ReasonHandshake)
	if occ, err := obj.Occupancy(); err != nil || occ.Sources != 4 {
		t.Errorf("ratelimit occupancy %+v (%v), want 4 buckets (2 MACs × beacons, handshakes)", occ, err)
	}
	// An established frame spends no token.
	if err := obj.AddLink(knownV, 0); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		runCtx(t, obj, fipsData(a, established(t, 0, knownV, 10), 0), onLo, ReasonLinkKernel)
	}
}

// TestSetEthernetRejects: out-of-range arguments and more interfaces than
// eth_ifaces holds are refused.
func TestSetEthernetRejects(t *testing.T) {
	obj := load(t, Options{})
	for _, c := range []struct {
		ifindex   int
		ethertype uint16
	}{{0, etherFIPS}, {-1, etherFIPS}, {1, 0x05ff}, {1, 0x0001}} {
		if err := obj.SetEthernet(c.ifindex, c.ethertype); err == nil {
			t.Errorf("SetEthernet(%d, %#x) accepted", c.ifindex, c.ethertype)
		}
	}
	for i := 1; i <= MaxEthernetInterfaces; i++ {
		if err := obj.SetEthernet(i, etherFIPS); err != nil {
			t.Fatalf("interface %d: %v", i, err)
		}
	}
	if err := obj.SetEthernet(MaxEthernetInterfaces+1, etherFIPS); err == nil {
		t.Error("SetEthernet beyond MaxEthernetInterfaces accepted")
	}
	// Replacing an interface's EtherType is not a new entry.
	if err := obj.SetEthernet(3, 0x88b5); err != nil {
		t.Errorf("replacing: %v", err)
	}
}

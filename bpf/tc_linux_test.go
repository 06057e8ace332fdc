package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/vishvananda/netlink"
)

// tcNext is TC_ACT_UNSPEC (tcx's TCX_NEXT) as BPF_PROG_TEST_RUN returns it.
const tcNext = 0xffffffff

func loadTCObjects(t *testing.T) *TCObjects {
	t.Helper()
	obj, err := LoadTC()
	if err != nil {
		t.Fatalf("LoadTC: %v (these tests must run as root on a kernel with BPF)", err)
	}
	t.Cleanup(func() {
		if err := obj.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return obj
}

func tcStats(t *testing.T, obj *TCObjects) TCStats {
	t.Helper()
	s, err := obj.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runTC runs frame through the program of direction d and checks the
// return code, the exact output frame and that exactly one counter moved
// by one packet of len(frame) bytes.
func runTC(t *testing.T, obj *TCObjects, d TCDir, frame, wantOut []byte, want TCReason) {
	t.Helper()
	prog := obj.objs.TcFipsEgress
	if d == TCIngress {
		prog = obj.objs.TcFipsIngress
	}
	before := tcStats(t, obj)
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256)}
	ret, err := prog.Run(opts)
	if err != nil {
		t.Fatalf("Program.Run: %v", err)
	}
	if ret != tcNext {
		t.Errorf("return %#x, want TC_ACT_UNSPEC", ret)
	}
	if !bytes.Equal(opts.DataOut, wantOut) {
		t.Errorf("output frame:\n got %x\nwant %x", opts.DataOut, wantOut)
	}
	after := tcStats(t, obj)
	var moved []string
	for dd, rs := range after {
		for r, c := range rs {
			b := before[dd][r]
			if c == b {
				continue
			}
			moved = append(moved, fmt.Sprintf("%s/%s=%d/%d", dd, r, c.Packets-b.Packets, c.Bytes-b.Bytes))
		}
	}
	if w := fmt.Sprintf("%s/%s=1/%d", d, want, len(frame)); len(moved) != 1 || moved[0] != w {
		t.Errorf("counter deltas %v, want [%s]", moved, w)
	}
}

// udpPorts is a UDP header from sport to dport around payload.
func udpPorts(sport, dport uint16, payload []byte) []byte {
	b := udp(dport, payload)
	binary.BigEndian.PutUint16(b[0:], sport)
	return b
}

// ipv4Checksum recomputes the IPv4 header checksum of an Ethernet frame
// from scratch (independent of the program's incremental update).
func ipv4Checksum(b []byte) {
	ip := b[14:]
	hl := int(ip[0]&0xf) * 4
	ip[10], ip[11] = 0, 0
	var sum uint32
	for i := 0; i < hl; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
}

func setTOS(tos uint8) func([]byte) {
	return func(b []byte) { b[15] = tos; ipv4Checksum(b) }
}

// setTClass sets the IPv6 traffic class, keeping version and flow label.
func setTClass(tc uint8) func([]byte) {
	return func(b []byte) {
		w := binary.BigEndian.Uint32(b[14:])
		w = w&^(0xff<<20) | uint32(tc)<<20
		binary.BigEndian.PutUint32(b[14:], w)
	}
}

// TestTCVerdicts covers every branch of both programs with exact output
// bytes: egress marks Not-ECT FIPS datagrams ECT(0) (IPv4 checksum
// updated), leaves any ECN codepoint alone; ingress counts the outer
// codepoint and never changes the packet.
func TestTCVerdicts(t *testing.T) {
	obj := loadTCObjects(t)
	if err := obj.SetConfig([]uint16{portA, portB}); err != nil {
		t.Fatal(err)
	}
	m1 := msg1(t)
	est := established(t, 0, knownV, 40)
	v4 := func(l4 []byte) []byte { return ethernet(etherIPv4, ipv4(srcV4, protoUDP, nil, l4)) }
	v6 := func(l4 []byte) []byte { return ethernet(etherIPv6, ipv6(srcV6, protoUDP, l4)) }
	out4 := v4(udpPorts(portA, 40000, est))
	in4 := v4(udpPorts(40000, portA, est))
	out6 := with(v6(udpPorts(portB, 40000, est)), func(b []byte) { b[15] = 0x0a; b[16] = 0xbc; b[17] = 0xde }) // flow label 0xabcde
	in6 := v6(udpPorts(40000, portB, m1))
	same := func(b []byte) []byte { return b }

	cases := []struct {
		name  string
		dir   TCDir
		frame []byte
		out   func([]byte) []byte // expected output from the input
		want  TCReason
	}{
		{"egress ipv4 not-ect", TCEgress, out4, func(b []byte) []byte { return with(b, setTOS(0x02)) }, TCReasonMarked},
		{"egress ipv4 dscp ef not-ect", TCEgress, with(out4, setTOS(0xb8)), func(b []byte) []byte { return with(b, setTOS(0xba)) }, TCReasonMarked},
		{"egress ipv4 options", TCEgress, ethernet(etherIPv4, ipv4(srcV4, protoUDP, []byte{1, 1, 1, 0}, udpPorts(portA, 1, m1))),
			func(b []byte) []byte { return with(b, setTOS(0x02)) }, TCReasonMarked},
		{"egress ipv4 msg1", TCEgress, v4(udpPorts(portB, 9, m1)), func(b []byte) []byte { return with(b, setTOS(0x02)) }, TCReasonMarked},
		{"egress ipv4 ect0 kept", TCEgress, with(out4, setTOS(0x02)), same, TCReasonECNKept},
		{"egress ipv4 ect1 kept", TCEgress, with(out4, setTOS(0x01)), same, TCReasonECNKept},
		{"egress ipv4 ce kept", TCEgress, with(out4, setTOS(0xbb)), same, TCReasonECNKept},
		{"egress ipv6 not-ect", TCEgress, out6, func(b []byte) []byte { return with(b, setTClass(0x02)) }, TCReasonMarked},
		{"egress ipv6 cs1 not-ect", TCEgress, with(out6, setTClass(0x20)), func(b []byte) []byte { return with(b, setTClass(0x22)) }, TCReasonMarked},
		{"egress ipv6 ect1 kept", TCEgress, with(out6, setTClass(0x01)), same, TCReasonECNKept},
		{"egress ipv6 ce kept", TCEgress, with(out6, setTClass(0x03)), same, TCReasonECNKept},
		{"egress to a fips port from another", TCEgress, in4, same, TCReasonOtherPort},
		{"egress ipv6 other port", TCEgress, in6, same, TCReasonOtherPort},
		{"ingress ipv4 not-ect", TCIngress, in4, same, TCReasonNotECT},
		{"ingress ipv4 ect0", TCIngress, with(in4, setTOS(0x02)), same, TCReasonECT},
		{"ingress ipv4 ect1", TCIngress, with(in4, setTOS(0x01)), same, TCReasonECT},
		{"ingress ipv4 ce", TCIngress, with(in4, setTOS(0x03)), same, TCReasonCE},
		{"ingress ipv4 dscp ce", TCIngress, with(in4, setTOS(0xbb)), same, TCReasonCE},
		{"ingress ipv6 not-ect", TCIngress, in6, same, TCReasonNotECT},
		{"ingress ipv6 ect0", TCIngress, with(in6, setTClass(0x02)), same, TCReasonECT},
		{"ingress ipv6 ce", TCIngress, with(in6, setTClass(0xff)), same, TCReasonCE},
		{"ingress from a fips port to another", TCIngress, out4, same, TCReasonOtherPort},
		{"ingress port 0", TCIngress, v4(udpPorts(portA, 0, est)), same, TCReasonOtherPort},
	}
	for _, d := range TCDirs() {
		cases = append(cases, []struct {
			name  string
			dir   TCDir
			frame []byte
			out   func([]byte) []byte
			want  TCReason
		}{
			{d.String() + " arp", d, ethernet(etherARP, make([]byte, 28)), same, TCReasonNotIP},
			{d.String() + " vlan", d, ethernet(etherVLAN, append([]byte{0, 1, 0x08, 0}, ipv4(srcV4, protoUDP, nil, udpPorts(portA, portA, m1))...)), same, TCReasonNotIP},
			// A packet ending inside the IP header itself cannot be run:
			// BPF_PROG_TEST_RUN refuses it (EINVAL) before the program.
			{d.String() + " udp truncated", d, ethernet(etherIPv4, ipv4(srcV4, protoUDP, nil, make([]byte, 7))), same, TCReasonShort},
			{d.String() + " ipv6 udp truncated", d, ethernet(etherIPv6, ipv6(srcV6, protoUDP, make([]byte, 7))), same, TCReasonShort},
			{d.String() + " ipv4 ihl beyond packet", d, ethernet(etherIPv4, ipv4(srcV4, protoUDP, make([]byte, 40), nil)), same, TCReasonShort},
			{d.String() + " ipv4 tcp", d, ethernet(etherIPv4, ipv4(srcV4, protoTCP, nil, make([]byte, 40))), same, TCReasonNotUDP},
			{d.String() + " ipv4 ihl 4", d, with(v4(udpPorts(portA, portA, m1)), func(b []byte) { b[14] = 0x44 }), same, TCReasonNotUDP},
			{d.String() + " ipv6 version 4", d, with(v6(udpPorts(portA, portA, m1)), func(b []byte) { b[14] = 0x40 }), same, TCReasonNotUDP},
			{d.String() + " ipv6 icmp", d, ethernet(etherIPv6, ipv6(srcV6, protoICMPv6, make([]byte, 8))), same, TCReasonNotUDP},
			{d.String() + " ipv4 fragment", d, with(v4(udpPorts(portA, portA, m1)), func(b []byte) { b[14+6] = 0x20; ipv4Checksum(b) }), same, TCReasonFragment},
			{d.String() + " ipv6 fragment header", d, ethernet(etherIPv6, ipv6(srcV6, 44, append(make([]byte, 8), udpPorts(portA, portA, m1)...))), same, TCReasonFragment},
			{d.String() + " ipv6 other port", d, v6(udpPorts(53, 53, m1)), same, TCReasonOtherPort},
		}...)
	}
	seen := map[[2]uint32]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runTC(t, obj, c.dir, c.frame, c.out(c.frame), c.want) })
		seen[[2]uint32{uint32(c.dir), uint32(c.want)}] = true
	}
	for _, d := range TCDirs() {
		for _, r := range TCReasons() {
			// BPF_PROG_TEST_RUN gives every skb a socket, so a forwarded
			// packet (no socket) is mounted in testing/netns:
			// TestTCForwardedNotMarked.
			if r.In(d) && r != TCReasonDisabled && r != TCReasonForwarded && !seen[[2]uint32{uint32(d), uint32(r)}] {
				t.Errorf("no case for %s/%s", d, r)
			}
		}
	}
}

// TestTCChecksumSweep: the incremental IPv4 checksum update agrees with a
// full recomputation over many headers (carries, 0x0000 and 0xffff sums).
func TestTCChecksumSweep(t *testing.T) {
	obj := loadTCObjects(t)
	if err := obj.SetConfig([]uint16{portA}); err != nil {
		t.Fatal(err)
	}
	est := established(t, 0, knownV, 0)
	for i := 0; i < 4096; i += 7 {
		f := ethernet(etherIPv4, ipv4([4]byte{byte(i), byte(i >> 8), 0xff, 0xfe}, protoUDP, nil, udpPorts(portA, 1, est)))
		f[15] = byte(i) &^ 3
		binary.BigEndian.PutUint16(f[14+4:], uint16(i*31))
		ipv4Checksum(f)
		opts := &ebpf.RunOptions{Data: f, DataOut: make([]byte, len(f)+64)}
		if _, err := obj.objs.TcFipsEgress.Run(opts); err != nil {
			t.Fatal(err)
		}
		want := with(f, setTOS(f[15]|2))
		if !bytes.Equal(opts.DataOut, want) {
			t.Fatalf("header %d: got %x, want %x", i, opts.DataOut[14:34], want[14:34])
		}
	}
}

// TestTCDisabled: before SetConfig and after SetConfig(nil) nothing is
// marked and everything counts as disabled.
func TestTCDisabled(t *testing.T) {
	obj := loadTCObjects(t)
	f := ethernet(etherIPv4, ipv4(srcV4, protoUDP, nil, udpPorts(portA, portA, msg1(t))))
	runTC(t, obj, TCEgress, f, f, TCReasonDisabled)
	runTC(t, obj, TCIngress, f, f, TCReasonDisabled)
	if err := obj.SetConfig([]uint16{portA}); err != nil {
		t.Fatal(err)
	}
	runTC(t, obj, TCEgress, f, with(f, setTOS(2)), TCReasonMarked)
	if err := obj.SetConfig(nil); err != nil {
		t.Fatal(err)
	}
	runTC(t, obj, TCEgress, f, f, TCReasonDisabled)
	if err := obj.SetConfig([]uint16{1, 2, 3, 4, 5}); err == nil {
		t.Error("5 ports accepted")
	}
}

// TestTCEnumsMatchC: the Go direction and reason tables match the C enums
// in the object's BTF and the stats map's size.
func TestTCEnumsMatchC(t *testing.T) {
	spec, err := loadTc()
	if err != nil {
		t.Fatal(err)
	}
	check := func(cname, prefix string, goNames []string) {
		t.Helper()
		var e *btf.Enum
		if err := spec.Types.TypeByName(cname, &e); err != nil {
			t.Fatalf("enum %s: %v", cname, err)
		}
		want := make([]string, 0, len(goNames)+1)
		for _, n := range goNames {
			want = append(want, prefix+strings.ToUpper(n))
		}
		want = append(want, prefix+"MAX")
		if len(e.Values) != len(want) {
			t.Errorf("enum %s has %d values, Go has %d", cname, len(e.Values), len(want))
		}
		for i, v := range e.Values {
			if v.Value != uint64(i) || (i < len(want) && v.Name != want[i]) {
				t.Errorf("%s[%d] is %s=%d in C, %s in Go", cname, i, v.Name, v.Value, want[i])
			}
		}
	}
	var dn, rn []string
	for _, d := range TCDirs() {
		dn = append(dn, d.String())
	}
	for _, r := range TCReasons() {
		rn = append(rn, r.String())
	}
	check("fips_tc_dir", "TC_DIR_", dn)
	check("fips_tc_reason", "TC_REASON_", rn)
	if uint32(tcFipsTcReasonTC_REASON_MAX) != uint32(tcReasonMax) || uint32(tcFipsTcDirTC_DIR_MAX) != uint32(tcDirMax) {
		t.Error("bpf2go constants disagree with the Go tables")
	}
	if got := spec.Maps["tc_stats"].MaxEntries; got != uint32(tcDirMax)*uint32(tcReasonMax) {
		t.Errorf("tc_stats has %d entries, want %d", got, uint32(tcDirMax)*uint32(tcReasonMax))
	}
}

// TestTCAttach: tcx attach and detach on a veth, the clsact fallback with
// its stale-filter replacement, and refusal of another tool's filter.
func TestTCAttach(t *testing.T) {
	a, b := inNetns(t)
	obj := loadTCObjects(t)
	m, err := obj.Attach(a)
	if err != nil || m != TCAttachTCX {
		t.Fatalf("Attach: %s, %v; want tcx on this kernel", m, err)
	}
	if _, err := obj.Attach(a); err == nil {
		t.Error("second Attach succeeded")
	}
	at := obj.Attachments()
	if len(at) != 1 || at[0].EgressID == 0 || at[0].IngressID == 0 || at[0].Mode != TCAttachTCX {
		t.Errorf("Attachments %+v", at)
	}
	if err := obj.Detach(a); err != nil {
		t.Fatal(err)
	}

	// clsact directly: a crashed daemon's filters are replaced.
	if err := obj.attachClsact(b); err != nil {
		t.Fatalf("clsact: %v", err)
	}
	other, err := LoadTC()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.attachClsact(b); err != nil {
		t.Fatalf("clsact over stale tc_fips filters: %v", err)
	}
	l, err := netlink.LinkByIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := netlink.FilterList(l, netlink.HANDLE_MIN_EGRESS)
	if err != nil || len(fs) != 1 {
		t.Fatalf("egress filters after replace: %d, %v", len(fs), err)
	}
	if id := progID(other.objs.TcFipsEgress); fs[0].(*netlink.BpfFilter).Id != int(id) {
		t.Errorf("egress filter runs program %d, want the new %d", fs[0].(*netlink.BpfFilter).Id, id)
	}
	if err := delClsact(b); err != nil {
		t.Fatal(err)
	}
	// Another tool's filter at our priority is left alone.
	f := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: b, Parent: netlink.HANDLE_MIN_EGRESS, Handle: 1,
		Protocol: 3, Priority: clsactPriority}, Fd: other.objs.TcFipsEgress.FD(), Name: "someone_else", DirectAction: true}
	if err := netlink.FilterAdd(f); err != nil {
		t.Fatal(err)
	}
	if err := obj.attachClsact(b); err == nil || !strings.Contains(err.Error(), "not replacing") {
		t.Errorf("clsact over another filter: %v", err)
	}
}

package udp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func cmsg(level, typ int32, v uint32) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafePointer(b))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], v)
	return b
}

func TestParseCmsgs(t *testing.T) {
	b := append(cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, 1200), cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 7)...)
	ts := make([]byte, unix.CmsgSpace(sizeofTimespec))
	th := (*unix.Cmsghdr)(unsafePointer(ts))
	th.Level, th.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
	th.SetLen(unix.CmsgLen(sizeofTimespec))
	spec := unix.NsecToTimespec(1_700_000_000_123_456_789)
	*(*unix.Timespec)(unsafePointer(ts[unix.CmsgLen(0):])) = spec
	b = append(b, ts...)
	// IP_TOS is one byte of data (DSCP AF41 with CE).
	tos := make([]byte, unix.CmsgSpace(1))
	toh := (*unix.Cmsghdr)(unsafePointer(tos))
	toh.Level, toh.Type = unix.IPPROTO_IP, unix.IP_TOS
	toh.SetLen(unix.CmsgLen(1))
	tos[unix.CmsgLen(0)] = 0x8b
	b = append(b, tos...)
	c := parseCmsgs(b)
	if c.segment != 1200 || c.ovfl != 7 || !c.haveOvfl || c.stamp != 1_700_000_000_123_456_789 || c.ecn != ECNCE {
		t.Fatalf("parseCmsgs = %+v", c)
	}
	for tclass, want := range map[uint32]uint8{0: ECNNotECT, 0x01: ECNECT1, 0xba: ECNECT0, 0x03: ECNCE} {
		if got := parseCmsgs(cmsg(unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tclass)).ecn; got != want {
			t.Errorf("IPV6_TCLASS %#x: ecn %d, want %d", tclass, got, want)
		}
	}
	ovfl7 := cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 0xdeadbeef)
	// An IPV6_PKTINFO (20 bytes of data) before the counter.
	other := make([]byte, unix.CmsgSpace(20))
	h := (*unix.Cmsghdr)(unsafePointer(other))
	h.Level, h.Type = unix.SOL_IPV6, unix.IPV6_PKTINFO
	h.SetLen(unix.CmsgLen(20))
	// Cross-check the layout against x/sys's own parser.
	msgs, err := unix.ParseSocketControlMessage(append(append([]byte{}, other...), ovfl7...))
	if err != nil || len(msgs) != 2 || msgs[1].Header.Type != unix.SO_RXQ_OVFL {
		t.Fatalf("layout check: %v %+v", err, msgs)
	}
	for name, tc := range map[string]struct {
		b    []byte
		want uint32
		ok   bool
	}{
		"alone":       {ovfl7, 0xdeadbeef, true},
		"after other": {append(append([]byte{}, other...), ovfl7...), 0xdeadbeef, true},
		"other only":  {other, 0, false},
		"empty":       {nil, 0, false},
		"truncated":   {ovfl7[:unix.CmsgLen(0)+2], 0, false},
		"cut header":  {ovfl7[:5], 0, false},
	} {
		c := parseCmsgs(tc.b)
		if c.ovfl != tc.want || c.haveOvfl != tc.ok || c.segment != 0 || c.stamp != 0 || c.ecn != 0 {
			t.Errorf("%s: got %+v", name, c)
		}
	}
}

func FuzzParseCmsgs(f *testing.F) {
	f.Add(append(cmsg(unix.IPPROTO_UDP, unix.UDP_GRO, 1200), cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 7)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Aligned like a kernel control buffer.
		buf := make([]byte, len(b)+8)
		copy(buf, b)
		parseCmsgs(buf[:len(b)])
	})
}

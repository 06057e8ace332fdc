package ipv6

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"testing"
)

var ourAddr = netip.MustParseAddr("fd00::ffff")

// Golden packets: offending = UDP fd00::1 -> fd00::2 with payload 01..08,
// from fd00::ffff. Checksums computed independently (Python).
const (
	goldenDU  = "6000000000383a40fd00000000000000000000000000fffffd00000000000000000000000000000101008929000000006000000000081140fd000000000000000000000000000001fd0000000000000000000000000000020102030405060708"
	goldenPTB = "6000000000383a40fd00000000000000000000000000fffffd00000000000000000000000000000102008376000004b36000000000081140fd000000000000000000000000000001fd0000000000000000000000000000020102030405060708"
)

func goldenOffending() []byte {
	return mkPacket("fd00::1", "fd00::2", 17, []byte{1, 2, 3, 4, 5, 6, 7, 8})
}

func TestGoldenDestUnreachable(t *testing.T) {
	got, err := BuildDestUnreachable(nil, CodeNoRoute, ourAddr, goldenOffending())
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != goldenDU {
		t.Fatalf("got  %x\nwant %s", got, goldenDU)
	}
	verifyL4(t, got)
}

func TestGoldenPacketTooBig(t *testing.T) {
	got, err := BuildPacketTooBig(nil, 1203, ourAddr, goldenOffending())
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != goldenPTB {
		t.Fatalf("got  %x\nwant %s", got, goldenPTB)
	}
	verifyL4(t, got)
}

func TestBuildAppendsToDst(t *testing.T) {
	prefix := []byte("prefix")
	got, err := BuildDestUnreachable(append([]byte(nil), prefix...), CodeAdminProhibited, ourAddr, goldenOffending())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatal("prefix lost")
	}
	pkt := got[len(prefix):]
	if pkt[41] != CodeAdminProhibited {
		t.Fatalf("code %d", pkt[41])
	}
	verifyL4(t, pkt)
	// On error dst comes back unchanged.
	out, err := BuildDestUnreachable(prefix, CodeNoRoute, ourAddr, []byte{1, 2})
	if !errors.Is(err, ErrTooShort) || !bytes.Equal(out, prefix) {
		t.Fatalf("err %v out %q", err, out)
	}
}

func TestDestUnreachableFields(t *testing.T) {
	for code := uint8(0); code <= CodeRejectRoute; code++ {
		orig := mkPacket("fd00::1", "2001:db8::2", 6, make([]byte, 33)) // odd length
		got, err := BuildDestUnreachable(nil, code, ourAddr, orig)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != 0x60 || got[6] != ProtoICMPv6 || got[7] != 64 {
			t.Fatalf("bad IPv6 header % x", got[:8])
		}
		if netip.AddrFrom16([16]byte(got[8:24])) != ourAddr {
			t.Fatal("source is not ours")
		}
		if netip.AddrFrom16([16]byte(got[24:40])) != netip.MustParseAddr("fd00::1") {
			t.Fatal("destination is not the offending source")
		}
		if got[40] != TypeDestUnreachable || got[41] != code || binary.BigEndian.Uint32(got[44:48]) != 0 {
			t.Fatalf("bad ICMPv6 header % x", got[40:48])
		}
		if !bytes.Equal(got[48:], orig) {
			t.Fatal("quote differs")
		}
		verifyL4(t, got)
	}
	if _, err := BuildDestUnreachable(nil, 7, ourAddr, goldenOffending()); !errors.Is(err, ErrBadCode) {
		t.Fatalf("code 7: %v", err)
	}
}

func TestQuotingLimit(t *testing.T) {
	for _, n := range []int{0, 1, 1191, 1192, 1193, 2000, 65000} {
		orig := mkPacket("fd00::1", "fd00::2", 17, make([]byte, n))
		for i := range orig[40:] {
			orig[40+i] = byte(i * 7)
		}
		du, err := BuildDestUnreachable(nil, CodeNoRoute, ourAddr, orig)
		if err != nil {
			t.Fatal(err)
		}
		ptb, err := BuildPacketTooBig(nil, 1203, ourAddr, orig)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range [][]byte{du, ptb} {
			want := min(len(orig), 1280-48)
			if len(got) != 48+want || len(got) > MinMTU {
				t.Fatalf("n=%d: len %d, want %d", n, len(got), 48+want)
			}
			if !bytes.Equal(got[48:], orig[:want]) {
				t.Fatalf("n=%d: quote differs", n)
			}
			verifyL4(t, got)
		}
		if n >= 1192 && len(du) != MinMTU {
			t.Fatalf("n=%d: large packet not quoted to 1280 (%d)", n, len(du))
		}
	}
}

func TestPacketTooBigRemoteSource(t *testing.T) {
	// Upstream sends PTB from the offending packet's destination.
	local, remote := "fd41::1", "fddf::2"
	orig := mkPacket(local, remote, 6, make([]byte, 1200))
	got, err := BuildPacketTooBig(nil, 1203, netip.MustParseAddr(remote), orig)
	if err != nil {
		t.Fatal(err)
	}
	if netip.AddrFrom16([16]byte(got[8:24])).String() != remote || netip.AddrFrom16([16]byte(got[24:40])).String() != local {
		t.Fatal("addresses wrong")
	}
	if got[40] != TypePacketTooBig || got[41] != 0 || binary.BigEndian.Uint32(got[44:48]) != 1203 {
		t.Fatalf("bad ICMPv6 header % x", got[40:48])
	}
	verifyL4(t, got)
}

func TestSuppression(t *testing.T) {
	udp := make([]byte, 8)
	cases := []struct {
		name     string
		pkt      []byte
		du, ptb  error
		shouldOK bool
	}{
		{"valid", mkPacket("fd00::1", "fd00::2", 17, udp), nil, nil, true},
		{"unspecified src", mkPacket("::", "fd00::2", 17, udp), ErrSuppressed, ErrSuppressed, false},
		{"multicast src", mkPacket("ff02::1", "fd00::2", 17, udp), ErrSuppressed, ErrSuppressed, false},
		// Upstream's PTB builder does not check the destination.
		{"multicast dst", mkPacket("fe80::1", "ff02::2", 17, udp), ErrSuppressed, nil, false},
		{"icmp error", mkPacket("fd00::1", "fd00::2", 58, []byte{1, 0, 0, 0, 0, 0, 0, 0}), ErrSuppressed, ErrSuppressed, false},
		{"icmp type 127", mkPacket("fd00::1", "fd00::2", 58, []byte{127, 0, 0, 0}), ErrSuppressed, ErrSuppressed, false},
		{"icmp echo", mkPacket("fd00::1", "fd00::2", 58, []byte{128, 0, 0, 0, 0, 0, 0, 0}), nil, nil, true},
		{"icmp header only", mkPacket("fd00::1", "fd00::2", 58, nil), nil, nil, true},
		{"short", make([]byte, 20), ErrTooShort, ErrTooShort, false},
		{"ipv4", append([]byte{0x45}, make([]byte, 39)...), ErrNotIPv6, ErrNotIPv6, false},
	}
	for _, c := range cases {
		if got := ShouldSendICMPError(c.pkt); got != c.shouldOK {
			t.Errorf("%s: ShouldSendICMPError=%v", c.name, got)
		}
		if _, err := BuildDestUnreachable(nil, CodeNoRoute, ourAddr, c.pkt); !errors.Is(err, c.du) || (c.du == nil) != (err == nil) {
			t.Errorf("%s: DU err %v want %v", c.name, err, c.du)
		}
		if _, err := BuildPacketTooBig(nil, 1280, ourAddr, c.pkt); !errors.Is(err, c.ptb) || (c.ptb == nil) != (err == nil) {
			t.Errorf("%s: PTB err %v want %v", c.name, err, c.ptb)
		}
	}
}

func TestBadSource(t *testing.T) {
	for _, a := range []netip.Addr{{}, netip.MustParseAddr("10.0.0.1")} {
		if _, err := BuildPacketTooBig(nil, 1280, a, goldenOffending()); !errors.Is(err, ErrBadSource) {
			t.Fatalf("%v: %v", a, err)
		}
		if _, err := BuildDestUnreachable(nil, 0, a, goldenOffending()); !errors.Is(err, ErrBadSource) {
			t.Fatalf("%v: %v", a, err)
		}
	}
}

var knownErrs = []error{ErrTooShort, ErrNotIPv6, ErrSuppressed, ErrBadSource, ErrBadCode}

func isKnown(err error) bool {
	for _, k := range knownErrs {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

func FuzzBuilders(f *testing.F) {
	f.Add(goldenOffending(), uint8(0), uint32(1203))
	f.Add(mkPacket("fd00::1", "fd00::2", 58, []byte{1}), uint8(3), uint32(0))
	f.Add([]byte{0x60}, uint8(9), uint32(1))
	f.Fuzz(func(t *testing.T, pkt []byte, code uint8, mtu uint32) {
		in := append([]byte(nil), pkt...)
		du, err := BuildDestUnreachable(nil, code, ourAddr, pkt)
		if err != nil {
			if !isKnown(err) || du != nil {
				t.Fatalf("DU: %v", err)
			}
		} else {
			if len(du) > MinMTU || ShouldSendICMPError(pkt) != true {
				t.Fatal("DU invariant")
			}
			verifyL4(t, du)
		}
		ptb, err := BuildPacketTooBig(nil, mtu, ourAddr, pkt)
		if err != nil {
			if !isKnown(err) {
				t.Fatalf("PTB: %v", err)
			}
		} else {
			if len(ptb) > MinMTU {
				t.Fatal("PTB too long")
			}
			verifyL4(t, ptb)
		}
		if !bytes.Equal(in, pkt) {
			t.Fatal("input modified")
		}
	})
}

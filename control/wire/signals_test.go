package wire_test

import (
	"bytes"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

func TestRoutingSignalType(t *testing.T) {
	// test_routing_signal_type_values_and_invalid / _display.
	for _, c := range []struct {
		t    wire.RoutingSignalType
		b    byte
		name string
	}{
		{wire.SignalCoordsRequired, 0x20, "CoordsRequired"},
		{wire.SignalPathBroken, 0x21, "PathBroken"},
		{wire.SignalMtuExceeded, 0x22, "MtuExceeded"},
	} {
		if byte(c.t) != c.b || c.t.String() != c.name {
			t.Errorf("%#x: %q", c.b, c.t)
		}
	}
	for _, c := range []struct {
		b    []byte
		want wire.RoutingSignalType
	}{
		{marshal(t, wire.CoordsRequired{}), wire.SignalCoordsRequired},
		{marshal(t, wire.PathBroken{}), wire.SignalPathBroken},
		{marshal(t, wire.MtuExceeded{}), wire.SignalMtuExceeded},
	} {
		if got, err := wire.ParseRoutingSignalType(c.b); err != nil || got != c.want {
			t.Errorf("%x: %v %v", c.b[:5], got, err)
		}
	}
	// The 0x10-0x1F session range and unknown codes are not signals.
	for _, typ := range []byte{0x10, 0x23, 0xFF} {
		_, err := wire.ParseRoutingSignalType([]byte{0x00, 0x04, 0x01, 0x00, typ})
		wantKind(t, err, wire.ErrType)
	}
	_, err := wire.ParseRoutingSignalType(mustHex(t, "00 04 00 00"))
	wantKind(t, err, wire.ErrTruncated)
	_, err = wire.ParseRoutingSignalType(mustHex(t, "00 00 01 00 20"))
	wantKind(t, err, wire.ErrFlags)
}

func TestCoordsRequiredLayout(t *testing.T) {
	// test_coords_required_encode_decode: dest 0xAA.., reporter 0xBB..
	c := wire.CoordsRequired{DestAddr: addrOf(0xAA), Reporter: addrOf(0xBB)}
	want := cat(
		mustHex(t, "00 04 22 00"),     // phase 0, U, payload_len 34 (from msg_type)
		mustHex(t, "20 00"),           // CoordsRequired, reserved flags
		mustHex(t, "aa"), fill(15, 0), // dest_addr
		mustHex(t, "bb"), fill(15, 0)) // reporter
	b := marshal(t, c)
	if len(b) != 38 || b[0] != 0x00 || b[1] != 0x04 || b[4] != 0x20 {
		t.Fatalf("pinned bytes: len %d %x", len(b), b[:5])
	}
	equal(t, "layout", b, want)
	got, err := wire.ParseCoordsRequired(b)
	if err != nil || got != c {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	if k, _ := wire.ClassifyFSP(b); k != wire.FSPKindSignal {
		t.Errorf("classified as %v", k)
	}
	// Reserved bits are ignored: other prefix flags beside U, the flags byte.
	b2 := bytes.Clone(b)
	b2[1], b2[5] = 0xFF, 0xFF
	if got, err := wire.ParseCoordsRequired(b2); err != nil || got != c {
		t.Errorf("reserved bits: %v", err)
	}
}

func TestPathBrokenLayout(t *testing.T) {
	// test_path_broken_encode_decode_no_coords.
	p := wire.PathBroken{DestAddr: addrOf(0xCC), Reporter: addrOf(0xDD)}
	b := marshal(t, p)
	want := cat(mustHex(t, "00 04 24 00 21 00"), cat(mustHex(t, "cc"), fill(15, 0)),
		cat(mustHex(t, "dd"), fill(15, 0)), mustHex(t, "00 00"))
	equal(t, "no coords", b, want)
	if len(b) != 40 || b[4] != 0x21 {
		t.Fatalf("pinned: len %d [4]=%#x", len(b), b[4])
	}
	got, err := wire.ParsePathBroken(b)
	if err != nil || got.DestAddr != p.DestAddr || got.Reporter != p.Reporter || got.LastKnownCoords.Len() != 0 {
		t.Fatalf("round trip: %v %+v", err, got)
	}

	// test_path_broken_encode_decode_with_coords: 40 + 16·3, plen 84.
	p = wire.PathBroken{DestAddr: addrOf(0x11), Reporter: addrOf(0x22), LastKnownCoords: fspCoords(0xCC, 0xDD, 0xEE)}
	b = marshal(t, p)
	equal(t, "with coords", b, cat(mustHex(t, "00 04 54 00 21 00"), b[6:38], fspWireCoords(0xCC, 0xDD, 0xEE)))
	if len(b) != 88 {
		t.Fatalf("len %d", len(b))
	}
	got, err = wire.ParsePathBroken(b)
	if err != nil || !bytes.Equal(got.LastKnownCoords, p.LastKnownCoords) || got.DestAddr != addrOf(0x11) {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	if !fspSameMemory(got.LastKnownCoords, b) {
		t.Error("coords copied")
	}
}

func TestMtuExceededLayout(t *testing.T) {
	// test_mtu_exceeded_encode_size / _encode_decode: MTU 1400.
	m := wire.MtuExceeded{DestAddr: addrOf(0xAA), Reporter: addrOf(0xBB), MTU: 1400}
	b := marshal(t, m)
	if len(b) != 40 || b[0] != 0x00 || b[1] != 0x04 || b[4] != 0x22 {
		t.Fatalf("pinned bytes: len %d %x", len(b), b[:5])
	}
	equal(t, "layout", b, cat(mustHex(t, "00 04 24 00 22 00"), b[6:38], mustHex(t, "78 05")))
	equal(t, "addresses", b[6:38], cat(mustHex(t, "aa"), fill(15, 0), mustHex(t, "bb"), fill(15, 0)))
	got, err := wire.ParseMtuExceeded(b)
	if err != nil || got != m {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	// test_mtu_exceeded_boundary_mtu_values.
	for _, mtu := range []uint16{0, 1280, 1500, 0xFFFF} {
		got, err := wire.ParseMtuExceeded(marshal(t, wire.MtuExceeded{MTU: mtu}))
		if err != nil || got.MTU != mtu {
			t.Errorf("mtu %d: %v %d", mtu, err, got.MTU)
		}
	}
}

func TestSignalRejects(t *testing.T) {
	cr := marshal(t, wire.CoordsRequired{DestAddr: addrOf(1), Reporter: addrOf(2)})
	pb := marshal(t, wire.PathBroken{DestAddr: addrOf(1), Reporter: addrOf(2), LastKnownCoords: fspCoords(1, 0xF0)})
	me := marshal(t, wire.MtuExceeded{DestAddr: addrOf(1), Reporter: addrOf(2), MTU: 1280})
	// withPlen fixes payload_len after a cut or extension, so the check
	// under test is the one that fails.
	withPlen := func(b []byte) []byte {
		b = bytes.Clone(b)
		if len(b) >= 4 {
			b[2], b[3] = byte(len(b)-4), byte((len(b)-4)>>8)
		}
		return b
	}
	set := func(b []byte, i int, v byte) []byte { b = bytes.Clone(b); b[i] = v; return b }
	parsers := map[string]func([]byte) error{
		"CoordsRequired": func(b []byte) error { _, err := wire.ParseCoordsRequired(b); return err },
		"PathBroken":     func(b []byte) error { _, err := wire.ParsePathBroken(b); return err },
		"MtuExceeded":    func(b []byte) error { _, err := wire.ParseMtuExceeded(b); return err },
	}
	cases := []struct {
		parser, name string
		b            []byte
		kind         error
	}{
		// test_*_decode_too_short: empty and 10-byte bodies.
		{"CoordsRequired", "empty", nil, wire.ErrTruncated},
		{"CoordsRequired", "10-byte body", withPlen(cr[:15]), wire.ErrTruncated},
		{"PathBroken", "empty", nil, wire.ErrTruncated},
		{"PathBroken", "20-byte body", withPlen(pb[:25]), wire.ErrTruncated},
		{"MtuExceeded", "empty", nil, wire.ErrTruncated},
		{"MtuExceeded", "20-byte body", withPlen(me[:25]), wire.ErrTruncated},
		{"MtuExceeded", "one byte short", withPlen(me[:39]), wire.ErrTruncated},
		{"PathBroken", "no coords count", withPlen(pb[:39]), wire.ErrTruncated},
		{"PathBroken", "coords cut", withPlen(pb[:len(pb)-1]), wire.ErrTruncated},
		{"CoordsRequired", "trailing", withPlen(append(bytes.Clone(cr), 0)), wire.ErrLength},
		{"PathBroken", "trailing", withPlen(append(bytes.Clone(pb), 0)), wire.ErrLength},
		{"MtuExceeded", "trailing", withPlen(append(bytes.Clone(me), 0)), wire.ErrLength},
		{"CoordsRequired", "payload_len over", set(cr, 2, 35), wire.ErrTruncated},
		{"CoordsRequired", "payload_len under", set(cr, 2, 33), wire.ErrLength},
		{"MtuExceeded", "payload_len under", set(me, 2, 35), wire.ErrLength},
		{"CoordsRequired", "U clear", set(cr, 1, 0x00), wire.ErrFlags},
		{"CoordsRequired", "CP|K without U", set(cr, 1, 0x03), wire.ErrFlags},
		{"CoordsRequired", "version 1", set(cr, 0, 0x10), wire.ErrVersion},
		{"CoordsRequired", "phase 1", set(cr, 0, 0x01), wire.ErrPhase},
		{"CoordsRequired", "is a PathBroken", pb, wire.ErrType},
		{"PathBroken", "is an MtuExceeded", me, wire.ErrType},
		{"MtuExceeded", "is a CoordsRequired", cr, wire.ErrType},
		{"MtuExceeded", "type 0x23", set(me, 4, 0x23), wire.ErrType},
	}
	for _, c := range cases {
		err := parsers[c.parser](c.b)
		if err == nil {
			t.Errorf("%s %s: accepted", c.parser, c.name)
			continue
		}
		t.Run(c.parser+"/"+c.name, func(t *testing.T) { wantKind(t, err, c.kind) })
	}
}

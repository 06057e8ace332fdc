package wire_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

func TestMsgTypeNames(t *testing.T) {
	for _, c := range []struct {
		t    wire.MsgType
		b    byte
		name string
	}{
		{wire.MsgSessionDatagram, 0x00, "SessionDatagram"},
		{wire.MsgSenderReport, 0x01, "SenderReport"},
		{wire.MsgReceiverReport, 0x02, "ReceiverReport"},
		{wire.MsgTreeAnnounce, 0x10, "TreeAnnounce"},
		{wire.MsgFilterAnnounce, 0x20, "FilterAnnounce"},
		{wire.MsgLookupRequest, 0x30, "LookupRequest"},
		{wire.MsgLookupResponse, 0x31, "LookupResponse"},
		{wire.MsgDisconnect, 0x50, "Disconnect"},
		{wire.MsgHeartbeat, 0x51, "Heartbeat"},
	} {
		if byte(c.t) != c.b || c.t.String() != c.name || !c.t.Known() {
			t.Errorf("%#x: %q known=%v, want %#x %q", byte(c.t), c.t, c.t.Known(), c.b, c.name)
		}
	}
	// test_link_message_type_invalid
	for _, b := range []byte{0xFF, 0x03, 0x40} {
		if wire.MsgType(b).Known() {
			t.Errorf("%#x should be unknown", b)
		}
	}
	if s := wire.MsgType(0x40).String(); s != "MsgType(0x40)" {
		t.Errorf("unknown type prints %q", s)
	}
}

func TestLinkMsgTypeChecked(t *testing.T) {
	// Every parser insists on its own msg_type and on a non-empty input.
	for name, parse := range map[string]func([]byte) error{
		"SessionDatagram": func(b []byte) error { _, err := wire.ParseSessionDatagram(b); return err },
		"TreeAnnounce":    func(b []byte) error { _, err := wire.ParseTreeAnnounce(b); return err },
		"FilterAnnounce":  func(b []byte) error { _, err := wire.ParseFilterAnnounce(b); return err },
		"LookupRequest":   func(b []byte) error { _, err := wire.ParseLookupRequest(b); return err },
		"LookupResponse":  func(b []byte) error { _, err := wire.ParseLookupResponse(b); return err },
		"Disconnect":      func(b []byte) error { _, err := wire.ParseDisconnect(b); return err },
		"Heartbeat":       func(b []byte) error { _, err := wire.ParseHeartbeat(b); return err },
	} {
		wantKind(t, parse(nil), wire.ErrTruncated)
		wrong := fill(2000, 0)
		wrong[0] = 0x77
		if err := parse(wrong); !errors.Is(err, wire.ErrType) {
			t.Errorf("%s with msg_type 0x77: %v", name, err)
		}
	}
}

func TestSessionDatagramLayout(t *testing.T) {
	// test_session_datagram_encode_decode, with path_mtu 1400.
	src, dst := addrOf(0xAA), addrOf(0xBB)
	payload := []byte{0x10, 0x00, 0x05, 0x00, 1, 2, 3, 4, 5}
	want := cat([]byte{0x00, 32}, le16(1400), src[:], dst[:], payload)
	if want[2] != 0x78 || want[3] != 0x05 {
		t.Fatal("test vector is not little-endian")
	}
	d := wire.SessionDatagram{TTL: 32, PathMTU: 1400, Src: src, Dest: dst, Payload: payload}
	equal(t, "datagram", marshal(t, d), want)
	if len(want) != wire.SessionDatagramHeaderSize+len(payload) {
		t.Fatal("header is not 36 bytes")
	}
	p, err := wire.ParseSessionDatagram(want)
	if err != nil {
		t.Fatal(err)
	}
	if p.TTL != 32 || p.PathMTU != 1400 || p.Src != src || p.Dest != dst {
		t.Fatalf("%+v", p)
	}
	equal(t, "payload", p.Payload, payload)
	// test_session_datagram_ref_decode_borrows_payload
	if &p.Payload[0] != &want[36] {
		t.Fatal("payload must be a view")
	}

	// test_session_datagram_empty_payload
	e := marshal(t, wire.SessionDatagram{TTL: 64, PathMTU: 0xffff, Src: addrOf(1), Dest: addrOf(2)})
	if len(e) != 36 || wire.SessionDatagramHeaderSize != 36 {
		t.Fatalf("empty datagram is %d bytes", len(e))
	}
	if p, err := wire.ParseSessionDatagram(e); err != nil || len(p.Payload) != 0 || p.PathMTU != 0xffff || p.TTL != 64 {
		t.Fatalf("%+v %v", p, err)
	}

	// test_session_datagram_ttl_roundtrip
	for _, ttl := range []uint8{0, 1, 64, 128, 255} {
		b := marshal(t, wire.SessionDatagram{TTL: ttl, Payload: []byte{0x42}})
		if p, err := wire.ParseSessionDatagram(b); err != nil || p.TTL != ttl {
			t.Fatalf("ttl %d: %+v %v", ttl, p, err)
		}
	}

	// test_session_datagram_decode_too_short: needs 35 bytes after msg_type.
	for _, n := range []int{1, 21, 35} {
		_, err := wire.ParseSessionDatagram(fill(n, 0))
		wantKind(t, err, wire.ErrTruncated)
	}

	// In-place header rewrite, as a transit hop does it.
	b := append([]byte(nil), want...)
	p, _ = wire.ParseSessionDatagram(b)
	p.TTL--
	p.PathMTU = 1280
	if _, err := p.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if b[1] != 31 || binary.LittleEndian.Uint16(b[2:]) != 1280 || string(b[36:]) != string(payload) {
		t.Fatalf("in-place rewrite gave %x", b)
	}
}

func fmpTreeAnnounceBytes(seq, ts uint64, parent identity.NodeAddr, entries []wire.AncestryEntry, sig []byte) []byte {
	b := cat([]byte{0x10, 0x01}, le64(seq), le64(ts), parent[:], le16(uint16(len(entries))))
	for _, e := range entries {
		b = cat(b, e.NodeAddr[:], le64(e.Sequence), le64(e.Timestamp))
	}
	return cat(b, sig)
}

func TestTreeAnnounceRootLayout(t *testing.T) {
	node := addrOf(0x05)
	sig := fill(64, 0x5a)
	entries := []wire.AncestryEntry{{NodeAddr: node, Sequence: 1, Timestamp: 5000}}
	want := fmpTreeAnnounceBytes(1, 5000, node, entries, sig)
	// Spot-check the hand layout against the table in the spec.
	if len(want) != 132 || want[0] != 0x10 || want[1] != 0x01 || want[10] != 0x88 || want[11] != 0x13 || want[34] != 1 || want[35] != 0 {
		t.Fatalf("hand-built vector is off: %x", want)
	}

	ta := wire.TreeAnnounce{Sequence: 1, Timestamp: 5000, Parent: node, Ancestry: wire.AncestryOf(entries...), Signature: sig}
	got := marshal(t, ta)
	// test_tree_announce_encode_decode_root: 132 bytes, byte 0 = 0x10.
	equal(t, "root TreeAnnounce", got, want)

	p, err := wire.ParseTreeAnnounce(want)
	if err != nil {
		t.Fatal(err)
	}
	if p.Node() != node || p.Parent != node || p.Sequence != 1 || p.Timestamp != 5000 || !p.IsRoot() || p.Root() != node {
		t.Fatalf("%+v", p)
	}
	if p.Ancestry.Len() != 1 || p.Ancestry.At(0) != entries[0] {
		t.Fatalf("ancestry %+v", p.Ancestry.At(0))
	}
	equal(t, "signature", p.Signature, sig)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	equal(t, "re-encoded", marshal(t, p), want)

	// The signature covers the 48-byte declaration only.
	sb := p.SigningBytes(nil)
	equal(t, "signing bytes", sb, cat(node[:], node[:], le64(1), le64(5000)))
	if len(sb) != wire.DeclarationSigningSize || wire.DeclarationSigningSize != 48 {
		t.Fatalf("signing bytes %d", len(sb))
	}
}

func TestTreeAnnounceDepth3(t *testing.T) {
	// test_tree_announce_encode_decode_depth3 (the decoder does not
	// enforce the ancestry rules; Validate does).
	node, parent, gp, root := addrOf(9), addrOf(2), addrOf(3), addrOf(4)
	entries := []wire.AncestryEntry{
		{NodeAddr: node, Sequence: 5, Timestamp: 10000},
		{NodeAddr: parent, Sequence: 4, Timestamp: 9000},
		{NodeAddr: gp, Sequence: 3, Timestamp: 8000},
		{NodeAddr: root, Sequence: 2, Timestamp: 7000},
	}
	want := fmpTreeAnnounceBytes(5, 10000, parent, entries, fill(64, 1))
	if len(want) != 228 {
		t.Fatalf("len %d", len(want))
	}
	p, err := wire.ParseTreeAnnounce(want)
	if err != nil {
		t.Fatal(err)
	}
	if p.IsRoot() || p.Node() != node || p.Parent != parent || p.Root() != root || p.Ancestry.Len() != 4 {
		t.Fatalf("%+v", p)
	}
	for i, e := range entries {
		if p.Ancestry.At(i) != e {
			t.Fatalf("entry %d = %+v, want %+v", i, p.Ancestry.At(i), e)
		}
	}
	equal(t, "re-encoded", marshal(t, p), want)
	// Root 04 is not the minimum: 02 and 03 are smaller.
	wantKind(t, p.Validate(), wire.ErrValue)

	// Trailing bytes are ignored, as upstream's reader does.
	p2, err := wire.ParseTreeAnnounce(append(append([]byte(nil), want...), 0xde, 0xad))
	if err != nil || p2.Len() != 228 {
		t.Fatalf("trailing bytes: %v len %d", err, p2.Len())
	}
}

func TestTreeAnnounceRejects(t *testing.T) {
	node := addrOf(7)
	root := fmpTreeAnnounceBytes(1, 1000, node, []wire.AncestryEntry{{NodeAddr: node, Sequence: 1, Timestamp: 1000}}, fill(64, 0))
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), root...)) }
	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		// test_tree_announce_decode_unsupported_version
		{"version 0xff", mod(func(b []byte) []byte { b[1] = 0xff; return b }), wire.ErrVersion},
		{"version 0", mod(func(b []byte) []byte { b[1] = 0; return b }), wire.ErrVersion},
		// test_tree_announce_decode_truncated: 99 bytes after msg_type minimum.
		{"2 bytes", []byte{0x10, 0x01}, wire.ErrTruncated},
		{"99 bytes", mod(func(b []byte) []byte { return b[:99] }), wire.ErrTruncated},
		// test_tree_announce_decode_ancestry_count_mismatch
		{"count 5, one entry", mod(func(b []byte) []byte { b[34] = 5; return b }), wire.ErrTruncated},
		{"signature cut", mod(func(b []byte) []byte { return b[:131] }), wire.ErrTruncated},
		{"count 0", mod(func(b []byte) []byte { b[34] = 0; return b[:100] }), wire.ErrValue},
		{"count 0 with spare bytes", mod(func(b []byte) []byte { b[34] = 0; return b }), wire.ErrValue},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.ParseTreeAnnounce(c.b)
			wantKind(t, err, c.kind)
		})
	}
}

func TestTreeAnnounceValidate(t *testing.T) {
	mk := func(node, parent identity.NodeAddr, path ...identity.NodeAddr) wire.TreeAnnounce {
		es := []wire.AncestryEntry{{NodeAddr: node, Sequence: 5, Timestamp: 1000}}
		for i, a := range path {
			es = append(es, wire.AncestryEntry{NodeAddr: a, Sequence: uint64(4 - i), Timestamp: uint64(900 - 100*i)})
		}
		b := fmpTreeAnnounceBytes(5, 1000, parent, es, fill(64, 0))
		ta, err := wire.ParseTreeAnnounce(b)
		if err != nil {
			t.Fatal(err)
		}
		return ta
	}
	me := addrOf(0x80)
	// test_tree_announce_validate_semantics_accepts_valid_non_root
	if err := mk(me, addrOf(2), addrOf(2), addrOf(1)).Validate(); err != nil {
		t.Fatalf("valid non-root: %v", err)
	}
	for name, ta := range map[string]wire.TreeAnnounce{
		// ..._rejects_non_minimal_root
		"root not minimum": mk(me, addrOf(0), addrOf(0), addrOf(1)),
		// ..._rejects_parent_mismatch
		"parent mismatch": mk(me, addrOf(2), addrOf(3), addrOf(1)),
		// ..._rejects_root_with_ancestors
		"root with ancestors": mk(me, me, addrOf(0)),
		// A non-root declaration needs its parent in the ancestry.
		"non-root without parent entry": mk(me, addrOf(1)),
		// The declaring node itself smaller than the advertised root.
		"self below root": mk(addrOf(0), addrOf(2), addrOf(2), addrOf(1)),
	} {
		t.Run(name, func(t *testing.T) { wantKind(t, ta.Validate(), wire.ErrValue) })
	}
	// A root whose single entry is itself is trivially the minimum.
	if err := mk(me, me).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTreeAnnounceMarshalRejects(t *testing.T) {
	good := wire.TreeAnnounce{Parent: addrOf(1), Ancestry: wire.AncestryOf(wire.AncestryEntry{NodeAddr: addrOf(1)}), Signature: fill(64, 0)}
	buf := make([]byte, 4096)
	if _, err := good.MarshalTo(buf); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Signature = nil // test_tree_announce_encode_unsigned_fails
	if _, err := bad.MarshalTo(buf); !errors.Is(err, wire.ErrLength) {
		t.Fatalf("unsigned: %v", err)
	}
	bad = good
	bad.Ancestry = nil
	if _, err := bad.MarshalTo(buf); !errors.Is(err, wire.ErrValue) {
		t.Fatalf("empty ancestry: %v", err)
	}
	// A hand-built announce with no ancestry neither panics nor validates.
	if (wire.TreeAnnounce{}).Root() != (identity.NodeAddr{}) || (wire.TreeAnnounce{}).Node() != (identity.NodeAddr{}) {
		t.Fatal("empty ancestry has a node or root")
	}
	wantKind(t, wire.TreeAnnounce{}.Validate(), wire.ErrValue)
	bad = good
	bad.Ancestry = bad.Ancestry[:31]
	if _, err := bad.MarshalTo(buf); !errors.Is(err, wire.ErrValue) {
		t.Fatalf("ragged ancestry: %v", err)
	}
}

func TestFilterAnnounceLayout(t *testing.T) {
	// test_filter_announce_encode_decode_roundtrip
	filter := make([]byte, wire.BloomFilterBytes)
	wire.BloomSet(filter, addrOf(42), wire.BloomHashCount)
	wire.BloomSet(filter, addrOf(99), wire.BloomHashCount)
	want := cat([]byte{0x20}, le64(500), []byte{5, 1}, filter)
	fa := wire.FilterAnnounce{Sequence: 500, HashCount: 5, SizeClass: 1, Filter: filter}
	got := marshal(t, fa)
	equal(t, "FilterAnnounce", got, want)
	if len(got) != 1035 || wire.FilterAnnounceSize != 1035 || got[0] != 0x20 {
		t.Fatalf("len %d byte0 %#x", len(got), got[0])
	}
	p, err := wire.ParseFilterAnnounce(want)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sequence != 500 || p.HashCount != 5 || p.SizeClass != 1 || len(p.Filter) != 1024 {
		t.Fatalf("%+v", p)
	}
	if &p.Filter[0] != &want[11] {
		t.Fatal("filter must be a view")
	}
	if !wire.BloomTest(p.Filter, addrOf(42), 5) || !wire.BloomTest(p.Filter, addrOf(99), 5) || wire.BloomTest(p.Filter, addrOf(1), 5) {
		t.Fatal("filter contents not preserved")
	}
}

func TestFilterAnnounceRejects(t *testing.T) {
	good := cat([]byte{0x20}, le64(100), []byte{5, 1}, make([]byte, 1024))
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		// test_filter_announce_decode_rejects_bad_size_class
		{"size_class 5", mod(func(b []byte) []byte { b[10] = 5; return b }), wire.ErrValue},
		{"size_class 4", mod(func(b []byte) []byte { b[10] = 4; return b }), wire.ErrValue},
		// test_filter_announce_decode_rejects_non_v1_size_class
		{"size_class 0", cat([]byte{0x20}, le64(100), []byte{5, 0}, make([]byte, 512)), wire.ErrValue},
		{"size_class 2", cat([]byte{0x20}, le64(100), []byte{5, 2}, make([]byte, 2048)), wire.ErrValue},
		{"size_class 3", cat([]byte{0x20}, le64(100), []byte{5, 3}, make([]byte, 4096)), wire.ErrValue},
		// test_filter_announce_decode_rejects_truncated
		{"6 bytes", fill(6, 0x20), wire.ErrTruncated},
		{"header only", good[:11], wire.ErrTruncated},
		{"filter one short", good[:1034], wire.ErrTruncated},
		{"filter one long", append(mod(func(b []byte) []byte { return b }), 0), wire.ErrLength},
		{"hash_count 0", mod(func(b []byte) []byte { b[9] = 0; return b }), wire.ErrValue},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.ParseFilterAnnounce(c.b)
			wantKind(t, err, c.kind)
		})
	}
	// Any non-zero hash_count is accepted on the wire.
	if _, err := wire.ParseFilterAnnounce(mod(func(b []byte) []byte { b[9] = 0xff; return b })); err != nil {
		t.Fatal(err)
	}
	// The encoder checks size against class, like upstream's is_valid,
	// but allows non-v1 classes.
	if _, err := (wire.FilterAnnounce{SizeClass: 1, Filter: make([]byte, 512)}).MarshalTo(make([]byte, 2000)); !errors.Is(err, wire.ErrValue) {
		t.Fatalf("mismatched size: %v", err)
	}
	if b := marshal(t, wire.FilterAnnounce{HashCount: 7, SizeClass: 2, Filter: make([]byte, 2048)}); len(b) != 11+2048 || b[10] != 2 {
		t.Fatalf("size_class 2 encode: %d", len(b))
	}
}

func TestLookupRequestLayout(t *testing.T) {
	// test_lookup_request_encode_decode_roundtrip (after one forward: ttl 7).
	target, origin := addrOf(10), addrOf(20)
	coords := wire.CoordsOf(addrOf(20), addrOf(0))
	want := cat([]byte{0x30}, le64(12345), target[:], origin[:], []byte{7}, le16(1386), le16(2), coords)
	if len(want) != 46+2*16 {
		t.Fatalf("len %d", len(want))
	}
	r := wire.LookupRequest{RequestID: 12345, Target: target, Origin: origin, TTL: 7, MinMTU: 1386, OriginCoords: coords}
	equal(t, "LookupRequest", marshal(t, r), want)
	p, err := wire.ParseLookupRequest(want)
	if err != nil {
		t.Fatal(err)
	}
	if p.RequestID != 12345 || p.Target != target || p.Origin != origin || p.TTL != 7 || p.MinMTU != 1386 || p.OriginCoords.Len() != 2 || p.OriginCoords.At(1) != addrOf(0) {
		t.Fatalf("%+v", p)
	}
	// test_lookup_request_min_mtu_boundary_values
	for _, mtu := range []uint16{0, 1386, 0xffff} {
		r.MinMTU = mtu
		if p, err := wire.ParseLookupRequest(marshal(t, r)); err != nil || p.MinMTU != mtu {
			t.Fatalf("min_mtu %d: %+v %v", mtu, p, err)
		}
	}
	// Trailing bytes are ignored.
	if _, err := wire.ParseLookupRequest(append(append([]byte(nil), want...), 1, 2, 3)); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		// test_lookup_request_decode_too_short
		{"43 bytes", cat([]byte{0x30}, make([]byte, 42)), wire.ErrTruncated},
		{"45 bytes", want[:45], wire.ErrTruncated},
		{"count 0", cat(want[:44], le16(0)), wire.ErrValue},
		{"count 3, two entries", cat(want[:44], le16(3), coords), wire.ErrTruncated},
		{"last entry cut", want[:len(want)-1], wire.ErrTruncated},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.ParseLookupRequest(c.b)
			wantKind(t, err, c.kind)
		})
	}
	if _, err := (wire.LookupRequest{}).MarshalTo(make([]byte, 100)); !errors.Is(err, wire.ErrValue) {
		t.Fatalf("no coords: %v", err)
	}
}

func TestLookupResponseLayout(t *testing.T) {
	target := addrOf(42)
	coords := wire.CoordsOf(addrOf(42), addrOf(1), addrOf(0))
	proof := fill(64, 0x77)
	want := cat([]byte{0x31}, le64(999), target[:], le16(0xffff), le16(3), coords, proof)
	if len(want) != 93+3*16 {
		t.Fatalf("len %d", len(want))
	}
	r := wire.LookupResponse{RequestID: 999, Target: target, PathMTU: 0xffff, TargetCoords: coords, Proof: proof}
	equal(t, "LookupResponse", marshal(t, r), want)
	p, err := wire.ParseLookupResponse(want)
	if err != nil {
		t.Fatal(err)
	}
	if p.RequestID != 999 || p.Target != target || p.PathMTU != 0xffff || p.TargetCoords.Len() != 3 {
		t.Fatalf("%+v", p)
	}
	equal(t, "proof", p.Proof, proof)
	// test_lookup_response_path_mtu_roundtrip
	for _, mtu := range []uint16{0, 1280, 1386, 9000, 0xffff} {
		r.PathMTU = mtu
		if p, err := wire.ParseLookupResponse(marshal(t, r)); err != nil || p.PathMTU != mtu {
			t.Fatalf("path_mtu %d: %+v %v", mtu, p, err)
		}
	}

	for _, c := range []struct {
		name string
		b    []byte
		kind error
	}{
		// test_lookup_response_decode_too_short
		{"empty body", []byte{0x31}, wire.ErrTruncated},
		{"51 bytes", cat([]byte{0x31}, make([]byte, 50)), wire.ErrTruncated},
		{"92 bytes", want[:92], wire.ErrTruncated},
		{"proof cut", want[:len(want)-1], wire.ErrTruncated},
		{"count 0", cat(want[:27], le16(0), make([]byte, 200)), wire.ErrValue},
		{"count past end", cat(want[:27], le16(9), coords, proof), wire.ErrTruncated},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.ParseLookupResponse(c.b)
			wantKind(t, err, c.kind)
		})
	}
	if _, err := (wire.LookupResponse{TargetCoords: coords}).MarshalTo(make([]byte, 500)); !errors.Is(err, wire.ErrLength) {
		t.Fatalf("no proof: %v", err)
	}
}

func TestLookupResponseProofBytes(t *testing.T) {
	// test_lookup_response_proof_bytes / ..._path_mtu_not_in_proof_bytes
	target := addrOf(42)
	r := wire.LookupResponse{RequestID: 12345, Target: target, PathMTU: 1280, TargetCoords: wire.CoordsOf(addrOf(42), addrOf(1), addrOf(0))}
	b := r.ProofBytes(nil)
	if len(b) != 74 {
		t.Fatalf("proof bytes %d, want 74", len(b))
	}
	equal(t, "request_id", b[0:8], []byte{0x39, 0x30, 0, 0, 0, 0, 0, 0})
	equal(t, "target", b[8:24], target[:])
	equal(t, "count", b[24:26], []byte{0x03, 0x00})
	equal(t, "coords", b[26:], r.TargetCoords)
	// Appends to dst.
	if b2 := r.ProofBytes([]byte{0xee}); len(b2) != 75 || b2[0] != 0xee {
		t.Fatal("ProofBytes must append")
	}
}

func TestDisconnect(t *testing.T) {
	// test_disconnect_encode_decode
	b := marshal(t, wire.Disconnect{Reason: wire.DisconnectShutdown})
	equal(t, "Disconnect", b, []byte{0x50, 0x00})

	names := map[wire.DisconnectReason]string{
		0x00: "Shutdown", 0x01: "Restart", 0x02: "ProtocolError", 0x03: "TransportFailure",
		0x04: "ResourceExhaustion", 0x05: "SecurityViolation", 0x06: "ConfigurationChange",
		0x07: "Timeout", 0xff: "Other",
	}
	for r, name := range names {
		if r.String() != name || !r.Known() {
			t.Errorf("%#x: %q known=%v, want %q", byte(r), r, r.Known(), name)
		}
		p, err := wire.ParseDisconnect(marshal(t, wire.Disconnect{Reason: r}))
		if err != nil || p.Reason != r {
			t.Errorf("round trip %s: %+v %v", name, p, err)
		}
	}
	// test_disconnect_decode_unknown_reason / test_disconnect_reason_unknown_byte
	for _, code := range []byte{0x08, 0x80, 0xfe} {
		if wire.DisconnectReason(code).Known() {
			t.Errorf("%#x should be unknown", code)
		}
		p, err := wire.ParseDisconnect([]byte{0x50, code})
		if err != nil || p.Reason != wire.DisconnectOther {
			t.Errorf("reason %#x: %+v %v", code, p, err)
		}
	}
	// test_disconnect_decode_empty_payload
	_, err := wire.ParseDisconnect([]byte{0x50})
	wantKind(t, err, wire.ErrTruncated)
	// Trailing bytes are ignored.
	if p, err := wire.ParseDisconnect([]byte{0x50, 0x07, 0xaa}); err != nil || p.Reason != wire.DisconnectTimeout {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestHeartbeat(t *testing.T) {
	equal(t, "Heartbeat", marshal(t, wire.Heartbeat{}), []byte{0x51})
	if _, err := wire.ParseHeartbeat([]byte{0x51}); err != nil {
		t.Fatal(err)
	}
	// Upstream does not look past the msg_type.
	if _, err := wire.ParseHeartbeat([]byte{0x51, 1, 2}); err != nil {
		t.Fatal(err)
	}
}

package dissect_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/control/wire/dissect"
)

// fmpJSON dissects b as layer and returns the JSON object it marshals to.
func fmpJSON(t *testing.T, b []byte, layer dissect.Layer) map[string]any {
	t.Helper()
	v, err := dissect.Decode(b, layer)
	if err != nil {
		t.Fatalf("Decode(%s): %v", layer, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return m
}

// fmpWant compares selected fields of a decoded JSON object. Keys may be
// dotted paths into nested objects; numbers compare as float64.
func fmpWant(t *testing.T, m map[string]any, want map[string]any) {
	t.Helper()
	for path, w := range want {
		var cur any = m
		for _, k := range strings.Split(path, ".") {
			obj, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%s: %v is not an object", path, cur)
			}
			if cur, ok = obj[k]; !ok {
				t.Fatalf("%s: no key %q in %v", path, k, obj)
			}
		}
		if n, ok := w.(int); ok {
			w = float64(n)
		}
		if !reflect.DeepEqual(cur, w) {
			t.Errorf("%s = %#v, want %#v", path, cur, w)
		}
	}
}

func fmpTestAddr(v byte) identity.NodeAddr {
	var a identity.NodeAddr
	a[0] = v
	return a
}

func fmpEncode(t *testing.T, v interface {
	Len() int
	MarshalTo([]byte) (int, error)
}) []byte {
	t.Helper()
	b := make([]byte, v.Len())
	if _, err := v.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// fmpPlain prefixes a link message with an inner timestamp.
func fmpPlain(ts uint32, msg []byte) []byte {
	return append([]byte{byte(ts), byte(ts >> 8), byte(ts >> 16), byte(ts >> 24)}, msg...)
}

func fmpSeq(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func TestDissectFMPMsg1(t *testing.T) {
	noise := fmpSeq(106, 0)
	b := fmpEncode(t, wire.FMPMsg1{SenderIndex: 0xDEADBEEF, Noise: noise})
	for _, layer := range []dissect.Layer{dissect.FMP, dissect.Auto} {
		m := fmpJSON(t, b, layer)
		fmpWant(t, m, map[string]any{
			"layer": "fmp", "type": "msg1", "phase": 1, "flags": 0, "payload_len": 110,
			"sender_idx":             0xDEADBEEF,
			"noise.hex":              hex.EncodeToString(noise),
			"noise.ephemeral":        hex.EncodeToString(noise[:33]),
			"noise.encrypted_static": hex.EncodeToString(noise[33:82]),
			"noise.encrypted_epoch":  hex.EncodeToString(noise[82:]),
		})
	}
}

func TestDissectFMPMsg2(t *testing.T) {
	noise := fmpSeq(57, 0x80)
	b := fmpEncode(t, wire.FMPMsg2{SenderIndex: 7, ReceiverIndex: 0xDEADBEEF, Noise: noise})
	fmpWant(t, fmpJSON(t, b, dissect.FMP), map[string]any{
		"layer": "fmp", "type": "msg2", "phase": 2, "flags": 0, "payload_len": 65,
		"sender_idx": 7, "receiver_idx": 0xDEADBEEF,
		"noise.hex":             hex.EncodeToString(noise),
		"noise.ephemeral":       hex.EncodeToString(noise[:33]),
		"noise.encrypted_epoch": hex.EncodeToString(noise[33:]),
	})
}

func TestDissectFMPFrame(t *testing.T) {
	// The digest's first IK frame: flags 0, receiver 0x01020304, Heartbeat.
	b, _ := hex.DecodeString("000005000403020100000000000000001eab59320210492046bd30e3654eb06ad54545fefd")
	fmpWant(t, fmpJSON(t, b, dissect.FMP), map[string]any{
		"layer": "fmp", "type": "frame", "phase": 0, "flags": 0, "flag_names": []any{},
		"payload_len": 5, "receiver_idx": 0x01020304, "counter": 0,
		"aad":            "00000500040302010000000000000000",
		"ciphertext_len": 21,
		"tag":            hex.EncodeToString(b[len(b)-16:]),
	})

	f := make([]byte, 40)
	if _, err := wire.PutFMPFrameHeader(f, wire.FMPFlagK|wire.FMPFlagSP|0x40, 9, 1<<40, 8); err != nil {
		t.Fatal(err)
	}
	fmpWant(t, fmpJSON(t, f, dissect.FMP), map[string]any{
		"flags": 0x45, "flag_names": []any{"K", "SP", "reserved=0x40"}, "counter": float64(1 << 40), "receiver_idx": 9,
	})
	f[1] = wire.FMPFlagCE
	fmpWant(t, fmpJSON(t, f, dissect.FMP), map[string]any{"flag_names": []any{"CE"}})
}

// Version-1 (next) packets: XX handshakes with their parts labelled, and
// frames with their version.
func TestDissectFMPv1(t *testing.T) {
	noise := make([]byte, wire.XXMsg2Size+26)
	for i := range noise {
		noise[i] = byte(i)
	}
	b := make([]byte, wire.FMPv1Msg2MinSize+26)
	if _, err := (wire.FMPv1Handshake{Phase: wire.FMPPhaseMsg2, SenderIndex: 5, ReceiverIndex: 6, Noise: noise}).MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	fmpWant(t, fmpJSON(t, b, dissect.FMP), map[string]any{
		"layer": "fmp", "type": "msg2", "version": 1, "phase": 2, "payload_len": 140, "sender_idx": 5, "receiver_idx": 6,
		"noise": map[string]any{
			"hex":               hex.EncodeToString(noise),
			"ephemeral":         hex.EncodeToString(noise[:33]),
			"encrypted_static":  hex.EncodeToString(noise[33:82]),
			"encrypted_epoch":   hex.EncodeToString(noise[82:106]),
			"encrypted_payload": hex.EncodeToString(noise[106:]),
		},
	})
	m1 := make([]byte, wire.FMPv1Msg1Size)
	if _, err := (wire.FMPv1Handshake{Phase: wire.FMPPhaseMsg1, SenderIndex: 7, Noise: noise[:33]}).MarshalTo(m1); err != nil {
		t.Fatal(err)
	}
	got := fmpJSON(t, m1, dissect.FMP)
	fmpWant(t, got, map[string]any{"type": "msg1", "sender_idx": 7, "noise": map[string]any{"hex": hex.EncodeToString(noise[:33]), "ephemeral": hex.EncodeToString(noise[:33])}})
	if _, ok := got["receiver_idx"]; ok {
		t.Error("msg1 shows a receiver_idx")
	}
	f := make([]byte, 40)
	if _, err := wire.PutFMPv1FrameHeader(f, wire.FMPFlagCE, 9, 3, 8); err != nil {
		t.Fatal(err)
	}
	fmpWant(t, fmpJSON(t, f, dissect.FMP), map[string]any{"type": "frame", "version": 1, "flag_names": []any{"CE"}, "receiver_idx": 9, "counter": 3})
}

func TestDissectFMPRejects(t *testing.T) {
	bad := [][]byte{
		nil,
		{0x00, 0x00, 0x05},
		append([]byte{0x01, 0x01, 110, 0}, make([]byte, 110)...), // msg1 with flags
		append([]byte{0x00, 0x00, 9, 0}, make([]byte, 36)...),    // payload_len mismatch
		append([]byte{0x20, 0x00, 8, 0}, make([]byte, 36)...),    // version 2
		append([]byte{0x14, 0x00, 8, 0}, make([]byte, 36)...),    // version 1, phase 4
		append([]byte{0x12, 0x00, 110, 0}, make([]byte, 110)...), // version 1 msg2 below its minimum
		append([]byte{0x03, 0x00, 8, 0}, make([]byte, 36)...),    // phase 3
	}
	for _, b := range bad {
		_, err := dissect.Decode(b, dissect.FMP)
		var de *wire.DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%x: got %v, want a *wire.DecodeError", b, err)
		}
	}
}

func TestDissectFMPInnerHeartbeatAndDisconnect(t *testing.T) {
	fmpWant(t, fmpJSON(t, fmpPlain(1234, []byte{0x51}), dissect.FMPInner), map[string]any{
		"layer": "fmp-inner", "timestamp": 1234, "msg_type": 0x51, "msg_type_name": "Heartbeat",
		"body": map[string]any{},
	})
	fmpWant(t, fmpJSON(t, fmpPlain(0, []byte{0x50, 0x05}), dissect.FMPInner), map[string]any{
		"msg_type": 0x50, "msg_type_name": "Disconnect", "body.reason": 5, "body.reason_name": "SecurityViolation",
	})
	fmpWant(t, fmpJSON(t, fmpPlain(0, []byte{0x50, 0x42}), dissect.FMPInner), map[string]any{
		"body.reason": 0x42, "body.reason_name": "Other",
	})
}

func TestDissectFMPInnerSessionDatagram(t *testing.T) {
	src, dst := fmpTestAddr(0xaa), fmpTestAddr(0xbb)
	signal := fmpEncode(t, wire.CoordsRequired{DestAddr: dst, Reporter: fmpTestAddr(0xcc)})
	for name, c := range map[string]struct {
		payload []byte
		wantFSP bool
	}{
		"CoordsRequired": {signal, true},
		"not FSP":        {[]byte{0x00, 0x04, 0x22, 0x00, 0x20}, false},
	} {
		t.Run(name, func(t *testing.T) {
			d := fmpEncode(t, wire.SessionDatagram{TTL: 63, PathMTU: 1280, Src: src, Dest: dst, Payload: c.payload})
			m := fmpJSON(t, fmpPlain(77, d), dissect.FMPInner)
			fmpWant(t, m, map[string]any{
				"msg_type": 0, "msg_type_name": "SessionDatagram",
				"body.ttl": 63, "body.path_mtu": 1280, "body.src": src.String(), "body.dest": dst.String(),
				"body.payload_len": len(c.payload),
			})
			// The FSP dissection, or the reason there is none, is embedded
			// exactly as the FSP dissector gives it.
			body := m["body"].(map[string]any)
			_, hasFSP := body["fsp"]
			_, hasErr := body["fsp_error"]
			if hasFSP == hasErr || hasFSP != c.wantFSP {
				t.Fatalf("fsp present %v, fsp_error present %v, want fsp %v: %v", hasFSP, hasErr, c.wantFSP, body)
			}
			want, ferr := dissect.Decode(c.payload, dissect.FSP)
			if hasErr {
				if ferr == nil || body["fsp_error"] != ferr.Error() {
					t.Fatalf("fsp_error %q, FSP dissector says %v", body["fsp_error"], ferr)
				}
				return
			}
			raw, _ := json.Marshal(want)
			got, _ := json.Marshal(body["fsp"])
			var a, b any
			_ = json.Unmarshal(raw, &a)
			_ = json.Unmarshal(got, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("embedded fsp %s, FSP dissector says %s", got, raw)
			}
		})
	}
	// The digest's total for this packet on the wire: 16 + 4 + 36 + 38 + 16.
	if n := wire.FMPHeaderSize + 4 + wire.SessionDatagramHeaderSize + len(signal) + wire.FMPTagSize; n != 110 {
		t.Fatalf("SessionDatagram+CoordsRequired frame is %d bytes, want 110", n)
	}
}

func TestDissectFMPInnerTreeAnnounce(t *testing.T) {
	node, parent, root := fmpTestAddr(0x30), fmpTestAddr(0x20), fmpTestAddr(0x10)
	sig := fmpSeq(64, 1)
	ta := wire.TreeAnnounce{
		Sequence: 5, Timestamp: 1700000000, Parent: parent, Signature: sig,
		Ancestry: wire.AncestryOf(
			wire.AncestryEntry{NodeAddr: node, Sequence: 5, Timestamp: 1700000000},
			wire.AncestryEntry{NodeAddr: parent, Sequence: 4, Timestamp: 1699999990},
			wire.AncestryEntry{NodeAddr: root, Sequence: 3, Timestamp: 1699999980},
		),
	}
	m := fmpJSON(t, fmpPlain(9, fmpEncode(t, ta)), dissect.FMPInner)
	fmpWant(t, m, map[string]any{
		"msg_type": 0x10, "msg_type_name": "TreeAnnounce",
		"body.version": 1, "body.sequence": 5, "body.timestamp": 1700000000,
		"body.node": node.String(), "body.parent": parent.String(), "body.is_root": false,
		"body.signature": hex.EncodeToString(sig),
		"body.ancestry": []any{
			map[string]any{"node_addr": node.String(), "sequence": float64(5), "timestamp": float64(1700000000)},
			map[string]any{"node_addr": parent.String(), "sequence": float64(4), "timestamp": float64(1699999990)},
			map[string]any{"node_addr": root.String(), "sequence": float64(3), "timestamp": float64(1699999980)},
		},
	})
	if _, ok := m["body"].(map[string]any)["ancestry_error"]; ok {
		t.Fatalf("valid ancestry reported an error: %v", m["body"])
	}
	// A root that is not the minimum is shown, with the reason it fails.
	ta.Ancestry = wire.AncestryOf(
		wire.AncestryEntry{NodeAddr: node}, wire.AncestryEntry{NodeAddr: parent}, wire.AncestryEntry{NodeAddr: fmpTestAddr(0x40)},
	)
	m = fmpJSON(t, fmpPlain(9, fmpEncode(t, ta)), dissect.FMPInner)
	if e, _ := m["body"].(map[string]any)["ancestry_error"].(string); !strings.Contains(e, "minimum") {
		t.Fatalf("ancestry_error %q", e)
	}
}

func TestDissectFMPInnerFilterAnnounce(t *testing.T) {
	filter := make([]byte, wire.BloomFilterBytes)
	for i := 0; i < 10; i++ {
		wire.BloomSet(filter, fmpTestAddr(byte(i)), wire.BloomHashCount)
	}
	want := 0
	for _, x := range filter {
		for ; x != 0; x &= x - 1 {
			want++
		}
	}
	fa := wire.FilterAnnounce{Sequence: 77, HashCount: 5, SizeClass: 1, Filter: filter}
	m := fmpJSON(t, fmpPlain(0, fmpEncode(t, fa)), dissect.FMPInner)
	fmpWant(t, m, map[string]any{
		"msg_type_name": "FilterAnnounce", "body.sequence": 77, "body.hash_count": 5,
		"body.size_class": 1, "body.filter_bytes": 1024, "body.bits_set": want,
	})
	if raw, _ := json.Marshal(m); len(raw) > 400 {
		t.Fatalf("FilterAnnounce dissection is %d bytes; the filter must not be dumped", len(raw))
	}
}

func TestDissectFMPInnerLookups(t *testing.T) {
	target, origin := fmpTestAddr(1), fmpTestAddr(2)
	req := wire.LookupRequest{RequestID: 0xfedcba9876543210, Target: target, Origin: origin, TTL: 64, MinMTU: 1386,
		OriginCoords: wire.CoordsOf(origin, fmpTestAddr(0))}
	fmpWant(t, fmpJSON(t, fmpPlain(0, fmpEncode(t, req)), dissect.FMPInner), map[string]any{
		"msg_type_name": "LookupRequest", "body.request_id": "18364758544493064720",
		"body.target": target.String(), "body.origin": origin.String(), "body.ttl": 64, "body.min_mtu": 1386,
		"body.origin_coords": []any{origin.String(), fmpTestAddr(0).String()},
	})
	proof := fmpSeq(64, 0x40)
	resp := wire.LookupResponse{RequestID: 12345, Target: target, PathMTU: 1280,
		TargetCoords: wire.CoordsOf(target, fmpTestAddr(0)), Proof: proof}
	fmpWant(t, fmpJSON(t, fmpPlain(0, fmpEncode(t, resp)), dissect.FMPInner), map[string]any{
		"msg_type_name": "LookupResponse", "body.request_id": "12345", "body.target": target.String(),
		"body.path_mtu": 1280, "body.target_coords": []any{target.String(), fmpTestAddr(0).String()},
		"body.proof": hex.EncodeToString(proof),
	})
}

func TestDissectFMPInnerReports(t *testing.T) {
	sr := wire.SenderReport{IntervalStartCounter: 1, IntervalEndCounter: 9, IntervalBytesSent: 1000, CumulativePacketsSent: 50}
	fmpWant(t, fmpJSON(t, fmpPlain(0, fmpEncode(t, sr)), dissect.FMPInner), map[string]any{
		"msg_type": 1, "msg_type_name": "SenderReport",
		"body.interval_start_counter": 1, "body.interval_end_counter": 9,
		"body.interval_bytes_sent": 1000, "body.cumulative_packets_sent": 50,
	})
	rr := wire.ReceiverReport{HighestCounter: 9, TimestampEcho: 1234, DwellTime: 5, Jitter: 300, OWDTrend: -20, ECNCECount: 2}
	fmpWant(t, fmpJSON(t, fmpPlain(0, fmpEncode(t, rr)), dissect.FMPInner), map[string]any{
		"msg_type": 2, "msg_type_name": "ReceiverReport",
		"body.highest_counter": 9, "body.timestamp_echo": 1234, "body.dwell_time": 5,
		"body.jitter": 300, "body.owd_trend": -20, "body.ecn_ce_count": 2,
	})
}

func TestDissectFMPInnerRejects(t *testing.T) {
	for _, b := range [][]byte{
		{0, 0, 0, 0},                       // no msg_type
		fmpPlain(0, []byte{0x40}),          // unknown type
		fmpPlain(0, []byte{0x50}),          // Disconnect without reason
		fmpPlain(0, []byte{0x10, 0x01}),    // truncated TreeAnnounce
		fmpPlain(0, make([]byte, 20)),      // truncated SessionDatagram
		fmpPlain(0, []byte{0x20, 1, 2, 3}), // truncated FilterAnnounce
	} {
		v, err := dissect.Decode(b, dissect.FMPInner)
		if err == nil {
			t.Errorf("%x: dissected as %+v, want an error", b, v)
		}
		if !errors.Is(err, wire.ErrTruncated) && !errors.Is(err, wire.ErrType) {
			t.Errorf("%x: error %v has no wire error class", b, err)
		}
	}
	// Everything the dissector returns marshals, whatever the input.
	for i := 0; i < 256; i++ {
		b := fmpPlain(0, append([]byte{byte(i)}, bytes.Repeat([]byte{byte(i)}, 200)...))
		if v, err := dissect.Decode(b, dissect.FMPInner); err == nil {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("type %#x: %v", i, err)
			}
		}
	}
}

// A version-1 link's plaintexts: reports and lookups in next's layouts;
// the same bytes read as master's fail.
func TestDissectFMPInnerNext(t *testing.T) {
	rr := make([]byte, wire.ReceiverReportV1Size)
	if _, err := (wire.ReceiverReportV1{TimestampEcho: 77, DwellTime: 3, HighestCounter: 9, OWDTrend: -5}).MarshalTo(rr); err != nil {
		t.Fatal(err)
	}
	fmpWant(t, fmpJSON(t, fmpPlain(1, rr), dissect.FMPInnerNext), map[string]any{
		"layer": "fmp-inner-next", "msg_type": 2, "msg_type_name": "ReceiverReport",
		"body.timestamp_echo": 77, "body.dwell_time": 3, "body.highest_counter": 9, "body.owd_trend": -5,
	})
	if _, err := dissect.Decode(fmpPlain(1, rr), dissect.FMPInner); err == nil {
		t.Error("a next ReceiverReport read as master's")
	}
	sr := make([]byte, wire.SenderReportV1Size)
	if _, err := (wire.SenderReportV1{IntervalPacketsSent: 4, CumulativePacketsSent: 40}).MarshalTo(sr); err != nil {
		t.Fatal(err)
	}
	fmpWant(t, fmpJSON(t, fmpPlain(1, sr), dissect.FMPInnerNext), map[string]any{
		"msg_type_name": "SenderReport", "body.interval_packets_sent": 4, "body.cumulative_packets_sent": 40,
	})
	req := wire.LookupRequestV1{RequestID: 5, TTL: 8, MinMTU: 1280, TLVs: []wire.TLV{{Field: 9, Value: []byte{1, 2}}}}
	fmpWant(t, fmpJSON(t, fmpPlain(2, fmpEncode(t, req)), dissect.FMPInnerNext), map[string]any{
		"msg_type_name": "LookupRequest", "body.request_id": 5, "body.ttl": 8, "body.min_mtu": 1280,
	})
	// Heartbeats, disconnects and the rest are master's.
	fmpWant(t, fmpJSON(t, fmpPlain(3, []byte{byte(wire.MsgHeartbeat)}), dissect.FMPInnerNext), map[string]any{
		"msg_type_name": "Heartbeat",
	})
}

// TestDissectFMPInnerLinkPQ: fips-go's post-quantum link message (0xE0)
// shows its fragment header.
func TestDissectFMPInnerLinkPQ(t *testing.T) {
	frags, err := wire.LinkPQFragments(wire.PQKindAccept, [8]byte{1, 2}, make([]byte, wire.LinkPQAcceptSize))
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, wire.LinkPQMsgSize)
	if _, err := wire.MarshalLinkPQ(msg, frags[1]); err != nil {
		t.Fatal(err)
	}
	fmpWant(t, fmpJSON(t, fmpPlain(7, msg), dissect.FMPInner), map[string]any{
		"msg_type": 0xe0, "msg_type_name": "LinkPQ", "body.kind": "accept", "body.index": 1, "body.count": 2,
		"body.total": wire.LinkPQAcceptSize, "body.chunk_len": wire.LinkPQAcceptSize - wire.PQChunkMax,
	})
}

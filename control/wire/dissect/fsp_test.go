package dissect_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/control/wire/dissect"
)

// fspAddr is upstream's make_node_addr: v in byte 0, zeros elsewhere.
func fspAddr(v byte) identity.NodeAddr {
	var a identity.NodeAddr
	a[0] = v
	return a
}

// fspA renders fspAddr(v) as the dissector does.
func fspA(v string) string { return `"` + v + strings.Repeat("0", 30) + `"` }

func fspEnc(t testing.TB, m interface {
	Len() int
	MarshalTo([]byte) (int, error)
}) []byte {
	t.Helper()
	b := make([]byte, m.Len())
	if _, err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func fspSeq(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

// fspJSON dissects b at layer and compares the JSON with want.
func fspJSON(t *testing.T, layer dissect.Layer, b []byte, want string) {
	t.Helper()
	v, err := dissect.Decode(b, layer)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	want = strings.Join(strings.Fields(want), "")
	if string(got) != want {
		t.Fatalf("JSON:\n got %s\nwant %s", got, want)
	}
}

func TestFSPDissectEncrypted(t *testing.T) {
	ct := fspSeq(20, 0)
	b := fspEnc(t, wire.FSPEncrypted{
		Header:    wire.FSPHeader{Flags: wire.FSPFlagCP | wire.FSPFlagK, PayloadLen: 4, Counter: 0x0102},
		SrcCoords: wire.CoordsOf(fspAddr(1), fspAddr(0xF0)), DestCoords: wire.CoordsOf(fspAddr(3)),
		Ciphertext: ct,
	})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"encrypted","phase":0,"flags":3,"flag_names":["CP","K"],
		"payload_len":4,"counter":258,"aad":"000304000201000000000000",
		"src_coords":[`+fspA("01")+`,`+fspA("f0")+`],"dest_coords":[`+fspA("03")+`],
		"ciphertext_len":20,"tag":"0405060708090a0b0c0d0e0f10111213"}`)

	// No CP: no coordinate keys at all.
	b = fspEnc(t, wire.FSPEncrypted{Header: wire.FSPHeader{PayloadLen: 0, Counter: 1}, Ciphertext: fspSeq(16, 0xA0)})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"encrypted","phase":0,"flags":0,"flag_names":[],
		"payload_len":0,"counter":1,"aad":"000000000100000000000000",
		"ciphertext_len":16,"tag":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"}`)

	// CP with both counts 0: empty lists, and reserved flag bits named.
	b = fspEnc(t, wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP, PayloadLen: 1}, Ciphertext: fspSeq(17, 0)})
	b[1] = 0x81
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"encrypted","phase":0,"flags":129,"flag_names":["CP","reserved=0x80"],
		"payload_len":1,"counter":0,"aad":"008101000000000000000000","src_coords":[],"dest_coords":[],
		"ciphertext_len":17,"tag":"0102030405060708090a0b0c0d0e0f10"}`)
}

func TestFSPDissectHandshakes(t *testing.T) {
	msg1 := fspSeq(33, 0x10)
	b := fspEnc(t, wire.SessionSetup{Flags: wire.SessionFlagRequestAck, SrcCoords: wire.CoordsOf(fspAddr(1), fspAddr(0xF0)), DestCoords: wire.CoordsOf(fspAddr(2), fspAddr(0xF0)), Handshake: msg1})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"SessionSetup","phase":1,"flags":0,"payload_len":104,
		"session_flags":1,"session_flag_names":["REQUEST_ACK"],
		"src_coords":[`+fspA("01")+`,`+fspA("f0")+`],"dest_coords":[`+fspA("02")+`,`+fspA("f0")+`],
		"handshake_len":33,"noise":{"hex":"101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f30",
		"ephemeral":"101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f30"}}`)

	msg2 := fspSeq(57, 0x40)
	b = fspEnc(t, wire.SessionAck{SrcCoords: wire.CoordsOf(fspAddr(2)), DestCoords: wire.CoordsOf(fspAddr(1), fspAddr(0xF0)), Handshake: msg2})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"SessionAck","phase":2,"flags":0,"payload_len":112,"ack_flags":0,
		"src_coords":[`+fspA("02")+`],"dest_coords":[`+fspA("01")+`,`+fspA("f0")+`],"handshake_len":57,
		"noise":{"hex":"`+fspHexOf(msg2)+`","ephemeral":"`+fspHexOf(msg2[:33])+`","encrypted_epoch":"`+fspHexOf(msg2[33:])+`"}}`)

	msg3 := fspSeq(73, 0x80)
	b = fspEnc(t, wire.SessionMsg3{Handshake: msg3})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"SessionMsg3","phase":3,"flags":0,"payload_len":76,"msg3_flags":0,"handshake_len":73,
		"noise":{"hex":"`+fspHexOf(msg3)+`","encrypted_static":"`+fspHexOf(msg3[:49])+`","encrypted_epoch":"`+fspHexOf(msg3[49:])+`"}}`)
}

// upstream next's sessions: XX msg2 of 106 bytes plus the encrypted
// negotiation payload, msg3 of 73 plus the payload.
func TestFSPDissectXXHandshakes(t *testing.T) {
	msg2 := fspSeq(132, 0x01)
	b := fspEnc(t, wire.SessionAck{SrcCoords: wire.CoordsOf(fspAddr(2)), DestCoords: wire.CoordsOf(fspAddr(1)), Handshake: msg2})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"SessionAck","phase":2,"flags":0,"payload_len":171,"ack_flags":0,
		"src_coords":[`+fspA("02")+`],"dest_coords":[`+fspA("01")+`],"handshake_len":132,
		"noise":{"pattern":"XX","hex":"`+fspHexOf(msg2)+`","ephemeral":"`+fspHexOf(msg2[:33])+`",
		"encrypted_static":"`+fspHexOf(msg2[33:82])+`","encrypted_epoch":"`+fspHexOf(msg2[82:106])+`",
		"encrypted_payload":"`+fspHexOf(msg2[106:])+`"}}`)

	msg3 := fspSeq(99, 0x80)
	b = fspEnc(t, wire.SessionMsg3{Handshake: msg3})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"SessionMsg3","phase":3,"flags":0,"payload_len":102,"msg3_flags":0,"handshake_len":99,
		"noise":{"hex":"`+fspHexOf(msg3)+`","encrypted_static":"`+fspHexOf(msg3[:49])+`","encrypted_epoch":"`+fspHexOf(msg3[49:73])+`",
		"encrypted_payload":"`+fspHexOf(msg3[73:])+`"}}`)
}

func fspHexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&15])
	}
	return sb.String()
}

func TestFSPDissectSignals(t *testing.T) {
	b := fspEnc(t, wire.CoordsRequired{DestAddr: fspAddr(0xAA), Reporter: fspAddr(0xBB)})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"CoordsRequired","phase":0,"flags":4,"flag_names":["U"],
		"payload_len":34,"msg_type":32,"signal_flags":0,"dest_addr":`+fspA("aa")+`,"reporter":`+fspA("bb")+`}`)

	b = fspEnc(t, wire.PathBroken{DestAddr: fspAddr(0xCC), Reporter: fspAddr(0xDD), LastKnownCoords: wire.CoordsOf(fspAddr(0xCC), fspAddr(0xF0))})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"PathBroken","phase":0,"flags":4,"flag_names":["U"],
		"payload_len":68,"msg_type":33,"signal_flags":0,"dest_addr":`+fspA("cc")+`,"reporter":`+fspA("dd")+`,
		"last_known_coords":[`+fspA("cc")+`,`+fspA("f0")+`]}`)

	// PathBroken without coordinates still shows the (empty) list.
	b = fspEnc(t, wire.PathBroken{DestAddr: fspAddr(0xCC), Reporter: fspAddr(0xDD)})
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"PathBroken","phase":0,"flags":4,"flag_names":["U"],
		"payload_len":36,"msg_type":33,"signal_flags":0,"dest_addr":`+fspA("cc")+`,"reporter":`+fspA("dd")+`,
		"last_known_coords":[]}`)

	b = fspEnc(t, wire.MtuExceeded{DestAddr: fspAddr(0xAA), Reporter: fspAddr(0xBB), MTU: 1400})
	b[5] = 0x7F // reserved signal flags are shown as received
	fspJSON(t, dissect.FSP, b, `{"layer":"fsp","type":"MtuExceeded","phase":0,"flags":4,"flag_names":["U"],
		"payload_len":36,"msg_type":34,"signal_flags":127,"dest_addr":`+fspA("aa")+`,"reporter":`+fspA("bb")+`,"mtu":1400}`)
}

// fspPlain builds a decrypted FSP plaintext.
func fspPlain(t *testing.T, ts uint32, typ wire.SessionMessageType, flags wire.FSPInnerFlags, body []byte) []byte {
	return fspEnc(t, wire.FSPInner{Timestamp: ts, MsgType: typ, Flags: flags, Body: body})
}

func TestFSPDissectInner(t *testing.T) {
	// DataPacket on port 256: the rebuilt IPv6 header, no addresses.
	ip := []byte{0x6A, 0xBF, 0xED, 0xCB, 0x00, 0x03, 17, 64}
	ip = append(ip, make([]byte, 32)...)
	ip = append(ip, 1, 2, 3)
	shim := make([]byte, len(ip)-wire.IPv6ShimSavings)
	if _, err := wire.CompressIPv6(shim, ip); err != nil {
		t.Fatal(err)
	}
	body := fspEnc(t, wire.DataPacket{SrcPort: 256, DstPort: 256, Payload: shim})
	fspJSON(t, dissect.FSPInner, fspPlain(t, 12345, wire.SessionMsgDataPacket, wire.FSPInnerFlagSP, body),
		`{"layer":"fsp-inner","timestamp":12345,"msg_type":16,"msg_type_name":"DataPacket","inner_flags":1,"spin_bit":true,
		"body":{"src_port":256,"dst_port":256,"payload_len":10,
		"ipv6":{"version":6,"traffic_class":171,"ecn":"CE","flow_label":1043915,"next_header":17,"hop_limit":64,"payload_length":3}}}`)

	// A broken shim is reported, not fatal.
	body = fspEnc(t, wire.DataPacket{SrcPort: 256, DstPort: 256, Payload: []byte{1, 0, 0, 0, 0, 0, 0}})
	v, err := dissect.Decode(fspPlain(t, 0, wire.SessionMsgDataPacket, 0, body), dissect.FSPInner)
	if err != nil {
		t.Fatal(err)
	}
	if d := v.(dissect.FSPPlaintext).Body.(dissect.FSPDataPacket); d.IPv6 != nil || !strings.Contains(d.IPv6Error, "format") {
		t.Errorf("bad shim: %+v", d)
	}

	// Another port: ports and length only. Reserved inner flags show raw.
	body = fspEnc(t, wire.DataPacket{SrcPort: 1024, DstPort: 4000, Payload: []byte("hello")})
	b := fspPlain(t, 7, wire.SessionMsgDataPacket, 0, body)
	b[5] = 0xFE
	fspJSON(t, dissect.FSPInner, b, `{"layer":"fsp-inner","timestamp":7,"msg_type":16,"msg_type_name":"DataPacket",
		"inner_flags":254,"spin_bit":false,"body":{"src_port":1024,"dst_port":4000,"payload_len":5}}`)

	sr := wire.SenderReport{IntervalStartCounter: 100, IntervalEndCounter: 200, IntervalStartTimestamp: 5000,
		IntervalEndTimestamp: 6000, IntervalBytesSent: 50000, CumulativePacketsSent: 10000, CumulativeBytesSent: 5000000}
	fspJSON(t, dissect.FSPInner, fspPlain(t, 1, wire.SessionMsgSenderReport, 0, fspEnc(t, wire.SessionSenderReport{SenderReport: sr})),
		`{"layer":"fsp-inner","timestamp":1,"msg_type":17,"msg_type_name":"SenderReport","inner_flags":0,"spin_bit":false,
		"body":{"interval_start_counter":100,"interval_end_counter":200,"interval_start_timestamp":5000,
		"interval_end_timestamp":6000,"interval_bytes_sent":50000,"cumulative_packets_sent":10000,"cumulative_bytes_sent":5000000}}`)

	rr := wire.ReceiverReport{HighestCounter: 195, CumulativePacketsRecv: 9500, CumulativeBytesRecv: 4750000, TimestampEcho: 5900,
		DwellTime: 5, MaxBurstLoss: 3, MeanBurstLoss: 384, Jitter: 1200, ECNCECount: 7, OWDTrend: -50, BurstLossCount: 2,
		CumulativeReorderCount: 10, IntervalPacketsRecv: 95, IntervalBytesRecv: 47500}
	fspJSON(t, dissect.FSPInner, fspPlain(t, 2, wire.SessionMsgReceiverReport, 1, fspEnc(t, wire.SessionReceiverReport{ReceiverReport: rr})),
		`{"layer":"fsp-inner","timestamp":2,"msg_type":18,"msg_type_name":"ReceiverReport","inner_flags":1,"spin_bit":true,
		"body":{"highest_counter":195,"cumulative_packets_recv":9500,"cumulative_bytes_recv":4750000,"timestamp_echo":5900,
		"dwell_time":5,"max_burst_loss":3,"mean_burst_loss":384,"jitter":1200,"ecn_ce_count":7,"owd_trend":-50,
		"burst_loss_count":2,"cumulative_reorder_count":10,"interval_packets_recv":95,"interval_bytes_recv":47500}}`)

	fspJSON(t, dissect.FSPInner, fspPlain(t, 3, wire.SessionMsgPathMtuNotification, 0, []byte{0x78, 0x05}),
		`{"layer":"fsp-inner","timestamp":3,"msg_type":19,"msg_type_name":"PathMtuNotification","inner_flags":0,"spin_bit":false,
		"body":{"path_mtu":1400}}`)

	fspJSON(t, dissect.FSPInner, fspPlain(t, 4, wire.SessionMsgCoordsWarmup, 0, nil),
		`{"layer":"fsp-inner","timestamp":4,"msg_type":20,"msg_type_name":"CoordsWarmup","inner_flags":0,"spin_bit":false,"body":{}}`)

	frags, err := wire.PQFragments(wire.PQKindConfirm, [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, bytes.Repeat([]byte{0xab}, 32))
	if err != nil {
		t.Fatal(err)
	}
	pq := make([]byte, wire.PQFragmentSize)
	if _, err := frags[0].MarshalTo(pq); err != nil {
		t.Fatal(err)
	}
	fspJSON(t, dissect.FSPInner, fspPlain(t, 6, wire.SessionMsgPQ, 0, pq),
		`{"layer":"fsp-inner","timestamp":6,"msg_type":224,"msg_type_name":"PQ","inner_flags":0,"spin_bit":false,
		"body":{"version":1,"kind":"confirm","index":0,"count":1,"exchange_id":"0102030405060708","total":32,"chunk_len":32,
		"chunk":"`+strings.Repeat("ab", 32)+`"}}`)

	fspJSON(t, dissect.FSPInner, fspPlain(t, 5, 0x99, 0, []byte{0xDE, 0xAD}),
		`{"layer":"fsp-inner","timestamp":5,"msg_type":153,"msg_type_name":"SessionMessageType(0x99)","inner_flags":0,"spin_bit":false,
		"body":{"body_len":2,"body":"dead"}}`)
}

// An XX session's reports have next's layout.
func TestFSPDissectInnerNext(t *testing.T) {
	body := make([]byte, wire.SessionReceiverReportV1Size)
	if _, err := (wire.ReceiverReportV1{TimestampEcho: 12, HighestCounter: 3}).MarshalSessionTo(body); err != nil {
		t.Fatal(err)
	}
	pt := append([]byte{1, 0, 0, 0, byte(wire.SessionMsgReceiverReport), 0}, body...)
	fspJSON(t, dissect.FSPInnerNext, pt, `{"layer":"fsp-inner-next","timestamp":1,"msg_type":18,"msg_type_name":"ReceiverReport",
		"inner_flags":0,"spin_bit":false,"body":{"timestamp_echo":12,"dwell_time":0,"highest_counter":3,"cumulative_packets_recv":0,
		"cumulative_bytes_recv":0,"jitter":0,"ecn_ce_count":0,"owd_trend":0,"burst_loss_count":0,"cumulative_reorder_count":0}}`)
	if _, err := dissect.Decode(pt, dissect.FSPInner); err == nil {
		t.Error("a next session report read as master's")
	}
}

func TestFSPDissectRejects(t *testing.T) {
	good := fspEnc(t, wire.CoordsRequired{})
	for _, c := range []struct {
		name  string
		layer dissect.Layer
		b     []byte
		kind  error
	}{
		{"short prefix", dissect.FSP, []byte{0, 4}, wire.ErrTruncated},
		{"version 1", dissect.FSP, append([]byte{0x10}, good[1:]...), wire.ErrVersion},
		{"phase 5", dissect.FSP, append([]byte{0x05}, good[1:]...), wire.ErrPhase},
		{"encrypted too short", dissect.FSP, make([]byte, 20), wire.ErrTruncated},
		{"setup without coords", dissect.FSP, []byte{1, 0, 1, 0, 0}, wire.ErrTruncated},
		{"msg3 wrong size", dissect.FSP, []byte{3, 0, 3, 0, 0, 0, 0}, wire.ErrLength},
		{"unknown signal", dissect.FSP, append(bytes.Clone(good[:4]), append([]byte{0x2F}, good[5:]...)...), wire.ErrType},
		{"signal trailing byte", dissect.FSP, append([]byte{0, 4, 35, 0}, append(bytes.Clone(good[4:]), 0)...), wire.ErrLength},
		{"inner too short", dissect.FSPInner, make([]byte, 5), wire.ErrTruncated},
		{"data packet without ports", dissect.FSPInner, []byte{0, 0, 0, 0, 0x10, 0, 1}, wire.ErrTruncated},
		{"short SR", dissect.FSPInner, append([]byte{0, 0, 0, 0, 0x11, 0}, make([]byte, 45)...), wire.ErrTruncated},
		{"long RR", dissect.FSPInner, append([]byte{0, 0, 0, 0, 0x12, 0}, make([]byte, 67)...), wire.ErrLength},
		{"PMTU 1 byte", dissect.FSPInner, []byte{0, 0, 0, 0, 0x13, 0, 5}, wire.ErrTruncated},
		{"warmup with body", dissect.FSPInner, []byte{0, 0, 0, 0, 0x14, 0, 5}, wire.ErrLength},
	} {
		_, err := dissect.Decode(c.b, c.layer)
		var de *wire.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, c.kind) {
			t.Errorf("%s: got %v, want a %v DecodeError", c.name, err, c.kind)
		}
	}
}

// FuzzFSPDissect checks that the FSP dissectors never panic, fail only
// with a *DecodeError, and produce values that marshal to JSON.
func FuzzFSPDissect(f *testing.F) {
	for _, s := range [][]byte{
		fspEnc(f, wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP, PayloadLen: 0}, SrcCoords: wire.CoordsOf(fspAddr(1)), Ciphertext: make([]byte, 16)}),
		fspEnc(f, wire.SessionSetup{SrcCoords: wire.CoordsOf(fspAddr(1)), DestCoords: wire.CoordsOf(fspAddr(2)), Handshake: make([]byte, 33)}),
		fspEnc(f, wire.SessionAck{SrcCoords: wire.CoordsOf(fspAddr(1)), DestCoords: wire.CoordsOf(fspAddr(2)), Handshake: make([]byte, 57)}),
		fspEnc(f, wire.SessionMsg3{Handshake: make([]byte, 73)}),
		fspEnc(f, wire.PathBroken{LastKnownCoords: wire.CoordsOf(fspAddr(3))}),
		fspEnc(f, wire.MtuExceeded{MTU: 1280}),
		{0, 0, 0, 0, 0x10, 1, 0, 1, 0, 1, 0, 0x60, 0, 0, 0, 6, 64, 0xAA},
		{0, 0, 0, 0, 0x12, 0},
		{0, 0, 0, 0, 0x14, 0},
		nil,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, inner bool) {
		layer := dissect.FSP
		if inner {
			layer = dissect.FSPInner
		}
		v, err := dissect.Decode(b, layer)
		if err != nil {
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %q (%T) is not a *DecodeError", err, err)
			}
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("json: %v", err)
		}
	})
}

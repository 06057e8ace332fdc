package main

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

type marshaler interface {
	Len() int
	MarshalTo([]byte) (int, error)
}

func enc(t *testing.T, m marshaler) []byte {
	t.Helper()
	b := make([]byte, m.Len())
	if _, err := m.MarshalTo(b); err != nil {
		t.Fatalf("%T: %v", m, err)
	}
	return b
}

// decode runs `fipsctl wire decode [flags] HEX` and returns the JSON object.
func decode(t *testing.T, pkt []byte, flags ...string) map[string]any {
	t.Helper()
	args := append(append([]string{"wire", "decode"}, flags...), hex.EncodeToString(pkt))
	code, out, errs := fipsctl(t, "", args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", flags, code, errs)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return v
}

func addr(b byte) identity.NodeAddr {
	var a identity.NodeAddr
	for i := range a {
		a[i] = b
	}
	return a
}

// TestWireDecodeEveryMessage: real handshake packets, an established
// frame, every link message plaintext and every FSP message dissect.
func TestWireDecodeEveryMessage(t *testing.T) {
	skA, _ := identity.ParseSecretKey("0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20")
	skB, _ := identity.ParseSecretKey("b102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fb0")
	rs, _ := skB.PublicKey().Point()
	ini, _ := noise.NewIKInitiator(skA.Private(), rs, noise.Epoch{1})
	resp, _ := noise.NewIKResponder(skB.Private(), noise.Epoch{2})
	m1, _ := ini.WriteMessage1(nil)
	resp.ReadMessage1(m1)
	m2, _ := resp.WriteMessage2(nil)

	outer := []struct {
		name, typ string
		pkt       []byte
	}{
		{"msg1", "msg1", enc(t, wire.FMPMsg1{SenderIndex: 0xdeadbeef, Noise: m1})},
		{"msg2", "msg2", enc(t, wire.FMPMsg2{SenderIndex: 7, ReceiverIndex: 0xdeadbeef, Noise: m2})},
		{"frame", "frame", mustHex("000005000403020100000000000000001eab59320210492046bd30e3654eb06ad54545fefd")},
	}
	for _, c := range outer {
		v := decode(t, c.pkt)
		if v["layer"] != "fmp" || v["type"] != c.typ {
			t.Errorf("%s: %v", c.name, v)
		}
	}

	setup := enc(t, wire.SessionSetup{SrcCoords: wire.CoordsOf(addr(1), addr(0)), DestCoords: wire.CoordsOf(addr(2), addr(0)),
		Handshake: make([]byte, wire.XKMsg1Size)})
	fsp := []struct {
		typ string
		pkt []byte
	}{
		{"SessionSetup", setup},
		{"SessionAck", enc(t, wire.SessionAck{SrcCoords: wire.CoordsOf(addr(2)), DestCoords: wire.CoordsOf(addr(1)), Handshake: make([]byte, wire.XKMsg2Size)})},
		{"SessionMsg3", enc(t, wire.SessionMsg3{Handshake: make([]byte, wire.XKMsg3Size)})},
		{"encrypted", enc(t, wire.FSPEncrypted{Header: wire.FSPHeader{Flags: wire.FSPFlagCP, PayloadLen: 10, Counter: 3},
			SrcCoords: wire.CoordsOf(addr(1)), DestCoords: wire.CoordsOf(addr(2)), Ciphertext: make([]byte, 26)})},
		{"CoordsRequired", enc(t, wire.CoordsRequired{DestAddr: addr(2), Reporter: addr(3)})},
		{"PathBroken", enc(t, wire.PathBroken{DestAddr: addr(2), Reporter: addr(3), LastKnownCoords: wire.CoordsOf(addr(2))})},
		{"MtuExceeded", enc(t, wire.MtuExceeded{DestAddr: addr(2), Reporter: addr(3), MTU: 1280})},
	}
	for _, c := range fsp {
		v := decode(t, c.pkt, "--layer", "fsp")
		if v["layer"] != "fsp" || !strings.EqualFold(v["type"].(string), c.typ) {
			t.Errorf("FSP %s: layer %v type %v", c.typ, v["layer"], v["type"])
		}
	}

	ancestry := wire.AncestryOf(wire.AncestryEntry{NodeAddr: addr(1), Sequence: 1, Timestamp: 2})
	link := []struct {
		name string
		msg  []byte
	}{
		{"SessionDatagram", enc(t, wire.SessionDatagram{TTL: 64, PathMTU: 1280, Src: addr(1), Dest: addr(2), Payload: setup})},
		{"SenderReport", enc(t, wire.SenderReport{CumulativePacketsSent: 5})},
		{"ReceiverReport", enc(t, wire.ReceiverReport{HighestCounter: 9})},
		{"TreeAnnounce", enc(t, wire.TreeAnnounce{Sequence: 1, Timestamp: 2, Parent: addr(1), Ancestry: ancestry, Signature: make([]byte, 64)})},
		{"FilterAnnounce", enc(t, wire.FilterAnnounce{Sequence: 1, HashCount: 5, SizeClass: 1, Filter: make([]byte, 1024)})},
		{"LookupRequest", enc(t, wire.LookupRequest{RequestID: 1, Target: addr(2), Origin: addr(1), TTL: 64, OriginCoords: wire.CoordsOf(addr(1))})},
		{"LookupResponse", enc(t, wire.LookupResponse{RequestID: 1, Target: addr(2), PathMTU: 0xffff, TargetCoords: wire.CoordsOf(addr(2)), Proof: make([]byte, 64)})},
		{"Disconnect", enc(t, wire.Disconnect{Reason: wire.DisconnectTimeout})},
		{"Heartbeat", enc(t, wire.Heartbeat{})},
	}
	for _, c := range link {
		pt := append([]byte{0x10, 0, 0, 0}, c.msg...) // timestamp 16 ms
		v := decode(t, pt, "--inner", "fmp")
		if v["msg_type_name"] != c.name || v["timestamp"] != float64(16) {
			t.Errorf("link %s: %v", c.name, v)
		}
		if c.name == "SessionDatagram" {
			body := v["body"].(map[string]any)
			if inner, ok := body["fsp"].(map[string]any); !ok || inner["type"] != "SessionSetup" {
				t.Errorf("SessionDatagram payload not dissected: %v", body)
			}
		}
	}

	shim := make([]byte, 7+8)
	shim[1], shim[5], shim[6] = 0x60, 17, 64 // version 6, UDP, hop limit 64
	session := []struct {
		name string
		typ  wire.SessionMessageType
		body []byte
	}{
		{"DataPacket", wire.SessionMsgDataPacket, enc(t, wire.DataPacket{SrcPort: 256, DstPort: 256, Payload: shim})},
		{"SenderReport", wire.SessionMsgSenderReport, enc(t, wire.SessionSenderReport{})},
		{"ReceiverReport", wire.SessionMsgReceiverReport, enc(t, wire.SessionReceiverReport{})},
		{"PathMtuNotification", wire.SessionMsgPathMtuNotification, enc(t, wire.PathMtuNotification{PathMTU: 1203})},
		{"CoordsWarmup", wire.SessionMsgCoordsWarmup, nil},
	}
	for _, c := range session {
		pt := enc(t, wire.FSPInner{Timestamp: 5, MsgType: c.typ, Body: c.body})
		v := decode(t, pt, "--inner", "fsp")
		if !strings.Contains(strings.ToLower(toJSON(v)), strings.ToLower(c.name)) {
			t.Errorf("session %s: %v", c.name, v)
		}
	}
}

func TestWireDecodeRejectsMalformed(t *testing.T) {
	for _, c := range []struct {
		flags []string
		hex   string
	}{
		{nil, "01000000"},                         // msg1 prefix only
		{nil, "00000500040302010000000000000000"}, // frame without its tag
		{nil, "30000000"},                         // unknown version
		{[]string{"--inner", "fmp"}, "00000000ee"},
		{[]string{"--inner", "fmp"}, "0000000010"}, // TreeAnnounce with no body
		{[]string{"--inner", "fsp"}, "0000"},
		{[]string{"--inner", "fmp-next"}, "0000000002"}, // a next ReceiverReport with no body
		{[]string{"--layer", "fsp"}, "01000000"},
	} {
		args := append(append([]string{"wire", "decode"}, c.flags...), c.hex)
		code, out, errs := fipsctl(t, "", args...)
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v %s: exit %d stdout %q stderr %q", c.flags, c.hex, code, out, errs)
		}
	}
	// A next ReceiverReport (54 bytes) reads with --inner fmp-next.
	rr := make([]byte, wire.ReceiverReportV1Size)
	if _, err := (wire.ReceiverReportV1{TimestampEcho: 42}).MarshalTo(rr); err != nil {
		t.Fatal(err)
	}
	code, out, _ := fipsctl(t, "", "wire", "decode", "--inner", "fmp-next", hex.EncodeToString(append([]byte{0, 0, 0, 0}, rr...)))
	if code != 0 || !strings.Contains(out, `"timestamp_echo": 42`) {
		t.Errorf("--inner fmp-next: %d %s", code, out)
	}
	// stdin works too.
	code, out, _ = fipsctl(t, "00 00 00 00 51\n", "wire", "decode", "--inner", "fmp")
	if code != 0 || !strings.Contains(out, "Heartbeat") {
		t.Errorf("stdin decode: %d %s", code, out)
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

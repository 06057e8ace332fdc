package native

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/fips-go/fips/control/wire"
)

// TestParseVectors: upstream's parse rules (protocol.rs and its tests),
// with the errno each refusal carries.
func TestParseVectors(t *testing.T) {
	for _, tc := range []struct {
		line  string
		want  Command
		err   error
		errno string
		msg   string
	}{
		{line: `{"command":"connect","params":{"peer":"npub1abc","remote_port":4242,"local_port":5000}}`,
			want: Connect{Peer: "npub1abc", Remote: 4242, Local: 5000}},
		{line: `{"command":"connect","params":{"peer":"npub1abc","remote_port":4242}}`,
			want: Connect{Peer: "npub1abc", Remote: 4242}},
		{line: `{"command":"connect","params":{"peer":"npub1abc","remote_port":4242,"local_port":0}}`,
			want: Connect{Peer: "npub1abc", Remote: 4242}},
		{line: `{"command":"connect","params":{"peer":"npub1abc","remote_port":4242,"local_port":null}}`,
			want: Connect{Peer: "npub1abc", Remote: 4242}},
		{line: `{"command":"listen","params":{"local_port":200}}`, err: ErrPortProtocol, errno: "EADDRNOTAVAIL",
			msg: "port 200 is reserved for protocol use"},
		{line: `{"command":"listen","params":{"local_port":256}}`, err: ErrPortStandard, errno: "EADDRNOTAVAIL",
			msg: "port 256 is reserved for FIPS standard services"},
		{line: `{"command":"listen","params":{"local_port":1023}}`, err: ErrPortStandard, errno: "EADDRNOTAVAIL"},
		{line: `{"command":"listen","params":{"local_port":1024}}`, want: Listen{Local: 1024}},
		{line: `{"command":"listen","params":{}}`, want: Listen{}},
		{line: `{"command":"listen","params":{"local_port":0}}`, want: Listen{}},
		{line: `{"command":"connect","params":{"peer":"npub1abc","remote_port":256}}`, err: ErrPortStandard, errno: "EADDRNOTAVAIL"},
		{line: `{"command":"teleport"}`, err: ErrUnknown, errno: "EINVAL", msg: "unknown command 'teleport'"},
		{line: `{"command":"accept","params":{"flow_id":7}}`, err: ErrUnknown, errno: "EINVAL"},
		{line: `{"command":"reject","params":{"flow_id":7}}`, err: ErrUnknown, errno: "EINVAL"},
		{line: `{"command":"stats"}`, err: ErrNoParams, errno: "EINVAL", msg: "command 'stats' requires params"},
		{line: `{"command":"listen","params":null}`, err: ErrNoParams, errno: "EINVAL"},
		{line: `{"command":"listen","params":{"local_port":"not a number"}}`, err: ErrBadParams, errno: "EINVAL"},
		{line: `{"command":"listen","params":{"local_port":65536}}`, err: ErrBadParams, errno: "EINVAL"},
		{line: `{"command":"listen","params":{"local_port":-1}}`, err: ErrBadParams, errno: "EINVAL"},
		{line: `{"command":"listen","params":{"local_port":4242.5}}`, err: ErrBadParams, errno: "EINVAL"},
		{line: `{"command":"listen","params":{"Local_Port":4242}}`, want: Listen{}}, // keys match exactly
		{line: `{"command":"connect","params":{"peer":"npub1abc"}}`, err: ErrBadParams, errno: "EINVAL"},
		{line: `{"command":"connect","params":{"peer":"npub1abc","remote_port":null}}`, err: ErrBadParams, errno: "EINVAL"},
		{line: `{"command":"stats","params":{"flow_id":9}}`, want: Stats{Flow: 9}},
		{line: `{"command":"inject","params":{"flow_id":1,"data":"00ff10","repeat":3}}`,
			want: Inject{Flow: 1, Data: []byte{0, 0xff, 0x10}, Repeat: 3}},
		{line: `{"command":"inject","params":{"flow_id":1,"data":"00"}}`, want: Inject{Flow: 1, Data: []byte{0}, Repeat: 1}},
		{line: `{"command":"inject","params":{"flow_id":1,"data":"00","repeat":0}}`, err: ErrBadRepeat, errno: "EINVAL",
			msg: "repeat must be between 1 and 64, got 0"},
		{line: `{"command":"inject","params":{"flow_id":1,"data":"00","repeat":99999}}`, err: ErrBadRepeat, errno: "EINVAL"},
		{line: `{"command":"inject","params":{"flow_id":1,"data":"0g"}}`, err: ErrBadHex, errno: "EINVAL"},
		{line: `{"command":"arrive","params":{"peer":"npub1x","src_port":5000,"dst_port":4242,"data":"AA"}}`,
			want: Arrive{Peer: "npub1x", Src: 5000, Dst: 4242, Data: []byte{0xaa}}},
		{line: `not json`, err: ErrBadRequest, errno: "EINVAL"},
		{line: `[]`, err: ErrBadRequest, errno: "EINVAL"},
		{line: `{"params":{}}`, err: ErrBadRequest, errno: "EINVAL"},
	} {
		got, err := Parse([]byte(tc.line))
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: err %v, want %v", tc.line, err, tc.err)
				continue
			}
			var ce *CommandError
			if !errors.As(err, &ce) {
				t.Errorf("%s: %T is not a *CommandError", tc.line, err)
			}
			if Errno(err) != tc.errno {
				t.Errorf("%s: errno %s, want %s", tc.line, Errno(err), tc.errno)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("%s: message %q, want %q", tc.line, err, tc.msg)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, %v; want %#v", tc.line, got, err, tc.want)
		}
	}
}

// TestReplyLines: the reply and arrival encodings, byte for byte (serde
// writes a json! object's keys sorted; Response omits absent fields).
func TestReplyLines(t *testing.T) {
	for _, tc := range []struct {
		r    Reply
		want string
	}{
		{OK(ListenReply{LocalPort: 4242, Node: "npub1n", Backlog: 16}),
			`{"status":"ok","data":{"backlog":16,"local_port":4242,"node":"npub1n"}}` + "\n"},
		{OK(ConnectReply{FlowID: 3, LocalPort: 49152, RemotePort: 4242, Peer: "npub1p", Node: "npub1n", MaxPayload: 1362}),
			`{"status":"ok","data":{"flow_id":3,"local_port":49152,"max_payload":1362,"node":"npub1n","peer":"npub1p","remote_port":4242}}` + "\n"},
		{Deny(CheckBindable(256)),
			`{"status":"error","data":{"errno":"EADDRNOTAVAIL"},"message":"port 256 is reserved for FIPS standard services"}` + "\n"},
		{OK(ArriveReply{Outcome: "dropped: no listener or flow on that port"}),
			`{"status":"ok","data":{"flow_id":null,"outcome":"dropped: no listener or flow on that port"}}` + "\n"},
	} {
		if got := string(tc.r.Line()); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestErrnoTable: every refusal maps to the errno upstream's contract
// names (protocol.rs errno, command_errno; mod.rs deny calls).
func TestErrnoTable(t *testing.T) {
	for err, want := range map[error]string{
		ErrPortTaken: "EADDRINUSE", ErrFlowTaken: "EADDRINUSE", ErrNoPort: "EADDRNOTAVAIL",
		ErrTooManyFlows: "EMFILE", ErrClientLimit: "EMFILE", ErrSocketPair: "EMFILE",
		ErrBacklogFull: "ECONNREFUSED", ErrNoPending: "ECONNREFUSED", ErrShuttingDown: "ECONNREFUSED",
		ErrDebugOff: "ECONNREFUSED", ErrBadPeer: "EINVAL", ErrNoFlow: "ENOENT", ErrIO: "EIO",
	} {
		if got := Errno(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

// TestMeshEncapsulationVector pins how a native datagram rides a session
// (upstream's send_session_data): an FSP DataPacket, inner header
// [timestamp u32 LE][msg_type 0x10][inner flags], then the port header
// [src_port u16 LE][dst_port u16 LE], then the payload unframed. Here
// 49152 → 4242 carrying "hello" at session time 100 ms.
func TestMeshEncapsulationVector(t *testing.T) {
	vec, _ := hex.DecodeString("64000000" + "10" + "00" + "00c0" + "9210" + "68656c6c6f")
	in, err := wire.ParseFSPInner(vec)
	if err != nil {
		t.Fatal(err)
	}
	if in.MsgType != wire.SessionMsgDataPacket || in.Timestamp != 100 {
		t.Fatalf("inner %+v", in)
	}
	if wire.FSPPortHeaderSize != 4 || len(in.Body) < 4 {
		t.Fatal("port header")
	}
	src, dst := uint16(in.Body[0])|uint16(in.Body[1])<<8, wire.DataPacketDstPort(in.Body)
	if src != 49152 || dst != 4242 || string(in.Body[4:]) != "hello" {
		t.Fatalf("ports %d → %d payload %q", src, dst, in.Body[4:])
	}
	if dst == wire.FSPPortIPv6Shim || PortIPv6Shim != wire.FSPPortIPv6Shim {
		t.Fatal("the shim's port is not the native API's")
	}
}

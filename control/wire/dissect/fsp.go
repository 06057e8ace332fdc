package dissect

import (
	"encoding/hex"
	"fmt"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// fspHexBytes renders a byte blob as a hex string rather than JSON's
// default base64, so it can be compared with packet captures.
type fspHexBytes []byte

func (h fspHexBytes) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(h)))
	hex.Encode(out, h)
	return out, nil
}

// FSPEncryptedMessage is the dissection of the cleartext of an encrypted
// FSP message (phase 0, U clear).
type FSPEncryptedMessage struct {
	Layer      string   `json:"layer"` // "fsp"
	Type       string   `json:"type"`  // "encrypted"
	Phase      uint8    `json:"phase"`
	Flags      uint8    `json:"flags"`
	FlagNames  []string `json:"flag_names"` // CP, K, and reserved=0x.. if any other bit is set
	PayloadLen uint16   `json:"payload_len"`
	Counter    uint64   `json:"counter"`
	// AAD is the 12-byte header; the coordinates after it are not covered.
	AAD fspHexBytes `json:"aad"`
	// SrcCoords and DestCoords appear exactly when CP is set (then
	// possibly as empty lists).
	SrcCoords  []identity.NodeAddr `json:"src_coords,omitzero"`
	DestCoords []identity.NodeAddr `json:"dest_coords,omitzero"`
	// CiphertextLen counts ciphertext and tag: what AEAD Open is given.
	CiphertextLen int         `json:"ciphertext_len"`
	Tag           fspHexBytes `json:"tag"`
}

// FSPSessionSetup is the dissection of a SessionSetup (XK msg1).
type FSPSessionSetup struct {
	Layer            string              `json:"layer"`
	Type             string              `json:"type"` // "SessionSetup"
	Phase            uint8               `json:"phase"`
	Flags            uint8               `json:"flags"` // prefix flags, reserved in handshakes
	PayloadLen       uint16              `json:"payload_len"`
	SessionFlags     uint8               `json:"session_flags"`
	SessionFlagNames []string            `json:"session_flag_names"` // REQUEST_ACK, BIDIRECTIONAL
	SrcCoords        []identity.NodeAddr `json:"src_coords"`
	DestCoords       []identity.NodeAddr `json:"dest_coords"`
	HandshakeLen     int                 `json:"handshake_len"`
	Noise            FSPNoiseXKMsg1      `json:"noise"`
}

// FSPNoiseXKMsg1 is the 33-byte XK msg1: the ephemeral key alone.
type FSPNoiseXKMsg1 struct {
	Hex       fspHexBytes `json:"hex"`
	Ephemeral fspHexBytes `json:"ephemeral"`
}

// FSPSessionAck is the dissection of a SessionAck (XK msg2).
type FSPSessionAck struct {
	Layer        string              `json:"layer"`
	Type         string              `json:"type"` // "SessionAck"
	Phase        uint8               `json:"phase"`
	Flags        uint8               `json:"flags"`
	PayloadLen   uint16              `json:"payload_len"`
	AckFlags     uint8               `json:"ack_flags"`   // reserved
	SrcCoords    []identity.NodeAddr `json:"src_coords"`  // the responder's
	DestCoords   []identity.NodeAddr `json:"dest_coords"` // the initiator's, echoed
	HandshakeLen int                 `json:"handshake_len"`
	// Noise is FSPNoiseXKMsg2 (upstream master's 57 bytes) or
	// FSPNoiseXXMsg2 (upstream next's, 106 bytes or more).
	Noise any `json:"noise"`
}

// FSPNoiseXXMsg2 labels the parts of an XX msg2 (upstream next's
// sessions): 106 bytes, then the encrypted negotiation payload on a fresh
// session.
type FSPNoiseXXMsg2 struct {
	Pattern          string      `json:"pattern"` // "XX"
	Hex              fspHexBytes `json:"hex"`
	Ephemeral        fspHexBytes `json:"ephemeral"`                   // 33
	EncryptedStatic  fspHexBytes `json:"encrypted_static"`            // 49, responder's static key + tag
	EncryptedEpoch   fspHexBytes `json:"encrypted_epoch"`             // 24
	EncryptedPayload fspHexBytes `json:"encrypted_payload,omitempty"` // negotiation payload + tag
}

// FSPNoiseXKMsg2 labels the parts of the 57-byte XK msg2.
type FSPNoiseXKMsg2 struct {
	Hex            fspHexBytes `json:"hex"`
	Ephemeral      fspHexBytes `json:"ephemeral"`       // 33
	EncryptedEpoch fspHexBytes `json:"encrypted_epoch"` // 24, 8-byte epoch + tag
}

// FSPSessionMsg3 is the dissection of a SessionMsg3 (XK msg3).
type FSPSessionMsg3 struct {
	Layer        string         `json:"layer"`
	Type         string         `json:"type"` // "SessionMsg3"
	Phase        uint8          `json:"phase"`
	Flags        uint8          `json:"flags"`
	PayloadLen   uint16         `json:"payload_len"`
	Msg3Flags    uint8          `json:"msg3_flags"` // reserved
	HandshakeLen int            `json:"handshake_len"`
	Noise        FSPNoiseXKMsg3 `json:"noise"`
}

// FSPNoiseXKMsg3 labels the parts of the 73-byte XK msg3.
type FSPNoiseXKMsg3 struct {
	Hex             fspHexBytes `json:"hex"`
	EncryptedStatic fspHexBytes `json:"encrypted_static"` // 49, initiator's static key + tag
	EncryptedEpoch  fspHexBytes `json:"encrypted_epoch"`  // 24
	// EncryptedPayload: an XX msg3 (upstream next's sessions) of a fresh
	// session carries the encrypted negotiation payload after the same
	// 73 bytes.
	EncryptedPayload fspHexBytes `json:"encrypted_payload,omitempty"`
}

// FSPSignal is the dissection of a plaintext routing error signal.
type FSPSignal struct {
	Layer       string            `json:"layer"`
	Type        string            `json:"type"` // CoordsRequired, PathBroken, MtuExceeded
	Phase       uint8             `json:"phase"`
	Flags       uint8             `json:"flags"`
	FlagNames   []string          `json:"flag_names"`
	PayloadLen  uint16            `json:"payload_len"` // counts from msg_type
	MsgType     uint8             `json:"msg_type"`
	SignalFlags uint8             `json:"signal_flags"` // reserved
	DestAddr    identity.NodeAddr `json:"dest_addr"`
	Reporter    identity.NodeAddr `json:"reporter"`
	// LastKnownCoords is present for PathBroken only (possibly empty).
	LastKnownCoords []identity.NodeAddr `json:"last_known_coords,omitzero"`
	// MTU is present for MtuExceeded only.
	MTU *uint16 `json:"mtu,omitempty"`
}

// The Noise message parts, by XK message.
const (
	fspXKPubKeySize = 33
	fspXKStaticSize = fspXKPubKeySize + wire.FSPTagSize
)

func fspPacket(b []byte) (any, error) {
	kind, err := wire.ClassifyFSP(b)
	if err != nil {
		return nil, err
	}
	p, _ := wire.ParseFSPPrefix(b)
	switch kind {
	case wire.FSPKindEncrypted:
		m, err := wire.ParseFSPEncrypted(b)
		if err != nil {
			return nil, err
		}
		out := FSPEncryptedMessage{
			Layer: "fsp", Type: "encrypted", Phase: p.Phase, Flags: uint8(p.Flags), FlagNames: fspFlagNames(p.Flags),
			PayloadLen: m.Header.PayloadLen, Counter: m.Header.Counter, AAD: m.AAD(),
			CiphertextLen: len(m.Ciphertext), Tag: m.Ciphertext[len(m.Ciphertext)-wire.FSPTagSize:],
		}
		if m.Header.Flags.CoordsPresent() {
			out.SrcCoords, out.DestCoords = m.SrcCoords.Addrs(), m.DestCoords.Addrs()
		}
		return out, nil
	case wire.FSPKindSetup:
		s, err := wire.ParseSessionSetup(b)
		if err != nil {
			return nil, err
		}
		return FSPSessionSetup{
			Layer: "fsp", Type: "SessionSetup", Phase: p.Phase, Flags: uint8(p.Flags), PayloadLen: p.PayloadLen,
			SessionFlags: uint8(s.Flags), SessionFlagNames: fspSessionFlagNames(b[wire.FSPPrefixSize]),
			SrcCoords: s.SrcCoords.Addrs(), DestCoords: s.DestCoords.Addrs(), HandshakeLen: len(s.Handshake),
			Noise: FSPNoiseXKMsg1{Hex: s.Handshake, Ephemeral: s.Handshake},
		}, nil
	case wire.FSPKindAck:
		a, err := wire.ParseSessionAck(b)
		var noise any
		if err == nil {
			noise = FSPNoiseXKMsg2{Hex: a.Handshake, Ephemeral: a.Handshake[:fspXKPubKeySize], EncryptedEpoch: a.Handshake[fspXKPubKeySize:]}
		} else if x, xerr := wire.ParseSessionAckXX(b); xerr == nil {
			a, err = x, nil
			h := a.Handshake
			noise = FSPNoiseXXMsg2{Pattern: "XX", Hex: h, Ephemeral: h[:fspXKPubKeySize],
				EncryptedStatic: h[fspXKPubKeySize : fspXKPubKeySize+fspXKStaticSize],
				EncryptedEpoch:  h[fspXKPubKeySize+fspXKStaticSize : wire.XXMsg2Size], EncryptedPayload: h[wire.XXMsg2Size:]}
		}
		if err != nil {
			return nil, err
		}
		return FSPSessionAck{
			Layer: "fsp", Type: "SessionAck", Phase: p.Phase, Flags: uint8(p.Flags), PayloadLen: p.PayloadLen,
			AckFlags: a.Flags, SrcCoords: a.SrcCoords.Addrs(), DestCoords: a.DestCoords.Addrs(), HandshakeLen: len(a.Handshake),
			Noise: noise,
		}, nil
	case wire.FSPKindMsg3:
		m, err := wire.ParseSessionMsg3(b)
		if err != nil {
			if x, xerr := wire.ParseSessionMsg3XX(b); xerr == nil {
				m, err = x, nil
			}
		}
		if err != nil {
			return nil, err
		}
		return FSPSessionMsg3{
			Layer: "fsp", Type: "SessionMsg3", Phase: p.Phase, Flags: uint8(p.Flags), PayloadLen: p.PayloadLen,
			Msg3Flags: m.Flags, HandshakeLen: len(m.Handshake),
			Noise: FSPNoiseXKMsg3{Hex: m.Handshake, EncryptedStatic: m.Handshake[:fspXKStaticSize],
				EncryptedEpoch: m.Handshake[fspXKStaticSize:wire.XXMsg3Size], EncryptedPayload: m.Handshake[wire.XXMsg3Size:]},
		}, nil
	default:
		return fspSignal(b, p)
	}
}

func fspSignal(b []byte, p wire.FSPPrefix) (any, error) {
	t, err := wire.ParseRoutingSignalType(b)
	if err != nil {
		return nil, err
	}
	out := FSPSignal{
		Layer: "fsp", Type: t.String(), Phase: p.Phase, Flags: uint8(p.Flags), FlagNames: fspFlagNames(p.Flags),
		PayloadLen: p.PayloadLen, MsgType: uint8(t),
	}
	switch t {
	case wire.SignalCoordsRequired:
		s, err := wire.ParseCoordsRequired(b)
		if err != nil {
			return nil, err
		}
		out.DestAddr, out.Reporter = s.DestAddr, s.Reporter
	case wire.SignalPathBroken:
		s, err := wire.ParsePathBroken(b)
		if err != nil {
			return nil, err
		}
		out.DestAddr, out.Reporter, out.LastKnownCoords = s.DestAddr, s.Reporter, s.LastKnownCoords.Addrs()
	default:
		s, err := wire.ParseMtuExceeded(b)
		if err != nil {
			return nil, err
		}
		out.DestAddr, out.Reporter, out.MTU = s.DestAddr, s.Reporter, &s.MTU
	}
	out.SignalFlags = b[wire.FSPPrefixSize+1]
	return out, nil
}

func fspFlagNames(f wire.FSPFlags) []string {
	names := []string{}
	for _, n := range []struct {
		bit  wire.FSPFlags
		name string
	}{{wire.FSPFlagCP, "CP"}, {wire.FSPFlagK, "K"}, {wire.FSPFlagU, "U"}} {
		if f&n.bit != 0 {
			names = append(names, n.name)
		}
	}
	if r := f &^ (wire.FSPFlagCP | wire.FSPFlagK | wire.FSPFlagU); r != 0 {
		names = append(names, fmt.Sprintf("reserved=0x%02x", uint8(r)))
	}
	return names
}

// fspSessionFlagNames names the raw SessionSetup flags byte, reserved
// bits included, though the decoder drops them.
func fspSessionFlagNames(f byte) []string {
	names := []string{}
	if f&byte(wire.SessionFlagRequestAck) != 0 {
		names = append(names, "REQUEST_ACK")
	}
	if f&byte(wire.SessionFlagBidirectional) != 0 {
		names = append(names, "BIDIRECTIONAL")
	}
	if r := f &^ byte(wire.SessionFlagRequestAck|wire.SessionFlagBidirectional); r != 0 {
		names = append(names, fmt.Sprintf("reserved=0x%02x", r))
	}
	return names
}

// FSPPlaintext is the dissection of a decrypted FSP plaintext.
type FSPPlaintext struct {
	Layer       string `json:"layer"`     // "fsp-inner"
	Timestamp   uint32 `json:"timestamp"` // ms since the session (epoch) started
	MsgType     uint8  `json:"msg_type"`
	MsgTypeName string `json:"msg_type_name"`
	InnerFlags  uint8  `json:"inner_flags"` // as on the wire
	SpinBit     bool   `json:"spin_bit"`
	Body        any    `json:"body"`
}

// FSPDataPacket is the body of a DataPacket.
type FSPDataPacket struct {
	SrcPort    uint16 `json:"src_port"`
	DstPort    uint16 `json:"dst_port"`
	PayloadLen int    `json:"payload_len"`
	// IPv6 is the rebuilt header of a port-256 shim payload. Its addresses
	// come from the SessionDatagram and the receiver, so they are not shown.
	IPv6      *FSPIPv6Header `json:"ipv6,omitempty"`
	IPv6Error string         `json:"ipv6_error,omitempty"`
}

// FSPIPv6Header holds the IPv6 header fields a shim payload determines.
type FSPIPv6Header struct {
	Version       uint8  `json:"version"` // always 6 after decompression
	TrafficClass  uint8  `json:"traffic_class"`
	ECN           string `json:"ecn"`
	FlowLabel     uint32 `json:"flow_label"`
	NextHeader    uint8  `json:"next_header"`
	HopLimit      uint8  `json:"hop_limit"`
	PayloadLength uint16 `json:"payload_length"`
}

// FSPPathMtuNotification is the body of a PathMtuNotification.
type FSPPathMtuNotification struct {
	PathMTU uint16 `json:"path_mtu"`
}

// FSPPQFragment is the body of a post-quantum upgrade fragment (type
// 0xE0, fips-go's; docs/wire.md).
type FSPPQFragment struct {
	Version  uint8       `json:"version"`
	Kind     string      `json:"kind"`
	Index    uint8       `json:"index"`
	Count    uint8       `json:"count"`
	ID       fspHexBytes `json:"exchange_id"`
	Total    uint16      `json:"total"`
	ChunkLen int         `json:"chunk_len"`
	Chunk    fspHexBytes `json:"chunk"`
}

// FSPUnknownBody is the body of a message type upstream does not define.
type FSPUnknownBody struct {
	BodyLen int         `json:"body_len"`
	Body    fspHexBytes `json:"body"`
}

// fspInner dissects a session plaintext; next: of an XX session (upstream
// next's), whose reports have next's layouts.
func fspInner(b []byte, next bool) (any, error) {
	in, err := wire.ParseFSPInner(b)
	if err != nil {
		return nil, err
	}
	layer := "fsp-inner"
	if next {
		layer = "fsp-inner-next"
	}
	out := FSPPlaintext{
		Layer: layer, Timestamp: in.Timestamp, MsgType: uint8(in.MsgType), MsgTypeName: in.MsgType.String(),
		InnerFlags: b[5], SpinBit: in.Flags.SpinBit(),
	}
	switch in.MsgType {
	case wire.SessionMsgDataPacket:
		d, err := wire.ParseDataPacket(in.Body)
		if err != nil {
			return nil, err
		}
		body := FSPDataPacket{SrcPort: d.SrcPort, DstPort: d.DstPort, PayloadLen: len(d.Payload)}
		if d.DstPort == wire.FSPPortIPv6Shim {
			if s, err := wire.ParseIPv6Shim(d.Payload); err != nil {
				body.IPv6Error = err.Error()
			} else {
				tc := s.TrafficClass()
				body.IPv6 = &FSPIPv6Header{
					Version: 6, TrafficClass: tc, ECN: fspECNNames[tc&0x03], FlowLabel: s.FlowLabel(),
					NextHeader: s.NextHeader, HopLimit: s.HopLimit, PayloadLength: uint16(len(s.Payload)),
				}
			}
		}
		out.Body = body
	case wire.SessionMsgSenderReport:
		if next {
			r, err := wire.ParseSessionSenderReportV1(in.Body)
			if err != nil {
				return nil, err
			}
			out.Body = r
			break
		}
		r, err := wire.ParseSessionSenderReport(in.Body)
		if err != nil {
			return nil, err
		}
		out.Body = r.SenderReport
	case wire.SessionMsgReceiverReport:
		if next {
			r, err := wire.ParseSessionReceiverReportV1(in.Body)
			if err != nil {
				return nil, err
			}
			out.Body = r
			break
		}
		r, err := wire.ParseSessionReceiverReport(in.Body)
		if err != nil {
			return nil, err
		}
		out.Body = r.ReceiverReport
	case wire.SessionMsgPathMtuNotification:
		p, err := wire.ParsePathMtuNotification(in.Body)
		if err != nil {
			return nil, err
		}
		out.Body = FSPPathMtuNotification{PathMTU: p.PathMTU}
	case wire.SessionMsgCoordsWarmup:
		if _, err := wire.ParseCoordsWarmup(in.Body); err != nil {
			return nil, err
		}
		out.Body = struct{}{}
	case wire.SessionMsgPQ:
		f, err := wire.ParsePQFragment(in.Body)
		if err != nil {
			return nil, err
		}
		out.Body = FSPPQFragment{Version: wire.PQVersion, Kind: f.Kind.String(), Index: f.Index, Count: f.Count,
			ID: f.ID[:], Total: f.Total, ChunkLen: len(f.Chunk), Chunk: f.Chunk}
	default:
		out.Body = FSPUnknownBody{BodyLen: len(in.Body), Body: in.Body}
	}
	return out, nil
}

var fspECNNames = [4]string{"Not-ECT", "ECT(1)", "ECT(0)", "CE"}

package dissect

import (
	"encoding/hex"
	"fmt"
	"math/bits"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// fmpHexBytes renders a byte blob as a hex string rather than JSON's
// default base64, so it can be compared with packet captures.
type fmpHexBytes []byte

func (h fmpHexBytes) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(h)))
	hex.Encode(out, h)
	return out, nil
}

// FMPMsg1 is the dissection of a Noise IK msg1 packet.
type FMPMsg1 struct {
	Layer       string       `json:"layer"` // "fmp"
	Type        string       `json:"type"`  // "msg1"
	Phase       uint8        `json:"phase"`
	Flags       uint8        `json:"flags"`
	PayloadLen  uint16       `json:"payload_len"`
	SenderIndex uint32       `json:"sender_idx"`
	Noise       FMPNoiseMsg1 `json:"noise"`
}

// FMPNoiseMsg1 labels the three parts of the 106-byte Noise message.
type FMPNoiseMsg1 struct {
	Hex             fmpHexBytes `json:"hex"`
	Ephemeral       fmpHexBytes `json:"ephemeral"`        // 33, cleartext
	EncryptedStatic fmpHexBytes `json:"encrypted_static"` // 49, initiator's static key + tag
	EncryptedEpoch  fmpHexBytes `json:"encrypted_epoch"`  // 24, 8-byte epoch + tag
}

// FMPMsg2 is the dissection of a Noise IK msg2 packet.
type FMPMsg2 struct {
	Layer         string       `json:"layer"`
	Type          string       `json:"type"` // "msg2"
	Phase         uint8        `json:"phase"`
	Flags         uint8        `json:"flags"`
	PayloadLen    uint16       `json:"payload_len"`
	SenderIndex   uint32       `json:"sender_idx"`
	ReceiverIndex uint32       `json:"receiver_idx"` // echo of the initiator's sender_idx
	Noise         FMPNoiseMsg2 `json:"noise"`
}

// FMPNoiseMsg2 labels the two parts of the 57-byte Noise message.
type FMPNoiseMsg2 struct {
	Hex            fmpHexBytes `json:"hex"`
	Ephemeral      fmpHexBytes `json:"ephemeral"`       // 33
	EncryptedEpoch fmpHexBytes `json:"encrypted_epoch"` // 24
}

// FMPFrame is the dissection of an established frame's cleartext.
type FMPFrame struct {
	Layer         string      `json:"layer"`
	Type          string      `json:"type"`    // "frame"
	Version       uint8       `json:"version"` // 0 (master) or 1 (next)
	Phase         uint8       `json:"phase"`
	Flags         uint8       `json:"flags"`
	FlagNames     []string    `json:"flag_names"` // K, CE, SP, and reserved=0x.. if any other bit is set
	PayloadLen    uint16      `json:"payload_len"`
	ReceiverIndex uint32      `json:"receiver_idx"`
	Counter       uint64      `json:"counter"`
	AAD           fmpHexBytes `json:"aad"`
	// CiphertextLen counts ciphertext and tag: what AEAD Open is given.
	CiphertextLen int         `json:"ciphertext_len"`
	Tag           fmpHexBytes `json:"tag"`
}

// FMPv1Handshake is the dissection of a `next` (version 1) Noise XX
// handshake packet.
type FMPv1Handshake struct {
	Layer         string        `json:"layer"` // "fmp"
	Type          string        `json:"type"`  // "msg1", "msg2" or "msg3"
	Version       uint8         `json:"version"`
	Phase         uint8         `json:"phase"`
	Flags         uint8         `json:"flags"`
	PayloadLen    uint16        `json:"payload_len"`
	SenderIndex   uint32        `json:"sender_idx"`
	ReceiverIndex *uint32       `json:"receiver_idx,omitempty"` // msg2, msg3
	Noise         FMPNoiseXXMsg `json:"noise"`
}

// FMPNoiseXXMsg labels the parts of an XX message; absent parts are
// omitted.
type FMPNoiseXXMsg struct {
	Hex             fmpHexBytes `json:"hex"`
	Ephemeral       fmpHexBytes `json:"ephemeral,omitempty"`        // 33: msg1, msg2
	EncryptedStatic fmpHexBytes `json:"encrypted_static,omitempty"` // 49: msg2, msg3
	EncryptedEpoch  fmpHexBytes `json:"encrypted_epoch,omitempty"`  // 24: msg2, msg3
	// EncryptedPayload is the negotiation payload and its tag, when sent.
	EncryptedPayload fmpHexBytes `json:"encrypted_payload,omitempty"`
}

func fmpv1Packet(b []byte, p wire.FMPPrefix) (any, error) {
	if p.Phase == wire.FMPPhaseEstablished {
		f, err := wire.ParseFMPv1Frame(b)
		if err != nil {
			return nil, err
		}
		return fmpFrame(f, p), nil
	}
	h, err := wire.ParseFMPv1Handshake(b)
	if err != nil {
		return nil, err
	}
	d := FMPv1Handshake{Layer: "fmp", Type: fmt.Sprintf("msg%d", h.Phase), Version: p.Version, Phase: p.Phase,
		Flags: p.Flags, PayloadLen: p.PayloadLen, SenderIndex: h.SenderIndex, Noise: FMPNoiseXXMsg{Hex: h.Noise}}
	n := h.Noise
	const pub, encPub, encEpoch = wire.IKPubKeySize, wire.IKPubKeySize + wire.FMPTagSize, wire.IKEncryptedEpochSize
	switch h.Phase {
	case wire.FMPPhaseMsg1:
		d.Noise.Ephemeral = n
	case wire.FMPPhaseMsg2:
		d.Noise.Ephemeral, d.Noise.EncryptedStatic = n[:pub], n[pub:pub+encPub]
		d.Noise.EncryptedEpoch, d.Noise.EncryptedPayload = n[pub+encPub:wire.XXMsg2Size], n[wire.XXMsg2Size:]
	case wire.FMPPhaseMsg3:
		d.Noise.EncryptedStatic, d.Noise.EncryptedEpoch = n[:encPub], n[encPub:encPub+encEpoch]
		d.Noise.EncryptedPayload = n[wire.XXMsg3Size:]
	}
	if h.Phase != wire.FMPPhaseMsg1 {
		ri := h.ReceiverIndex
		d.ReceiverIndex = &ri
	}
	return d, nil
}

func fmpFrame(f wire.FMPFrame, p wire.FMPPrefix) FMPFrame {
	return FMPFrame{
		Layer: "fmp", Type: "frame", Version: p.Version, Phase: p.Phase, Flags: f.Flags, FlagNames: fmpFlagNames(f.Flags),
		PayloadLen: p.PayloadLen, ReceiverIndex: f.ReceiverIndex, Counter: f.Counter,
		AAD: f.AAD(), CiphertextLen: len(f.Sealed), Tag: f.Sealed[len(f.Sealed)-wire.FMPTagSize:],
	}
}

func fmpPacket(b []byte) (any, error) {
	p, err := wire.ParseFMPPrefix(b)
	if err != nil {
		return nil, err
	}
	if p.Version == wire.FMPVersionNext {
		return fmpv1Packet(b, p)
	}
	switch p.Phase {
	case wire.FMPPhaseMsg1:
		m, err := wire.ParseFMPMsg1(b)
		if err != nil {
			return nil, err
		}
		return FMPMsg1{
			Layer: "fmp", Type: "msg1", Phase: p.Phase, Flags: p.Flags, PayloadLen: p.PayloadLen,
			SenderIndex: m.SenderIndex,
			Noise: FMPNoiseMsg1{
				Hex:             m.Noise,
				Ephemeral:       m.Ephemeral(),
				EncryptedStatic: m.EncryptedStatic(),
				EncryptedEpoch:  m.EncryptedEpoch(),
			},
		}, nil
	case wire.FMPPhaseMsg2:
		m, err := wire.ParseFMPMsg2(b)
		if err != nil {
			return nil, err
		}
		return FMPMsg2{
			Layer: "fmp", Type: "msg2", Phase: p.Phase, Flags: p.Flags, PayloadLen: p.PayloadLen,
			SenderIndex: m.SenderIndex, ReceiverIndex: m.ReceiverIndex,
			Noise: FMPNoiseMsg2{Hex: m.Noise, Ephemeral: m.Ephemeral(), EncryptedEpoch: m.EncryptedEpoch()},
		}, nil
	default:
		// ParseFMPFrame reports version and unknown phases as well.
		f, err := wire.ParseFMPFrame(b)
		if err != nil {
			return nil, err
		}
		return fmpFrame(f, p), nil
	}
}

func fmpFlagNames(f uint8) []string {
	names := []string{}
	for _, n := range []struct {
		bit  uint8
		name string
	}{{wire.FMPFlagK, "K"}, {wire.FMPFlagCE, "CE"}, {wire.FMPFlagSP, "SP"}} {
		if f&n.bit != 0 {
			names = append(names, n.name)
		}
	}
	if r := f &^ (wire.FMPFlagK | wire.FMPFlagCE | wire.FMPFlagSP); r != 0 {
		names = append(names, fmt.Sprintf("reserved=0x%02x", r))
	}
	return names
}

// FMPPlaintext is the dissection of a decrypted FMP frame plaintext.
type FMPPlaintext struct {
	Layer       string `json:"layer"`     // "fmp-inner"
	Timestamp   uint32 `json:"timestamp"` // ms since the link session started
	MsgType     uint8  `json:"msg_type"`
	MsgTypeName string `json:"msg_type_name"`
	Body        any    `json:"body"`
}

// FMPSessionDatagram is a SessionDatagram body; the FSP packet it carries
// is dissected in FSP, or FSPError says why it could not be.
type FMPSessionDatagram struct {
	TTL        uint8             `json:"ttl"`
	PathMTU    uint16            `json:"path_mtu"`
	Src        identity.NodeAddr `json:"src"`
	Dest       identity.NodeAddr `json:"dest"`
	PayloadLen int               `json:"payload_len"`
	FSP        any               `json:"fsp,omitempty"`
	FSPError   string            `json:"fsp_error,omitempty"`
}

// FMPAncestryEntry is one hop of a TreeAnnounce ancestry.
type FMPAncestryEntry struct {
	NodeAddr  identity.NodeAddr `json:"node_addr"`
	Sequence  uint64            `json:"sequence"`
	Timestamp uint64            `json:"timestamp"`
}

// FMPTreeAnnounce is a TreeAnnounce body. AncestryError carries the
// reason the ancestry would be refused after signature checking, if any.
type FMPTreeAnnounce struct {
	Version       uint8              `json:"version"`
	Sequence      uint64             `json:"sequence"`
	Timestamp     uint64             `json:"timestamp"` // Unix seconds
	Node          identity.NodeAddr  `json:"node"`
	Parent        identity.NodeAddr  `json:"parent"`
	IsRoot        bool               `json:"is_root"`
	Ancestry      []FMPAncestryEntry `json:"ancestry"`
	Signature     fmpHexBytes        `json:"signature"`
	AncestryError string             `json:"ancestry_error,omitempty"`
}

// FMPFilterAnnounce summarises a FilterAnnounce: the set bits, not 1 KiB of hex.
type FMPFilterAnnounce struct {
	Sequence    uint64 `json:"sequence"`
	HashCount   uint8  `json:"hash_count"`
	SizeClass   uint8  `json:"size_class"`
	FilterBytes int    `json:"filter_bytes"`
	BitsSet     int    `json:"bits_set"`
}

// FMPLookupRequest is a LookupRequest body. request_id is a string because
// it is a random u64 that JSON numbers in most consumers cannot hold.
type FMPLookupRequest struct {
	RequestID    uint64              `json:"request_id,string"`
	Target       identity.NodeAddr   `json:"target"`
	Origin       identity.NodeAddr   `json:"origin"`
	TTL          uint8               `json:"ttl"`
	MinMTU       uint16              `json:"min_mtu"`
	OriginCoords []identity.NodeAddr `json:"origin_coords"`
}

// FMPLookupResponse is a LookupResponse body.
type FMPLookupResponse struct {
	RequestID    uint64              `json:"request_id,string"`
	Target       identity.NodeAddr   `json:"target"`
	PathMTU      uint16              `json:"path_mtu"`
	TargetCoords []identity.NodeAddr `json:"target_coords"`
	Proof        fmpHexBytes         `json:"proof"`
}

// FMPDisconnect is a Disconnect body. Reason is the byte as sent;
// ReasonName is what it decodes to (unknown codes read as Other).
type FMPDisconnect struct {
	Reason     uint8  `json:"reason"`
	ReasonName string `json:"reason_name"`
}

// FMPHeartbeat is the (empty) Heartbeat body.
type FMPHeartbeat struct{}

// fmpInner dissects a link frame's plaintext; next: of a version-1
// link, whose reports and lookups have next's layouts.
func fmpInner(b []byte, next bool) (any, error) {
	in, err := wire.ParseFMPInner(b)
	if err != nil {
		return nil, err
	}
	t := in.Type()
	layer := "fmp-inner"
	var body any
	if next {
		layer = "fmp-inner-next"
		body, err = fmpLinkBodyNext(t, in.Message)
	} else {
		body, err = fmpLinkBody(t, in.Message)
	}
	if err != nil {
		return nil, err
	}
	return FMPPlaintext{Layer: layer, Timestamp: in.Timestamp, MsgType: uint8(t), MsgTypeName: t.String(), Body: body}, nil
}

// FMPLookupRequestNext is a `next` LookupRequest: no origin coordinates,
// TLVs at the end.
type FMPLookupRequestNext struct {
	RequestID uint64            `json:"request_id"`
	Target    identity.NodeAddr `json:"target"`
	Origin    identity.NodeAddr `json:"origin"`
	TTL       uint8             `json:"ttl"`
	MinMTU    uint16            `json:"min_mtu"`
	TLVs      []FMPTLV          `json:"tlvs"`
}

// FMPLookupResponseNext is a `next` LookupResponse: master's fields, TLVs
// after the proof.
type FMPLookupResponseNext struct {
	FMPLookupResponse
	TLVs []FMPTLV `json:"tlvs"`
}

// FMPTLV is one TLV extension entry.
type FMPTLV struct {
	Field uint16      `json:"field"`
	Value fmpHexBytes `json:"value"`
}

func fmpTLVs(in []wire.TLV) []FMPTLV {
	out := make([]FMPTLV, len(in))
	for i, t := range in {
		out[i] = FMPTLV{Field: t.Field, Value: t.Value}
	}
	return out
}

// fmpLinkBodyNext is fmpLinkBody for a version-1 link: MMP reports and
// lookups in next's layouts, everything else as on master.
func fmpLinkBodyNext(t wire.MsgType, m []byte) (any, error) {
	switch t {
	case wire.MsgSenderReport:
		return wire.ParseSenderReportV1(m)
	case wire.MsgReceiverReport:
		return wire.ParseReceiverReportV1(m)
	case wire.MsgLookupRequest:
		r, err := wire.ParseLookupRequestV1(m)
		if err != nil {
			return nil, err
		}
		return FMPLookupRequestNext{RequestID: r.RequestID, Target: r.Target, Origin: r.Origin, TTL: r.TTL, MinMTU: r.MinMTU, TLVs: fmpTLVs(r.TLVs)}, nil
	case wire.MsgLookupResponse:
		r, err := wire.ParseLookupResponseV1(m)
		if err != nil {
			return nil, err
		}
		return FMPLookupResponseNext{FMPLookupResponse: FMPLookupResponse{RequestID: r.RequestID, Target: r.Target, PathMTU: r.PathMTU,
			TargetCoords: r.TargetCoords.Addrs(), Proof: r.Proof}, TLVs: fmpTLVs(r.TLVs)}, nil
	}
	return fmpLinkBody(t, m)
}

func fmpLinkBody(t wire.MsgType, m []byte) (any, error) {
	switch t {
	case wire.MsgSessionDatagram:
		d, err := wire.ParseSessionDatagram(m)
		if err != nil {
			return nil, err
		}
		v := FMPSessionDatagram{TTL: d.TTL, PathMTU: d.PathMTU, Src: d.Src, Dest: d.Dest, PayloadLen: len(d.Payload)}
		if fsp, err := fspPacket(d.Payload); err != nil {
			v.FSPError = err.Error()
		} else {
			v.FSP = fsp
		}
		return v, nil
	case wire.MsgSenderReport:
		r, err := wire.ParseSenderReport(m)
		if err != nil {
			return nil, err
		}
		return r, nil
	case wire.MsgReceiverReport:
		r, err := wire.ParseReceiverReport(m)
		if err != nil {
			return nil, err
		}
		return r, nil
	case wire.MsgTreeAnnounce:
		a, err := wire.ParseTreeAnnounce(m)
		if err != nil {
			return nil, err
		}
		v := FMPTreeAnnounce{
			Version: m[1], Sequence: a.Sequence, Timestamp: a.Timestamp,
			Node: a.Node(), Parent: a.Parent, IsRoot: a.IsRoot(), Signature: a.Signature,
			Ancestry: make([]FMPAncestryEntry, a.Ancestry.Len()),
		}
		for i := range v.Ancestry {
			e := a.Ancestry.At(i)
			v.Ancestry[i] = FMPAncestryEntry{NodeAddr: e.NodeAddr, Sequence: e.Sequence, Timestamp: e.Timestamp}
		}
		if err := a.Validate(); err != nil {
			v.AncestryError = err.Error()
		}
		return v, nil
	case wire.MsgFilterAnnounce:
		f, err := wire.ParseFilterAnnounce(m)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, x := range f.Filter {
			n += bits.OnesCount8(x)
		}
		return FMPFilterAnnounce{Sequence: f.Sequence, HashCount: f.HashCount, SizeClass: f.SizeClass, FilterBytes: len(f.Filter), BitsSet: n}, nil
	case wire.MsgLookupRequest:
		r, err := wire.ParseLookupRequest(m)
		if err != nil {
			return nil, err
		}
		return FMPLookupRequest{RequestID: r.RequestID, Target: r.Target, Origin: r.Origin, TTL: r.TTL, MinMTU: r.MinMTU, OriginCoords: r.OriginCoords.Addrs()}, nil
	case wire.MsgLookupResponse:
		r, err := wire.ParseLookupResponse(m)
		if err != nil {
			return nil, err
		}
		return FMPLookupResponse{RequestID: r.RequestID, Target: r.Target, PathMTU: r.PathMTU, TargetCoords: r.TargetCoords.Addrs(), Proof: r.Proof}, nil
	case wire.MsgDisconnect:
		d, err := wire.ParseDisconnect(m)
		if err != nil {
			return nil, err
		}
		return FMPDisconnect{Reason: m[1], ReasonName: d.Reason.String()}, nil
	case wire.MsgHeartbeat:
		if _, err := wire.ParseHeartbeat(m); err != nil {
			return nil, err
		}
		return FMPHeartbeat{}, nil
	case wire.MsgLinkPQ:
		// fips-go's post-quantum link upgrade: a session upgrade's
		// fragment (upstream drops the type).
		f, err := wire.ParseLinkPQ(m)
		if err != nil {
			return nil, err
		}
		return FSPPQFragment{Version: wire.PQVersion, Kind: f.Kind.String(), Index: f.Index, Count: f.Count,
			ID: f.ID[:], Total: f.Total, ChunkLen: len(f.Chunk), Chunk: f.Chunk}, nil
	}
	return nil, fmt.Errorf("%w 0x%02x (receivers drop it)", wire.ErrType, uint8(t))
}

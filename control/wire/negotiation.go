package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// The negotiation payload of upstream's `next` format, carried encrypted
// after an XX msg2 or msg3 (FMP links) and in FSP handshakes, one codec for
// both layers:
//
//	[format:1 = 0][version_min:4 | version_max:4][features:8 LE] then TLVs
//	TLV: [field_num:2 LE][length:2 LE][value:length]
//
// Unknown TLV field numbers are kept (forward compatible); a TLV running
// past the end is an error, as is a format other than 0 or version_min >
// version_max.
const (
	NegotiationHeaderSize = 10
	NegotiationFormat     = 0
	// MaxNegotiationTLVs bounds the TLVs one payload may hold; upstream
	// sends at most one (TLVRekeyOf).
	MaxNegotiationTLVs = 32

	// TLVRekeyOf marks a handshake as a rekey: its 4-byte LE value is the
	// session index the receiver allocated for the session it replaces.
	TLVRekeyOf = 1
)

// FMP feature bits (the features field of an FMP negotiation payload).
const (
	FMPFeatProfileMask = 0x07 // bits 0–2: NodeProfile, self-declared
	FMPFeatProvidesSR  = 1 << 3
	FMPFeatProvidesRR  = 1 << 4
	FMPFeatWantsSR     = 1 << 5
	FMPFeatWantsRR     = 1 << 6
)

// NodeProfile is what a node declares it does (FMP features bits 0–2). At
// least one end of a link must be ProfileFull.
type NodeProfile uint8

// Node profiles.
const (
	ProfileFull       NodeProfile = 0 // routes: bloom filters, transit
	ProfileNonRouting NodeProfile = 1 // in the tree, receives filters, no transit
	ProfileLeaf       NodeProfile = 2 // one upstream peer, no tree, bloom or transit
)

func (p NodeProfile) String() string {
	switch p {
	case ProfileFull:
		return "full"
	case ProfileNonRouting:
		return "non-routing"
	case ProfileLeaf:
		return "leaf"
	}
	return "profile(" + strconv.Itoa(int(p)) + ")"
}

// TLV is one extension entry of a negotiation payload. Value aliases the
// decoded buffer.
type TLV struct {
	Field uint16
	Value []byte
}

// Negotiation is a decoded negotiation payload.
type Negotiation struct {
	VersionMin, VersionMax uint8 // 4 bits each
	Features               uint64
	TLVs                   []TLV
}

// ParseNegotiation decodes a negotiation payload.
func ParseNegotiation(b []byte) (Negotiation, error) {
	const msg = "negotiation payload"
	if len(b) < NegotiationHeaderSize {
		return Negotiation{}, errTruncated(msg, "", len(b), NegotiationHeaderSize)
	}
	if b[0] != NegotiationFormat {
		return Negotiation{}, errKind(ErrVersion, msg, "format", strconv.Itoa(int(b[0])))
	}
	n := Negotiation{VersionMin: b[1] >> 4, VersionMax: b[1] & 0x0f, Features: binary.LittleEndian.Uint64(b[2:])}
	if n.VersionMin > n.VersionMax {
		return Negotiation{}, errValue(msg, "versions", fmt.Sprintf("min %d above max %d", n.VersionMin, n.VersionMax))
	}
	tlvs, err := parseTLVs(b[NegotiationHeaderSize:], msg)
	if err != nil {
		return Negotiation{}, err
	}
	n.TLVs = tlvs
	return n, nil
}

// Len is the encoded size.
func (n Negotiation) Len() int { return NegotiationHeaderSize + tlvsLen(n.TLVs) }

// MarshalTo writes the payload.
func (n Negotiation) MarshalTo(b []byte) (int, error) {
	const msg = "negotiation payload"
	if n.VersionMin > 15 || n.VersionMax > 15 || n.VersionMin > n.VersionMax {
		return 0, errValue(msg, "versions", fmt.Sprintf("min %d, max %d: want 0 ≤ min ≤ max ≤ 15", n.VersionMin, n.VersionMax))
	}
	if err := checkTLVs(n.TLVs, msg); err != nil {
		return 0, err
	}
	l := n.Len()
	if len(b) < l {
		return 0, errBuffer(msg, len(b), l)
	}
	b[0] = NegotiationFormat
	b[1] = n.VersionMin<<4 | n.VersionMax
	binary.LittleEndian.PutUint64(b[2:], n.Features)
	return NegotiationHeaderSize + putTLVs(b[NegotiationHeaderSize:], n.TLVs), nil
}

// Append appends the encoded payload to dst.
func (n Negotiation) Append(dst []byte) ([]byte, error) {
	l := len(dst)
	dst = append(dst, make([]byte, n.Len())...)
	if _, err := n.MarshalTo(dst[l:]); err != nil {
		return dst[:l], err
	}
	return dst, nil
}

// RekeyOf returns the index a TLVRekeyOf names, whether there is one, and
// an error when one is present but not 4 bytes (upstream refuses such a
// handshake rather than reading it as a fresh dial).
func (n Negotiation) RekeyOf() (uint32, bool, error) {
	for _, t := range n.TLVs {
		if t.Field == TLVRekeyOf {
			if len(t.Value) != 4 {
				return 0, true, errLength("negotiation payload", "rekey marker", len(t.Value), 4)
			}
			return binary.LittleEndian.Uint32(t.Value), true, nil
		}
	}
	return 0, false, nil
}

// WithRekeyOf returns n with a TLVRekeyOf naming index (the receiver's).
func (n Negotiation) WithRekeyOf(index uint32) Negotiation {
	v := binary.LittleEndian.AppendUint32(nil, index)
	n.TLVs = append(append([]TLV(nil), n.TLVs...), TLV{Field: TLVRekeyOf, Value: v})
	return n
}

// Profile is the node profile an FMP payload declares; an unknown value
// (3–7) is an error, as upstream refuses it.
func (n Negotiation) Profile() (NodeProfile, error) {
	p := NodeProfile(n.Features & FMPFeatProfileMask)
	if p > ProfileLeaf {
		return p, errValue("negotiation payload", "node profile", strconv.Itoa(int(p)))
	}
	return p, nil
}

// parseTLVs reads [field:2 LE][length:2 LE][value] entries to the end of
// b (the values alias b); a truncated entry or more than
// MaxNegotiationTLVs is an error.
func parseTLVs(b []byte, msg string) ([]TLV, error) {
	var tlvs []TLV
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, errTruncated(msg, "TLV header", len(b), 4)
		}
		if len(tlvs) == MaxNegotiationTLVs {
			return nil, errValue(msg, "TLVs", "more than "+strconv.Itoa(MaxNegotiationTLVs))
		}
		l := int(binary.LittleEndian.Uint16(b[2:]))
		if 4+l > len(b) {
			return nil, errTruncated(msg, "TLV value", len(b)-4, l)
		}
		tlvs = append(tlvs, TLV{Field: binary.LittleEndian.Uint16(b), Value: b[4 : 4+l : 4+l]})
		b = b[4+l:]
	}
	return tlvs, nil
}

func tlvsLen(tlvs []TLV) int {
	l := 0
	for _, t := range tlvs {
		l += 4 + len(t.Value)
	}
	return l
}

func checkTLVs(tlvs []TLV, msg string) error {
	if len(tlvs) > MaxNegotiationTLVs {
		return errValue(msg, "TLVs", strconv.Itoa(len(tlvs))+", at most "+strconv.Itoa(MaxNegotiationTLVs))
	}
	for _, t := range tlvs {
		if len(t.Value) > 0xffff {
			return errValue(msg, "TLV value", strconv.Itoa(len(t.Value))+" bytes does not fit in 16 bits")
		}
	}
	return nil
}

// putTLVs writes tlvs (checked, room made) and returns their length.
func putTLVs(b []byte, tlvs []TLV) int {
	off := 0
	for _, t := range tlvs {
		binary.LittleEndian.PutUint16(b[off:], t.Field)
		binary.LittleEndian.PutUint16(b[off+2:], uint16(len(t.Value)))
		off += 4 + copy(b[off+4:], t.Value)
	}
	return off
}

// FMPFeatures is the features field upstream's `next` sends for a node
// profile (NegotiationPayload::fmp): the profile in bits 0–2 and the MMP
// reports that profile provides and wants. Full provides and wants both
// reports (0x78), NonRouting provides both and wants only receiver
// reports (0x59), Leaf provides receiver reports and wants none (0x12).
func FMPFeatures(p NodeProfile) uint64 {
	f := uint64(p) & FMPFeatProfileMask
	switch p {
	case ProfileFull:
		f |= FMPFeatProvidesSR | FMPFeatProvidesRR | FMPFeatWantsSR | FMPFeatWantsRR
	case ProfileNonRouting:
		f |= FMPFeatProvidesSR | FMPFeatProvidesRR | FMPFeatWantsRR
	case ProfileLeaf:
		f |= FMPFeatProvidesRR
	}
	return f
}

// MMPReports is upstream next's per-link report gating: a node sends
// SenderReports on a link when its profile provides them and the peer's
// wants them, ReceiverReports likewise. next derives both from the two
// declared profiles (FMPFeatures), not from the bits on the wire.
func MMPReports(ours, theirs NodeProfile) (sr, rr bool) {
	o, t := FMPFeatures(ours), FMPFeatures(theirs)
	return o&FMPFeatProvidesSR != 0 && t&FMPFeatWantsSR != 0, o&FMPFeatProvidesRR != 0 && t&FMPFeatWantsRR != 0
}

// FMPNegotiation is the payload an FMP v1 link handshake carries for a
// node profile: versions 1 to 1 and FMPFeatures(p), no TLVs (10 bytes).
func FMPNegotiation(p NodeProfile) Negotiation {
	return Negotiation{VersionMin: FMPVersionNext, VersionMax: FMPVersionNext, Features: FMPFeatures(p)}
}

// ProfilesCompatible is upstream's pairing rule: at least one end of a
// link must be Full.
func ProfilesCompatible(a, b NodeProfile) bool { return a == ProfileFull || b == ProfileFull }

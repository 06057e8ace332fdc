package wire

import (
	"encoding/binary"

	"github.com/fips-go/fips/control/identity"
)

// Lookups in upstream's `next` format (src/proto/lookup/wire.rs on branch
// next, docs/next.md §9): the request drops origin_coords and ends in
// TLVs; the response keeps its fields and appends TLVs after the proof
// (the proof still signs request_id ‖ target ‖ coords only). Transit
// nodes re-encode both, so TLVs pass through unchanged. None are defined
// yet.

// LookupRequestV1Size is a `next` LookupRequest without TLVs.
const LookupRequestV1Size = 44 // msg_type, request_id, target, origin, ttl, min_mtu

// LookupRequestV1 is the `next` LookupRequest.
type LookupRequestV1 struct {
	RequestID uint64
	Target    identity.NodeAddr
	Origin    identity.NodeAddr
	TTL       uint8
	MinMTU    uint16 // the origin's TUN MTU on next; 0 = no requirement
	TLVs      []TLV
}

// ParseLookupRequestV1 decodes a `next` LookupRequest (msg_type first).
func ParseLookupRequestV1(b []byte) (LookupRequestV1, error) {
	if err := checkMsgType(b, MsgLookupRequest, LookupRequestV1Size); err != nil {
		return LookupRequestV1{}, err
	}
	r := LookupRequestV1{RequestID: binary.LittleEndian.Uint64(b[1:]), TTL: b[41], MinMTU: binary.LittleEndian.Uint16(b[42:])}
	copy(r.Target[:], b[9:25])
	copy(r.Origin[:], b[25:41])
	tlvs, err := parseTLVs(b[LookupRequestV1Size:], "LookupRequest v1")
	if err != nil {
		return LookupRequestV1{}, err
	}
	r.TLVs = tlvs
	return r, nil
}

// Len is the encoded size.
func (r LookupRequestV1) Len() int { return LookupRequestV1Size + tlvsLen(r.TLVs) }

// MarshalTo writes the message.
func (r LookupRequestV1) MarshalTo(b []byte) (int, error) {
	const msg = "LookupRequest v1"
	if err := checkTLVs(r.TLVs, msg); err != nil {
		return 0, err
	}
	n := r.Len()
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	b[0] = byte(MsgLookupRequest)
	binary.LittleEndian.PutUint64(b[1:], r.RequestID)
	copy(b[9:25], r.Target[:])
	copy(b[25:41], r.Origin[:])
	b[41] = r.TTL
	binary.LittleEndian.PutUint16(b[42:], r.MinMTU)
	putTLVs(b[LookupRequestV1Size:], r.TLVs)
	return n, nil
}

// LookupResponseV1 is the `next` LookupResponse: master's fields, then
// TLVs after the proof.
type LookupResponseV1 struct {
	LookupResponse
	TLVs []TLV
}

// ParseLookupResponseV1 decodes a `next` LookupResponse.
func ParseLookupResponseV1(b []byte) (LookupResponseV1, error) {
	r, err := ParseLookupResponse(b)
	if err != nil {
		return LookupResponseV1{}, err
	}
	tlvs, err := parseTLVs(b[r.Len():], "LookupResponse v1")
	if err != nil {
		return LookupResponseV1{}, err
	}
	return LookupResponseV1{LookupResponse: r, TLVs: tlvs}, nil
}

// Len is the encoded size.
func (r LookupResponseV1) Len() int { return r.LookupResponse.Len() + tlvsLen(r.TLVs) }

// MarshalTo writes the message.
func (r LookupResponseV1) MarshalTo(b []byte) (int, error) {
	const msg = "LookupResponse v1"
	if err := checkTLVs(r.TLVs, msg); err != nil {
		return 0, err
	}
	if len(b) < r.Len() {
		return 0, errBuffer(msg, len(b), r.Len())
	}
	n, err := r.LookupResponse.MarshalTo(b)
	if err != nil {
		return 0, err
	}
	return n + putTLVs(b[n:], r.TLVs), nil
}

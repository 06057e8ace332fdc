package wire

import (
	"encoding/binary"
	"fmt"
)

// The post-quantum upgrade of a session (ours, not upstream's): an ML-KEM-768
// offer and its accept, each cut into fragments that travel as encrypted
// session messages of type SessionMsgPQ. Every fragment is PQFragmentSize
// bytes whatever it carries, offer or accept, first or last, so the sizes
// on the wire do not tell them apart.
//
//	off  size  field
//	0    1     version (PQVersion)
//	1    1     kind (PQKindOffer, PQKindAccept, PQKindConfirm)
//	2    1     index (0-based)
//	3    1     count (= ceil(total / PQChunkMax))
//	4    8     exchange id (the offerer's, echoed by the accept)
//	12   2     total: the reassembled payload's length, u16le
//	14   2     chunk length, u16le (PQChunkMax but in the last fragment)
//	16   n     chunk: payload[index*PQChunkMax : index*PQChunkMax+n]
//	16+n ...   zero padding to PQFragmentSize
//
// An offer's payload is the 1,184-byte ML-KEM-768 encapsulation key; an
// accept's is the 1,088-byte ciphertext followed by a 32-byte key
// confirmation tag; a confirm's (the offerer's first message on the new
// keys) is a 32-byte key confirmation tag. Decoding is exact: one encoding
// per value.
const (
	PQVersion = 1
	// PQChunkMax is the most payload one fragment carries.
	PQChunkMax = 600
	// PQFragmentHeaderSize is the fixed part before the chunk.
	PQFragmentHeaderSize = 16
	// PQFragmentSize is every fragment's size: the body of its session
	// message, after the 6-byte inner header.
	PQFragmentSize = PQFragmentHeaderSize + PQChunkMax
	// PQOfferSize is an offer's payload: an ML-KEM-768 encapsulation key.
	PQOfferSize = 1184
	// PQCiphertextSize is an ML-KEM-768 ciphertext.
	PQCiphertextSize = 1088
	// PQConfirmSize is the accept's key confirmation tag.
	PQConfirmSize = 32
	// PQAcceptSize is an accept's payload: ciphertext ‖ confirmation.
	PQAcceptSize = PQCiphertextSize + PQConfirmSize
	// PQConfirmPayloadSize is a confirm's payload: its tag.
	PQConfirmPayloadSize = PQConfirmSize
	// PQIDSize is the exchange id.
	PQIDSize = 8
)

// PQKind says whether a fragment belongs to an offer or an accept.
type PQKind uint8

// Fragment kinds.
const (
	PQKindOffer   PQKind = 1
	PQKindAccept  PQKind = 2
	PQKindConfirm PQKind = 3
)

func (k PQKind) String() string {
	switch k {
	case PQKindOffer:
		return "offer"
	case PQKindAccept:
		return "accept"
	case PQKindConfirm:
		return "confirm"
	}
	return fmt.Sprintf("PQKind(%d)", uint8(k))
}

// PayloadSize is the reassembled payload length of kind k, 0 if unknown.
func (k PQKind) PayloadSize() int {
	switch k {
	case PQKindOffer:
		return PQOfferSize
	case PQKindAccept:
		return PQAcceptSize
	case PQKindConfirm:
		return PQConfirmPayloadSize
	}
	return 0
}

// PQFragmentCount is how many fragments carry a payload of n bytes.
func PQFragmentCount(n int) int { return (n + PQChunkMax - 1) / PQChunkMax }

// PQFragment is one fragment of an offer or accept.
type PQFragment struct {
	Kind  PQKind
	Index uint8
	Count uint8
	ID    [PQIDSize]byte
	Total uint16
	Chunk []byte // aliases the decoded buffer
}

// Offset is where the chunk goes in the reassembled payload.
func (f PQFragment) Offset() int { return int(f.Index) * PQChunkMax }

// Len is PQFragmentSize.
func (f PQFragment) Len() int { return PQFragmentSize }

// ParsePQFragment decodes a SessionMsgPQ body.
func ParsePQFragment(b []byte) (PQFragment, error) {
	return parsePQFragment(b, "PQ fragment", PQKind.PayloadSize)
}

// parsePQFragment decodes a fragment whose kinds' payloads are size's
// (0: a kind this layer does not use).
func parsePQFragment(b []byte, msg string, size func(PQKind) int) (PQFragment, error) {
	if len(b) != PQFragmentSize {
		return PQFragment{}, errLength(msg, "size", len(b), PQFragmentSize)
	}
	if b[0] != PQVersion {
		return PQFragment{}, errKind(ErrVersion, msg, "version", fmt.Sprintf("%d", b[0]))
	}
	f := PQFragment{Kind: PQKind(b[1]), Index: b[2], Count: b[3], Total: binary.LittleEndian.Uint16(b[12:])}
	copy(f.ID[:], b[4:12])
	want := size(f.Kind)
	if want == 0 {
		return PQFragment{}, errKind(ErrType, msg, "kind", fmt.Sprintf("%d", b[1]))
	}
	if int(f.Total) != want {
		return PQFragment{}, errLength(msg, "total", int(f.Total), want)
	}
	if int(f.Count) != PQFragmentCount(want) {
		return PQFragment{}, errLength(msg, "count", int(f.Count), PQFragmentCount(want))
	}
	if f.Index >= f.Count {
		return PQFragment{}, errValue(msg, "index", fmt.Sprintf("%d of %d", f.Index, f.Count))
	}
	n := int(binary.LittleEndian.Uint16(b[14:]))
	if wantN := min(PQChunkMax, want-f.Offset()); n != wantN {
		return PQFragment{}, errLength(msg, "chunk_len", n, wantN)
	}
	for _, c := range b[PQFragmentHeaderSize+n:] {
		if c != 0 {
			return PQFragment{}, errValue(msg, "padding", "not zero")
		}
	}
	f.Chunk = b[PQFragmentHeaderSize : PQFragmentHeaderSize+n]
	return f, nil
}

// MarshalTo encodes f into b[:PQFragmentSize], padding with zeros.
func (f PQFragment) MarshalTo(b []byte) (int, error) {
	const msg = "PQ fragment"
	if len(b) < PQFragmentSize {
		return 0, errBuffer(msg, len(b), PQFragmentSize)
	}
	if len(f.Chunk) > PQChunkMax {
		return 0, fmt.Errorf("%s: %w: chunk of %d bytes", msg, ErrValue, len(f.Chunk))
	}
	b = b[:PQFragmentSize]
	b[0], b[1], b[2], b[3] = PQVersion, byte(f.Kind), f.Index, f.Count
	copy(b[4:12], f.ID[:])
	binary.LittleEndian.PutUint16(b[12:], f.Total)
	binary.LittleEndian.PutUint16(b[14:], uint16(len(f.Chunk)))
	n := copy(b[PQFragmentHeaderSize:], f.Chunk)
	clear(b[PQFragmentHeaderSize+n:])
	return PQFragmentSize, nil
}

// PQFragments cuts payload, which must be kind's size, into its fragments.
// The chunks alias payload.
func PQFragments(kind PQKind, id [PQIDSize]byte, payload []byte) ([]PQFragment, error) {
	return pqFragments(kind, kind.PayloadSize(), id, payload)
}

func pqFragments(kind PQKind, want int, id [PQIDSize]byte, payload []byte) ([]PQFragment, error) {
	if want == 0 || len(payload) != want {
		return nil, fmt.Errorf("PQ %s: %w: payload of %d bytes", kind, ErrLength, len(payload))
	}
	count := PQFragmentCount(len(payload))
	out := make([]PQFragment, 0, count)
	for i := range count {
		lo := i * PQChunkMax
		hi := min(lo+PQChunkMax, len(payload))
		out = append(out, PQFragment{Kind: kind, Index: uint8(i), Count: uint8(count), ID: id, Total: uint16(len(payload)), Chunk: payload[lo:hi]})
	}
	return out, nil
}

package wire

import "encoding/binary"

// The post-quantum upgrade of a link (ours, not upstream's): the session
// upgrade's fragments (pq.go), carried as link messages of type MsgLinkPQ
// inside established FMP frames:
//
//	off  size  field
//	0    1     msg_type (MsgLinkPQ, 0xE0)
//	1    616   a PQ fragment (PQFragmentSize), kind offer or accept
//
// The payloads differ from a session's: each side names the receiver
// index the upgraded session's frames must carry to reach it (a rekey's
// new index, as a msg1 or msg2 names one), u32le, first.
//
//	offer   LinkPQIndexSize ‖ encapsulation key (1,184)        = 1,188 bytes
//	accept  LinkPQIndexSize ‖ ciphertext (1,088) ‖ tag (32)    = 1,124 bytes
//
// Both are two fragments; every frame is FMPHeaderSize + 4 + LinkPQMsgSize
// + FMPTagSize = 653 bytes, within a 1,280-byte path.
const (
	LinkPQIndexSize = 4
	// LinkPQOfferSize and LinkPQAcceptSize are the link payloads.
	LinkPQOfferSize  = LinkPQIndexSize + PQOfferSize
	LinkPQAcceptSize = LinkPQIndexSize + PQAcceptSize
	// LinkPQMsgSize is a MsgLinkPQ message: type byte and fragment.
	LinkPQMsgSize = 1 + PQFragmentSize
)

// LinkPQPayloadSize is the reassembled link payload of kind k; 0 for a
// kind links do not use (confirm).
func LinkPQPayloadSize(k PQKind) int {
	switch k {
	case PQKindOffer:
		return LinkPQOfferSize
	case PQKindAccept:
		return LinkPQAcceptSize
	}
	return 0
}

// ParseLinkPQ decodes a MsgLinkPQ message (type byte first).
func ParseLinkPQ(b []byte) (PQFragment, error) {
	const msg = "LinkPQ"
	if len(b) != LinkPQMsgSize {
		return PQFragment{}, errLength(msg, "size", len(b), LinkPQMsgSize)
	}
	if MsgType(b[0]) != MsgLinkPQ {
		return PQFragment{}, errKind(ErrType, msg, "msg_type", MsgType(b[0]).String())
	}
	return parsePQFragment(b[1:], msg, LinkPQPayloadSize)
}

// MarshalLinkPQ encodes f as a MsgLinkPQ message into b[:LinkPQMsgSize].
func MarshalLinkPQ(b []byte, f PQFragment) (int, error) {
	if len(b) < LinkPQMsgSize {
		return 0, errBuffer("LinkPQ", len(b), LinkPQMsgSize)
	}
	b[0] = byte(MsgLinkPQ)
	if _, err := f.MarshalTo(b[1:]); err != nil {
		return 0, err
	}
	return LinkPQMsgSize, nil
}

// LinkPQFragments cuts a link payload of kind's size into its fragments.
// The chunks alias payload.
func LinkPQFragments(kind PQKind, id [PQIDSize]byte, payload []byte) ([]PQFragment, error) {
	return pqFragments(kind, LinkPQPayloadSize(kind), id, payload)
}

// LinkPQIndex is the receiver index at the head of a link payload.
func LinkPQIndex(payload []byte) uint32 { return binary.LittleEndian.Uint32(payload) }

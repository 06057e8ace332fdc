package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// FMP packet framing: the 4-byte common prefix, the two Noise IK handshake
// packets and the established-frame header. Byte 0 carries the version in
// its high nibble and the phase in its low nibble; with version 0 it is
// simply 0x00, 0x01 or 0x02 on the wire.

// FMP versions, phases and flags.
const (
	FMPVersion = 0 // the only version master speaks; anything else is dropped

	FMPPhaseEstablished = 0x0 // encrypted frame
	FMPPhaseMsg1        = 0x1 // Noise IK message 1 (initiator → responder)
	FMPPhaseMsg2        = 0x2 // Noise IK message 2 (responder → initiator)

	// Flags are meaningful only on established frames; handshake packets
	// must carry 0. Bits 3-7 are reserved: sent as 0, ignored on receipt.
	FMPFlagK  = 0x01 // key epoch parity, toggled at every rekey cutover
	FMPFlagCE = 0x02 // congestion experienced, relayed hop by hop
	FMPFlagSP = 0x04 // MMP spin bit for link RTT
)

// FMP sizes in bytes.
const (
	FMPPrefixSize      = 4  // ver+phase, flags, payload_len
	FMPHeaderSize      = 16 // established header: prefix, receiver_idx, counter; the AAD
	FMPTagSize         = 16 // ChaCha20-Poly1305 tag
	FMPFrameMinSize    = FMPHeaderSize + FMPTagSize
	FMPInnerHeaderSize = 5 // timestamp u32 + msg_type
	// FMPLinkOverhead is what an established frame adds around a link
	// message body: header, inner timestamp and msg_type, tag.
	FMPLinkOverhead = FMPHeaderSize + FMPInnerHeaderSize + FMPTagSize

	IKPubKeySize         = 33 // compressed secp256k1 point
	IKEncryptedEpochSize = 8 + FMPTagSize
	IKMsg1Size           = IKPubKeySize + IKPubKeySize + FMPTagSize + IKEncryptedEpochSize // 106
	IKMsg2Size           = IKPubKeySize + IKEncryptedEpochSize                             // 57

	FMPMsg1Size       = FMPPrefixSize + 4 + IKMsg1Size     // 114
	FMPMsg2Size       = FMPPrefixSize + 4 + 4 + IKMsg2Size // 69
	FMPMsg1PayloadLen = FMPMsg1Size - FMPPrefixSize        // 110: handshake payload_len counts everything after the prefix
	FMPMsg2PayloadLen = FMPMsg2Size - FMPPrefixSize        // 65
)

// FMPPrefix is the common prefix of every FMP packet.
type FMPPrefix struct {
	Version    uint8 // high nibble of byte 0
	Phase      uint8 // low nibble of byte 0
	Flags      uint8
	PayloadLen uint16 // meaning depends on the phase; see FMPExpectedPayloadLen
}

// ParseFMPPrefix reads the first 4 bytes of b. Like upstream it does not
// judge version or phase, so a dissector can still show what arrived; the
// per-phase parsers do.
func ParseFMPPrefix(b []byte) (FMPPrefix, error) {
	if len(b) < FMPPrefixSize {
		return FMPPrefix{}, errTruncated("FMP prefix", "", len(b), FMPPrefixSize)
	}
	return FMPPrefix{
		Version:    b[0] >> 4,
		Phase:      b[0] & 0x0f,
		Flags:      b[1],
		PayloadLen: binary.LittleEndian.Uint16(b[2:]),
	}, nil
}

// Len is the encoded size of the prefix.
func (p FMPPrefix) Len() int { return FMPPrefixSize }

// MarshalTo writes the prefix. Version and phase are truncated to 4 bits.
func (p FMPPrefix) MarshalTo(b []byte) (int, error) {
	if len(b) < FMPPrefixSize {
		return 0, errBuffer("FMP prefix", len(b), FMPPrefixSize)
	}
	putFMPPrefix(b, p.Version, p.Phase, p.Flags, p.PayloadLen)
	return FMPPrefixSize, nil
}

func putFMPPrefix(b []byte, version, phase, flags uint8, payloadLen uint16) {
	b[0] = version<<4 | phase&0x0f
	b[1] = flags
	binary.LittleEndian.PutUint16(b[2:], payloadLen)
}

// FMPExpectedPayloadLen is the payload_len a well-formed packet of the given
// phase and total wire length must declare. Receivers drop packets that
// disagree before using the field for anything; TCP framing depends on it
// being exact. ok is false for an unknown phase, an established frame too
// short to hold header and tag, or one whose plaintext length does not fit
// in 16 bits.
func FMPExpectedPayloadLen(phase uint8, total int) (n uint16, ok bool) {
	switch phase {
	case FMPPhaseMsg1:
		return FMPMsg1PayloadLen, true
	case FMPPhaseMsg2:
		return FMPMsg2PayloadLen, true
	case FMPPhaseEstablished:
		d := total - FMPFrameMinSize
		if d < 0 || d > 0xffff {
			return 0, false
		}
		return uint16(d), true
	}
	return 0, false
}

// checkHandshakePrefix applies the checks both handshake packets share, in
// the order upstream's receive path applies them.
func checkHandshakePrefix(b []byte, msg string, phase uint8, size int, plen uint16) error {
	if len(b) != size {
		if len(b) < size {
			return errTruncated(msg, "", len(b), size)
		}
		return errLength(msg, "packet length", len(b), size)
	}
	if v := b[0] >> 4; v != FMPVersion {
		return errKind(ErrVersion, msg, "version", strconv.Itoa(int(v)))
	}
	if p := b[0] & 0x0f; p != phase {
		return errKind(ErrPhase, msg, "phase", strconv.Itoa(int(p)))
	}
	if b[1] != 0 {
		return errKind(ErrFlags, msg, "flags", fmt.Sprintf("must be 0 in a handshake packet, got 0x%02x", b[1]))
	}
	if got := binary.LittleEndian.Uint16(b[2:]); got != plen {
		return errLength(msg, "payload_len", int(got), int(plen))
	}
	return nil
}

// FMPMsg1 is the phase-1 packet carrying Noise IK message 1 and the index the
// initiator chose for this link session.
type FMPMsg1 struct {
	SenderIndex uint32
	Noise       []byte // IKMsg1Size bytes: e ‖ enc(s) ‖ enc(epoch)
}

// ParseFMPMsg1 decodes a whole msg1 packet. Its length is fixed, so any other
// length, a non-zero version, flags or a payload_len other than 110 is
// rejected.
func ParseFMPMsg1(b []byte) (FMPMsg1, error) {
	if err := checkHandshakePrefix(b, "FMP msg1", FMPPhaseMsg1, FMPMsg1Size, FMPMsg1PayloadLen); err != nil {
		return FMPMsg1{}, err
	}
	return FMPMsg1{
		SenderIndex: binary.LittleEndian.Uint32(b[4:]),
		Noise:       b[8:FMPMsg1Size:FMPMsg1Size],
	}, nil
}

// Len is always FMPMsg1Size.
func (m FMPMsg1) Len() int { return FMPMsg1Size }

// MarshalTo writes the packet. Noise must be exactly IKMsg1Size bytes.
func (m FMPMsg1) MarshalTo(b []byte) (int, error) {
	if len(m.Noise) != IKMsg1Size {
		return 0, errLength("FMP msg1", "noise message", len(m.Noise), IKMsg1Size)
	}
	if len(b) < FMPMsg1Size {
		return 0, errBuffer("FMP msg1", len(b), FMPMsg1Size)
	}
	putFMPPrefix(b, FMPVersion, FMPPhaseMsg1, 0, FMPMsg1PayloadLen)
	binary.LittleEndian.PutUint32(b[4:], m.SenderIndex)
	copy(b[8:FMPMsg1Size], m.Noise)
	return FMPMsg1Size, nil
}

// Ephemeral is the initiator's ephemeral key (cleartext, compressed).
func (m FMPMsg1) Ephemeral() []byte { return m.Noise[:IKPubKeySize] }

// EncryptedStatic is the initiator's static key sealed under es.
func (m FMPMsg1) EncryptedStatic() []byte {
	return m.Noise[IKPubKeySize : 2*IKPubKeySize+FMPTagSize]
}

// EncryptedEpoch is the initiator's 8-byte epoch sealed under ss.
func (m FMPMsg1) EncryptedEpoch() []byte { return m.Noise[2*IKPubKeySize+FMPTagSize:] }

// FMPMsg2 is the phase-2 packet carrying Noise IK message 2. ReceiverIndex
// echoes the initiator's SenderIndex so the initiator can find its attempt.
type FMPMsg2 struct {
	SenderIndex   uint32
	ReceiverIndex uint32
	Noise         []byte // IKMsg2Size bytes: e ‖ enc(epoch)
}

// ParseFMPMsg2 decodes a whole msg2 packet with the same strictness as
// ParseFMPMsg1 (length 69, payload_len 65).
func ParseFMPMsg2(b []byte) (FMPMsg2, error) {
	if err := checkHandshakePrefix(b, "FMP msg2", FMPPhaseMsg2, FMPMsg2Size, FMPMsg2PayloadLen); err != nil {
		return FMPMsg2{}, err
	}
	return FMPMsg2{
		SenderIndex:   binary.LittleEndian.Uint32(b[4:]),
		ReceiverIndex: binary.LittleEndian.Uint32(b[8:]),
		Noise:         b[12:FMPMsg2Size:FMPMsg2Size],
	}, nil
}

// Len is always FMPMsg2Size.
func (m FMPMsg2) Len() int { return FMPMsg2Size }

// MarshalTo writes the packet. Noise must be exactly IKMsg2Size bytes.
func (m FMPMsg2) MarshalTo(b []byte) (int, error) {
	if len(m.Noise) != IKMsg2Size {
		return 0, errLength("FMP msg2", "noise message", len(m.Noise), IKMsg2Size)
	}
	if len(b) < FMPMsg2Size {
		return 0, errBuffer("FMP msg2", len(b), FMPMsg2Size)
	}
	putFMPPrefix(b, FMPVersion, FMPPhaseMsg2, 0, FMPMsg2PayloadLen)
	binary.LittleEndian.PutUint32(b[4:], m.SenderIndex)
	binary.LittleEndian.PutUint32(b[8:], m.ReceiverIndex)
	copy(b[12:FMPMsg2Size], m.Noise)
	return FMPMsg2Size, nil
}

// Ephemeral is the responder's ephemeral key (cleartext, compressed).
func (m FMPMsg2) Ephemeral() []byte { return m.Noise[:IKPubKeySize] }

// EncryptedEpoch is the responder's 8-byte epoch sealed after ee and se.
func (m FMPMsg2) EncryptedEpoch() []byte { return m.Noise[IKPubKeySize:] }

// FMPFrame is an established (phase 0) FMP frame.
type FMPFrame struct {
	Flags         uint8  // FMPFlagK | FMPFlagCE | FMPFlagSP; reserved bits kept as received
	ReceiverIndex uint32 // the index the receiver chose, which routes the frame before any crypto
	Counter       uint64 // AEAD nonce and replay counter
	// Header is the 16 header bytes exactly as received, which are the AEAD
	// additional data. Frames built for sending leave it nil; MarshalTo
	// derives the header from the fields.
	Header []byte
	// Sealed is ciphertext ‖ tag; the plaintext is len(Sealed)-16 bytes.
	Sealed []byte
}

// ParseFMPFrame decodes an established frame. payload_len must equal the
// frame length minus 32 exactly; upstream drops anything else before
// touching the index.
func ParseFMPFrame(b []byte) (FMPFrame, error) { return parseFMPFrame(b, FMPVersion, "FMP frame") }

func parseFMPFrame(b []byte, version uint8, msg string) (FMPFrame, error) {
	if len(b) < FMPFrameMinSize {
		return FMPFrame{}, errTruncated(msg, "", len(b), FMPFrameMinSize)
	}
	if v := b[0] >> 4; v != version {
		return FMPFrame{}, errKind(ErrVersion, msg, "version", strconv.Itoa(int(v)))
	}
	if p := b[0] & 0x0f; p != FMPPhaseEstablished {
		return FMPFrame{}, errKind(ErrPhase, msg, "phase", strconv.Itoa(int(p)))
	}
	want := len(b) - FMPFrameMinSize
	if got := int(binary.LittleEndian.Uint16(b[2:])); got != want {
		return FMPFrame{}, errLength(msg, "payload_len", got, want)
	}
	return FMPFrame{
		Flags:         b[1],
		ReceiverIndex: binary.LittleEndian.Uint32(b[4:]),
		Counter:       binary.LittleEndian.Uint64(b[8:]),
		Header:        b[:FMPHeaderSize:FMPHeaderSize],
		Sealed:        b[FMPHeaderSize:],
	}, nil
}

// AAD is the additional data the frame was sealed with.
func (f FMPFrame) AAD() []byte { return f.Header }

// PayloadLen is the plaintext length, the value of the payload_len field.
func (f FMPFrame) PayloadLen() int { return len(f.Sealed) - FMPTagSize }

// Len is the encoded size.
func (f FMPFrame) Len() int { return FMPHeaderSize + len(f.Sealed) }

// MarshalTo writes header and sealed payload. Sealed may already sit at
// b[16:], as when sealing in place; then only the header is written.
func (f FMPFrame) MarshalTo(b []byte) (int, error) {
	n := f.Len()
	if len(f.Sealed) < FMPTagSize || len(f.Sealed)-FMPTagSize > 0xffff {
		return 0, errValue("FMP frame", "sealed", "length "+strconv.Itoa(len(f.Sealed))+" outside [16, 65551]")
	}
	if len(b) < n {
		return 0, errBuffer("FMP frame", len(b), n)
	}
	if _, err := PutFMPFrameHeader(b, f.Flags, f.ReceiverIndex, f.Counter, f.PayloadLen()); err != nil {
		return 0, err
	}
	copy(b[FMPHeaderSize:n], f.Sealed)
	return n, nil
}

// PutFMPFrameHeader writes the 16-byte header of an established frame whose
// plaintext is plaintextLen bytes. The sender seals with b[:16] as AAD and
// the ciphertext goes at b[16:].
func PutFMPFrameHeader(b []byte, flags uint8, receiverIndex uint32, counter uint64, plaintextLen int) (int, error) {
	if plaintextLen < 0 || plaintextLen > 0xffff {
		return 0, errValue("FMP frame", "payload_len", strconv.Itoa(plaintextLen)+" does not fit in 16 bits")
	}
	if len(b) < FMPHeaderSize {
		return 0, errBuffer("FMP frame header", len(b), FMPHeaderSize)
	}
	putFMPPrefix(b, FMPVersion, FMPPhaseEstablished, flags, uint16(plaintextLen))
	binary.LittleEndian.PutUint32(b[4:], receiverIndex)
	binary.LittleEndian.PutUint64(b[8:], counter)
	return FMPHeaderSize, nil
}

// FMPInner is the decrypted plaintext of an established frame.
type FMPInner struct {
	// Timestamp is milliseconds since this link session started (reset at
	// every rekey cutover, wraps); MMP uses it for jitter and OWD.
	Timestamp uint32
	// Message is the link message, msg_type first. Pass it to the
	// Parse function of its type.
	Message []byte
}

// ParseFMPInner splits a decrypted frame plaintext. A plaintext without a
// msg_type byte is dropped upstream, so at least 5 bytes are required.
func ParseFMPInner(b []byte) (FMPInner, error) {
	if len(b) < FMPInnerHeaderSize {
		return FMPInner{}, errTruncated("FMP inner", "", len(b), FMPInnerHeaderSize)
	}
	return FMPInner{Timestamp: binary.LittleEndian.Uint32(b), Message: b[4:]}, nil
}

// Type is the link message type.
func (in FMPInner) Type() MsgType { return MsgType(in.Message[0]) }

// Len is the encoded size.
func (in FMPInner) Len() int { return 4 + len(in.Message) }

// MarshalTo writes timestamp and message. Message may already sit at b[4:].
func (in FMPInner) MarshalTo(b []byte) (int, error) {
	if len(in.Message) == 0 {
		return 0, errValue("FMP inner", "message", "empty: a link message needs at least its msg_type")
	}
	n := in.Len()
	if len(b) < n {
		return 0, errBuffer("FMP inner", len(b), n)
	}
	binary.LittleEndian.PutUint32(b, in.Timestamp)
	copy(b[4:n], in.Message)
	return n, nil
}

// PacketVersion and PacketPhase are the version and phase nibbles of an
// FMP packet's first byte; b holds at least one byte (checked by the
// caller).
func PacketVersion(b []byte) uint8 { return b[0] >> 4 }

// PacketPhase: see PacketVersion.
func PacketPhase(b []byte) uint8 { return b[0] & 0x0f }

// IsEstablishedFrame reports whether b starts as an established frame of
// this version does (its length not yet checked).
func IsEstablishedFrame(b []byte) bool {
	return len(b) > 0 && b[0] == FMPVersion<<4|FMPPhaseEstablished
}

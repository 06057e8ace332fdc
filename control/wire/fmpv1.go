package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// FMP version 1: upstream's `next` link format (src/proto/fmp/wire.rs on
// branch next). The 4-byte prefix and the established frame keep their
// layout, with 1 in the version nibble; the link handshake is Noise XX
// in three packets, msg2 and msg3 carrying the negotiation payload after
// their fixed part (so they have a minimum length, not a fixed one):
//
//	msg1  [0x11][0][payload_len=37 LE][sender_idx LE][e]                              41 bytes
//	msg2  [0x12][0][payload_len LE][sender_idx LE][receiver_idx LE][XX msg2 ‖ enc(p)] 118+ bytes
//	msg3  [0x13][0][payload_len LE][sender_idx LE][receiver_idx LE][XX msg3 ‖ enc(p)]  85+ bytes
//
// payload_len counts everything after the prefix, as in version 0; a
// stream transport delimits packets by it. PacketVersion tells the two
// formats apart (docs/next.md).
const (
	FMPVersionNext = 1   // the `next` link format
	FMPPhaseMsg3   = 0x3 // Noise XX message 3 (version 1 only)

	XXMsg1Size = IKPubKeySize                                                    // 33: e
	XXMsg2Size = IKPubKeySize + IKPubKeySize + FMPTagSize + IKEncryptedEpochSize // 106: e ‖ enc(s) ‖ enc(epoch)
	XXMsg3Size = IKPubKeySize + FMPTagSize + IKEncryptedEpochSize                // 73: enc(s) ‖ enc(epoch)
	// MaxXXPayload bounds the negotiation payload (plaintext) a msg2 or
	// msg3 may carry; upstream's own is 10 bytes plus a 8-byte rekey TLV.
	MaxXXPayload = 1024

	FMPv1Msg1Size    = FMPPrefixSize + 4 + XXMsg1Size     // 41
	FMPv1Msg2MinSize = FMPPrefixSize + 4 + 4 + XXMsg2Size // 118
	FMPv1Msg3MinSize = FMPPrefixSize + 4 + 4 + XXMsg3Size // 85
	// FMPv1HandshakeMaxExtra is the most a msg2 or msg3 may carry past its
	// minimum: an encrypted negotiation payload.
	FMPv1HandshakeMaxExtra = MaxXXPayload + FMPTagSize
)

// FMPv1Handshake is a version-1 handshake packet. ReceiverIndex is 0 and
// unused in msg1.
type FMPv1Handshake struct {
	Phase         uint8 // FMPPhaseMsg1, FMPPhaseMsg2 or FMPPhaseMsg3
	SenderIndex   uint32
	ReceiverIndex uint32
	// Noise is the Noise message: exactly XXMsg1Size bytes in msg1; the
	// fixed part and the optional encrypted payload in msg2 and msg3.
	Noise []byte
}

// fmpv1Shape is where a phase's Noise message starts and its length
// bounds.
func fmpv1Shape(phase uint8) (msg string, off, min, max int, ok bool) {
	switch phase {
	case FMPPhaseMsg1:
		return "FMP v1 msg1", 8, XXMsg1Size, XXMsg1Size, true
	case FMPPhaseMsg2:
		return "FMP v1 msg2", 12, XXMsg2Size, XXMsg2Size + FMPv1HandshakeMaxExtra, true
	case FMPPhaseMsg3:
		return "FMP v1 msg3", 12, XXMsg3Size, XXMsg3Size + FMPv1HandshakeMaxExtra, true
	}
	return "", 0, 0, 0, false
}

// ParseFMPv1Handshake decodes a version-1 msg1, msg2 or msg3: version 1,
// flags 0, payload_len equal to the length after the prefix, the Noise
// message within its bounds, and an optional payload no shorter than its
// tag.
func ParseFMPv1Handshake(b []byte) (FMPv1Handshake, error) {
	if len(b) < FMPPrefixSize {
		return FMPv1Handshake{}, errTruncated("FMP v1 handshake", "", len(b), FMPPrefixSize)
	}
	phase := b[0] & 0x0f
	msg, off, min, max, ok := fmpv1Shape(phase)
	if !ok {
		return FMPv1Handshake{}, errKind(ErrPhase, "FMP v1 handshake", "phase", strconv.Itoa(int(phase)))
	}
	if v := b[0] >> 4; v != FMPVersionNext {
		return FMPv1Handshake{}, errKind(ErrVersion, msg, "version", strconv.Itoa(int(v)))
	}
	if len(b) < off+min {
		return FMPv1Handshake{}, errTruncated(msg, "", len(b), off+min)
	}
	if len(b) > off+max {
		return FMPv1Handshake{}, errLength(msg, "packet length", len(b), off+max)
	}
	if b[1] != 0 {
		return FMPv1Handshake{}, errKind(ErrFlags, msg, "flags", fmt.Sprintf("must be 0 in a handshake packet, got 0x%02x", b[1]))
	}
	if got, want := int(binary.LittleEndian.Uint16(b[2:])), len(b)-FMPPrefixSize; got != want {
		return FMPv1Handshake{}, errLength(msg, "payload_len", got, want)
	}
	if extra := len(b) - off - min; extra > 0 && extra < FMPTagSize {
		return FMPv1Handshake{}, errKind(ErrLength, msg, "negotiation payload", fmt.Sprintf("%d bytes, shorter than its tag", extra))
	}
	h := FMPv1Handshake{Phase: phase, SenderIndex: binary.LittleEndian.Uint32(b[4:]), Noise: b[off:len(b):len(b)]}
	if off == 12 {
		h.ReceiverIndex = binary.LittleEndian.Uint32(b[8:])
	}
	return h, nil
}

// Len is the encoded size.
func (h FMPv1Handshake) Len() int {
	_, off, _, _, _ := fmpv1Shape(h.Phase)
	return off + len(h.Noise)
}

// MarshalTo writes the packet.
func (h FMPv1Handshake) MarshalTo(b []byte) (int, error) {
	msg, off, min, max, ok := fmpv1Shape(h.Phase)
	if !ok {
		return 0, errValue("FMP v1 handshake", "phase", strconv.Itoa(int(h.Phase)))
	}
	if len(h.Noise) < min || len(h.Noise) > max || (len(h.Noise) > min && len(h.Noise)-min < FMPTagSize) {
		return 0, errValue(msg, "noise message", fmt.Sprintf("%d bytes, want %d to %d", len(h.Noise), min, max))
	}
	n := off + len(h.Noise)
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	putFMPPrefix(b, FMPVersionNext, h.Phase, 0, uint16(n-FMPPrefixSize))
	binary.LittleEndian.PutUint32(b[4:], h.SenderIndex)
	if off == 12 {
		binary.LittleEndian.PutUint32(b[8:], h.ReceiverIndex)
	}
	copy(b[off:n], h.Noise)
	return n, nil
}

// ParseFMPv1Frame decodes a version-1 established frame: the version-0
// layout with 1 in the version nibble, payload_len the frame length
// minus 32.
func ParseFMPv1Frame(b []byte) (FMPFrame, error) {
	return parseFMPFrame(b, FMPVersionNext, "FMP v1 frame")
}

// PutFMPv1FrameHeader is PutFMPFrameHeader for version 1.
func PutFMPv1FrameHeader(b []byte, flags uint8, receiverIndex uint32, counter uint64, plaintextLen int) (int, error) {
	n, err := PutFMPFrameHeader(b, flags, receiverIndex, counter, plaintextLen)
	if err == nil {
		b[0] = FMPVersionNext<<4 | FMPPhaseEstablished
	}
	return n, err
}

// ParseFMPFrameAny decodes an established frame of either link format
// (version 0 or 1); FMPFrame.Version says which.
func ParseFMPFrameAny(b []byte) (FMPFrame, error) {
	if len(b) > 0 && b[0]>>4 == FMPVersionNext {
		return ParseFMPv1Frame(b)
	}
	return ParseFMPFrame(b)
}

// Version is the FMP version nibble of the frame's header.
func (f FMPFrame) Version() uint8 {
	if len(f.Header) == 0 {
		return 0
	}
	return f.Header[0] >> 4
}

// IsEstablishedFrameAny reports whether b starts like an established
// frame of either link format (first byte 0x00 or 0x10).
func IsEstablishedFrameAny(b []byte) bool {
	return len(b) > 0 && (b[0] == FMPVersion<<4|FMPPhaseEstablished || b[0] == FMPVersionNext<<4|FMPPhaseEstablished)
}

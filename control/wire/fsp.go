package wire

import (
	"encoding/binary"
	"fmt"
)

// FSP, the end-to-end session layer, travels as the payload of a
// SessionDatagram. Its packets have no length field of their own: an FSP
// packet runs to the end of the datagram payload.
//
// Decoding policy, shared with signals.go and mmp.go: every length must be
// exact (payload_len, handshake_len, no trailing bytes), the version nibble
// must be 0, and reserved bits and bytes are ignored on decode and written
// as zero on encode. Upstream is looser: it ignores payload_len and
// trailing bytes of these packets, and the version nibble outside encrypted
// messages. It never sends a packet these checks refuse, so
// interoperability is unaffected, and a malformed packet stops here rather
// than deeper in the session code.

// FSP prefix and header constants.
const (
	FSPVersion = 0

	FSPPhaseEstablished = 0x0 // encrypted message, or error signal when U is set
	FSPPhaseMsg1        = 0x1 // SessionSetup (XK msg1)
	FSPPhaseMsg2        = 0x2 // SessionAck (XK msg2)
	FSPPhaseMsg3        = 0x3 // SessionMsg3 (XK msg3)

	FSPPrefixSize       = 4
	FSPHeaderSize       = 12 // prefix + counter; the AEAD associated data
	FSPTagSize          = 16
	FSPEncryptedMinSize = FSPHeaderSize + FSPTagSize
	FSPInnerHeaderSize  = 6 // timestamp + msg_type + inner_flags
	FSPPortHeaderSize   = 4 // DataPacket src_port + dst_port

	// FSPPortIPv6Shim is the DataPacket port of the IPv6 shim; every other
	// destination port belongs to the native datagram API. Ports 0-255 are
	// reserved to the protocol, 256-1023 to FIPS services.
	FSPPortIPv6Shim uint16 = 256

	// Noise XK message sizes carried by the handshake phases. Upstream
	// refuses any other handshake_len, so the decoders here do too.
	XKMsg1Size = 33 // e
	XKMsg2Size = 57 // e, ee, encrypted epoch
	XKMsg3Size = 73 // encrypted s, se, encrypted epoch

	// SessionMsg3Size is the whole phase-3 packet: prefix, flags,
	// handshake_len and the XK message.
	SessionMsg3Size = FSPPrefixSize + 1 + 2 + XKMsg3Size
)

// FSPFlags is the cleartext flags byte of a phase-0 FSP packet.
type FSPFlags uint8

// FSP cleartext flag bits. Bits 3-7 are reserved.
const (
	FSPFlagCP FSPFlags = 0x01 // coordinates follow the 12-byte header
	FSPFlagK  FSPFlags = 0x02 // key epoch, toggled on every rekey
	FSPFlagU  FSPFlags = 0x04 // unencrypted: a routing error signal

	fspFlagsKnown = FSPFlagCP | FSPFlagK | FSPFlagU
)

// FSPFlagsFromByte keeps the defined bits and drops the reserved ones, as
// upstream's decoder does (0xFF becomes 0x07).
func FSPFlagsFromByte(b byte) FSPFlags { return FSPFlags(b) & fspFlagsKnown }

// CoordsPresent reports the CP bit.
func (f FSPFlags) CoordsPresent() bool { return f&FSPFlagCP != 0 }

// KeyEpoch reports the K bit.
func (f FSPFlags) KeyEpoch() bool { return f&FSPFlagK != 0 }

// Unencrypted reports the U bit.
func (f FSPFlags) Unencrypted() bool { return f&FSPFlagU != 0 }

// FSPPrefix is the 4-byte prefix every FSP packet starts with.
type FSPPrefix struct {
	Version    uint8
	Phase      uint8
	Flags      FSPFlags // as on the wire, reserved bits included
	PayloadLen uint16   // meaning depends on the phase
}

// ParseFSPPrefix reads the prefix without judging it; ClassifyFSP and the
// message parsers do the checking.
func ParseFSPPrefix(b []byte) (FSPPrefix, error) {
	if len(b) < FSPPrefixSize {
		return FSPPrefix{}, errTruncated("FSP prefix", "", len(b), FSPPrefixSize)
	}
	return FSPPrefix{
		Version:    b[0] >> 4,
		Phase:      b[0] & 0x0F,
		Flags:      FSPFlags(b[1]),
		PayloadLen: binary.LittleEndian.Uint16(b[2:]),
	}, nil
}

// Len is the encoded size.
func (p FSPPrefix) Len() int { return FSPPrefixSize }

// MarshalTo writes the prefix.
func (p FSPPrefix) MarshalTo(b []byte) (int, error) {
	if len(b) < FSPPrefixSize {
		return 0, errBuffer("FSP prefix", len(b), FSPPrefixSize)
	}
	putFSPPrefix(b, p.Phase, p.Flags, p.PayloadLen)
	b[0] = p.Version<<4 | p.Phase&0x0F // any version, unlike the message encoders
	return FSPPrefixSize, nil
}

func putFSPPrefix(b []byte, phase uint8, flags FSPFlags, payloadLen uint16) {
	b[0] = FSPVersion<<4 | phase&0x0F
	b[1] = byte(flags)
	binary.LittleEndian.PutUint16(b[2:], payloadLen)
}

// FSPKind is what an FSP packet is, decided by its prefix alone.
type FSPKind uint8

// FSP packet kinds.
const (
	FSPKindEncrypted FSPKind = iota + 1 // phase 0, U clear
	FSPKindSignal                       // phase 0, U set: CoordsRequired, PathBroken, MtuExceeded
	FSPKindSetup                        // phase 1
	FSPKindAck                          // phase 2
	FSPKindMsg3                         // phase 3
)

func (k FSPKind) String() string {
	switch k {
	case FSPKindEncrypted:
		return "encrypted"
	case FSPKindSignal:
		return "signal"
	case FSPKindSetup:
		return "SessionSetup"
	case FSPKindAck:
		return "SessionAck"
	case FSPKindMsg3:
		return "SessionMsg3"
	}
	return fmt.Sprintf("FSPKind(%d)", uint8(k))
}

// ClassifyFSP tells which parser an FSP packet belongs to. Upstream
// dispatches on the phase alone; for phase 0 the U bit separates plaintext
// error signals from encrypted messages, whatever the other flag bits say.
func ClassifyFSP(b []byte) (FSPKind, error) {
	const msg = "FSP prefix"
	p, err := ParseFSPPrefix(b)
	if err != nil {
		return 0, err
	}
	if p.Version != FSPVersion {
		return 0, errKind(ErrVersion, msg, "version", fmt.Sprintf("got %d, want %d", p.Version, FSPVersion))
	}
	switch p.Phase {
	case FSPPhaseEstablished:
		if p.Flags.Unencrypted() {
			return FSPKindSignal, nil
		}
		return FSPKindEncrypted, nil
	case FSPPhaseMsg1:
		return FSPKindSetup, nil
	case FSPPhaseMsg2:
		return FSPKindAck, nil
	case FSPPhaseMsg3:
		return FSPKindMsg3, nil
	}
	return 0, errKind(ErrPhase, msg, "phase", fmt.Sprintf("got %d", p.Phase))
}

// checkFSPVersionPhase is the part of prefix validation every parser shares.
func checkFSPVersionPhase(b []byte, msg string, phase uint8) error {
	if v := b[0] >> 4; v != FSPVersion {
		return errKind(ErrVersion, msg, "version", fmt.Sprintf("got %d, want %d", v, FSPVersion))
	}
	if p := b[0] & 0x0F; p != phase {
		return errKind(ErrPhase, msg, "phase", fmt.Sprintf("got %d, want %d", p, phase))
	}
	return nil
}

// checkFSPPayloadLen requires payload_len to cover exactly the bytes after
// the prefix, for the packets whose payload_len counts the body (handshakes
// and error signals).
func checkFSPPayloadLen(b []byte, msg string) error {
	plen := int(binary.LittleEndian.Uint16(b[2:]))
	have := len(b) - FSPPrefixSize
	if plen > have {
		return errTruncated(msg, "", len(b), FSPPrefixSize+plen)
	}
	if plen < have {
		return errLength(msg, "payload_len", plen, have)
	}
	return nil
}

// FSPHeader is the 12-byte cleartext header of an encrypted message. Its
// encoding is the AEAD associated data; the CP coordinates after it are not
// authenticated.
type FSPHeader struct {
	Flags      FSPFlags // CP and K
	PayloadLen uint16   // inner plaintext length: no coordinates, no tag
	Counter    uint64   // AEAD nonce and replay counter
}

// Len is the encoded size.
func (h FSPHeader) Len() int { return FSPHeaderSize }

// MarshalTo writes the header. The bytes written are the associated data
// to seal the inner plaintext with.
func (h FSPHeader) MarshalTo(b []byte) (int, error) {
	if len(b) < FSPHeaderSize {
		return 0, errBuffer("FSP header", len(b), FSPHeaderSize)
	}
	putFSPPrefix(b, FSPPhaseEstablished, h.Flags, h.PayloadLen)
	binary.LittleEndian.PutUint64(b[4:], h.Counter)
	return FSPHeaderSize, nil
}

// FSPEncrypted is an encrypted FSP message (phase 0, U clear).
type FSPEncrypted struct {
	Header FSPHeader
	// SrcCoords and DestCoords are on the wire exactly when Header.Flags
	// has CP; either may then be empty (count 0).
	SrcCoords  Coords
	DestCoords Coords
	// Ciphertext is the sealed inner plaintext followed by the 16-byte tag.
	Ciphertext []byte

	aad []byte
}

// ParseFSPEncrypted decodes an encrypted FSP message. Flags reserved bits are
// dropped from Header.Flags but stay in AAD, which is what was sealed.
func ParseFSPEncrypted(b []byte) (FSPEncrypted, error) {
	const msg = "FSP encrypted message"
	var m FSPEncrypted
	if len(b) < FSPEncryptedMinSize {
		return m, errTruncated(msg, "", len(b), FSPEncryptedMinSize)
	}
	if err := checkFSPVersionPhase(b, msg, FSPPhaseEstablished); err != nil {
		return m, err
	}
	m.Header.Flags = FSPFlagsFromByte(b[1])
	if m.Header.Flags.Unencrypted() {
		return m, errKind(ErrFlags, msg, "flags", "U is set: a plaintext error signal")
	}
	m.Header.PayloadLen = binary.LittleEndian.Uint16(b[2:])
	m.Header.Counter = binary.LittleEndian.Uint64(b[4:])
	off := FSPHeaderSize
	if m.Header.Flags.CoordsPresent() {
		src, n, err := parseCoords(b[off:], msg, "src_coords", 0)
		if err != nil {
			return m, err
		}
		off += n
		dest, n, err := parseCoords(b[off:], msg, "dest_coords", 0)
		if err != nil {
			return m, err
		}
		off += n
		m.SrcCoords, m.DestCoords = src, dest
	}
	ct := b[off:len(b):len(b)]
	if len(ct) < FSPTagSize {
		return m, errTruncated(msg, "ciphertext", len(ct), FSPTagSize)
	}
	if want := len(ct) - FSPTagSize; int(m.Header.PayloadLen) != want {
		return m, errLength(msg, "payload_len", int(m.Header.PayloadLen), want)
	}
	m.Ciphertext = ct
	m.aad = b[:FSPHeaderSize:FSPHeaderSize]
	return m, nil
}

// AAD returns the 12 header bytes as received, for opening Ciphertext. It is
// nil for a message that was not parsed; when encoding, the associated data
// is the first FSPHeaderSize bytes MarshalTo or MarshalHeaderTo wrote.
func (m FSPEncrypted) AAD() []byte { return m.aad }

// HeaderLen is the size of the cleartext part: header plus CP coordinates.
func (m FSPEncrypted) HeaderLen() int {
	n := FSPHeaderSize
	if m.Header.Flags.CoordsPresent() {
		n += m.SrcCoords.wireLen() + m.DestCoords.wireLen()
	}
	return n
}

// Len is the encoded size.
func (m FSPEncrypted) Len() int { return m.HeaderLen() + len(m.Ciphertext) }

// MarshalHeaderTo writes the header and any CP coordinates but not the
// ciphertext, so the caller can seal in place right after them.
func (m FSPEncrypted) MarshalHeaderTo(b []byte) (int, error) {
	n := m.HeaderLen()
	if len(b) < n {
		return 0, errBuffer("FSP encrypted message", len(b), n)
	}
	m.putHeader(b)
	return n, nil
}

// MarshalTo writes the whole message, Ciphertext included.
func (m FSPEncrypted) MarshalTo(b []byte) (int, error) {
	n := m.Len()
	if len(b) < n {
		return 0, errBuffer("FSP encrypted message", len(b), n)
	}
	off := m.putHeader(b)
	copy(b[off:], m.Ciphertext)
	return n, nil
}

func (m FSPEncrypted) putHeader(b []byte) int {
	off, _ := m.Header.MarshalTo(b)
	if m.Header.Flags.CoordsPresent() {
		off += m.SrcCoords.put(b[off:])
		off += m.DestCoords.put(b[off:])
	}
	return off
}

// SessionFlags is the body flags byte of a SessionSetup. Upstream defines the
// bits but always sends 0.
type SessionFlags uint8

// SessionSetup flag bits; the others are reserved.
const (
	SessionFlagRequestAck    SessionFlags = 0x01
	SessionFlagBidirectional SessionFlags = 0x02

	sessionFlagsKnown = SessionFlagRequestAck | SessionFlagBidirectional
)

// SessionSetup opens a session (phase 1): the initiator's coordinates, the
// destination's (or the initiator's own when it has none cached), and XK
// msg1. Transit nodes cache both coordinate lists.
type SessionSetup struct {
	Flags      SessionFlags // reserved bits dropped
	SrcCoords  Coords       // at least one entry
	DestCoords Coords       // at least one entry
	Handshake  []byte       // XK msg1, XKMsg1Size bytes
}

// ParseSessionSetup decodes a whole phase-1 FSP packet.
func ParseSessionSetup(b []byte) (SessionSetup, error) {
	const msg = "SessionSetup"
	body, err := fspHandshakeBody(b, msg, FSPPhaseMsg1)
	if err != nil {
		return SessionSetup{}, err
	}
	flags, src, dest, hs, err := parseCoordsHandshake(body, msg, XKMsg1Size)
	if err != nil {
		return SessionSetup{}, err
	}
	return SessionSetup{Flags: SessionFlags(flags) & sessionFlagsKnown, SrcCoords: src, DestCoords: dest, Handshake: hs}, nil
}

// Len is the encoded size: 44 + 16·(n+m) with a 33-byte handshake.
func (s SessionSetup) Len() int {
	return coordsHandshakeLen(s.SrcCoords, s.DestCoords, s.Handshake)
}

// MarshalTo writes the packet, prefix included.
func (s SessionSetup) MarshalTo(b []byte) (int, error) {
	return putCoordsHandshake(b, "SessionSetup", FSPPhaseMsg1, byte(s.Flags&sessionFlagsKnown), s.SrcCoords, s.DestCoords, s.Handshake)
}

// SessionAck answers a SessionSetup (phase 2): the responder's coordinates,
// the initiator's coordinates echoed from the Setup so return-path transit
// nodes can cache them, and XK msg2.
type SessionAck struct {
	Flags      uint8  // reserved; kept as received, like upstream
	SrcCoords  Coords // the responder's, at least one entry
	DestCoords Coords // the initiator's, at least one entry
	Handshake  []byte // XK msg2, XKMsg2Size bytes
}

// ParseSessionAck decodes a whole phase-2 FSP packet.
func ParseSessionAck(b []byte) (SessionAck, error) {
	const msg = "SessionAck"
	body, err := fspHandshakeBody(b, msg, FSPPhaseMsg2)
	if err != nil {
		return SessionAck{}, err
	}
	flags, src, dest, hs, err := parseCoordsHandshake(body, msg, XKMsg2Size)
	if err != nil {
		return SessionAck{}, err
	}
	return SessionAck{Flags: flags, SrcCoords: src, DestCoords: dest, Handshake: hs}, nil
}

// ParseSessionAckXX decodes a phase-2 FSP packet of upstream's `next`
// line, whose handshake is Noise XX msg2: XXMsg2Size bytes, or more with
// an encrypted payload (at most MaxXXPayload bytes before its tag). The
// framing is the same as ParseSessionAck's.
func ParseSessionAckXX(b []byte) (SessionAck, error) {
	const msg = "SessionAck"
	body, err := fspHandshakeBody(b, msg, FSPPhaseMsg2)
	if err != nil {
		return SessionAck{}, err
	}
	flags, src, dest, hs, err := parseCoordsHandshakeRange(body, msg, XXMsg2Size, XXMsg2Size+FMPv1HandshakeMaxExtra)
	if err != nil {
		return SessionAck{}, err
	}
	return SessionAck{Flags: flags, SrcCoords: src, DestCoords: dest, Handshake: hs}, nil
}

// Len is the encoded size: 68 + 16·(n+m) with a 57-byte handshake.
func (a SessionAck) Len() int {
	return coordsHandshakeLen(a.SrcCoords, a.DestCoords, a.Handshake)
}

// MarshalTo writes the packet, prefix included.
func (a SessionAck) MarshalTo(b []byte) (int, error) {
	return putCoordsHandshake(b, "SessionAck", FSPPhaseMsg2, a.Flags, a.SrcCoords, a.DestCoords, a.Handshake)
}

// SessionMsg3 completes the XK handshake (phase 3) with the initiator's
// encrypted static key. It carries no coordinates.
type SessionMsg3 struct {
	Flags     uint8  // reserved; kept as received, like upstream
	Handshake []byte // XK msg3, XKMsg3Size bytes
}

// ParseSessionMsg3 decodes a whole phase-3 FSP packet (80 bytes).
func ParseSessionMsg3(b []byte) (SessionMsg3, error) {
	return parseSessionMsg3(b, XKMsg3Size, XKMsg3Size)
}

// ParseSessionMsg3XX decodes a phase-3 FSP packet of upstream's `next`
// line: Noise XX msg3, XXMsg3Size bytes or more with an encrypted
// payload.
func ParseSessionMsg3XX(b []byte) (SessionMsg3, error) {
	return parseSessionMsg3(b, XXMsg3Size, XXMsg3Size+FMPv1HandshakeMaxExtra)
}

// parseSessionMsg3 decodes a phase-3 FSP packet whose Noise message is
// lo to hi bytes.
func parseSessionMsg3(b []byte, lo, hi int) (SessionMsg3, error) {
	const msg = "SessionMsg3"
	body, err := fspHandshakeBody(b, msg, FSPPhaseMsg3)
	if err != nil {
		return SessionMsg3{}, err
	}
	if len(body) < 1 {
		return SessionMsg3{}, errTruncated(msg, "flags", 0, 1)
	}
	hs, err := parseHandshakeRange(body[1:], msg, lo, hi)
	if err != nil {
		return SessionMsg3{}, err
	}
	return SessionMsg3{Flags: body[0], Handshake: hs}, nil
}

// Len is the encoded size (80 with a 73-byte handshake).
func (m SessionMsg3) Len() int { return FSPPrefixSize + 1 + 2 + len(m.Handshake) }

// MarshalTo writes the packet, prefix included.
func (m SessionMsg3) MarshalTo(b []byte) (int, error) {
	n := m.Len()
	if len(b) < n {
		return 0, errBuffer("SessionMsg3", len(b), n)
	}
	putFSPPrefix(b, FSPPhaseMsg3, 0, uint16(n-FSPPrefixSize))
	b[4] = m.Flags
	binary.LittleEndian.PutUint16(b[5:], uint16(len(m.Handshake)))
	copy(b[7:], m.Handshake)
	return n, nil
}

// fspHandshakeBody checks a handshake packet's prefix and returns the body.
// The prefix flags byte is reserved in these phases: ignored, sent as 0.
func fspHandshakeBody(b []byte, msg string, phase uint8) ([]byte, error) {
	if len(b) < FSPPrefixSize {
		return nil, errTruncated(msg, "", len(b), FSPPrefixSize)
	}
	if err := checkFSPVersionPhase(b, msg, phase); err != nil {
		return nil, err
	}
	if err := checkFSPPayloadLen(b, msg); err != nil {
		return nil, err
	}
	return b[FSPPrefixSize:], nil
}

// parseCoordsHandshake decodes the body shared by Setup and Ack.
func parseCoordsHandshake(body []byte, msg string, hsSize int) (flags byte, src, dest Coords, hs []byte, err error) {
	return parseCoordsHandshakeRange(body, msg, hsSize, hsSize)
}

// parseCoordsHandshakeRange is parseCoordsHandshake for a handshake of
// lo to hi bytes.
func parseCoordsHandshakeRange(body []byte, msg string, lo, hi int) (flags byte, src, dest Coords, hs []byte, err error) {
	if len(body) < 1 {
		return 0, nil, nil, nil, errTruncated(msg, "flags", 0, 1)
	}
	off := 1
	src, n, err := parseCoords(body[off:], msg, "src_coords", 1)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	off += n
	dest, n, err = parseCoords(body[off:], msg, "dest_coords", 1)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	off += n
	hs, err = parseHandshakeRange(body[off:], msg, lo, hi)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	return body[0], src, dest, hs, nil
}

// parseHandshakeRange reads handshake_len and the Noise message (lo to
// hi bytes), which must be the last thing in the packet.
func parseHandshakeRange(b []byte, msg string, lo, hi int) ([]byte, error) {
	if len(b) < 2 {
		return nil, errTruncated(msg, "handshake_len", len(b), 2)
	}
	size := int(binary.LittleEndian.Uint16(b))
	if size < lo {
		return nil, errLength(msg, "handshake_len", size, lo)
	}
	if size > hi {
		return nil, errLength(msg, "handshake_len", size, hi)
	}
	if len(b) < 2+size {
		return nil, errTruncated(msg, "handshake", len(b)-2, size)
	}
	if len(b) > 2+size {
		return nil, errLength(msg, "trailing bytes", len(b)-2-size, 0)
	}
	return b[2 : 2+size : 2+size], nil
}

func coordsHandshakeLen(src, dest Coords, hs []byte) int {
	return FSPPrefixSize + 1 + src.wireLen() + dest.wireLen() + 2 + len(hs)
}

func putCoordsHandshake(b []byte, msg string, phase uint8, flags byte, src, dest Coords, hs []byte) (int, error) {
	n := coordsHandshakeLen(src, dest, hs)
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	putFSPPrefix(b, phase, 0, uint16(n-FSPPrefixSize))
	b[4] = flags
	off := 5
	off += src.put(b[off:])
	off += dest.put(b[off:])
	binary.LittleEndian.PutUint16(b[off:], uint16(len(hs)))
	copy(b[off+2:], hs)
	return n, nil
}

// SessionMessageType is the msg_type of an FSP inner header.
type SessionMessageType uint8

// Session message types (end-to-end encrypted). Handshakes have no type:
// they are told apart by the prefix phase. 0x20-0x2F are the plaintext
// routing signals, a separate registry (RoutingSignalType).
const (
	SessionMsgDataPacket          SessionMessageType = 0x10
	SessionMsgSenderReport        SessionMessageType = 0x11
	SessionMsgReceiverReport      SessionMessageType = 0x12
	SessionMsgPathMtuNotification SessionMessageType = 0x13
	SessionMsgCoordsWarmup        SessionMessageType = 0x14
	// SessionMsgPQ (ours, not upstream's): a fragment of a post-quantum
	// upgrade offer or accept (PQFragment). Upstream master and next drop
	// an unknown session message type with a debug line and keep the
	// session, so a classic peer never answers it.
	SessionMsgPQ SessionMessageType = 0xE0
)

// Known reports whether t is a type upstream defines.
func (t SessionMessageType) Known() bool {
	return t >= SessionMsgDataPacket && t <= SessionMsgCoordsWarmup
}

func (t SessionMessageType) String() string {
	switch t {
	case SessionMsgDataPacket:
		return "DataPacket"
	case SessionMsgSenderReport:
		return "SenderReport"
	case SessionMsgReceiverReport:
		return "ReceiverReport"
	case SessionMsgPathMtuNotification:
		return "PathMtuNotification"
	case SessionMsgCoordsWarmup:
		return "CoordsWarmup"
	case SessionMsgPQ:
		return "PQ"
	}
	return fmt.Sprintf("SessionMessageType(0x%02x)", uint8(t))
}

// FSPInnerFlags is the inner_flags byte, inside the AEAD.
type FSPInnerFlags uint8

// FSPInnerFlagSP is the session spin bit; bits 1-7 are reserved.
const FSPInnerFlagSP FSPInnerFlags = 0x01

// FSPInnerFlagsFromByte keeps only SP, as upstream's decoder does (0xFE
// becomes 0x00, 0xFF becomes 0x01).
func FSPInnerFlagsFromByte(b byte) FSPInnerFlags { return FSPInnerFlags(b) & FSPInnerFlagSP }

// SpinBit reports SP.
func (f FSPInnerFlags) SpinBit() bool { return f&FSPInnerFlagSP != 0 }

// FSPInner is a decrypted FSP plaintext: the 6-byte inner header and the
// message body.
type FSPInner struct {
	Timestamp uint32 // ms since the session (epoch) started, wrapping
	MsgType   SessionMessageType
	Flags     FSPInnerFlags
	Body      []byte
}

// ParseFSPInner splits a decrypted plaintext into header and body. It does
// not reject unknown message types: the receiver still accounts for such a
// message (MMP, spin bit) before dropping it, as upstream does.
func ParseFSPInner(b []byte) (FSPInner, error) {
	if len(b) < FSPInnerHeaderSize {
		return FSPInner{}, errTruncated("FSP inner header", "", len(b), FSPInnerHeaderSize)
	}
	return FSPInner{
		Timestamp: binary.LittleEndian.Uint32(b),
		MsgType:   SessionMessageType(b[4]),
		Flags:     FSPInnerFlagsFromByte(b[5]),
		Body:      b[FSPInnerHeaderSize:len(b):len(b)],
	}, nil
}

// Len is the encoded size.
func (m FSPInner) Len() int { return FSPInnerHeaderSize + len(m.Body) }

// MarshalTo writes header and body. With a nil Body it writes only the
// header, leaving the caller to put the body after it in place.
func (m FSPInner) MarshalTo(b []byte) (int, error) {
	n := m.Len()
	if len(b) < n {
		return 0, errBuffer("FSP inner header", len(b), n)
	}
	binary.LittleEndian.PutUint32(b, m.Timestamp)
	b[4] = byte(m.MsgType)
	b[5] = byte(m.Flags & FSPInnerFlagSP)
	copy(b[FSPInnerHeaderSize:], m.Body)
	return n, nil
}

// DataPacket (0x10) carries a service payload between two ports.
type DataPacket struct {
	SrcPort uint16
	DstPort uint16 // FSPPortIPv6Shim: Payload is an IPv6 shim packet
	Payload []byte
}

// ParseDataPacket decodes a DataPacket body.
func ParseDataPacket(body []byte) (DataPacket, error) {
	if len(body) < FSPPortHeaderSize {
		return DataPacket{}, errTruncated("DataPacket", "ports", len(body), FSPPortHeaderSize)
	}
	return DataPacket{
		SrcPort: binary.LittleEndian.Uint16(body),
		DstPort: DataPacketDstPort(body),
		Payload: body[FSPPortHeaderSize:len(body):len(body)],
	}, nil
}

// DataPacketDstPort is the destination port of a DataPacket body of at
// least FSPPortHeaderSize bytes (checked by the caller), without parsing
// the rest.
func DataPacketDstPort(body []byte) uint16 { return binary.LittleEndian.Uint16(body[2:]) }

// Len is the encoded size.
func (d DataPacket) Len() int { return FSPPortHeaderSize + len(d.Payload) }

// MarshalTo writes the body. With a nil Payload it writes only the ports.
func (d DataPacket) MarshalTo(b []byte) (int, error) {
	n := d.Len()
	if len(b) < n {
		return 0, errBuffer("DataPacket", len(b), n)
	}
	binary.LittleEndian.PutUint16(b, d.SrcPort)
	binary.LittleEndian.PutUint16(b[2:], d.DstPort)
	copy(b[FSPPortHeaderSize:], d.Payload)
	return n, nil
}

// PathMtuNotificationSize is the body size of a PathMtuNotification.
const PathMtuNotificationSize = 2

// PathMtuNotification (0x13) echoes to the source the smallest MTU the
// destination saw in SessionDatagram.path_mtu.
type PathMtuNotification struct {
	PathMTU uint16
}

// ParsePathMtuNotification decodes the body.
func ParsePathMtuNotification(body []byte) (PathMtuNotification, error) {
	if err := fixedBody(body, "PathMtuNotification", PathMtuNotificationSize); err != nil {
		return PathMtuNotification{}, err
	}
	return PathMtuNotification{PathMTU: binary.LittleEndian.Uint16(body)}, nil
}

// Len is the encoded size.
func (p PathMtuNotification) Len() int { return PathMtuNotificationSize }

// MarshalTo writes the body.
func (p PathMtuNotification) MarshalTo(b []byte) (int, error) {
	if len(b) < PathMtuNotificationSize {
		return 0, errBuffer("PathMtuNotification", len(b), PathMtuNotificationSize)
	}
	binary.LittleEndian.PutUint16(b, p.PathMTU)
	return PathMtuNotificationSize, nil
}

// CoordsWarmup (0x14) has an empty body: the message exists to carry CP
// coordinates past transit caches when they did not fit a data packet.
type CoordsWarmup struct{}

// ParseCoordsWarmup checks that the body is empty.
func ParseCoordsWarmup(body []byte) (CoordsWarmup, error) {
	return CoordsWarmup{}, fixedBody(body, "CoordsWarmup", 0)
}

// Len is the encoded size.
func (CoordsWarmup) Len() int { return 0 }

// MarshalTo writes nothing.
func (CoordsWarmup) MarshalTo([]byte) (int, error) { return 0, nil }

// fixedBody requires a body of exactly size bytes.
func fixedBody(b []byte, msg string, size int) error {
	if len(b) < size {
		return errTruncated(msg, "", len(b), size)
	}
	if len(b) > size {
		return errLength(msg, "body length", len(b), size)
	}
	return nil
}

// FSPPacketPhase and FSPPacketFlags read an FSP packet's prefix without
// parsing it; fsp holds at least FSPPrefixSize bytes (checked by the
// caller).
func FSPPacketPhase(fsp []byte) uint8 { return fsp[0] & 0x0f }

// FSPPacketFlags: see FSPPacketPhase.
func FSPPacketFlags(fsp []byte) FSPFlags { return FSPFlags(fsp[1]) }

package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Transport framing. UDP carries one FMP packet per datagram with nothing
// around it, so it needs no code here beyond recognising NAT-punch probes.
// Stream transports (TCP, Tor) carry FMP packets back to back with no
// length prefix: the FMP prefix alone delimits them. Ethernet wraps each
// packet in a 3-byte header whose length trims the minimum-frame padding.

// ---------------------------------------------------------------------------
// Streams

// FMPStreamPacketLen returns the total length of the FMP packet whose first
// bytes are b, using only its 4-byte prefix. mtu bounds established frames:
// a payload_len above mtu-32 is corrupt or hostile and the connection must
// be closed. Handshake packets have fixed sizes whatever the MTU, and
// their flags are not looked at here. Every error means: close the stream.
func FMPStreamPacketLen(b []byte, mtu uint16) (int, error) {
	const msg = "FMP stream"
	if len(b) < FMPPrefixSize {
		return 0, errTruncated(msg, "prefix", len(b), FMPPrefixSize)
	}
	if v := b[0] >> 4; v != FMPVersion {
		// Typical for something that is not FIPS at all: a TLS ClientHello
		// starts 0x16, which reads as version 1.
		return 0, errKind(ErrVersion, msg, "version", fmt.Sprintf("%d", v))
	}
	plen := binary.LittleEndian.Uint16(b[2:])
	switch phase := b[0] & 0x0f; phase {
	case FMPPhaseEstablished:
		max := 0
		if int(mtu) > FMPFrameMinSize {
			max = int(mtu) - FMPFrameMinSize
		}
		if int(plen) > max {
			return 0, errKind(ErrLength, msg, "payload_len", fmt.Sprintf("%d exceeds %d (mtu %d - 32)", plen, max, mtu))
		}
		return FMPFrameMinSize + int(plen), nil
	case FMPPhaseMsg1:
		if plen != FMPMsg1PayloadLen {
			return 0, errLength(msg, "msg1 payload_len", int(plen), FMPMsg1PayloadLen)
		}
		return FMPMsg1Size, nil
	case FMPPhaseMsg2:
		if plen != FMPMsg2PayloadLen {
			return 0, errLength(msg, "msg2 payload_len", int(plen), FMPMsg2PayloadLen)
		}
		return FMPMsg2Size, nil
	default:
		return 0, errKind(ErrPhase, msg, "phase", fmt.Sprintf("0x%x", phase))
	}
}

// SplitFMPStream takes the bytes received so far on a stream and returns
// the first complete FMP packet in them (a view of b's head), or nil and no
// error when more bytes are needed.
func SplitFMPStream(b []byte, mtu uint16) ([]byte, error) {
	if len(b) < FMPPrefixSize {
		return nil, nil
	}
	n, err := FMPStreamPacketLen(b, mtu)
	if err != nil || len(b) < n {
		return nil, err
	}
	return b[:n:n], nil
}

// ReadFMPPacket reads exactly one FMP packet from r into buf and returns
// it. buf must hold the largest packet the MTU admits (max(mtu, 114)
// bytes). A stream that ends cleanly before a packet starts returns
// io.EOF; one that ends inside a packet returns io.ErrUnexpectedEOF.
// Framing errors are *DecodeError; after any error the stream cannot be
// resynchronised.
func ReadFMPPacket(r io.Reader, buf []byte, mtu uint16) ([]byte, error) {
	return readFMPPacket(r, buf, mtu, false)
}

// ReadFMPPacketAny is ReadFMPPacket for a node that also speaks upstream's
// `next` line: a packet whose version nibble is 1 is framed by
// FMPv1StreamPacketLen (buf must then also hold FMPv1StreamMax bytes).
// Each packet is framed by its own version; the link layer drops one whose
// version is not its link's.
func ReadFMPPacketAny(r io.Reader, buf []byte, mtu uint16) ([]byte, error) {
	return readFMPPacket(r, buf, mtu, true)
}

// FMPv1StreamMax is the largest version-1 handshake packet a stream
// carries (msg2 with the largest payload fips-go accepts).
const FMPv1StreamMax = FMPv1Msg2MinSize + FMPv1HandshakeMaxExtra

func readFMPPacket(r io.Reader, buf []byte, mtu uint16, next bool) ([]byte, error) {
	if len(buf) < FMPPrefixSize {
		return nil, errBuffer("FMP stream", len(buf), FMPPrefixSize)
	}
	if _, err := io.ReadFull(r, buf[:FMPPrefixSize]); err != nil {
		return nil, err
	}
	var n int
	var err error
	if next && buf[0]>>4 == FMPVersionNext {
		n, err = FMPv1StreamPacketLen(buf, mtu)
	} else {
		n, err = FMPStreamPacketLen(buf, mtu)
	}
	if err != nil {
		return nil, err
	}
	if len(buf) < n {
		return nil, errBuffer("FMP stream", len(buf), n)
	}
	if _, err := io.ReadFull(r, buf[FMPPrefixSize:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf[:n], nil
}

// ---------------------------------------------------------------------------
// Ethernet

// Ethernet framing constants (EtherType 0x2121).
const (
	EtherTypeFIPS          = 0x2121
	EthernetFrameData      = 0x00 // data frame: type, length, FMP packet
	EthernetFrameBeacon    = 0x01 // neighbor beacon: type, version, x-only key
	EthernetDataHeaderSize = 3
	EthernetBeaconVersion  = 0x01
	EthernetBeaconSize     = 34
)

// EthernetData is a data frame. The length field exists because the NIC
// pads short frames to the Ethernet minimum; bytes after Packet are
// padding.
type EthernetData struct {
	Packet []byte // one FMP packet
}

// ParseEthernetData decodes a data frame and drops its padding.
func ParseEthernetData(b []byte) (EthernetData, error) {
	const msg = "Ethernet data"
	if len(b) < EthernetDataHeaderSize {
		return EthernetData{}, errTruncated(msg, "", len(b), EthernetDataHeaderSize)
	}
	if b[0] != EthernetFrameData {
		return EthernetData{}, errKind(ErrType, msg, "frame type", fmt.Sprintf("got 0x%02x, want 0x00", b[0]))
	}
	n := int(binary.LittleEndian.Uint16(b[1:]))
	if end := EthernetDataHeaderSize + n; len(b) < end {
		return EthernetData{}, errTruncated(msg, "packet", len(b), end)
	}
	return EthernetData{Packet: b[EthernetDataHeaderSize : EthernetDataHeaderSize+n]}, nil
}

// Len is the encoded size, before any padding the NIC adds.
func (e EthernetData) Len() int { return EthernetDataHeaderSize + len(e.Packet) }

// MarshalTo writes the frame. Packet may already sit at b[3:].
func (e EthernetData) MarshalTo(b []byte) (int, error) {
	const msg = "Ethernet data"
	if len(e.Packet) > 0xffff {
		return 0, errValue(msg, "packet", fmt.Sprintf("%d bytes does not fit the u16 length", len(e.Packet)))
	}
	n := e.Len()
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	b[0] = EthernetFrameData
	binary.LittleEndian.PutUint16(b[1:], uint16(len(e.Packet)))
	copy(b[EthernetDataHeaderSize:n], e.Packet)
	return n, nil
}

// EthernetBeacon announces a node's identity on the LAN so neighbours can
// start a handshake with it.
type EthernetBeacon struct {
	// XOnly is the node's 32-byte x-only public key. Parsing does not check
	// that it is a valid curve point (upstream does, while parsing); the
	// caller must before use.
	XOnly []byte
}

// ParseEthernetBeacon decodes a beacon. Bytes past 34 are padding.
func ParseEthernetBeacon(b []byte) (EthernetBeacon, error) {
	const msg = "Ethernet beacon"
	if len(b) < EthernetBeaconSize {
		return EthernetBeacon{}, errTruncated(msg, "", len(b), EthernetBeaconSize)
	}
	if b[0] != EthernetFrameBeacon {
		return EthernetBeacon{}, errKind(ErrType, msg, "frame type", fmt.Sprintf("got 0x%02x, want 0x01", b[0]))
	}
	if b[1] != EthernetBeaconVersion {
		return EthernetBeacon{}, errKind(ErrVersion, msg, "version", fmt.Sprintf("got %d, want %d", b[1], EthernetBeaconVersion))
	}
	return EthernetBeacon{XOnly: b[2:EthernetBeaconSize:EthernetBeaconSize]}, nil
}

// Len is always EthernetBeaconSize.
func (EthernetBeacon) Len() int { return EthernetBeaconSize }

// MarshalTo writes the beacon.
func (e EthernetBeacon) MarshalTo(b []byte) (int, error) {
	const msg = "Ethernet beacon"
	if len(e.XOnly) != 32 {
		return 0, errLength(msg, "x-only key", len(e.XOnly), 32)
	}
	if len(b) < EthernetBeaconSize {
		return 0, errBuffer(msg, len(b), EthernetBeaconSize)
	}
	b[0] = EthernetFrameBeacon
	b[1] = EthernetBeaconVersion
	copy(b[2:EthernetBeaconSize], e.XOnly)
	return EthernetBeaconSize, nil
}

// ---------------------------------------------------------------------------
// UDP NAT punching

// Punch packet magics, big-endian on the wire ("NPTC", "NPTA"). FMP byte 0
// is 0x00-0x02 and 0x4E would read as version 4, so they cannot clash.
const (
	PunchMagic      = 0x4E505443
	PunchAckMagic   = 0x4E505441
	PunchPacketSize = 24 // magic, sequence, session hash
)

// IsPunchPacket reports whether a UDP datagram is a hole-punch probe or
// ack that arrived on a socket already handed to FIPS; these are dropped
// silently. Only the first four bytes count, whatever follows.
func IsPunchPacket(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	m := binary.BigEndian.Uint32(b)
	return m == PunchMagic || m == PunchAckMagic
}

// PunchPacket is a NAT-traversal probe or its ack. Unlike everything else
// on the mesh its integers are big-endian.
type PunchPacket struct {
	Ack      bool   // PunchAckMagic rather than PunchMagic
	Sequence uint32 // probe number within one traversal attempt
	// SessionHash is the first 16 bytes of SHA-256 of the rendezvous
	// session id, so stray probes from other attempts are ignored.
	SessionHash []byte
}

// ParsePunchPacket decodes a punch packet; bytes past 24 are ignored, as
// upstream does.
func ParsePunchPacket(b []byte) (PunchPacket, error) {
	const msg = "punch packet"
	if len(b) < PunchPacketSize {
		return PunchPacket{}, errTruncated(msg, "", len(b), PunchPacketSize)
	}
	var p PunchPacket
	switch m := binary.BigEndian.Uint32(b); m {
	case PunchMagic:
	case PunchAckMagic:
		p.Ack = true
	default:
		return PunchPacket{}, errKind(ErrType, msg, "magic", fmt.Sprintf("0x%08x", m))
	}
	p.Sequence = binary.BigEndian.Uint32(b[4:])
	p.SessionHash = b[8:PunchPacketSize:PunchPacketSize]
	return p, nil
}

// Len is always PunchPacketSize.
func (PunchPacket) Len() int { return PunchPacketSize }

// MarshalTo writes the packet.
func (p PunchPacket) MarshalTo(b []byte) (int, error) {
	const msg = "punch packet"
	if len(p.SessionHash) != 16 {
		return 0, errLength(msg, "session hash", len(p.SessionHash), 16)
	}
	if len(b) < PunchPacketSize {
		return 0, errBuffer(msg, len(b), PunchPacketSize)
	}
	m := uint32(PunchMagic)
	if p.Ack {
		m = PunchAckMagic
	}
	binary.BigEndian.PutUint32(b, m)
	binary.BigEndian.PutUint32(b[4:], p.Sequence)
	copy(b[8:PunchPacketSize], p.SessionHash)
	return PunchPacketSize, nil
}

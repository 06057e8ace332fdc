package wire

import (
	"encoding/binary"
	"fmt"
)

// Transport framing of upstream's `next` format (docs/next.md §12).

// FMPv1StreamPacketLen is FMPStreamPacketLen for version-1 streams: msg1
// is 41 bytes exactly, msg2 and msg3 at least 118 and 85 and (ours, where
// upstream sets none) at most FMPv1HandshakeMaxExtra more, established
// frames as in version 0. Every error means: close the stream.
func FMPv1StreamPacketLen(b []byte, mtu uint16) (int, error) {
	const msg = "FMP v1 stream"
	if len(b) < FMPPrefixSize {
		return 0, errTruncated(msg, "prefix", len(b), FMPPrefixSize)
	}
	if v := b[0] >> 4; v != FMPVersionNext {
		return 0, errKind(ErrVersion, msg, "version", fmt.Sprintf("%d", v))
	}
	plen := int(binary.LittleEndian.Uint16(b[2:]))
	phase := b[0] & 0x0f
	if phase == FMPPhaseEstablished {
		max := 0
		if int(mtu) > FMPFrameMinSize {
			max = int(mtu) - FMPFrameMinSize
		}
		if plen > max {
			return 0, errKind(ErrLength, msg, "payload_len", fmt.Sprintf("%d exceeds %d (mtu %d - 32)", plen, max, mtu))
		}
		return FMPFrameMinSize + plen, nil
	}
	m, off, min, max, ok := fmpv1Shape(phase)
	if !ok {
		return 0, errKind(ErrPhase, msg, "phase", fmt.Sprintf("0x%x", phase))
	}
	if lo, hi := off+min-FMPPrefixSize, off+max-FMPPrefixSize; plen < lo || plen > hi {
		return 0, errKind(ErrLength, msg, m+" payload_len", fmt.Sprintf("%d outside [%d, %d]", plen, lo, hi))
	}
	return FMPPrefixSize + plen, nil
}

// SplitFMPv1Stream is SplitFMPStream for version-1 streams.
func SplitFMPv1Stream(b []byte, mtu uint16) ([]byte, error) {
	if len(b) < FMPPrefixSize {
		return nil, nil
	}
	n, err := FMPv1StreamPacketLen(b, mtu)
	if err != nil || len(b) < n {
		return nil, err
	}
	return b[:n:n], nil
}

// Ethernet in the `next` format: every frame starts with the 4-byte header
// [type:1][flags:1][length:2 LE]; the flags are reserved (sent 0, ignored),
// the length trims the padding. A beacon carries no key any more: 5 bytes,
// its payload the beacon version.
const (
	EthernetV1HeaderSize = 4
	EthernetV1BeaconSize = EthernetV1HeaderSize + 1
)

// ParseEthernetDataV1 decodes a `next` data frame and drops its padding.
func ParseEthernetDataV1(b []byte) (EthernetData, error) {
	const msg = "Ethernet v1 data"
	if len(b) < EthernetV1HeaderSize {
		return EthernetData{}, errTruncated(msg, "", len(b), EthernetV1HeaderSize)
	}
	if b[0] != EthernetFrameData {
		return EthernetData{}, errKind(ErrType, msg, "frame type", fmt.Sprintf("got 0x%02x, want 0x00", b[0]))
	}
	n := int(binary.LittleEndian.Uint16(b[2:]))
	if end := EthernetV1HeaderSize + n; len(b) < end {
		return EthernetData{}, errTruncated(msg, "packet", len(b), end)
	}
	return EthernetData{Packet: b[EthernetV1HeaderSize : EthernetV1HeaderSize+n]}, nil
}

// MarshalV1To writes e as a `next` data frame. Packet may already sit at
// b[4:].
func (e EthernetData) MarshalV1To(b []byte) (int, error) {
	const msg = "Ethernet v1 data"
	if len(e.Packet) > 0xffff {
		return 0, errValue(msg, "packet", fmt.Sprintf("%d bytes does not fit the u16 length", len(e.Packet)))
	}
	n := EthernetV1HeaderSize + len(e.Packet)
	if len(b) < n {
		return 0, errBuffer(msg, len(b), n)
	}
	b[0], b[1] = EthernetFrameData, 0
	binary.LittleEndian.PutUint16(b[2:], uint16(len(e.Packet)))
	copy(b[EthernetV1HeaderSize:n], e.Packet)
	return n, nil
}

// ParseEthernetBeaconV1 checks a `next` beacon: type 1, any flags, a
// length of at least 1, the version byte 1. It names no key: the
// neighbour is known by its MAC alone, and an XX dial learns who it is.
func ParseEthernetBeaconV1(b []byte) error {
	const msg = "Ethernet v1 beacon"
	if len(b) < EthernetV1BeaconSize {
		return errTruncated(msg, "", len(b), EthernetV1BeaconSize)
	}
	if b[0] != EthernetFrameBeacon {
		return errKind(ErrType, msg, "frame type", fmt.Sprintf("got 0x%02x, want 0x01", b[0]))
	}
	if l := binary.LittleEndian.Uint16(b[2:]); l < 1 {
		return errLength(msg, "length", int(l), 1)
	}
	if b[4] != EthernetBeaconVersion {
		return errKind(ErrVersion, msg, "version", fmt.Sprintf("got %d, want %d", b[4], EthernetBeaconVersion))
	}
	return nil
}

// AppendEthernetBeaconV1 appends the 5-byte `next` beacon.
func AppendEthernetBeaconV1(dst []byte) []byte {
	return append(dst, EthernetFrameBeacon, 0, 1, 0, EthernetBeaconVersion)
}

// EthernetDataVersion tells which format an Ethernet data frame (type
// 0x00 first) is in, for a transport that meets both (docs/next.md §15.2):
// version 1 when its flags byte is 0 and the FMP packet at byte 4 has
// version 1, else version 0 (length at bytes 1–2, packet at byte 3). A
// conforming version-0 frame cannot pass the first test: its byte 4 is
// the FMP flags byte, at most 0x07. (Testing for version 0 first would
// not work: a version-1 frame's byte 3, the length's high byte, also has
// a zero high nibble.)
func EthernetDataVersion(b []byte) uint8 {
	if len(b) > EthernetV1HeaderSize && b[1] == 0 && b[4]>>4 == FMPVersionNext {
		return FMPVersionNext
	}
	return FMPVersion
}

// EthernetBeaconFormat tells a master beacon (34 bytes: type 1, version
// 1, then the sender's x-only key) from a `next` one (type 1, flags 0, a
// length of 1, version 1): 0, 1, or false when b is neither.
func EthernetBeaconFormat(b []byte) (uint8, bool) {
	if len(b) >= EthernetBeaconSize && b[0] == EthernetFrameBeacon && b[1] == EthernetBeaconVersion {
		return FMPVersion, true
	}
	if ParseEthernetBeaconV1(b) == nil {
		return FMPVersionNext, true
	}
	return 0, false
}

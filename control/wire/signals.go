package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/fips-go/fips/control/identity"
)

// Routing error signals are plaintext FSP packets (phase 0, flags U) that a
// transit node sends back to a datagram's source in a new SessionDatagram
// (src = the reporter). The transit node has no session with the source, so
// nothing here is authenticated end to end.
//
// Layout after the 4-byte prefix: msg_type, a reserved flags byte,
// dest_addr, reporter, then the per-signal tail. Unlike the other FSP
// packets, payload_len counts from msg_type.

// RoutingSignalType is the msg_type of a routing error signal.
type RoutingSignalType uint8

// Routing signal types.
const (
	SignalCoordsRequired RoutingSignalType = 0x20 // transit has no coordinates for dest
	SignalPathBroken     RoutingSignalType = 0x21 // transit has coordinates but no way forward
	SignalMtuExceeded    RoutingSignalType = 0x22 // next hop's MTU is too small
)

func (t RoutingSignalType) String() string {
	switch t {
	case SignalCoordsRequired:
		return "CoordsRequired"
	case SignalPathBroken:
		return "PathBroken"
	case SignalMtuExceeded:
		return "MtuExceeded"
	}
	return fmt.Sprintf("RoutingSignalType(0x%02x)", uint8(t))
}

// Signal sizes, whole FSP packet.
const (
	CoordsRequiredSize = 38     // prefix 4 + type 1 + flags 1 + dest 16 + reporter 16
	PathBrokenMinSize  = 40     // + coords count 2, then 16 per entry
	MtuExceededSize    = 40     // + mtu 2
	signalFixedSize    = 4 + 34 // through reporter
)

// ParseRoutingSignalType reads the msg_type of an error signal after
// checking the prefix, so a receiver can pick the parser.
func ParseRoutingSignalType(b []byte) (RoutingSignalType, error) {
	const msg = "FSP error signal"
	if err := checkSignalPrefix(b, msg); err != nil {
		return 0, err
	}
	if len(b) < FSPPrefixSize+1 {
		return 0, errTruncated(msg, "msg_type", len(b), FSPPrefixSize+1)
	}
	t := RoutingSignalType(b[4])
	if t < SignalCoordsRequired || t > SignalMtuExceeded {
		return 0, errKind(ErrType, msg, "msg_type", fmt.Sprintf("0x%02x", b[4]))
	}
	return t, nil
}

// checkSignalPrefix validates what every signal's prefix must hold. Only
// the U bit of the flags matters; upstream ignores the rest.
func checkSignalPrefix(b []byte, msg string) error {
	if len(b) < FSPPrefixSize {
		return errTruncated(msg, "", len(b), FSPPrefixSize)
	}
	if err := checkFSPVersionPhase(b, msg, FSPPhaseEstablished); err != nil {
		return err
	}
	if !FSPFlags(b[1]).Unencrypted() {
		return errKind(ErrFlags, msg, "flags", "U is clear: an encrypted message")
	}
	return checkFSPPayloadLen(b, msg)
}

// parseSignal checks the prefix, the type and the fixed part of a signal
// and returns dest_addr and reporter.
func parseSignal(b []byte, msg string, t RoutingSignalType) (dest, reporter identity.NodeAddr, err error) {
	if err = checkSignalPrefix(b, msg); err != nil {
		return
	}
	if len(b) < FSPPrefixSize+1 {
		err = errTruncated(msg, "msg_type", len(b), FSPPrefixSize+1)
		return
	}
	if got := RoutingSignalType(b[4]); got != t {
		err = errKind(ErrType, msg, "msg_type", fmt.Sprintf("got 0x%02x, want 0x%02x", uint8(got), uint8(t)))
		return
	}
	if len(b) < signalFixedSize {
		err = errTruncated(msg, "", len(b), signalFixedSize)
		return
	}
	copy(dest[:], b[6:22])
	copy(reporter[:], b[22:38])
	return
}

// putSignal writes prefix, type, flags, dest_addr and reporter; the caller
// has checked the size.
func putSignal(b []byte, t RoutingSignalType, size int, dest, reporter identity.NodeAddr) {
	putFSPPrefix(b, FSPPhaseEstablished, FSPFlagU, uint16(size-FSPPrefixSize))
	b[4] = byte(t)
	b[5] = 0
	copy(b[6:22], dest[:])
	copy(b[22:38], reporter[:])
}

// CoordsRequired tells the source that a transit node had no coordinates
// for DestAddr; the source answers with a CoordsWarmup and a lookup.
type CoordsRequired struct {
	DestAddr identity.NodeAddr
	Reporter identity.NodeAddr
}

// ParseCoordsRequired decodes a whole CoordsRequired packet (38 bytes).
func ParseCoordsRequired(b []byte) (CoordsRequired, error) {
	const msg = "CoordsRequired"
	dest, rep, err := parseSignal(b, msg, SignalCoordsRequired)
	if err != nil {
		return CoordsRequired{}, err
	}
	if len(b) != CoordsRequiredSize {
		return CoordsRequired{}, errLength(msg, "payload_len", len(b)-FSPPrefixSize, CoordsRequiredSize-FSPPrefixSize)
	}
	return CoordsRequired{DestAddr: dest, Reporter: rep}, nil
}

// Len is the encoded size.
func (CoordsRequired) Len() int { return CoordsRequiredSize }

// MarshalTo writes the packet, prefix included.
func (c CoordsRequired) MarshalTo(b []byte) (int, error) {
	if len(b) < CoordsRequiredSize {
		return 0, errBuffer("CoordsRequired", len(b), CoordsRequiredSize)
	}
	putSignal(b, SignalCoordsRequired, CoordsRequiredSize, c.DestAddr, c.Reporter)
	return CoordsRequiredSize, nil
}

// PathBroken tells the source that a transit node could not route towards
// DestAddr with the coordinates it had, which it returns (possibly none).
type PathBroken struct {
	DestAddr        identity.NodeAddr
	Reporter        identity.NodeAddr
	LastKnownCoords Coords // may be empty
}

// ParsePathBroken decodes a whole PathBroken packet (40 + 16n bytes).
func ParsePathBroken(b []byte) (PathBroken, error) {
	const msg = "PathBroken"
	dest, rep, err := parseSignal(b, msg, SignalPathBroken)
	if err != nil {
		return PathBroken{}, err
	}
	coords, n, err := parseCoords(b[signalFixedSize:], msg, "last_known_coords", 0)
	if err != nil {
		return PathBroken{}, err
	}
	if extra := len(b) - signalFixedSize - n; extra != 0 {
		return PathBroken{}, errLength(msg, "payload_len", len(b)-FSPPrefixSize, len(b)-FSPPrefixSize-extra)
	}
	return PathBroken{DestAddr: dest, Reporter: rep, LastKnownCoords: coords}, nil
}

// Len is the encoded size.
func (p PathBroken) Len() int { return signalFixedSize + p.LastKnownCoords.wireLen() }

// MarshalTo writes the packet, prefix included.
func (p PathBroken) MarshalTo(b []byte) (int, error) {
	n := p.Len()
	if len(b) < n {
		return 0, errBuffer("PathBroken", len(b), n)
	}
	putSignal(b, SignalPathBroken, n, p.DestAddr, p.Reporter)
	p.LastKnownCoords.put(b[signalFixedSize:])
	return n, nil
}

// MtuExceeded tells the source that a forwarded packet was too large for
// the next hop, whose transport MTU is MTU.
type MtuExceeded struct {
	DestAddr identity.NodeAddr
	Reporter identity.NodeAddr
	MTU      uint16
}

// ParseMtuExceeded decodes a whole MtuExceeded packet (40 bytes).
func ParseMtuExceeded(b []byte) (MtuExceeded, error) {
	const msg = "MtuExceeded"
	dest, rep, err := parseSignal(b, msg, SignalMtuExceeded)
	if err != nil {
		return MtuExceeded{}, err
	}
	if len(b) < MtuExceededSize {
		return MtuExceeded{}, errTruncated(msg, "mtu", len(b), MtuExceededSize)
	}
	if len(b) > MtuExceededSize {
		return MtuExceeded{}, errLength(msg, "payload_len", len(b)-FSPPrefixSize, MtuExceededSize-FSPPrefixSize)
	}
	return MtuExceeded{DestAddr: dest, Reporter: rep, MTU: binary.LittleEndian.Uint16(b[38:])}, nil
}

// Len is the encoded size.
func (MtuExceeded) Len() int { return MtuExceededSize }

// MarshalTo writes the packet, prefix included.
func (m MtuExceeded) MarshalTo(b []byte) (int, error) {
	if len(b) < MtuExceededSize {
		return 0, errBuffer("MtuExceeded", len(b), MtuExceededSize)
	}
	putSignal(b, SignalMtuExceeded, MtuExceededSize, m.DestAddr, m.Reporter)
	binary.LittleEndian.PutUint16(b[38:], m.MTU)
	return MtuExceededSize, nil
}

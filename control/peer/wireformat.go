package peer

import (
	"errors"
	"fmt"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// WireFormat is which link format a node or a peer speaks: upstream
// master's v0.2 (FMP version 0, Noise IK links), upstream next's (FMP
// version 1, Noise XX links with a negotiation payload), or both, chosen
// per link by the first handshake packet (docs/next.md §15). fips-go's;
// upstream speaks one format per build.
type WireFormat uint8

// Wire formats. WireDefault is the zero value: for Config it means v0
// (today's behaviour, byte for byte), for a StaticPeer "as the node".
const (
	WireDefault WireFormat = iota
	WireV0
	WireV1
	WireAuto
)

func (f WireFormat) String() string {
	switch f {
	case WireDefault:
		return "default"
	case WireV0:
		return "v0"
	case WireV1:
		return "v1"
	case WireAuto:
		return "auto"
	}
	return fmt.Sprintf("wire_format(%d)", uint8(f))
}

// ParseWireFormat reads a configured wire format: v0, v1 or auto; ""
// is WireDefault.
func ParseWireFormat(s string) (WireFormat, error) {
	switch s {
	case "":
		return WireDefault, nil
	case "v0":
		return WireV0, nil
	case "v1":
		return WireV1, nil
	case "auto":
		return WireAuto, nil
	}
	return WireDefault, fmt.Errorf("%w: %q (want v0, v1 or auto)", ErrWireFormat, s)
}

// ErrWireFormat: a wire format that is not v0, v1 or auto.
var ErrWireFormat = errors.New("unknown wire format")

// allows reports whether f admits links of the given version (0 or 1).
func (f WireFormat) allows(v1 bool) bool {
	switch f {
	case WireV1:
		return v1
	case WireAuto:
		return true
	}
	return !v1 // WireDefault, WireV0
}

// nodeFormat is the node-wide format (WireDefault is v0).
func (m *Manager) nodeFormat() WireFormat {
	if m.cfg.WireFormat == WireDefault {
		return WireV0
	}
	return m.cfg.WireFormat
}

// peerFormat is the format to use with na: its configured override, else
// the node's.
func (m *Manager) peerFormat(na identity.NodeAddr) WireFormat {
	if st := m.static[na]; st != nil && st.cfg.WireFormat != WireDefault {
		return st.cfg.WireFormat
	}
	return m.nodeFormat()
}

// acceptsVersion reports whether packets of FMP version v are handled at
// all: the node's format, or some configured peer's override, speaks it.
// Which peer sent a handshake is known only once it authenticates; the
// per-peer rule is applied then (formatAllowed).
func (m *Manager) acceptsVersion(v uint8) bool {
	switch v {
	case wire.FMPVersion:
		return m.nodeFormat().allows(false) || m.overrides[WireV0] > 0 || m.overrides[WireAuto] > 0
	case wire.FMPVersionNext:
		return m.nodeFormat().allows(true) || m.overrides[WireV1] > 0 || m.overrides[WireAuto] > 0
	}
	return false
}

// AcceptsVersion reports whether packets of FMP version v are handled
// (node.wire_format, or a peer's override, speaks it); the others are
// dropped as another version.
func (m *Manager) AcceptsVersion(v uint8) bool { return m.acceptsVersion(v) }

// formatAllowed reports whether a link of the given version may be made
// with na, counting and logging a refusal.
func (m *Manager) formatAllowed(na identity.NodeAddr, v1 bool) bool {
	f := m.peerFormat(na)
	if f.allows(v1) {
		return true
	}
	m.stats.WireFormatRefused++
	ver := "v0"
	if v1 {
		ver = "v1"
	}
	m.log.Info("Handshake in a wire format not configured for this peer, dropping", "peer", m.name(na),
		"wire_format", ver, "configured", f.String())
	return false
}

// LinkFormat is a link's wire format as show_peers names it: "v0" or
// "v1".
func (p *Peer) LinkFormat() string {
	if p.v1 {
		return "v1"
	}
	return "v0"
}

// V1 reports whether the peer's link runs upstream next's format.
func (p *Peer) V1() bool { return p.v1 }

// Profile is the node profile the peer declared in its v1 handshake
// (ProfileFull for a v0 link, which declares none).
func (p *Peer) Profile() wire.NodeProfile { return p.profile }

// linkMeta is what a completed handshake says about the link besides its
// session: its format and the profile the peer declared.
type linkMeta struct {
	v1      bool
	profile wire.NodeProfile
}

func (p *Peer) setMeta(meta linkMeta) { p.v1, p.profile = meta.v1, meta.profile }

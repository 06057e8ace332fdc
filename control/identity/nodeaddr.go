package identity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
)

// NodeAddrSize is the length of a NodeAddr in bytes.
const NodeAddrSize = 16

// NodeAddr is a node's 16-byte routing address: the first 16 bytes of the
// SHA-256 of its 32-byte x-only public key. It is independent of the key's
// parity. NodeAddrs compare bytewise; the spanning-tree root is the smallest.
type NodeAddr [NodeAddrSize]byte

// NodeAddrFromXOnly derives the NodeAddr of an x-only public key.
func NodeAddrFromXOnly(xonly [32]byte) NodeAddr {
	sum := sha256.Sum256(xonly[:])
	var a NodeAddr
	copy(a[:], sum[:NodeAddrSize])
	return a
}

// ParseNodeAddr parses 32 hex characters.
func ParseNodeAddr(s string) (NodeAddr, error) {
	var a NodeAddr
	if len(s) != 2*NodeAddrSize {
		return a, fmt.Errorf("%w: node address must be %d hex characters, got %d", ErrInvalidNodeAddr, 2*NodeAddrSize, len(s))
	}
	if _, err := hex.Decode(a[:], []byte(s)); err != nil {
		return a, fmt.Errorf("%w: %v", ErrInvalidNodeAddr, err)
	}
	return a, nil
}

// String is the 32-character lowercase hex form used in logs and JSON.
func (a NodeAddr) String() string { return hex.EncodeToString(a[:]) }

// Short is the first 8 bytes in hex, the form upstream's Debug output uses.
func (a NodeAddr) Short() string { return hex.EncodeToString(a[:8]) }

// GoString matches upstream's Debug form, NodeAddr(<first 8 bytes hex>).
func (a NodeAddr) GoString() string { return "NodeAddr(" + a.Short() + ")" }

// Compare orders NodeAddrs bytewise (big-endian numeric order).
func (a NodeAddr) Compare(b NodeAddr) int { return bytes.Compare(a[:], b[:]) }

// Less reports whether a sorts before b.
func (a NodeAddr) Less(b NodeAddr) bool { return a.Compare(b) < 0 }

// IsZero reports whether every byte is zero.
func (a NodeAddr) IsZero() bool { return a == NodeAddr{} }

// MarshalText implements encoding.TextMarshaler (hex).
func (a NodeAddr) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (hex).
func (a *NodeAddr) UnmarshalText(b []byte) error {
	v, err := ParseNodeAddr(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// IPv6 is the node's FIPS address: 0xfd followed by the first 15 bytes of
// the NodeAddr (the last NodeAddr byte does not fit).
func (a NodeAddr) IPv6() netip.Addr {
	var b [16]byte
	b[0] = 0xfd
	copy(b[1:], a[:15])
	return netip.AddrFrom16(b)
}

// IPv6Prefix returns the 15 NodeAddr bytes carried in a FIPS IPv6 address,
// or false when the address is not in fd00::/8. The missing 16th byte means
// the NodeAddr itself can only be recovered through an identity cache.
func IPv6Prefix(ip netip.Addr) (p [15]byte, ok bool) {
	if !ip.Is6() || ip.Is4In6() {
		return p, false
	}
	b := ip.As16()
	if b[0] != 0xfd {
		return p, false
	}
	copy(p[:], b[1:])
	return p, true
}

// ShortHex is upstream's NodeAddr::short_hex, the last resort of its
// display names: the first four bytes in hex and "...".
func (a NodeAddr) ShortHex() string { return hex.EncodeToString(a[:4]) + "..." }

// ShortNpub is upstream's short npub: "npub1" and the first and last four
// characters of the rest, joined by "..." (npub1qmc3...el98).
func ShortNpub(npub string) string {
	data := npub[min(len(npub), 5):]
	if len(data) < 8 {
		return npub
	}
	return "npub1" + data[:4] + "..." + data[len(data)-4:]
}

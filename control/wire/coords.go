package wire

import (
	"encoding/binary"

	"github.com/fips-go/fips/control/identity"
)

// Coords is a view over a packed list of NodeAddrs, ordered from a node to
// the tree root. On the wire it follows a u16le count. The slice length is
// always a multiple of 16.
type Coords []byte

// Len is the number of entries.
func (c Coords) Len() int { return len(c) / identity.NodeAddrSize }

// At returns entry i (0 = the node itself, Len()-1 = the root).
func (c Coords) At(i int) identity.NodeAddr {
	var a identity.NodeAddr
	copy(a[:], c[i*identity.NodeAddrSize:])
	return a
}

// Addrs copies the entries out (allocates; for tests and the control plane).
func (c Coords) Addrs() []identity.NodeAddr {
	out := make([]identity.NodeAddr, c.Len())
	for i := range out {
		out[i] = c.At(i)
	}
	return out
}

// CoordsOf packs addrs into a new Coords (allocates; for encoding).
func CoordsOf(addrs ...identity.NodeAddr) Coords {
	c := make(Coords, 0, len(addrs)*identity.NodeAddrSize)
	for _, a := range addrs {
		c = append(c, a[:]...)
	}
	return c
}

// wireLen is the encoded size: u16 count + entries.
func (c Coords) wireLen() int { return 2 + len(c) }

// put writes count + entries at b[0:] and returns the bytes written. The
// caller has checked the size.
func (c Coords) put(b []byte) int {
	binary.LittleEndian.PutUint16(b, uint16(c.Len()))
	return 2 + copy(b[2:], c)
}

// parseCoords reads a u16le count and that many NodeAddrs from b, requiring
// at least min entries. It returns the view and the bytes consumed.
func parseCoords(b []byte, msg, field string, min int) (Coords, int, error) {
	if len(b) < 2 {
		return nil, 0, errTruncated(msg, field+" count", len(b), 2)
	}
	n := int(binary.LittleEndian.Uint16(b))
	if n < min {
		return nil, 0, errValue(msg, field+" count", "must be at least 1, got 0")
	}
	need := 2 + n*identity.NodeAddrSize
	if len(b) < need {
		return nil, 0, errTruncated(msg, field, len(b), need)
	}
	return Coords(b[2:need:need]), need, nil
}

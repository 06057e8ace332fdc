package transport

import (
	"fmt"
	"strings"
)

// MAC is a 6-byte Ethernet address.
type MAC [6]byte

// BroadcastMAC is ff:ff:ff:ff:ff:ff, where beacons go.
var BroadcastMAC = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// IsZero reports whether m is 00:00:00:00:00:00 (no address).
func (m MAC) IsZero() bool { return m == MAC{} }

// String renders m as six lower-case two-digit hex bytes separated by
// colons, as upstream renders a link-layer address.
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	var b [17]byte
	for i, v := range m {
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i], b[3*i+1] = hex[v>>4], hex[v&0xf]
	}
	return string(b[:])
}

// ParseMAC parses six colon-separated hex bytes ("aa:bb:cc:dd:ee:ff",
// any case). It accepts what upstream's parser accepts: each byte is one
// or more hex digits (an optional leading '+') whose value fits a byte,
// so "a:b:c:d:e:f" is 0a:0b:0c:0d:0e:0f. Dashes are refused.
func ParseMAC(s string) (MAC, error) {
	var m MAC
	parts := strings.Split(s, ":")
	if len(parts) != len(m) {
		return MAC{}, fmt.Errorf("%w: invalid MAC format: expected 6 colon-separated hex bytes, got '%s'", ErrInvalidAddress, s)
	}
	for i, p := range parts {
		v, ok := parseHexByte(p)
		if !ok {
			return MAC{}, fmt.Errorf("%w: invalid hex byte '%s' in MAC address", ErrInvalidAddress, p)
		}
		m[i] = v
	}
	return m, nil
}

// parseHexByte is Rust's u8::from_str_radix(p, 16), which upstream uses.
func parseHexByte(p string) (byte, bool) {
	p = strings.TrimPrefix(p, "+")
	if p == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return 0, false
		}
		if v = v*16 + d; v > 0xff {
			return 0, false
		}
	}
	return byte(v), true
}

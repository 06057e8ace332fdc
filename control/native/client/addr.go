package client

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/fips-go/fips/control/identity"
)

// Addr is one end of a flow: a public key and a port.
type Addr struct {
	Key  identity.PublicKey
	Port uint16
}

// String is "npub1...:port".
func (a Addr) String() string { return a.Key.Npub() + ":" + strconv.Itoa(int(a.Port)) }

// ParseAddr reads "npub1...:port" (split on the last colon; the bech32
// alphabet has none). A bad address wraps syscall.EINVAL.
func ParseAddr(s string) (Addr, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Addr{}, fmt.Errorf("fips address %q: no port: %w", s, syscall.EINVAL)
	}
	port, err := strconv.ParseUint(s[i+1:], 10, 16)
	if err != nil {
		return Addr{}, fmt.Errorf("fips address %q: bad port: %w", s, syscall.EINVAL)
	}
	key, err := identity.DecodeNpub(s[:i])
	if err != nil {
		return Addr{}, fmt.Errorf("fips address %q: %v: %w", s, err, syscall.EINVAL)
	}
	return Addr{Key: key, Port: uint16(port)}, nil
}

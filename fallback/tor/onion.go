package tor

import (
	"bytes"
	"crypto/sha3"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
)

// ErrMalformedOnion is wrapped by every *OnionError.
var ErrMalformedOnion = errors.New("malformed onion address")

// OnionError says why a host is not a v3 onion address.
type OnionError struct {
	Host   string
	Reason string
}

func (e *OnionError) Error() string {
	return fmt.Sprintf("%s %q: %s", ErrMalformedOnion, e.Host, e.Reason)
}

func (e *OnionError) Unwrap() error { return ErrMalformedOnion }

const (
	onionSuffix = ".onion"
	// onionLabelLen is the base32 length of a v3 address: 32-byte key,
	// 2-byte checksum, 1-byte version.
	onionLabelLen = 56
	onionVersion  = 3
	// maxHostLen bounds a host name (DNS limit).
	maxHostLen = 253
)

var onionBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IsOnion reports whether host is meant as an onion address (ends in
// .onion, any case); ParseOnion says whether it is a valid one.
func IsOnion(host string) bool {
	return len(host) >= len(onionSuffix) && strings.EqualFold(host[len(host)-len(onionSuffix):], onionSuffix)
}

// ParseOnion checks host as a v3 onion address (rend-spec-v3: base32 of
// key, checksum and version 3, the checksum being the first two bytes of
// SHA3-256(".onion checksum" | key | version)) and returns it in lower
// case with its 32-byte service key. Subdomains are refused: nothing
// FIPS dials uses them.
func ParseOnion(host string) (string, [32]byte, error) {
	var key [32]byte
	if len(host) > maxHostLen {
		return "", key, &OnionError{Host: host[:32] + "…", Reason: fmt.Sprintf("%d bytes long", len(host))}
	}
	if !IsOnion(host) {
		return "", key, &OnionError{Host: host, Reason: "does not end in .onion"}
	}
	label := strings.ToLower(host[:len(host)-len(onionSuffix)])
	if len(label) != onionLabelLen {
		return "", key, &OnionError{Host: host, Reason: fmt.Sprintf("want %d base32 characters before .onion (a v3 address), got %d", onionLabelLen, len(label))}
	}
	raw, err := onionBase32.DecodeString(label)
	if err != nil || len(raw) != 35 {
		return "", key, &OnionError{Host: host, Reason: "not base32 (a-z, 2-7)"}
	}
	if raw[34] != onionVersion {
		return "", key, &OnionError{Host: host, Reason: fmt.Sprintf("version %d, want %d", raw[34], onionVersion)}
	}
	copy(key[:], raw[:32])
	if sum := onionChecksum(key); !bytes.Equal(sum[:], raw[32:34]) {
		return "", key, &OnionError{Host: host, Reason: "checksum mismatch"}
	}
	return label + onionSuffix, key, nil
}

// OnionAddress is the v3 onion address of a service key.
func OnionAddress(key [32]byte) string {
	sum := onionChecksum(key)
	raw := append(append(key[:], sum[:]...), onionVersion)
	return onionBase32.EncodeToString(raw) + onionSuffix
}

func onionChecksum(key [32]byte) [2]byte {
	h := sha3.New256()
	h.Write([]byte(".onion checksum"))
	h.Write(key[:])
	h.Write([]byte{onionVersion})
	var out [2]byte
	copy(out[:], h.Sum(nil))
	return out
}

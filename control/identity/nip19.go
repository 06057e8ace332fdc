package identity

import (
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/btcutil/bech32"
)

// NIP-19 human-readable parts.
const (
	hrpNpub = "npub"
	hrpNsec = "nsec"
)

// DecodeNpub decodes a NIP-19 npub into an x-only public key that lies on
// the curve.
func DecodeNpub(s string) (PublicKey, error) {
	data, err := decodeBech32(s, hrpNpub)
	if err != nil {
		return PublicKey{}, err
	}
	return ParsePublicKey(data)
}

// DecodeNsec decodes a NIP-19 nsec into a secret key.
func DecodeNsec(s string) (SecretKey, error) {
	data, err := decodeBech32(s, hrpNsec)
	if err != nil {
		return SecretKey{}, err
	}
	defer clear(data)
	return SecretKeyFromBytes(data)
}

// decodeBech32 checks the checksum (BIP-173 bech32 only: a bech32m checksum
// is refused even though upstream's crate lets one through), the HRP and the
// 32-byte payload length, and returns the payload.
func decodeBech32(s, hrp string) ([]byte, error) {
	gotHRP, data5, version, err := bech32.DecodeGeneric(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBech32, err)
	}
	if version != bech32.Version0 {
		return nil, fmt.Errorf("%w: bech32m checksum, NIP-19 uses bech32", ErrInvalidBech32)
	}
	if gotHRP != hrp {
		return nil, fmt.Errorf("%w: got %q, want %q", ErrWrongHRP, gotHRP, hrp)
	}
	data, err := bech32.ConvertBits(data5, 5, 8, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBech32, err)
	}
	if len(data) != 32 {
		return nil, fmt.Errorf("%w: %s payload must be 32 bytes, got %d", ErrInvalidLength, hrp, len(data))
	}
	return data, nil
}

func mustEncodeBech32(hrp string, data []byte) string {
	s, err := bech32.EncodeFromBase256(hrp, data)
	if err != nil {
		// Only reachable with an invalid HRP, which the callers never pass.
		panic("identity: bech32 encode: " + err.Error())
	}
	return strings.ToLower(s)
}

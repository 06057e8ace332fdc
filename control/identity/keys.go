package identity

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// SecretKeySize and PublicKeySize are the raw sizes of a secret scalar and
// of an x-only public key.
const (
	SecretKeySize = 32
	PublicKeySize = 32
)

// PublicKey is a 32-byte x-only secp256k1 public key: the Nostr form, the
// input of NodeAddr, and what npub encodes. The point's parity is not part of
// it; wherever a full point is needed it is lifted with even y, which is what
// upstream does (its handshakes are parity-normalised).
type PublicKey [PublicKeySize]byte

// ParsePublicKey validates that b is the x coordinate of a curve point.
func ParsePublicKey(b []byte) (PublicKey, error) {
	var pk PublicKey
	if len(b) != PublicKeySize {
		return pk, fmt.Errorf("%w: x-only public key must be %d bytes, got %d", ErrInvalidLength, PublicKeySize, len(b))
	}
	copy(pk[:], b)
	if _, err := pk.Point(); err != nil {
		return PublicKey{}, err
	}
	return pk, nil
}

// ParsePublicKeyHex parses 64 hex characters as an x-only public key.
func ParsePublicKeyHex(s string) (PublicKey, error) {
	b, err := decodeHex32(s, "public key")
	if err != nil {
		return PublicKey{}, err
	}
	return ParsePublicKey(b[:])
}

// Point lifts the x-only key to the curve point with even y (0x02 prefix).
func (pk PublicKey) Point() (*secp256k1.PublicKey, error) {
	var c [33]byte
	c[0] = secp256k1.PubKeyFormatCompressedEven
	copy(c[1:], pk[:])
	p, err := secp256k1.ParsePubKey(c[:])
	if err != nil {
		return nil, fmt.Errorf("%w: not on the curve: %v", ErrInvalidPublicKey, err)
	}
	return p, nil
}

// NodeAddr is the routing address of this key.
func (pk PublicKey) NodeAddr() NodeAddr { return NodeAddrFromXOnly(pk) }

// Npub is the NIP-19 bech32 encoding.
func (pk PublicKey) Npub() string { return mustEncodeBech32(hrpNpub, pk[:]) }

// String is the npub.
func (pk PublicKey) String() string { return pk.Npub() }

// Hex is the 64-character lowercase hex form.
func (pk PublicKey) Hex() string { return hex.EncodeToString(pk[:]) }

// XOnly returns the x-only form of any curve point.
func XOnly(p *secp256k1.PublicKey) PublicKey {
	var pk PublicKey
	c := p.SerializeCompressed()
	copy(pk[:], c[1:])
	return pk
}

// SecretKey is a node's secp256k1 secret scalar, 0 < k < n. Its String and
// GoString never print the secret.
type SecretKey struct {
	k *secp256k1.PrivateKey
}

// GenerateSecretKey draws a new key from rand (crypto/rand when nil).
func GenerateSecretKey(r io.Reader) (SecretKey, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [SecretKeySize]byte
	defer clear(b[:])
	// Rejection sampling: a 32-byte draw is out of range with probability
	// about 2^-128, so this loop runs once in practice.
	for range 128 {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return SecretKey{}, fmt.Errorf("generate secret key: %w", err)
		}
		if sk, err := SecretKeyFromBytes(b[:]); err == nil {
			return sk, nil
		}
	}
	return SecretKey{}, fmt.Errorf("generate secret key: %w: random source produced no valid scalar", ErrInvalidSecret)
}

// SecretKeyFromBytes validates 32 big-endian bytes as a scalar in (0, n).
func SecretKeyFromBytes(b []byte) (SecretKey, error) {
	if len(b) != SecretKeySize {
		return SecretKey{}, fmt.Errorf("%w: secret key must be %d bytes, got %d", ErrInvalidLength, SecretKeySize, len(b))
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(b); overflow {
		return SecretKey{}, fmt.Errorf("%w: not below the curve order", ErrInvalidSecret)
	}
	if s.IsZero() {
		return SecretKey{}, fmt.Errorf("%w: zero", ErrInvalidSecret)
	}
	return SecretKey{k: secp256k1.NewPrivateKey(&s)}, nil
}

// ParseSecretKey accepts what upstream's decode_secret accepts: a NIP-19
// nsec (when the string starts with "nsec1") or 64 hex characters.
// Surrounding whitespace is ignored, as it is for key files.
func ParseSecretKey(s string) (SecretKey, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, hrpNsec+"1") {
		return DecodeNsec(s)
	}
	b, err := decodeHex32(s, "secret key")
	if err != nil {
		return SecretKey{}, err
	}
	defer clear(b[:])
	return SecretKeyFromBytes(b[:])
}

// IsZero reports whether the key is the zero value (no key).
func (sk SecretKey) IsZero() bool { return sk.k == nil }

// Bytes returns the 32-byte secret. The caller should clear it after use.
func (sk SecretKey) Bytes() [SecretKeySize]byte {
	var b [SecretKeySize]byte
	sk.k.Key.PutBytes(&b)
	return b
}

// Private exposes the decred key for the Noise and signature code.
func (sk SecretKey) Private() *secp256k1.PrivateKey { return sk.k }

// PublicKey is the x-only public key.
func (sk SecretKey) PublicKey() PublicKey { return XOnly(sk.k.PubKey()) }

// Nsec is the NIP-19 bech32 encoding of the secret.
func (sk SecretKey) Nsec() string {
	b := sk.Bytes()
	defer clear(b[:])
	return mustEncodeBech32(hrpNsec, b[:])
}

// Hex is the secret as 64 hex characters.
func (sk SecretKey) Hex() string {
	b := sk.Bytes()
	defer clear(b[:])
	return hex.EncodeToString(b[:])
}

// String never reveals the secret.
func (sk SecretKey) String() string { return "SecretKey(redacted)" }

// GoString never reveals the secret.
func (sk SecretKey) GoString() string { return sk.String() }

func decodeHex32(s, what string) ([32]byte, error) {
	var b [32]byte
	if len(s) != 64 {
		return b, fmt.Errorf("%w: %s must be 64 hex characters, got %d", ErrInvalidLength, what, len(s))
	}
	if _, err := hex.Decode(b[:], []byte(s)); err != nil {
		return b, fmt.Errorf("%w: %s: %v", ErrInvalidHex, what, err)
	}
	return b, nil
}

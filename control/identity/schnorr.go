package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// SignatureSize is the size of a BIP-340 signature.
const SignatureSize = 64

// Sign makes the signature upstream FIPS makes: BIP-340 Schnorr over
// SHA-256(data), with fresh random auxiliary data (so signatures are not
// deterministic). rand may be nil for crypto/rand.
func (sk SecretKey) Sign(data []byte, rnd io.Reader) ([SignatureSize]byte, error) {
	var out [SignatureSize]byte
	if rnd == nil {
		rnd = rand.Reader
	}
	var aux [32]byte
	if _, err := io.ReadFull(rnd, aux[:]); err != nil {
		return out, fmt.Errorf("sign: %w", err)
	}
	digest := sha256.Sum256(data)
	sig, err := schnorr.Sign(sk.k, digest[:], schnorr.CustomNonce(aux))
	if err != nil {
		return out, fmt.Errorf("sign: %w", err)
	}
	copy(out[:], sig.Serialize())
	return out, nil
}

// Verify checks a BIP-340 signature over SHA-256(data) by this key.
func (pk PublicKey) Verify(data, sig []byte) error {
	if len(sig) != SignatureSize {
		return fmt.Errorf("%w: signature must be %d bytes, got %d", ErrInvalidSignature, SignatureSize, len(sig))
	}
	digest := sha256.Sum256(data)
	return verifyDigest(pk, digest[:], sig)
}

// verifyDigest verifies a signature over an already-hashed 32-byte message.
func verifyDigest(pk PublicKey, digest, sig []byte) error {
	p, err := schnorr.ParsePubKey(pk[:])
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidPublicKey, err)
	}
	s, err := schnorr.ParseSignature(sig)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSignature, err)
	}
	if !s.Verify(digest, p) {
		return fmt.Errorf("%w: does not verify", ErrInvalidSignature)
	}
	return nil
}

package noise

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/flynn/noise"
)

// DHSecp256k1 is upstream FIPS's secp256k1 Diffie-Hellman as a flynn/noise
// DHFunc. Keys are 32-byte big-endian private scalars and 33-byte compressed
// public keys. DH returns SHA-256 of the 32-byte x coordinate of the shared
// point, so the result does not depend on either key's parity.
//
// DHLen reports 33, the public-key length flynn/noise reads off the wire;
// the DH output itself is 32 bytes.
var DHSecp256k1 noise.DHFunc = dhSecp256k1{}

// CipherSuite is secp256k1 + ChaChaPoly + SHA256. Its Name() is
// "secp256k1_ChaChaPoly_SHA256", the suffix of both protocol names.
//
// The handshakes in this package use its cipher and hash; they do not use
// flynn/noise's HandshakeState, which mixes the prologue, authenticates
// handshake ciphertexts with h and tags empty payloads, none of which
// upstream does.
var CipherSuite = noise.NewCipherSuite(DHSecp256k1, noise.CipherChaChaPoly, noise.HashSHA256)

type dhSecp256k1 struct{}

func (dhSecp256k1) GenerateKeypair(r io.Reader) (noise.DHKey, error) {
	if r == nil {
		r = rand.Reader
	}
	k, err := secp256k1.GeneratePrivateKeyFromRand(r)
	if err != nil {
		return noise.DHKey{}, err
	}
	return noise.DHKey{Private: k.Serialize(), Public: k.PubKey().SerializeCompressed()}, nil
}

func (dhSecp256k1) DH(privkey, pubkey []byte) ([]byte, error) {
	priv, err := parsePrivateKey(privkey)
	if err != nil {
		return nil, err
	}
	defer priv.Zero()
	pub, err := parsePublicKey(pubkey)
	if err != nil {
		return nil, err
	}
	out := dh(priv, pub)
	return out[:], nil
}

func (dhSecp256k1) DHLen() int     { return PubKeySize }
func (dhSecp256k1) DHName() string { return "secp256k1" }

// dh is upstream's ECDH: SHA-256 over the 32-byte big-endian x coordinate
// of priv·pub. Not libsecp256k1's default ECDH (which hashes 02/03 ‖ x) and
// not decred's GenerateSharedSecret (raw x, unhashed).
//
// Security note: decred's ScalarMultNonConst is not constant-time; see
// doc.go.
func dh(priv *secp256k1.PrivateKey, pub *secp256k1.PublicKey) [32]byte {
	var p, r secp256k1.JacobianPoint
	pub.AsJacobian(&p)
	secp256k1.ScalarMultNonConst(&priv.Key, &p, &r)
	r.ToAffine() // normalizes X
	var x [32]byte
	r.X.PutBytes(&x)
	out := sha256.Sum256(x[:])
	clear(x[:])
	r.X.Zero()
	r.Y.Zero()
	return out
}

// parsePublicKey accepts exactly the 33-byte compressed encoding of a point
// on the curve, as upstream's PublicKey::from_slice does for a 33-byte
// slice.
func parsePublicKey(b []byte) (*secp256k1.PublicKey, error) {
	if len(b) != PubKeySize {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrInvalidPublicKey, len(b), PubKeySize)
	}
	pk, err := secp256k1.ParsePubKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPublicKey, err)
	}
	return pk, nil
}

func parsePrivateKey(b []byte) (*secp256k1.PrivateKey, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("%w: %d bytes, want 32", ErrInvalidPrivateKey, len(b))
	}
	var k secp256k1.PrivateKey
	if overflow := k.Key.SetByteSlice(b); overflow || k.Key.IsZero() {
		return nil, fmt.Errorf("%w: not in [1, n-1]", ErrInvalidPrivateKey)
	}
	return &k, nil
}

func checkPrivateKey(k *secp256k1.PrivateKey) error {
	if k == nil || k.Key.IsZero() {
		return fmt.Errorf("%w: nil or zero", ErrInvalidPrivateKey)
	}
	return nil
}

func checkPublicKey(k *secp256k1.PublicKey) error {
	if k == nil || !k.IsOnCurve() {
		return fmt.Errorf("%w: nil or not on the curve", ErrInvalidPublicKey)
	}
	return nil
}

// premessage is the responder static as both sides hash it before msg1:
// 0x02 ‖ x, whatever the key's real parity. Upstream forces the even
// prefix because an initiator that knows the responder only by npub
// (x-only) cannot know its parity.
func premessage(k *secp256k1.PublicKey) []byte {
	b := k.SerializeCompressed()
	b[0] = secp256k1.PubKeyFormatCompressedEven
	return b
}

// newEphemeral draws an ephemeral key from r (crypto/rand when nil),
// rejecting the rare 32-byte strings outside [1, n-1] by drawing again.
func newEphemeral(r io.Reader) (*secp256k1.PrivateKey, error) {
	if r == nil {
		r = rand.Reader
	}
	k, err := secp256k1.GeneratePrivateKeyFromRand(r)
	if err != nil {
		return nil, fmt.Errorf("noise: generating ephemeral key: %w", err)
	}
	return k, nil
}

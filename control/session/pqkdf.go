package session

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// The post-quantum upgrade's key schedule (ours, not upstream's). After a
// classical XK epoch is established, the session's initiator offers an
// ML-KEM-768 encapsulation key inside it; the responder encapsulates and
// answers with the ciphertext. Both then derive the next epoch's keys:
//
//	th   = SHA-256("fips-go/pq/v1/transcript" ‖ id ‖ ek ‖ ct)
//	info = "fips-go/pq/v1" ‖ 0x00 ‖ PQSuite ‖ 0x00 ‖ offerer x-only key ‖ answerer x-only key ‖ th
//	okm  = HKDF-SHA256(ikm = ML-KEM shared secret, salt = X, info, 128 bytes)
//	     = k_o2a ‖ k_a2o ‖ k_confirm ‖ exporter of the new epoch
//
// where X is the Exporter of the epoch the offer and accept travelled in
// (HKDF-Expand over its handshake's final chaining key). The accept carries
// HMAC-SHA256(k_confirm, "fips-go/pq/v1/accept" ‖ th) and the offerer's
// first message on the new keys HMAC-SHA256(k_confirm, "fips-go/pq/v1/confirm" ‖ th).

// PQSuite names what the derived keys combine; it is bound into them.
const PQSuite = "ML-KEM-768+Noise_XK_secp256k1_ChaChaPoly_SHA256"

// PQMode is a node's or a peer's post-quantum policy.
type PQMode uint8

// Post-quantum policies.
const (
	// PQOff: never offer, and answer no offer (as a classic peer).
	PQOff PQMode = iota
	// PQPreferred: upgrade when the peer can, else stay classical (counted).
	PQPreferred
	// PQRequired: upgrade or tear the session down; no payload travels
	// on a classical epoch.
	PQRequired
)

// ErrPQMode is returned by ParsePQMode for an unknown spelling.
var ErrPQMode = errors.New("session: pq must be off, preferred or required")

// ParsePQMode parses the configuration spelling ("" is off).
func ParsePQMode(s string) (PQMode, error) {
	switch s {
	case "", "off":
		return PQOff, nil
	case "preferred":
		return PQPreferred, nil
	case "required":
		return PQRequired, nil
	}
	return PQOff, fmt.Errorf("%w: %q", ErrPQMode, s)
}

func (m PQMode) String() string {
	switch m {
	case PQOff:
		return "off"
	case PQPreferred:
		return "preferred"
	case PQRequired:
		return "required"
	}
	return fmt.Sprintf("PQMode(%d)", uint8(m))
}

// PQKeys are an upgrade's derived keys.
type PQKeys struct {
	OffererToAnswerer [32]byte
	AnswererToOfferer [32]byte
	Confirm           [32]byte
	Exporter          [32]byte
}

// PQTranscript hashes an exchange: its id, the encapsulation key and the
// ciphertext.
func PQTranscript(id [wire.PQIDSize]byte, ek, ct []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("fips-go/pq/v1/transcript"))
	h.Write(id[:])
	h.Write(ek)
	h.Write(ct)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// DerivePQKeys is the key schedule above.
func DerivePQKeys(exporter [32]byte, shared []byte, offerer, answerer identity.PublicKey, th [32]byte) (PQKeys, error) {
	info := make([]byte, 0, 64+len(PQSuite)+96)
	info = append(info, "fips-go/pq/v1"...)
	info = append(info, 0)
	info = append(info, PQSuite...)
	info = append(info, 0)
	info = append(info, offerer[:]...)
	info = append(info, answerer[:]...)
	info = append(info, th[:]...)
	okm, err := hkdf.Key(sha256.New, shared, exporter[:], string(info), 128)
	if err != nil {
		return PQKeys{}, fmt.Errorf("session: pq key derivation: %w", err)
	}
	var k PQKeys
	copy(k.OffererToAnswerer[:], okm[0:32])
	copy(k.AnswererToOfferer[:], okm[32:64])
	copy(k.Confirm[:], okm[64:96])
	copy(k.Exporter[:], okm[96:128])
	clear(okm)
	return k, nil
}

// PQConfirmTag is the key confirmation of one side: label is "accept" for
// the answerer's, "confirm" for the offerer's.
func PQConfirmTag(k PQKeys, label string, th [32]byte) [32]byte {
	m := hmac.New(sha256.New, k.Confirm[:])
	m.Write([]byte("fips-go/pq/v1/" + label))
	m.Write(th[:])
	var out [32]byte
	m.Sum(out[:0])
	return out
}

package session

import (
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/pq"
	"github.com/fips-go/fips/control/wire"
)

// The post-quantum upgrade's key schedule (ours, not upstream's) is
// package pq's, under the session layer's label. After a classical XK
// epoch is established, the session's initiator offers an ML-KEM-768
// encapsulation key inside it; the responder encapsulates and answers with
// the ciphertext. Both then derive the next epoch's keys:
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

// pqSchedule is the session layer's key schedule.
var pqSchedule = pq.Schedule{Label: "fips-go/pq/v1", Suite: PQSuite}

// PQMode is a node's or a peer's post-quantum policy (package pq's).
type PQMode = pq.Mode

// Post-quantum policies. Under PQRequired no payload travels on a
// classical session epoch.
const (
	PQOff       = pq.Off
	PQPreferred = pq.Preferred
	PQRequired  = pq.Required
)

// ErrPQMode is returned by ParsePQMode for an unknown spelling.
var ErrPQMode = pq.ErrMode

// ParsePQMode parses the configuration spelling ("" is off).
func ParsePQMode(s string) (PQMode, error) { return pq.ParseMode(s) }

// PQKeys are an upgrade's derived keys.
type PQKeys = pq.Keys

// PQTranscript hashes an exchange: its id, the encapsulation key and the
// ciphertext.
func PQTranscript(id [wire.PQIDSize]byte, ek, ct []byte) [32]byte {
	return pqSchedule.Transcript(id, ek, ct)
}

// DerivePQKeys is the key schedule above.
func DerivePQKeys(exporter [32]byte, shared []byte, offerer, answerer identity.PublicKey, th [32]byte) (PQKeys, error) {
	return pqSchedule.Derive(exporter, shared, offerer, answerer, th)
}

// PQConfirmTag is the key confirmation of one side: label is "accept" for
// the answerer's, "confirm" for the offerer's.
func PQConfirmTag(k PQKeys, label string, th [32]byte) [32]byte {
	return pqSchedule.ConfirmTag(k, label, th)
}

package pq

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Schedule is one layer's key schedule: Label separates the layers' keys
// (sessions "fips-go/pq/v1", links "fips-go/link-pq/v1") and Suite names
// what the keys combine; both are bound into every key.
//
//	th   = SHA-256(Label ‖ "/transcript" ‖ id ‖ offer ‖ accept)
//	info = Label ‖ 0x00 ‖ Suite ‖ 0x00 ‖ offerer x-only key ‖ answerer x-only key ‖ th
//	okm  = HKDF-SHA256(ikm = ML-KEM shared secret, salt = X, info, 128 bytes)
//	     = k_o2a ‖ k_a2o ‖ k_confirm ‖ exporter of the new epoch
//
// offer is the offer's payload and accept the accept's without its
// confirmation tag (for sessions: the encapsulation key and the
// ciphertext); X is the exporter of the classical epoch they travelled in.
// The accept carries HMAC-SHA256(k_confirm, Label ‖ "/accept" ‖ th).
type Schedule struct {
	Label string
	Suite string
}

// Keys are an upgrade's derived keys.
type Keys struct {
	OffererToAnswerer [32]byte
	AnswererToOfferer [32]byte
	Confirm           [32]byte
	Exporter          [32]byte
}

// Transcript hashes an exchange: its id, the offer and the accept.
func (s Schedule) Transcript(id [wire.PQIDSize]byte, offer, accept []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(s.Label + "/transcript"))
	h.Write(id[:])
	h.Write(offer)
	h.Write(accept)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Derive is the key schedule above.
func (s Schedule) Derive(exporter [32]byte, shared []byte, offerer, answerer identity.PublicKey, th [32]byte) (Keys, error) {
	info := make([]byte, 0, len(s.Label)+len(s.Suite)+2+96)
	info = append(info, s.Label...)
	info = append(info, 0)
	info = append(info, s.Suite...)
	info = append(info, 0)
	info = append(info, offerer[:]...)
	info = append(info, answerer[:]...)
	info = append(info, th[:]...)
	okm, err := hkdf.Key(sha256.New, shared, exporter[:], string(info), 128)
	if err != nil {
		return Keys{}, fmt.Errorf("pq: key derivation: %w", err)
	}
	var k Keys
	copy(k.OffererToAnswerer[:], okm[0:32])
	copy(k.AnswererToOfferer[:], okm[32:64])
	copy(k.Confirm[:], okm[64:96])
	copy(k.Exporter[:], okm[96:128])
	clear(okm)
	return k, nil
}

// ConfirmTag is one side's key confirmation: label "accept" for the
// answerer's, "confirm" for the offerer's.
func (s Schedule) ConfirmTag(k Keys, label string, th [32]byte) [32]byte {
	m := hmac.New(sha256.New, k.Confirm[:])
	m.Write([]byte(s.Label + "/" + label))
	m.Write(th[:])
	var out [32]byte
	m.Sum(out[:0])
	return out
}

package pq

import (
	"crypto/hmac"
	"crypto/mlkem"
	"errors"
	"fmt"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/wire"
)

// Errors of an exchange's halves.
var (
	// ErrKey: an offer whose encapsulation key does not parse.
	ErrKey = errors.New("pq: invalid encapsulation key")
	// ErrCiphertext: an accept whose ciphertext does not decapsulate.
	ErrCiphertext = errors.New("pq: invalid ciphertext")
	// ErrConfirm: the accept's key confirmation does not verify (a
	// ciphertext or tag changed on the way): the keys would differ.
	ErrConfirm = errors.New("pq: the accept's key confirmation failed")
)

// Exchange is what one upgrade settled: the derived keys and the
// transcript hash they are bound to.
type Exchange struct {
	Keys Keys
	TH   [32]byte
}

// Answer is the answerer's half: it encapsulates to ek (found in offer,
// the offer's payload) and returns the exchange and the accept's payload,
// head ‖ ciphertext ‖ confirmation tag (head: what a layer puts first).
// exporter is the classical epoch's.
func (s Schedule) Answer(exporter [32]byte, offerer, answerer identity.PublicKey, id [wire.PQIDSize]byte,
	offer, ek, head []byte) (Exchange, []byte, error) {
	key, err := mlkem.NewEncapsulationKey768(ek)
	if err != nil {
		return Exchange{}, nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	shared, ct := key.Encapsulate()
	accept := make([]byte, 0, len(head)+len(ct)+32)
	accept = append(append(accept, head...), ct...)
	x := Exchange{TH: s.Transcript(id, offer, accept)}
	x.Keys, err = s.Derive(exporter, shared, offerer, answerer, x.TH)
	clear(shared)
	if err != nil {
		return Exchange{}, nil, err
	}
	tag := s.ConfirmTag(x.Keys, "accept", x.TH)
	return x, append(accept, tag[:]...), nil
}

// Finish is the offerer's half: accept is the accept's payload, head ‖
// ciphertext ‖ tag with a head of headLen bytes; offer is the offer's.
// It decapsulates, derives and checks the tag (ErrConfirm).
func (s Schedule) Finish(dk *mlkem.DecapsulationKey768, exporter [32]byte, offerer, answerer identity.PublicKey,
	id [wire.PQIDSize]byte, offer, accept []byte, headLen int) (Exchange, error) {
	body := accept[:headLen+wire.PQCiphertextSize]
	shared, err := dk.Decapsulate(body[headLen:])
	if err != nil {
		return Exchange{}, fmt.Errorf("%w: %w", ErrCiphertext, err)
	}
	x := Exchange{TH: s.Transcript(id, offer, body)}
	x.Keys, err = s.Derive(exporter, shared, offerer, answerer, x.TH)
	clear(shared)
	if err != nil {
		return Exchange{}, err
	}
	want := s.ConfirmTag(x.Keys, "accept", x.TH)
	if !hmac.Equal(accept[len(body):], want[:]) {
		return Exchange{}, ErrConfirm
	}
	return x, nil
}

package noise

import (
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Noise IK as FMP (the link layer) runs it:
//
//	<- s                     pre-message: H(0x02 ‖ x(s_R)) on both sides
//	-> e, es, s, ss          msg1: e_I ‖ enc(s_I) ‖ enc(epoch_I)    106 bytes
//	<- e, ee, "se"           msg2: e_R ‖ enc(epoch_R)               57 bytes
//
// where upstream's msg2 "se" is DH(e_I, s_R) again, not DH(s_I, e_R); see
// doc.go.

// IKInitiator is the initiator of an FMP link handshake. It knows the
// responder's static key beforehand.
type IKInitiator struct{ handshake }

// IKResponder is the responder of an FMP link handshake. It learns the
// initiator's static key from message 1.
type IKResponder struct{ handshake }

// NewIKInitiator starts an IK handshake towards remoteStatic. A key known
// only as x-only (npub) is passed as its even-parity lift; the handshake
// works whatever the responder's real parity. static is not modified or
// retained beyond the handshake's lifetime.
func NewIKInitiator(static *secp256k1.PrivateKey, remoteStatic *secp256k1.PublicKey, epoch Epoch, opts ...Option) (*IKInitiator, error) {
	h := &IKInitiator{}
	if err := h.init("IK", ProtocolNameIK, Initiator, static, remoteStatic, epoch, opts); err != nil {
		return nil, err
	}
	return h, nil
}

// NewIKResponder prepares to answer an IK handshake.
func NewIKResponder(static *secp256k1.PrivateKey, epoch Epoch, opts ...Option) (*IKResponder, error) {
	h := &IKResponder{}
	if err := h.init("IK", ProtocolNameIK, Responder, static, nil, epoch, opts); err != nil {
		return nil, err
	}
	return h, nil
}

// WriteMessage1 appends the 106-byte msg1 to dst and returns the extended
// slice.
func (h *IKInitiator) WriteMessage1(dst []byte) ([]byte, error) {
	if err := h.expect(stepInitial, "write msg1"); err != nil {
		return nil, err
	}
	ss := h.ss
	out, e, err := h.writeE(&ss, dst) // -> e
	if err != nil {
		return nil, err
	}
	// -> es
	es := dh(e, h.rs)
	ss.mixKey(es[:])
	// -> s, encrypted at n=0 under the es key
	out, err = ss.encryptAndHash(out, h.s.PubKey().SerializeCompressed())
	if err != nil {
		return nil, err
	}
	// -> ss
	mixDH(&ss, h.s, h.rs)
	// payload: epoch, n=0 under the ss key
	out, err = ss.encryptAndHash(out, h.epoch[:])
	if err != nil {
		return nil, err
	}
	h.ss, h.e, h.es, h.step = ss, e, es, stepMsg1
	clear(es[:])
	return out, nil
}

// ReadMessage1 processes msg1 and returns the initiator's static key (with
// the parity it sent) and epoch. On error the handshake is unchanged.
func (h *IKResponder) ReadMessage1(msg []byte) (*secp256k1.PublicKey, Epoch, error) {
	if err := h.expect(stepInitial, "read msg1"); err != nil {
		return nil, Epoch{}, err
	}
	if err := h.checkLen(msg, IKMsg1Size, "msg1"); err != nil {
		return nil, Epoch{}, err
	}
	ss := h.ss
	re, err := readE(&ss, msg[:PubKeySize]) // -> e
	if err != nil {
		return nil, Epoch{}, err
	}
	// -> es
	mixDH(&ss, h.s, re)
	// -> s
	rs, err := readStatic(&ss, msg[PubKeySize:PubKeySize+encPubSize])
	if err != nil {
		return nil, Epoch{}, err
	}
	mixDH(&ss, h.s, rs) // -> ss
	epoch, err := readEpoch(&ss, msg[PubKeySize+encPubSize:])
	if err != nil {
		return nil, Epoch{}, err
	}
	h.ss, h.re, h.rs, h.remoteEpoch, h.haveEpoch, h.step = ss, re, rs, epoch, true, stepMsg1
	return rs, epoch, nil
}

// WriteMessage2 appends the 57-byte msg2 to dst and completes the
// responder's side of the handshake.
func (h *IKResponder) WriteMessage2(dst []byte) ([]byte, error) {
	if err := h.expect(stepMsg1, "write msg2"); err != nil {
		return nil, err
	}
	ss := h.ss
	out, e, err := h.writeE(&ss, dst) // <- e
	if err != nil {
		return nil, err
	}
	mixDH(&ss, e, h.re) // <- ee
	// Deviation (upstream quirk, reproduced for interop): the "se" step
	// mixes DH(s_R, e_I) — the same value msg1's es already mixed —
	// where textbook IK mixes DH(e_R, s_I). See the security note in
	// doc.go.
	mixDH(&ss, h.s, h.re)
	out, err = ss.encryptAndHash(out, h.epoch[:]) // payload: epoch (n=0)
	if err != nil {
		return nil, err
	}
	h.ss, h.e, h.step = ss, e, stepComplete
	return out, nil
}

// ReadMessage2 processes msg2, completes the handshake and returns the
// responder's epoch. On error the handshake is unchanged.
func (h *IKInitiator) ReadMessage2(msg []byte) (Epoch, error) {
	if err := h.expect(stepMsg1, "read msg2"); err != nil {
		return Epoch{}, err
	}
	if err := h.checkLen(msg, IKMsg2Size, "msg2"); err != nil {
		return Epoch{}, err
	}
	ss := h.ss
	re, err := readE(&ss, msg[:PubKeySize]) // <- e
	if err != nil {
		return Epoch{}, err
	}
	mixDH(&ss, h.e, re) // <- ee
	// Deviation (upstream quirk): "se" is DH(e_I, s_R), mirroring the
	// responder's DH(s_R, e_I); textbook IK would use DH(s_I, e_R). It is
	// msg1's es, kept from WriteMessage1.
	ss.mixKey(h.es[:])
	epoch, err := readEpoch(&ss, msg[PubKeySize:])
	if err != nil {
		return Epoch{}, err
	}
	clear(h.es[:])
	h.ss, h.re, h.remoteEpoch, h.haveEpoch, h.step = ss, re, epoch, true, stepComplete
	return epoch, nil
}

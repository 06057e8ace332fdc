package noise

import (
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Noise XK as FSP (the session layer) runs it:
//
//	<- s                     pre-message: H(0x02 ‖ x(s_R)) on both sides
//	-> e, es                 msg1: e_I                          33 bytes
//	<- e, ee                 msg2: e_R ‖ enc(epoch_R)           57 bytes
//	-> s, se                 msg3: enc(s_I) ‖ enc(epoch_I)      73 bytes

// XKInitiator is the initiator of an FSP session handshake. It knows the
// responder's static key and reveals its own only in message 3.
type XKInitiator struct{ handshake }

// XKResponder is the responder of an FSP session handshake. It learns the
// initiator's static key from message 3.
type XKResponder struct{ handshake }

// NewXKInitiator starts an XK handshake towards remoteStatic (an x-only key
// passed as its even-parity lift works).
func NewXKInitiator(static *secp256k1.PrivateKey, remoteStatic *secp256k1.PublicKey, epoch Epoch, opts ...Option) (*XKInitiator, error) {
	h := &XKInitiator{}
	if err := h.init("XK", ProtocolNameXK, Initiator, static, remoteStatic, epoch, opts); err != nil {
		return nil, err
	}
	return h, nil
}

// NewXKResponder prepares to answer an XK handshake.
func NewXKResponder(static *secp256k1.PrivateKey, epoch Epoch, opts ...Option) (*XKResponder, error) {
	h := &XKResponder{}
	if err := h.init("XK", ProtocolNameXK, Responder, static, nil, epoch, opts); err != nil {
		return nil, err
	}
	return h, nil
}

// WriteMessage1 appends the 33-byte msg1 (the ephemeral key alone) to dst.
func (h *XKInitiator) WriteMessage1(dst []byte) ([]byte, error) {
	if err := h.expect(stepInitial, "write msg1"); err != nil {
		return nil, err
	}
	ss := h.ss
	out, e, err := h.writeE(&ss, dst) // -> e
	if err != nil {
		return nil, err
	}
	mixDH(&ss, e, h.rs) // -> es
	// Deviation: no EncryptAndHash of the (empty) payload, so msg1 carries
	// no 16-byte tag and the cipher nonce stays 0 (textbook Noise would
	// encrypt the empty payload here and bump n to 1).
	h.ss, h.e, h.step = ss, e, stepMsg1
	return out, nil
}

// ReadMessage1 processes msg1. msg1 authenticates nothing: a bad one shows
// only when msg3 fails to decrypt. On error the handshake is unchanged.
func (h *XKResponder) ReadMessage1(msg []byte) error {
	if err := h.expect(stepInitial, "read msg1"); err != nil {
		return err
	}
	if err := h.checkLen(msg, XKMsg1Size, "msg1"); err != nil {
		return err
	}
	ss := h.ss
	re, err := readE(&ss, msg) // -> e
	if err != nil {
		return err
	}
	mixDH(&ss, h.s, re) // -> es
	// Deviation: no DecryptAndHash of an empty payload (see WriteMessage1).
	h.ss, h.re, h.step = ss, re, stepMsg1
	return nil
}

// WriteMessage2 appends the 57-byte msg2 to dst.
func (h *XKResponder) WriteMessage2(dst []byte) ([]byte, error) {
	if err := h.expect(stepMsg1, "write msg2"); err != nil {
		return nil, err
	}
	ss := h.ss
	out, e, err := h.writeE(&ss, dst) // <- e
	if err != nil {
		return nil, err
	}
	mixDH(&ss, e, h.re)                           // <- ee
	out, err = ss.encryptAndHash(out, h.epoch[:]) // payload: epoch (n=0 under the ee key)
	if err != nil {
		return nil, err
	}
	h.ss, h.e, h.step = ss, e, stepMsg2
	return out, nil
}

// ReadMessage2 processes msg2 and returns the responder's epoch. On error
// the handshake is unchanged (what upstream's try_read_xk_message_2 does;
// every reader here behaves that way).
func (h *XKInitiator) ReadMessage2(msg []byte) (Epoch, error) {
	if err := h.expect(stepMsg1, "read msg2"); err != nil {
		return Epoch{}, err
	}
	if err := h.checkLen(msg, XKMsg2Size, "msg2"); err != nil {
		return Epoch{}, err
	}
	ss := h.ss
	re, err := readE(&ss, msg[:PubKeySize]) // <- e
	if err != nil {
		return Epoch{}, err
	}
	mixDH(&ss, h.e, re) // <- ee
	epoch, err := readEpoch(&ss, msg[PubKeySize:])
	if err != nil {
		return Epoch{}, err
	}
	h.ss, h.re, h.remoteEpoch, h.haveEpoch, h.step = ss, re, epoch, true, stepMsg2
	return epoch, nil
}

// WriteMessage3 appends the 73-byte msg3 to dst and completes the
// initiator's side of the handshake.
func (h *XKInitiator) WriteMessage3(dst []byte) ([]byte, error) {
	if err := h.expect(stepMsg2, "write msg3"); err != nil {
		return nil, err
	}
	ss := h.ss
	// -> s. The ee key is still current, so this is encrypted at n=1
	// (msg2's epoch used n=0): only MixKey resets the nonce.
	out, err := ss.encryptAndHash(dst, h.s.PubKey().SerializeCompressed())
	if err != nil {
		return nil, err
	}
	mixDH(&ss, h.s, h.re)                         // -> se
	out, err = ss.encryptAndHash(out, h.epoch[:]) // payload: epoch (n=0)
	if err != nil {
		return nil, err
	}
	h.ss, h.step = ss, stepComplete
	return out, nil
}

// ReadMessage3 processes msg3, completes the handshake and returns the
// initiator's static key (with the parity it sent) and epoch. The caller
// must still check that the key's NodeAddr is the session's source address.
// On error the handshake is unchanged.
func (h *XKResponder) ReadMessage3(msg []byte) (*secp256k1.PublicKey, Epoch, error) {
	if err := h.expect(stepMsg2, "read msg3"); err != nil {
		return nil, Epoch{}, err
	}
	if err := h.checkLen(msg, XKMsg3Size, "msg3"); err != nil {
		return nil, Epoch{}, err
	}
	ss := h.ss
	rs, err := readStatic(&ss, msg[:encPubSize]) // -> s (n=1 under the ee key)
	if err != nil {
		return nil, Epoch{}, err
	}
	mixDH(&ss, h.e, rs) // -> se
	epoch, err := readEpoch(&ss, msg[encPubSize:])
	if err != nil {
		return nil, Epoch{}, err
	}
	h.ss, h.rs, h.remoteEpoch, h.haveEpoch, h.step = ss, rs, epoch, true, stepComplete
	return rs, epoch, nil
}

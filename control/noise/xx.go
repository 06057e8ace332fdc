package noise

import (
	"bytes"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Noise XX as upstream's `next` runs it on links: neither side knows the
// other's static key beforehand, so there is no pre-message.
//
//	-> e                 msg1: e_I                                     33 bytes
//	<- e, ee, s, es      msg2: e_R ‖ enc(s_R) ‖ enc(epoch_R) [‖ enc(p)] 106 bytes + |p|+16
//	-> s, se             msg3: enc(s_I) ‖ enc(epoch_I) [‖ enc(p)]       73 bytes + |p|+16
//
// The epoch is encrypted under the key of the DH just mixed (n=0); the
// optional payload p (the negotiation payload) follows it under the same
// key (n=1). As in IK and XK, every AEAD has empty associated data and
// msg1 carries no tag.

// XXInitiator is the initiator of an XX link handshake. It learns the
// responder's static key from message 2.
type XXInitiator struct{ handshake }

// XXResponder is the responder of an XX link handshake. It learns the
// initiator's static key from message 3.
type XXResponder struct{ handshake }

// NewXXInitiator starts an XX handshake.
func NewXXInitiator(static *secp256k1.PrivateKey, epoch Epoch, opts ...Option) (*XXInitiator, error) {
	h := &XXInitiator{}
	if err := h.init("XX", ProtocolNameXX, Initiator, static, nil, epoch, opts); err != nil {
		return nil, err
	}
	return h, nil
}

// NewXXResponder prepares to answer an XX handshake.
func NewXXResponder(static *secp256k1.PrivateKey, epoch Epoch, opts ...Option) (*XXResponder, error) {
	h := &XXResponder{}
	if err := h.init("XX", ProtocolNameXX, Responder, static, nil, epoch, opts); err != nil {
		return nil, err
	}
	return h, nil
}

// WriteMessage1 appends the 33-byte msg1 (the ephemeral key) to dst.
func (h *XXInitiator) WriteMessage1(dst []byte) ([]byte, error) {
	if err := h.expect(stepInitial, "write msg1"); err != nil {
		return nil, err
	}
	ss := h.ss
	out, e, err := h.writeE(&ss, dst) // -> e
	if err != nil {
		return nil, err
	}
	h.ss, h.e, h.step = ss, e, stepMsg1
	return out, nil
}

// ReadMessage1 processes msg1 (exactly 33 bytes). On error the handshake
// is unchanged.
func (h *XXResponder) ReadMessage1(msg []byte) error {
	if err := h.expect(stepInitial, "read msg1"); err != nil {
		return err
	}
	if err := h.checkLen(msg, XXMsg1Size, "msg1"); err != nil {
		return err
	}
	ss := h.ss
	re, err := readE(&ss, msg) // -> e
	if err != nil {
		return err
	}
	h.ss, h.re, h.step = ss, re, stepMsg1
	return nil
}

// WriteMessage2 appends msg2 to dst: 106 bytes, then payload encrypted
// when payload is not nil.
func (h *XXResponder) WriteMessage2(dst, payload []byte) ([]byte, error) {
	if err := h.expect(stepMsg1, "write msg2"); err != nil {
		return nil, err
	}
	if err := checkPayload(payload); err != nil {
		return nil, err
	}
	ss := h.ss
	out, e, err := h.writeE(&ss, dst) // <- e
	if err != nil {
		return nil, err
	}
	mixDH(&ss, e, h.re) // <- ee
	if out, err = ss.encryptAndHash(out, h.s.PubKey().SerializeCompressed()); err != nil {
		return nil, err // <- s (n=0 under the ee key)
	}
	mixDH(&ss, h.s, h.re) // <- es
	if out, err = ss.encryptAndHash(out, h.epoch[:]); err != nil {
		return nil, err // epoch (n=0 under the es key)
	}
	if payload != nil {
		if out, err = ss.encryptAndHash(out, payload); err != nil {
			return nil, err
		}
	}
	h.ss, h.e, h.step = ss, e, stepMsg2
	return out, nil
}

// ReadMessage2 processes msg2 and returns the responder's static key (with
// the parity it sent), its epoch and the payload it carried (nil when
// msg2 is exactly 106 bytes). The caller decides whether the key is the
// peer it meant to reach. On error the handshake is unchanged.
func (h *XXInitiator) ReadMessage2(msg []byte) (*secp256k1.PublicKey, Epoch, []byte, error) {
	if err := h.expect(stepMsg1, "read msg2"); err != nil {
		return nil, Epoch{}, nil, err
	}
	if err := h.checkMinLen(msg, XXMsg2Size, "msg2"); err != nil {
		return nil, Epoch{}, nil, err
	}
	ss := h.ss
	re, err := readE(&ss, msg[:PubKeySize]) // <- e
	if err != nil {
		return nil, Epoch{}, nil, err
	}
	mixDH(&ss, h.e, re) // <- ee
	rest := msg[PubKeySize:]
	rs, err := readStatic(&ss, rest[:encPubSize]) // <- s
	if err != nil {
		return nil, Epoch{}, nil, err
	}
	mixDH(&ss, h.e, rs) // <- es
	epoch, err := readEpoch(&ss, rest[encPubSize:encPubSize+encEpochSize])
	if err != nil {
		return nil, Epoch{}, nil, err
	}
	payload, err := readPayload(&ss, rest[encPubSize+encEpochSize:])
	if err != nil {
		return nil, Epoch{}, nil, err
	}
	h.ss, h.re, h.rs, h.remoteEpoch, h.haveEpoch, h.step = ss, re, rs, epoch, true, stepMsg2
	return rs, epoch, payload, nil
}

// ReadMessage2Expecting is ReadMessage2 for a dial that names its peer:
// the responder's static key must have want's x-coordinate (npubs carry
// no parity). A msg2 that authenticates under any other key returns
// ErrIdentityMismatch and leaves the handshake as it was, like any failed
// read: anyone holding a key pair can answer a msg1 with a valid msg2 of
// its own, so it must not end the dial the genuine msg2 can still finish.
func (h *XXInitiator) ReadMessage2Expecting(msg []byte, want *secp256k1.PublicKey) (Epoch, []byte, error) {
	if want == nil {
		return Epoch{}, nil, ErrInvalidPublicKey
	}
	saved := h.handshake
	rs, epoch, payload, err := h.ReadMessage2(msg)
	if err != nil {
		return Epoch{}, nil, err
	}
	if !bytes.Equal(rs.SerializeCompressed()[1:], want.SerializeCompressed()[1:]) {
		h.handshake = saved
		return Epoch{}, nil, ErrIdentityMismatch
	}
	return epoch, payload, nil
}

// WriteMessage3 appends msg3 to dst (73 bytes, then payload encrypted
// when not nil) and completes the initiator's side.
func (h *XXInitiator) WriteMessage3(dst, payload []byte) ([]byte, error) {
	if err := h.expect(stepMsg2, "write msg3"); err != nil {
		return nil, err
	}
	if err := checkPayload(payload); err != nil {
		return nil, err
	}
	ss := h.ss
	// -> s: the es key is current and msg2's epoch used n=0, so this is
	// n=1 (n=2 after a msg2 payload): only MixKey resets the nonce.
	out, err := ss.encryptAndHash(dst, h.s.PubKey().SerializeCompressed())
	if err != nil {
		return nil, err
	}
	mixDH(&ss, h.s, h.re) // -> se
	if out, err = ss.encryptAndHash(out, h.epoch[:]); err != nil {
		return nil, err // epoch (n=0 under the se key)
	}
	if payload != nil {
		if out, err = ss.encryptAndHash(out, payload); err != nil {
			return nil, err
		}
	}
	h.ss, h.step = ss, stepComplete
	return out, nil
}

// ReadMessage3 processes msg3, completes the handshake and returns the
// initiator's static key (with the parity it sent), its epoch and the
// payload (nil when msg3 is exactly 73 bytes). On error the handshake is
// unchanged.
func (h *XXResponder) ReadMessage3(msg []byte) (*secp256k1.PublicKey, Epoch, []byte, error) {
	if err := h.expect(stepMsg2, "read msg3"); err != nil {
		return nil, Epoch{}, nil, err
	}
	if err := h.checkMinLen(msg, XXMsg3Size, "msg3"); err != nil {
		return nil, Epoch{}, nil, err
	}
	ss := h.ss
	rs, err := readStatic(&ss, msg[:encPubSize]) // -> s
	if err != nil {
		return nil, Epoch{}, nil, err
	}
	mixDH(&ss, h.e, rs) // -> se
	epoch, err := readEpoch(&ss, msg[encPubSize:XXMsg3Size])
	if err != nil {
		return nil, Epoch{}, nil, err
	}
	payload, err := readPayload(&ss, msg[XXMsg3Size:])
	if err != nil {
		return nil, Epoch{}, nil, err
	}
	h.ss, h.rs, h.remoteEpoch, h.haveEpoch, h.step = ss, rs, epoch, true, stepComplete
	return rs, epoch, payload, nil
}

// checkMinLen accepts msg of base bytes, or of base plus an encrypted
// payload of at most MaxXXPayload bytes.
func (h *handshake) checkMinLen(msg []byte, base int, what string) error {
	if len(msg) < base || len(msg) > base+MaxXXPayload+TagSize {
		return fmt.Errorf("%w: %s %s is %d bytes, want %d to %d", ErrMessageLength, h.pattern, what,
			len(msg), base, base+MaxXXPayload+TagSize)
	}
	if n := len(msg) - base; n > 0 && n < TagSize {
		return fmt.Errorf("%w: %s %s payload of %d bytes is shorter than its tag", ErrMessageLength, h.pattern, what, n)
	}
	return nil
}

func checkPayload(p []byte) error {
	if len(p) > MaxXXPayload {
		return fmt.Errorf("%w: payload of %d bytes, at most %d", ErrMessageLength, len(p), MaxXXPayload)
	}
	return nil
}

// readPayload decrypts the optional payload after a message's fixed
// part: nil when there is none.
func readPayload(ss *symmetricState, c []byte) ([]byte, error) {
	if len(c) == 0 {
		return nil, nil
	}
	return ss.decryptAndHash(make([]byte, 0, len(c)-TagSize), c)
}

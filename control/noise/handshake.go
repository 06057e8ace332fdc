package noise

import (
	"fmt"
	"io"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Option configures a handshake.
type Option func(*handshake)

// WithRand sets the entropy source the handshake draws its ephemeral key
// from (32 bytes per draw, redrawn if not a valid scalar). The default is
// crypto/rand. Tests inject a fixed reader to get deterministic messages;
// production code must not.
func WithRand(r io.Reader) Option {
	return func(h *handshake) { h.rand = r }
}

type step uint8

const (
	stepInitial  step = iota // nothing sent or received
	stepMsg1                 // message 1 written / read
	stepMsg2                 // message 2 written / read (XK only)
	stepComplete             // ready to split
	stepSplit                // Session already taken
)

func (s step) String() string {
	switch s {
	case stepInitial:
		return "initial"
	case stepMsg1:
		return "message1-done"
	case stepMsg2:
		return "message2-done"
	case stepComplete:
		return "complete"
	case stepSplit:
		return "split"
	default:
		return "invalid"
	}
}

// handshake is the state the four handshake types share. Its exported
// methods are promoted onto each of them.
type handshake struct {
	ss          symmetricState
	s           *secp256k1.PrivateKey // ours; owned by the caller, never modified
	e           *secp256k1.PrivateKey // ours, drawn when we write our e
	rs          *secp256k1.PublicKey  // peer's static: configured (initiator) or learned
	re          *secp256k1.PublicKey  // peer's ephemeral
	epoch       Epoch
	remoteEpoch Epoch
	haveEpoch   bool
	rand        io.Reader
	step        step
	role        Role
	pattern     string // "IK", "XK" or "XX", for messages
	// es (IK initiator, between msg1 and msg2) is DH(e_I, s_R) from msg1:
	// upstream's msg2 "se" term is the same value, so reading a msg2
	// costs one DH (ee), not two — each forged msg2 too.
	es [32]byte
}

// init sets up the symmetric state and mixes the `<- s` pre-message. The
// responder static is hashed as 0x02 ‖ x (see premessage), on both sides.
func (h *handshake) init(pattern, name string, role Role, static *secp256k1.PrivateKey,
	remote *secp256k1.PublicKey, epoch Epoch, opts []Option) error {
	if err := checkPrivateKey(static); err != nil {
		return err
	}
	h.pattern, h.role, h.s, h.epoch = pattern, role, static, epoch
	for _, o := range opts {
		o(h)
	}
	h.ss.init(name)
	if pattern == "XX" {
		return nil // no pre-message: neither static is known
	}
	if role == Initiator {
		if err := checkPublicKey(remote); err != nil {
			return err
		}
		h.rs = remote
		h.ss.mixHash(premessage(remote))
	} else {
		h.ss.mixHash(premessage(static.PubKey()))
	}
	return nil
}

func (h *handshake) expect(s step, what string) error {
	if h.step != s {
		return fmt.Errorf("%w: %s %s %s in state %s", ErrWrongState, h.pattern, h.role, what, h.step)
	}
	return nil
}

func (h *handshake) checkLen(msg []byte, want int, what string) error {
	if len(msg) != want {
		return fmt.Errorf("%w: %s %s is %d bytes, want %d", ErrMessageLength, h.pattern, what, len(msg), want)
	}
	return nil
}

// writeE draws the ephemeral key, appends it to dst and mixes it into h.
func (h *handshake) writeE(ss *symmetricState, dst []byte) ([]byte, *secp256k1.PrivateKey, error) {
	e, err := newEphemeral(h.rand)
	if err != nil {
		return nil, nil, err
	}
	pub := e.PubKey().SerializeCompressed()
	ss.mixHash(pub)
	return append(dst, pub...), e, nil
}

// readE parses the peer's ephemeral and mixes its bytes, as received, into h.
func readE(ss *symmetricState, b []byte) (*secp256k1.PublicKey, error) {
	re, err := parsePublicKey(b)
	if err != nil {
		return nil, err
	}
	ss.mixHash(b)
	return re, nil
}

// mixDH mixes DH(priv, pub) into the chaining key.
func mixDH(ss *symmetricState, priv *secp256k1.PrivateKey, pub *secp256k1.PublicKey) {
	k := dh(priv, pub)
	ss.mixKey(k[:])
	clear(k[:])
}

// readStatic decrypts and parses the peer's encrypted static key. The
// plaintext carries the key's real parity byte.
func readStatic(ss *symmetricState, c []byte) (*secp256k1.PublicKey, error) {
	var buf [PubKeySize]byte
	p, err := ss.decryptAndHash(buf[:0], c)
	if err != nil {
		return nil, err
	}
	return parsePublicKey(p)
}

func readEpoch(ss *symmetricState, c []byte) (Epoch, error) {
	var e Epoch
	p, err := ss.decryptAndHash(e[:0], c)
	if err != nil {
		return Epoch{}, err
	}
	if len(p) != EpochSize {
		return Epoch{}, ErrDecrypt // unreachable: the length was checked
	}
	return e, nil
}

// RemoteStatic returns the peer's static public key: for an initiator the
// key it was configured with (possibly an even-parity lift of an x-only
// key), for a responder the key as the peer sent it (real parity), or nil
// before the responder has learned it (IK msg1, XK msg3).
func (h *handshake) RemoteStatic() *secp256k1.PublicKey { return h.rs }

// RemoteEpoch returns the peer's epoch and whether it has been received yet.
func (h *handshake) RemoteEpoch() (Epoch, bool) { return h.remoteEpoch, h.haveEpoch }

// LocalEpoch returns the epoch this side sends.
func (h *handshake) LocalEpoch() Epoch { return h.epoch }

// Role reports which side of the handshake this is.
func (h *handshake) Role() Role { return h.role }

// Complete reports whether the handshake has finished (and Session may be
// called, or already was).
func (h *handshake) Complete() bool { return h.step >= stepComplete }

// HandshakeHash returns the running transcript hash h. Upstream computes it
// but feeds it to nothing (handshake AEADs use empty AD), so it provides no
// transcript binding; it is exposed for diagnostics and tests only.
func (h *handshake) HandshakeHash() [32]byte { return h.ss.h }

// Session splits the completed handshake into transport cipher states
// (initiator sends with k1 and receives with k2; the responder the reverse)
// and clears the handshake's key material. It may be called once.
func (h *handshake) Session() (*Session, error) {
	if err := h.expect(stepComplete, "session"); err != nil {
		return nil, err
	}
	k1, k2 := h.ss.split()
	send, recv := k1, k2
	if h.role == Responder {
		send, recv = k2, k1
	}
	s := &Session{
		role:         h.role,
		send:         newCipherState(send),
		recv:         newCipherState(recv),
		remoteStatic: h.rs,
		remoteEpoch:  h.remoteEpoch,
		hash:         h.ss.h,
		exporter:     exporterOf(&h.ss.ck),
	}
	clear(k1[:])
	clear(k2[:])
	clear(send[:])
	clear(recv[:])
	h.ss.wipe()
	if h.e != nil {
		h.e.Zero()
	}
	h.step = stepSplit
	return s, nil
}

// String describes the handshake without any key material.
func (h *handshake) String() string {
	return fmt.Sprintf("noise.%s{%s, %s}", h.pattern, h.role, h.step)
}

// GoString is String, so %#v cannot print keys either.
func (h *handshake) GoString() string { return h.String() }

package noise

import (
	"encoding/hex"
)

// Protocol names hashed into the initial handshake state. All are longer
// than 32 bytes, so h = ck = SHA-256(name). XX is upstream's `next` link
// handshake.
const (
	ProtocolNameIK = "Noise_IK_secp256k1_ChaChaPoly_SHA256"
	ProtocolNameXK = "Noise_XK_secp256k1_ChaChaPoly_SHA256"
	ProtocolNameXX = "Noise_XX_secp256k1_ChaChaPoly_SHA256"
)

// Sizes on the wire.
const (
	PubKeySize   = 33 // compressed secp256k1 point, 02/03 ‖ x
	TagSize      = 16 // ChaCha20-Poly1305 tag
	EpochSize    = 8  // restart-detection epoch carried in handshakes
	KeySize      = 32 // transport key
	encEpochSize = EpochSize + TagSize
	encPubSize   = PubKeySize + TagSize

	// IKMsg1Size is e(33) ‖ enc(s)(49) ‖ enc(epoch)(24).
	IKMsg1Size = PubKeySize + encPubSize + encEpochSize
	// IKMsg2Size is e(33) ‖ enc(epoch)(24).
	IKMsg2Size = PubKeySize + encEpochSize
	// XKMsg1Size is e(33) alone: no payload and no tag.
	XKMsg1Size = PubKeySize
	// XKMsg2Size is e(33) ‖ enc(epoch)(24).
	XKMsg2Size = PubKeySize + encEpochSize
	// XKMsg3Size is enc(s)(49) ‖ enc(epoch)(24).
	XKMsg3Size = encPubSize + encEpochSize
	// XXMsg1Size is e(33) alone.
	XXMsg1Size = PubKeySize
	// XXMsg2Size is e(33) ‖ enc(s)(49) ‖ enc(epoch)(24), before the
	// optional encrypted payload.
	XXMsg2Size = PubKeySize + encPubSize + encEpochSize
	// XXMsg3Size is enc(s)(49) ‖ enc(epoch)(24), before the optional
	// encrypted payload.
	XXMsg3Size = encPubSize + encEpochSize
	// MaxXXPayload bounds the payload an XX msg2 or msg3 carries (the
	// negotiation payload: 10 bytes and its TLVs).
	MaxXXPayload = 1024

	// MaxMessageSize bounds a transport ciphertext (plaintext + tag).
	MaxMessageSize = 65535
	// MaxPlaintextSize bounds a transport plaintext.
	MaxPlaintextSize = MaxMessageSize - TagSize
)

// Epoch is the 8 random bytes a node draws once at start and sends,
// encrypted, in its handshake messages; a changed epoch from a known peer
// means the peer restarted. It is not secret.
type Epoch [EpochSize]byte

// String renders the epoch as hex.
func (e Epoch) String() string { return hex.EncodeToString(e[:]) }

// Role is which side of the handshake a session came from.
type Role uint8

// Handshake roles.
const (
	Initiator Role = iota + 1
	Responder
)

// String names the role.
func (r Role) String() string {
	switch r {
	case Initiator:
		return "initiator"
	case Responder:
		return "responder"
	default:
		return "unknown"
	}
}

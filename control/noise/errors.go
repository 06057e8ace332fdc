package noise

import "errors"

// Errors returned by this package, either bare or wrapped with detail via
// %w. Test with errors.Is. The packet-path methods (Session.Open,
// CipherState.Open) return the bare sentinels so that a flood of bad packets
// costs no allocation.
var (
	// ErrMessageLength: a handshake message is not exactly the size its
	// pattern step requires (upstream calls this MessageTooShort even when
	// the message is too long).
	ErrMessageLength = errors.New("noise: wrong handshake message length")
	// ErrDecrypt: an AEAD tag did not verify (handshake payload or
	// transport frame).
	ErrDecrypt = errors.New("noise: decryption failed")
	// ErrInvalidPublicKey: a public key is not a valid compressed
	// secp256k1 point (02/03 ‖ x with x on the curve), or a caller-supplied
	// key is nil or off the curve.
	ErrInvalidPublicKey = errors.New("noise: invalid public key")
	// ErrInvalidPrivateKey: a caller-supplied private key is nil or zero.
	ErrInvalidPrivateKey = errors.New("noise: invalid private key")
	// ErrWrongState: a handshake method was called out of order, or the
	// session was already taken.
	ErrWrongState = errors.New("noise: wrong handshake state")
	// ErrNonceExhausted: the send counter reached 2^64-1; the session must
	// be replaced (counters never wrap).
	ErrNonceExhausted = errors.New("noise: nonce counter exhausted")
	// ErrReplay: a received counter was already accepted or is older than
	// the replay window.
	ErrReplay = errors.New("noise: replayed or too old counter")
	// ErrMessageTooLarge: a transport plaintext exceeds MaxPlaintextSize.
	ErrMessageTooLarge = errors.New("noise: message too large")
	// ErrIdentityMismatch: an XX responder authenticated a static key
	// other than the one the initiator dialled.
	ErrIdentityMismatch = errors.New("noise: responder is not the peer dialled")
	// ErrMessageTooShort: a transport ciphertext is shorter than the tag.
	ErrMessageTooShort = errors.New("noise: message too short")
)

// Package noise owns FIPS's cryptographic handshakes and transport sealing,
// byte-compatible with upstream FIPS (jmcorgan/fips master, wire v0.2.x):
//
//   - Noise IK (Noise_IK_secp256k1_ChaChaPoly_SHA256) for FMP, the link
//     layer: IKInitiator / IKResponder, messages of 106 and 57 bytes;
//   - Noise XK (Noise_XK_secp256k1_ChaChaPoly_SHA256) for FSP, the session
//     layer: XKInitiator / XKResponder, messages of 33, 57 and 73 bytes;
//   - the transport phase both layers share: Session and CipherState
//     (ChaCha20-Poly1305, explicit counters, header as AAD) and the
//     2048-entry ReplayWindow.
//
// It does not frame packets (control/wire does), choose indices, detect
// restarts from epochs, compare NodeAddrs or rekey (the peer and session
// packages do), and it does no I/O and no logging.
//
// # How it differs from textbook Noise
//
// Upstream hand-rolls its Noise, and interoperating means reproducing its
// departures from the specification. Each is marked "Deviation" where it is
// computed:
//
//   - no prologue is mixed (textbook Noise always mixes one, even empty);
//   - handshake payloads are encrypted with EMPTY associated data, not h, so
//     the transcript hash h influences no ciphertext and no key;
//   - DH(sk, P) = SHA-256(x(sk·P)), the 32-byte x coordinate hashed alone,
//     so results are parity-independent; public keys are 33-byte compressed;
//   - the `<- s` pre-message hashes 0x02 ‖ x of the responder's static on
//     both sides, whatever its real parity (an initiator knowing an npub
//     cannot know it);
//   - XK msg1 carries no encrypted empty payload, hence no tag, and so the
//     initiator's static in XK msg3 is encrypted at nonce 1 under the ee key;
//   - handshake payloads are the 8-byte epoch;
//   - IK msg2's "se" token is computed as in the security note below.
//
// flynn/noise supplies the ChaChaPoly cipher and SHA-256 hash of the
// handshakes (CipherSuite, with DHSecp256k1 as its DH) and x/crypto/hkdf the
// HKDF; flynn/noise's HandshakeState cannot be used because of the
// deviations above.
//
// # Security notes
//
// IK msg2 "se" (key-compromise impersonation). Textbook IK's msg2 mixes
// DH(s_I, e_R). Upstream mixes DH(s_R, e_I) on the responder and
// DH(e_I, s_R) on the initiator: the same value msg1's es already mixed.
// The initiator's static key therefore never meets the responder's
// ephemeral; the only term binding the initiator's identity is ss =
// DH(s_I, s_R). Whoever holds a responder's static secret can compute ss
// for any claimed initiator and so complete a handshake to that responder
// posing as anyone (key-compromise impersonation); textbook IK resists
// this. This package reproduces the quirk because anything else fails to
// interoperate. It must be fixed only behind a negotiated protocol change
// (upstream's `next` branch moves to Noise XX), never silently.
//
// Unused transcript hash. Because h is never associated data, the
// handshakes provide no transcript binding beyond what the chaining key
// carries, and HandshakeHash must not be used for channel binding.
//
// Ephemeral parity malleability. DH uses only the x coordinate and h binds
// nothing, so flipping an ephemeral key's prefix byte between 0x02 and 0x03
// on the wire yields the same keys: the handshake still completes, with the
// same transport keys. An attacker learns and gains nothing, but a message
// is not byte-unique: never deduplicate or identify handshakes by raw
// message bytes.
//
// Variable-time scalar multiplication. DH uses decred secp256k1's
// ScalarMultNonConst, which is not constant-time, with the static key as
// well as ephemerals (upstream uses libsecp256k1's constant-time ECDH).
// Timing side channels on the static key are a residual risk.
//
// Key hygiene. No type here prints key material: Stringers and GoStringers
// are redacted. Handshakes clear their ephemeral key and chaining key when
// the Session is taken; the caller's static key is never modified. The AEAD
// keys inside x/crypto's ChaCha20-Poly1305 cannot be cleared from here.
package noise

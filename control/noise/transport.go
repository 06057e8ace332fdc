package noise

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"golang.org/x/crypto/chacha20poly1305"
)

// CipherState is one direction of a transport session: a ChaCha20-Poly1305
// key and the send counter n. Frames carry their counter in clear; the AEAD
// nonce is 0x00000000 ‖ u64le(counter).
//
// Seal and Open take the counter explicitly and are safe for concurrent
// use; Next reserves send counters atomically. Neither allocates.
//
// Not flynn/noise's CipherState: that one keeps n internal (a receiver here
// must decrypt with the counter from the header, out of order), and its
// ChaChaPoly Cipher builds each nonce in a fresh heap slice, one allocation
// per packet. This uses the same x/crypto AEAD directly.
type CipherState struct {
	aead cipher.AEAD
	n    atomic.Uint64
}

func newCipherState(k [32]byte) *CipherState {
	a, err := chacha20poly1305.New(k[:])
	if err != nil {
		panic("noise: " + err.Error()) // only on a wrong key size or FIPS-140-only mode
	}
	return &CipherState{aead: a}
}

// NewCipherState makes a transport CipherState from a raw 32-byte key with
// the counter at 0. Session is the normal way to get one; this exists for
// tests and tools.
func NewCipherState(key [KeySize]byte) *CipherState { return newCipherState(key) }

// Nonce returns the next counter Next would hand out.
func (c *CipherState) Nonce() uint64 { return c.n.Load() }

// Next reserves the next send counter (the current n, then n++). At
// n = 2^64-1 it returns ErrNonceExhausted: counters never wrap.
func (c *CipherState) Next() (uint64, error) {
	for {
		n := c.n.Load()
		if n == math.MaxUint64 {
			return 0, ErrNonceExhausted
		}
		if c.n.CompareAndSwap(n, n+1) {
			return n, nil
		}
	}
}

// noncePool holds nonce buffers: a nonce built on the stack escapes through
// the cipher.AEAD interface call, costing one allocation per packet, and a
// single buffer in the CipherState would not be safe for concurrent use.
var noncePool = sync.Pool{New: func() any { return new([chacha20poly1305.NonceSize]byte) }}

// Seal appends ciphertext ‖ tag for plaintext to dst and returns the
// extended slice. ad is the authenticated header (FMP: the 16 bytes of the
// frame header, which carry counter). dst and plaintext may overlap only
// exactly (in-place). With cap(dst)-len(dst) ≥ len(plaintext)+TagSize it
// does not allocate.
func (c *CipherState) Seal(dst []byte, counter uint64, ad, plaintext []byte) ([]byte, error) {
	if len(plaintext) > MaxPlaintextSize {
		return nil, ErrMessageTooLarge
	}
	nonce := noncePool.Get().(*[chacha20poly1305.NonceSize]byte)
	binary.LittleEndian.PutUint64(nonce[4:], counter) // nonce[:4] stay zero
	out := c.aead.Seal(dst, nonce[:], plaintext, ad)
	noncePool.Put(nonce)
	return out, nil
}

// Open authenticates ad and ciphertext ‖ tag under counter and appends the
// plaintext to dst. It does no replay checking; Session.Open does.
func (c *CipherState) Open(dst []byte, counter uint64, ad, ciphertext []byte) ([]byte, error) {
	if len(ciphertext) < TagSize {
		return nil, ErrMessageTooShort
	}
	// No upper bound, as upstream: only Seal enforces MaxPlaintextSize.
	nonce := noncePool.Get().(*[chacha20poly1305.NonceSize]byte)
	binary.LittleEndian.PutUint64(nonce[4:], counter)
	out, err := c.aead.Open(dst, nonce[:], ciphertext, ad)
	noncePool.Put(nonce)
	if err != nil {
		return nil, ErrDecrypt
	}
	return out, nil
}

// String never shows the key.
func (c *CipherState) String() string {
	return fmt.Sprintf("noise.CipherState{n: %d, key: [redacted]}", c.Nonce())
}

// GoString is String.
func (c *CipherState) GoString() string { return c.String() }

// Session is a completed handshake's transport state: a send and a receive
// CipherState, the receive replay window, and what was learned about the
// peer.
//
// Seal, NextSendCounter and Open may all run concurrently: a dataplane
// worker and the control loop can open frames of the same session. The
// replay window is guarded by a small lock held only to check and to
// accept a counter, never across the decryption, and Open accepts a
// counter only if no concurrent Open accepted it first. Replay hands out
// the window itself, for single-goroutine callers (tests, tools).
type Session struct {
	role         Role
	send, recv   *CipherState
	replayMu     sync.Mutex
	replay       ReplayWindow
	remoteStatic *secp256k1.PublicKey
	remoteEpoch  Epoch
	hash         [32]byte
	exporter     [32]byte
}

// Role is the side of the handshake this session came from.
func (s *Session) Role() Role { return s.role }

// RemoteStatic is the peer's static key (see the handshakes' RemoteStatic
// for which parity it has).
func (s *Session) RemoteStatic() *secp256k1.PublicKey { return s.remoteStatic }

// RemoteEpoch is the epoch the peer sent in the handshake.
func (s *Session) RemoteEpoch() Epoch { return s.remoteEpoch }

// HandshakeHash is the final handshake hash h (unused by upstream; see
// handshake.HandshakeHash).
func (s *Session) HandshakeHash() [32]byte { return s.hash }

// Exporter is 32 bytes of key material bound to this session's keys (not
// a transport key): for a handshake's session HKDF-Expand over the final
// chaining key with the label ExporterLabel, for a session made by
// NewDerivedSession the exporter it was given. Layers above derive further
// keys from it (the post-quantum upgrade of control/session).
func (s *Session) Exporter() [32]byte { return s.exporter }

// ExporterLabel is the HKDF-Expand info of a handshake session's exporter.
const ExporterLabel = "fips-go/noise/exporter/v1"

func exporterOf(ck *[32]byte) [32]byte {
	b, err := hkdf.Expand(sha256.New, ck[:], ExporterLabel, 32)
	if err != nil {
		panic("noise: hkdf: " + err.Error()) // 32 bytes never exceeds 255*32
	}
	var out [32]byte
	copy(out[:], b)
	clear(b)
	return out
}

// NewDerivedSession makes a transport session from keys derived outside a
// handshake (a post-quantum upgrade of parent): send and receive keys as
// given, counters at 0, a fresh replay window, the parent's role, peer key
// and epoch, and exporter as its Exporter.
func NewDerivedSession(parent *Session, send, recv, exporter [KeySize]byte) *Session {
	return &Session{
		role:         parent.role,
		send:         newCipherState(send),
		recv:         newCipherState(recv),
		remoteStatic: parent.remoteStatic,
		remoteEpoch:  parent.remoteEpoch,
		hash:         parent.hash,
		exporter:     exporter,
	}
}

// Send is the sending CipherState (initiator: k1, responder: k2).
func (s *Session) Send() *CipherState { return s.send }

// Recv is the receiving CipherState (initiator: k2, responder: k1).
func (s *Session) Recv() *CipherState { return s.recv }

// Replay is the receive replay window, for callers that run Recv().Open
// themselves (check before, accept after a successful open).
func (s *Session) Replay() *ReplayWindow { return &s.replay }

// NextSendCounter reserves the counter for the next outgoing frame; the
// caller writes it into the header it then passes to Seal as ad.
func (s *Session) NextSendCounter() (uint64, error) { return s.send.Next() }

// Seal encrypts one frame with the send key; see CipherState.Seal.
func (s *Session) Seal(dst []byte, counter uint64, ad, plaintext []byte) ([]byte, error) {
	return s.send.Seal(dst, counter, ad, plaintext)
}

// Open checks counter against the replay window (ErrReplay), decrypts with
// the receive key (ErrDecrypt), and only then accepts counter into the
// window, so forged frames cannot advance it.
//
// Two Opens of the same frame racing each other both decrypt, and only
// the first to accept its counter succeeds: the other gets ErrReplay.
func (s *Session) Open(dst []byte, counter uint64, ad, ciphertext []byte) ([]byte, error) {
	s.replayMu.Lock()
	ok := s.replay.Check(counter)
	s.replayMu.Unlock()
	if !ok {
		return nil, ErrReplay
	}
	out, err := s.recv.Open(dst, counter, ad, ciphertext)
	if err != nil {
		return nil, err
	}
	s.replayMu.Lock()
	ok = s.replay.Check(counter)
	if ok {
		s.replay.Accept(counter)
	}
	s.replayMu.Unlock()
	if !ok {
		return nil, ErrReplay
	}
	return out, nil
}

// HighestRecv is the highest counter accepted so far.
func (s *Session) HighestRecv() uint64 {
	s.replayMu.Lock()
	defer s.replayMu.Unlock()
	return s.replay.Highest()
}

// String never shows key material.
func (s *Session) String() string {
	return fmt.Sprintf("noise.Session{%s, send n: %d, recv highest: %d}", s.role, s.send.Nonce(), s.HighestRecv())
}

// GoString is String.
func (s *Session) GoString() string { return s.String() }

package noise

import (
	"fmt"
	"io"

	"golang.org/x/crypto/hkdf"
)

// symmetricState is Noise's SymmetricState as upstream FIPS computes it. It
// is a plain value: a handshake step works on a copy and stores it back only
// when the whole step succeeded, so a bad message leaves the handshake as it
// was.
type symmetricState struct {
	ck     [32]byte
	h      [32]byte
	k      [32]byte
	n      uint64
	hasKey bool
}

// init sets h = ck = HASH(name) (names longer than 32 bytes are hashed; the
// two FIPS names are 36 bytes, so the padding branch is only for
// completeness).
//
// Deviation: upstream never calls MixHash(prologue). Textbook Noise always
// does, even for an empty prologue.
func (s *symmetricState) init(name string) {
	*s = symmetricState{}
	if len(name) <= len(s.h) {
		copy(s.h[:], name)
	} else {
		hh := CipherSuite.Hash()
		hh.Write([]byte(name))
		hh.Sum(s.h[:0])
	}
	s.ck = s.h
}

func (s *symmetricState) mixHash(data []byte) {
	hh := CipherSuite.Hash()
	hh.Write(s.h[:])
	hh.Write(data)
	hh.Sum(s.h[:0])
}

// hkdf2 is Noise's HKDF with two outputs: RFC 5869 extract with salt = ck,
// expand with empty info to 64 bytes.
func hkdf2(ck *[32]byte, ikm []byte) (out1, out2 [32]byte) {
	r := hkdf.New(CipherSuite.Hash, ikm, ck[:], nil)
	var buf [64]byte
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		panic("noise: hkdf: " + err.Error()) // 64 bytes never exceeds 255*32
	}
	copy(out1[:], buf[:32])
	copy(out2[:], buf[32:])
	clear(buf[:])
	return out1, out2
}

func (s *symmetricState) mixKey(ikm []byte) {
	s.ck, s.k = hkdf2(&s.ck, ikm)
	s.n = 0
	s.hasKey = true
}

// encryptAndHash appends ENC(k, n, ad, plaintext) to dst and mixes the
// ciphertext into h.
//
// Deviation: the associated data is EMPTY, not h. Upstream's handshake
// CipherState encrypts with no AD, so h never reaches a ciphertext or a key.
func (s *symmetricState) encryptAndHash(dst, plaintext []byte) ([]byte, error) {
	if !s.hasKey {
		// Unreachable with the IK and XK patterns: every encrypted
		// payload follows a MixKey.
		return nil, fmt.Errorf("%w: encrypt before any key", ErrWrongState)
	}
	start := len(dst)
	out := CipherSuite.Cipher(s.k).Encrypt(dst, s.n, nil, plaintext)
	s.n++
	s.mixHash(out[start:])
	return out, nil
}

// decryptAndHash is the inverse of encryptAndHash (empty AD likewise).
func (s *symmetricState) decryptAndHash(dst, ciphertext []byte) ([]byte, error) {
	if !s.hasKey {
		return nil, fmt.Errorf("%w: decrypt before any key", ErrWrongState)
	}
	out, err := CipherSuite.Cipher(s.k).Decrypt(dst, s.n, nil, ciphertext)
	if err != nil {
		return nil, ErrDecrypt
	}
	s.n++
	s.mixHash(ciphertext)
	return out, nil
}

// split derives the two transport keys: k1 for initiator→responder, k2 for
// responder→initiator.
func (s *symmetricState) split() (k1, k2 [32]byte) {
	return hkdf2(&s.ck, nil)
}

// wipe clears the key material. h is kept: it is the (unused) handshake
// hash a session reports.
func (s *symmetricState) wipe() {
	clear(s.ck[:])
	clear(s.k[:])
	s.hasKey = false
}

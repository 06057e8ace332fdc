package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/noise"
	"github.com/fips-go/fips/control/wire"
)

// Pattern is the Noise pattern of a session's handshakes. Upstream's
// master line runs XK; its `next` line runs XX in the same three FSP
// messages (docs/next.md §11): SessionSetup carries the same 33-byte
// msg1 in both, so the pattern cannot be read off the wire and is chosen
// per remote (Config.PatternFor). A session keeps its pattern for its
// rekeys.
type Pattern uint8

// Patterns.
const (
	PatternXK Pattern = iota // upstream master (v0.2): the responder's key is known
	PatternXX                // upstream next: the responder's key is learned from the SessionAck
	// PatternAuto runs both for a remote of unknown line (docs/next.md
	// §15.4): as initiator one SessionSetup whose msg1 serves an XK and
	// an XX handshake sharing the ephemeral, decided by the SessionAck's
	// length (57: XK, 106 or more: XX); as responder both SessionAcks,
	// XK's first (each upstream line drops the other's by its size before
	// touching the session), decided by the msg3 that completes.
	PatternAuto
)

// String is the show_sessions spelling.
func (p Pattern) String() string {
	switch p {
	case PatternXK:
		return "XK"
	case PatternXX:
		return "XX"
	case PatternAuto:
		return "auto"
	}
	return fmt.Sprintf("pattern(%d)", uint8(p))
}

// sessionNegotiation is the payload upstream's `next` encrypts after a
// fresh session's msg2 and msg3: a negotiation payload of version range
// [0, 0] and no features (FSP negotiates nothing yet). Receivers decrypt
// and ignore it; rekeys carry none.
var sessionNegotiation = [wire.NegotiationHeaderSize]byte{}

// initiatorHS is the initiator's side of a session handshake, XK or XX.
type initiatorHS struct {
	xk *noise.XKInitiator
	xx *noise.XXInitiator
	// want is the key dialled: XK encrypts to it, XX checks msg2 against it.
	want *secp256k1.PublicKey
	// rekey: XX without payloads (upstream's rekey reads exactly 106 and
	// 73 bytes).
	rekey bool
}

// sharedEphemeralSeed is how many random bytes a dual initiator draws for
// its one ephemeral: secp256k1 key generation reads 32 per attempt and
// retries only on a scalar out of range (about 2^-128), so both
// handshakes draw the same key from copies of the same bytes.
const sharedEphemeralSeed = 128

func (t *Table) newInitiator(p Pattern, rs *secp256k1.PublicKey, rekey bool) (*initiatorHS, error) {
	h := &initiatorHS{want: rs, rekey: rekey}
	priv := t.id.Secret().Private()
	var err error
	switch p {
	case PatternXX:
		h.xx, err = noise.NewXXInitiator(priv, t.epoch, noise.WithRand(t.rnd))
	case PatternAuto:
		var seed [sharedEphemeralSeed]byte
		if _, err = io.ReadFull(t.rnd, seed[:]); err != nil {
			return nil, fmt.Errorf("session: ephemeral: %w", err)
		}
		if h.xk, err = noise.NewXKInitiator(priv, rs, t.epoch, noise.WithRand(bytes.NewReader(seed[:]))); err != nil {
			return nil, err
		}
		h.xx, err = noise.NewXXInitiator(priv, t.epoch, noise.WithRand(bytes.NewReader(seed[:])))
	default:
		h.xk, err = noise.NewXKInitiator(priv, rs, t.epoch, noise.WithRand(t.rnd))
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (h *initiatorHS) pattern() Pattern {
	switch {
	case h.xk != nil && h.xx != nil:
		return PatternAuto
	case h.xx != nil:
		return PatternXX
	}
	return PatternXK
}

// errDualMsg1 is a dual initiator whose two handshakes drew different
// ephemerals (which the shared seed rules out).
var errDualMsg1 = errors.New("session: the XK and XX msg1 of a dual initiator differ")

func (h *initiatorHS) msg1() ([]byte, error) {
	if h.xk == nil {
		return h.xx.WriteMessage1(nil)
	}
	m, err := h.xk.WriteMessage1(nil)
	if err != nil || h.xx == nil {
		return m, err
	}
	m2, err := h.xx.WriteMessage1(nil)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(m, m2) {
		return nil, errDualMsg1
	}
	return m, nil
}

// parseAck decodes a SessionAck of this handshake's pattern (dual: XK's
// exact size, else XX's).
func (h *initiatorHS) parseAck(fsp []byte) (wire.SessionAck, error) {
	if h.xk != nil {
		a, err := wire.ParseSessionAck(fsp)
		if err == nil || h.xx == nil {
			return a, err
		}
	}
	return wire.ParseSessionAckXX(fsp)
}

// readAck processes the SessionAck's Noise message. XX: the responder must
// be the key dialled (noise.ErrIdentityMismatch otherwise); a rekey's
// msg2 carries no payload. A dual initiator reads XK's 57 bytes as XK and
// anything longer as XX, and keeps only that handshake once it reads.
// Every failure leaves the handshake as it was.
func (h *initiatorHS) readAck(msg []byte) error {
	if h.xk != nil && (h.xx == nil || len(msg) == noise.XKMsg2Size) {
		if _, err := h.xk.ReadMessage2(msg); err != nil {
			return err
		}
		h.xx = nil
		return nil
	}
	if h.rekey && len(msg) != noise.XXMsg2Size {
		return fmt.Errorf("%w: rekey msg2 of %d bytes, want %d", noise.ErrMessageLength, len(msg), noise.XXMsg2Size)
	}
	if _, _, err := h.xx.ReadMessage2Expecting(msg, h.want); err != nil {
		return err
	}
	h.xk = nil
	return nil
}

// msg3 encodes the SessionMsg3.
func (h *initiatorHS) msg3() ([]byte, error) {
	var m []byte
	var err error
	switch {
	case h.xk != nil:
		m, err = h.xk.WriteMessage3(nil)
	case h.rekey:
		m, err = h.xx.WriteMessage3(nil, nil)
	default:
		m, err = h.xx.WriteMessage3(nil, sessionNegotiation[:])
	}
	if err != nil {
		return nil, err
	}
	w := wire.SessionMsg3{Handshake: m}
	b := make([]byte, w.Len())
	_, err = w.MarshalTo(b)
	return b, err
}

func (h *initiatorHS) session() (*noise.Session, error) {
	if h.xx != nil {
		return h.xx.Session()
	}
	return h.xk.Session()
}

// responderHS is the responder's side of a session handshake, XK, XX or
// both (PatternAuto, until a msg3 decides).
type responderHS struct {
	xk    *noise.XKResponder
	xx    *noise.XXResponder
	rekey bool
}

func (t *Table) newResponder(p Pattern, rekey bool) (*responderHS, error) {
	h := &responderHS{rekey: rekey}
	priv := t.id.Secret().Private()
	var err error
	if p == PatternXX || p == PatternAuto {
		if h.xx, err = noise.NewXXResponder(priv, t.epoch, noise.WithRand(t.rnd)); err != nil {
			return nil, err
		}
	}
	if p != PatternXX {
		h.xk, err = noise.NewXKResponder(priv, t.epoch, noise.WithRand(t.rnd))
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (h *responderHS) pattern() Pattern {
	switch {
	case h.xk != nil && h.xx != nil:
		return PatternAuto
	case h.xx != nil:
		return PatternXX
	}
	return PatternXK
}

// answer reads msg1 and writes msg2 (XX: with the negotiation payload on
// a fresh session); a dual responder writes XK's msg2, then XX's as alt.
func (h *responderHS) answer(msg1 []byte) (msg2, alt []byte, err error) {
	if h.xk != nil {
		if err := h.xk.ReadMessage1(msg1); err != nil {
			return nil, nil, err
		}
		if msg2, err = h.xk.WriteMessage2(nil); err != nil || h.xx == nil {
			return msg2, nil, err
		}
	}
	if err := h.xx.ReadMessage1(msg1); err != nil {
		return nil, nil, err
	}
	var payload []byte
	if !h.rekey {
		payload = sessionNegotiation[:]
	}
	m, err := h.xx.WriteMessage2(nil, payload)
	if err != nil {
		return nil, nil, err
	}
	if msg2 == nil {
		return m, nil, nil
	}
	return msg2, m, nil
}

// parseMsg3 decodes a SessionMsg3 of this handshake's pattern (dual: XX's
// range, which holds XK's 73 bytes).
func (h *responderHS) parseMsg3(fsp []byte) (wire.SessionMsg3, error) {
	if h.xx != nil {
		return wire.ParseSessionMsg3XX(fsp)
	}
	return wire.ParseSessionMsg3(fsp)
}

// readMsg3 processes msg3 and returns the initiator's static key. A dual
// responder reads a 73-byte msg3 as XK, then as XX (the same size
// without a payload), and anything longer as XX; it keeps the handshake
// that read it. A failure leaves the handshake as it was.
func (h *responderHS) readMsg3(msg []byte) (*secp256k1.PublicKey, error) {
	if h.xk != nil && len(msg) == noise.XKMsg3Size {
		static, _, err := h.xk.ReadMessage3(msg)
		if err == nil {
			h.xx = nil
			return static, nil
		}
		if h.xx == nil {
			return nil, err
		}
	}
	if h.xx == nil {
		static, _, err := h.xk.ReadMessage3(msg)
		return static, err
	}
	if h.rekey && len(msg) != noise.XXMsg3Size {
		return nil, fmt.Errorf("%w: rekey msg3 of %d bytes, want %d", noise.ErrMessageLength, len(msg), noise.XXMsg3Size)
	}
	static, _, _, err := h.xx.ReadMessage3(msg)
	if err == nil {
		h.xk = nil
	}
	return static, err
}

func (h *responderHS) session() (*noise.Session, error) {
	if h.xx != nil {
		return h.xx.Session()
	}
	return h.xk.Session()
}

// Patterns are the session patterns of a node: Default for every remote
// not in Peers (Config holds a pointer so that it stays comparable).
type Patterns struct {
	Default Pattern
	Peers   map[identity.NodeAddr]Pattern
}

// For is the pattern of a new session with remote.
func (p *Patterns) For(remote identity.NodeAddr) Pattern {
	if p == nil {
		return PatternXK
	}
	if v, ok := p.Peers[remote]; ok {
		return v
	}
	return p.Default
}

// patternFor is the pattern of a new session with remote.
func (t *Table) patternFor(remote identity.NodeAddr) Pattern { return t.cfg.Patterns.For(remote) }

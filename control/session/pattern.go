package session

import (
	"fmt"

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
)

// String is the show_sessions spelling.
func (p Pattern) String() string {
	switch p {
	case PatternXK:
		return "XK"
	case PatternXX:
		return "XX"
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

func (t *Table) newInitiator(p Pattern, rs *secp256k1.PublicKey, rekey bool) (*initiatorHS, error) {
	h := &initiatorHS{want: rs, rekey: rekey}
	var err error
	if p == PatternXX {
		h.xx, err = noise.NewXXInitiator(t.id.Secret().Private(), t.epoch, noise.WithRand(t.rnd))
	} else {
		h.xk, err = noise.NewXKInitiator(t.id.Secret().Private(), rs, t.epoch, noise.WithRand(t.rnd))
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (h *initiatorHS) pattern() Pattern {
	if h.xx != nil {
		return PatternXX
	}
	return PatternXK
}

func (h *initiatorHS) msg1() ([]byte, error) {
	if h.xx != nil {
		return h.xx.WriteMessage1(nil)
	}
	return h.xk.WriteMessage1(nil)
}

// parseAck decodes a SessionAck of this handshake's pattern.
func (h *initiatorHS) parseAck(fsp []byte) (wire.SessionAck, error) {
	if h.xx != nil {
		return wire.ParseSessionAckXX(fsp)
	}
	return wire.ParseSessionAck(fsp)
}

// readAck processes the SessionAck's Noise message. XX: the responder must
// be the key dialled (noise.ErrIdentityMismatch otherwise); a rekey's
// msg2 carries no payload. Every failure leaves the handshake as it was.
func (h *initiatorHS) readAck(msg []byte) error {
	if h.xx == nil {
		_, err := h.xk.ReadMessage2(msg)
		return err
	}
	if h.rekey && len(msg) != noise.XXMsg2Size {
		return fmt.Errorf("%w: rekey msg2 of %d bytes, want %d", noise.ErrMessageLength, len(msg), noise.XXMsg2Size)
	}
	_, _, err := h.xx.ReadMessage2Expecting(msg, h.want)
	return err
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

// responderHS is the responder's side of a session handshake, XK or XX.
type responderHS struct {
	xk    *noise.XKResponder
	xx    *noise.XXResponder
	rekey bool
}

func (t *Table) newResponder(p Pattern, rekey bool) (*responderHS, error) {
	h := &responderHS{rekey: rekey}
	var err error
	if p == PatternXX {
		h.xx, err = noise.NewXXResponder(t.id.Secret().Private(), t.epoch, noise.WithRand(t.rnd))
	} else {
		h.xk, err = noise.NewXKResponder(t.id.Secret().Private(), t.epoch, noise.WithRand(t.rnd))
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (h *responderHS) pattern() Pattern {
	if h.xx != nil {
		return PatternXX
	}
	return PatternXK
}

// answer reads msg1 and writes msg2 (XX: with the negotiation payload on
// a fresh session).
func (h *responderHS) answer(msg1 []byte) ([]byte, error) {
	if h.xx == nil {
		if err := h.xk.ReadMessage1(msg1); err != nil {
			return nil, err
		}
		return h.xk.WriteMessage2(nil)
	}
	if err := h.xx.ReadMessage1(msg1); err != nil {
		return nil, err
	}
	if h.rekey {
		return h.xx.WriteMessage2(nil, nil)
	}
	return h.xx.WriteMessage2(nil, sessionNegotiation[:])
}

// parseMsg3 decodes a SessionMsg3 of this handshake's pattern.
func (h *responderHS) parseMsg3(fsp []byte) (wire.SessionMsg3, error) {
	if h.xx != nil {
		return wire.ParseSessionMsg3XX(fsp)
	}
	return wire.ParseSessionMsg3(fsp)
}

// readMsg3 processes msg3 and returns the initiator's static key. A
// failure leaves the handshake as it was.
func (h *responderHS) readMsg3(msg []byte) (*secp256k1.PublicKey, error) {
	if h.xx == nil {
		static, _, err := h.xk.ReadMessage3(msg)
		return static, err
	}
	if h.rekey && len(msg) != noise.XXMsg3Size {
		return nil, fmt.Errorf("%w: rekey msg3 of %d bytes, want %d", noise.ErrMessageLength, len(msg), noise.XXMsg3Size)
	}
	static, _, _, err := h.xx.ReadMessage3(msg)
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

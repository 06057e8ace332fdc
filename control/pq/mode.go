package pq

import (
	"errors"
	"fmt"
)

// Mode is a node's or a peer's post-quantum policy.
type Mode uint8

// Post-quantum policies.
const (
	// Off: never offer, and answer no offer (as a classic peer).
	Off Mode = iota
	// Preferred: upgrade when the peer can, else stay classical (counted).
	Preferred
	// Required: upgrade or tear down.
	Required
)

// ErrMode is returned by ParseMode for an unknown spelling.
var ErrMode = errors.New("pq must be off, preferred or required")

// ParseMode parses the configuration spelling ("" is off).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "off":
		return Off, nil
	case "preferred":
		return Preferred, nil
	case "required":
		return Required, nil
	}
	return Off, fmt.Errorf("%w: %q", ErrMode, s)
}

func (m Mode) String() string {
	switch m {
	case Off:
		return "off"
	case Preferred:
		return "preferred"
	case Required:
		return "required"
	}
	return fmt.Sprintf("PQMode(%d)", uint8(m))
}

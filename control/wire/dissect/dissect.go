// Package dissect turns FIPS packets into JSON-friendly structures for
// operators (`fipsctl wire decode`) and tests. It reads only what is in
// cleartext: the outer FMP/FSP headers, the handshake framing, and
// plaintexts that the caller has already decrypted.
package dissect

import (
	"errors"
	"fmt"
)

// Layer selects how Decode interprets its input.
type Layer string

const (
	// Auto: an outer FMP packet if it parses as one, else an outer FSP packet.
	Auto Layer = ""
	// FMP: an outer FMP packet (handshake or established frame header).
	FMP Layer = "fmp"
	// FSP: an outer FSP packet (the payload of a SessionDatagram).
	FSP Layer = "fsp"
	// FMPInner: a decrypted FMP frame plaintext (timestamp, msg_type, body).
	FMPInner Layer = "fmp-inner"
	// FSPInner: a decrypted FSP plaintext (timestamp, msg_type, inner_flags, body).
	FSPInner Layer = "fsp-inner"
	// FMPInnerNext and FSPInnerNext: the same plaintexts from upstream's
	// `next` line (an FMP version-1 link, an XX session), whose MMP
	// reports and lookups have next's layouts (docs/next.md §6, §9). The
	// plaintext itself does not say which line it came from.
	FMPInnerNext Layer = "fmp-inner-next"
	FSPInnerNext Layer = "fsp-inner-next"
)

// ErrUnknownLayer is returned for a Layer value Decode does not know.
var ErrUnknownLayer = errors.New("unknown layer")

// Decode dissects b as the given layer. The result marshals to JSON.
func Decode(b []byte, layer Layer) (any, error) {
	switch layer {
	case FMP:
		return fmpPacket(b)
	case FSP:
		return fspPacket(b)
	case FMPInner:
		return fmpInner(b, false)
	case FSPInner:
		return fspInner(b, false)
	case FMPInnerNext:
		return fmpInner(b, true)
	case FSPInnerNext:
		return fspInner(b, true)
	case Auto:
		v, ferr := fmpPacket(b)
		if ferr == nil {
			return v, nil
		}
		v, serr := fspPacket(b)
		if serr == nil {
			return v, nil
		}
		return nil, fmt.Errorf("neither an FMP packet (%w) nor an FSP packet (%v)", ferr, serr)
	default:
		return nil, fmt.Errorf("%w %q (want fmp, fsp, fmp-inner, fsp-inner, fmp-inner-next or fsp-inner-next)", ErrUnknownLayer, string(layer))
	}
}

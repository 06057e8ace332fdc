package rendezvous

import (
	"errors"
	"fmt"
)

// Event kinds and fixed identifiers (upstream's types.rs).
const (
	AdvertKind       = 37195 // parameterized replaceable; digits spell F-I-P-S
	AdvertIdentifier = "fips-overlay-v1"
	// AdvertIdentifierNext is upstream next's namespace (its types.rs):
	// next nodes publish and read adverts only under it, and it is also
	// their default app.
	AdvertIdentifierNext = "fips-overlay-v1-next"
	AdvertVersion        = 1
	ProtocolVersion      = "1"
	SignalKind           = 21059 // NIP-59 gift wrap in the ephemeral range
	InboxRelaysKind      = 10050 // NIP-17 DM relay list
	DeletionKind         = 5
	RumorKind            = 14
	SealKind             = 13
	TransportNameNAT     = "nostr-nat"
	msgTypeOffer         = "offer"
	msgTypeAnswer        = "answer"
	reasonNoAddresses    = "no-usable-addresses"
)

// Namespace is one discovery overlay: the advert's identifier (its d tag
// and the identifier in its body) and the app in its protocol tag. Master
// and next publish under different identifiers, so neither finds the
// other's adverts; a node speaking both formats reads and publishes both.
type Namespace struct {
	Identifier string
	App        string
}

// Endpoint transports an advert may carry. Anything else makes upstream
// reject the whole advert, so none other is ever published or accepted.
const (
	EndpointUDP = "udp"
	EndpointTCP = "tcp"
	EndpointTor = "tor"
)

// Endpoint is one advertised way to reach a node.
type Endpoint struct {
	Transport string `json:"transport"`
	Addr      string `json:"addr"`
}

// IsNAT reports a udp endpoint whose address is the literal "nat".
func (e Endpoint) IsNAT() bool { return e.Transport == EndpointUDP && equalFoldASCII(e.Addr, "nat") }

// OverlayAdvert is the content of a kind-37195 event.
type OverlayAdvert struct {
	Identifier   string     `json:"identifier"`
	Version      uint32     `json:"version"`
	Endpoints    []Endpoint `json:"endpoints"`
	SignalRelays []string   `json:"signalRelays,omitempty"`
	StunServers  []string   `json:"stunServers,omitempty"`
}

// HasNAT reports whether the advert offers NAT traversal.
func (a *OverlayAdvert) HasNAT() bool {
	for _, e := range a.Endpoints {
		if e.IsNAT() {
			return true
		}
	}
	return false
}

// TraversalAddress is one candidate address in an offer or answer.
type TraversalAddress struct {
	Protocol string `json:"protocol"`
	IP       string `json:"ip"`
	Port     uint16 `json:"port"`
}

// PunchHint is the responder's proposed punch schedule (Unix ms).
type PunchHint struct {
	StartAtMs  uint64 `json:"startAtMs"`
	IntervalMs uint64 `json:"intervalMs"`
	DurationMs uint64 `json:"durationMs"`
}

// Offer is a traversal offer. Pointer fields serialize as null when
// absent, and LocalAddresses is always an array: Rust peers require both.
type Offer struct {
	Type             string             `json:"type"`
	SessionID        string             `json:"sessionId"`
	IssuedAt         uint64             `json:"issuedAt"`
	ExpiresAt        uint64             `json:"expiresAt"`
	Nonce            string             `json:"nonce"`
	SenderNpub       string             `json:"senderNpub"`
	RecipientNpub    string             `json:"recipientNpub"`
	ReflexiveAddress *TraversalAddress  `json:"reflexiveAddress"`
	LocalAddresses   []TraversalAddress `json:"localAddresses"`
	StunServer       *string            `json:"stunServer"`
}

// Answer is a traversal answer; InReplyTo is the offer's nonce.
type Answer struct {
	Type             string             `json:"type"`
	SessionID        string             `json:"sessionId"`
	IssuedAt         uint64             `json:"issuedAt"`
	ExpiresAt        uint64             `json:"expiresAt"`
	Nonce            string             `json:"nonce"`
	SenderNpub       string             `json:"senderNpub"`
	RecipientNpub    string             `json:"recipientNpub"`
	InReplyTo        string             `json:"inReplyTo"`
	Accepted         bool               `json:"accepted"`
	ReflexiveAddress *TraversalAddress  `json:"reflexiveAddress"`
	LocalAddresses   []TraversalAddress `json:"localAddresses"`
	StunServer       *string            `json:"stunServer"`
	Punch            *PunchHint         `json:"punch"`
	Reason           *string            `json:"reason"`
	OfferReceivedAt  *uint64            `json:"offerReceivedAt,omitempty"`
}

// Errors. Each failure of a traversal wraps one of these, so a caller can
// tell its class with errors.Is; the message carries the detail.
var (
	ErrDisabled          = errors.New("bootstrap disabled")
	ErrMissingAdvert     = errors.New("peer has no overlay advert")
	ErrMissingNAT        = errors.New("peer advert does not contain udp:nat endpoint")
	ErrMissingRelays     = errors.New("peer has no usable traversal relays")
	ErrInvalidAdvert     = errors.New("invalid overlay advert")
	ErrInvalidNpub       = errors.New("invalid npub")
	ErrSignalTimeout     = errors.New("signal timeout waiting for answer")
	ErrPunchTimeout      = errors.New("traversal attempt timed out")
	ErrReplay            = errors.New("replayed or duplicate session id")
	ErrProtocol          = errors.New("protocol error")
	ErrRejected          = errors.New("offer rejected by peer")
	ErrInvalidEvent      = errors.New("invalid event")
	ErrBusy              = errors.New("traversal already in flight")
	ErrCooldown          = errors.New("peer in traversal cooldown")
	ErrNoPunchTargets    = errors.New("no-punch-targets")
	ErrRelay             = errors.New("relay error")
	ErrAdmissionRefused  = errors.New("offer admission refused")
	ErrElectionYield     = errors.New("dual initiator: yielding to the peer's offer")
	ErrCapacity          = errors.New("node at max_peers")
	ErrMissingAddresses  = errors.New("missing-addresses")
	ErrNoReflexive       = errors.New("no reflexive address")
	ErrSessionMismatch   = errors.New("session-mismatch")
	ErrIdentityMismatch  = errors.New("identity-mismatch")
	ErrStale             = errors.New("stale signal")
	ErrFutureDated       = errors.New("future-dated signal")
	ErrMissingRejectText = errors.New("missing-rejection-reason")
)

// protoErr is a Protocol error with upstream's reason string.
func protoErr(reason string, base error) error {
	if base == nil {
		return fmt.Errorf("%w: %s", ErrProtocol, reason)
	}
	return fmt.Errorf("%w: %s: %w", ErrProtocol, reason, base)
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

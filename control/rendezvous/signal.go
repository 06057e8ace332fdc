package rendezvous

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"
	"github.com/nbd-wtf/go-nostr/nip59"
)

// SkewToleranceMs is the clock-skew grace on either side of a signal's
// lifetime (upstream's FRESHNESS_SKEW_TOLERANCE_MS).
const SkewToleranceMs = 60_000

// maxSignalContent bounds a wrap's content before any decryption: an
// offer or answer is well under 4 KiB even after two NIP-44 layers.
const maxSignalContent = 64 << 10

// Nonce is upstream's nonce(): "<now_ms>-<16 hex digits>".
func Nonce(nowMs uint64) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return fmt.Sprintf("%d-%016x", nowMs, binary.BigEndian.Uint64(b[:]))
}

// Keys is the node's identity as hex, the form go-nostr signs with.
type Keys struct {
	SecretHex, PublicHex string
}

// WrapSignal builds the kind-21059 gift wrap carrying payload to
// recipient: a kind-14 rumor (p-tagged, unsigned) sealed (kind 13) with
// NIP-44 v2 and signed by the sender, wrapped with a fresh key, created
// now with a NIP-40 expiration ttlSecs ahead, as upstream's
// build_signal_event. go-nostr backdates the wrap; upstream requires now.
func WrapSignal(k Keys, recipientHex string, payload []byte, ttlSecs, nowMs uint64) (nostr.Event, error) {
	now := nostr.Timestamp(nowMs / 1000)
	rumor := nostr.Event{PubKey: k.PublicHex, CreatedAt: now, Kind: RumorKind,
		Tags: nostr.Tags{{"p", recipientHex}}, Content: string(payload)}
	rumor.ID = rumor.GetID()
	ck, err := nip44.GenerateConversationKey(recipientHex, k.SecretHex)
	if err != nil {
		return nostr.Event{}, fmt.Errorf("%w: recipient key: %w", ErrInvalidEvent, err)
	}
	exp := strconv.FormatUint(satAdd(nowMs, satMul(ttlSecs, 1000))/1000, 10)
	return nip59.GiftWrap(rumor, recipientHex,
		func(pt string) (string, error) { return nip44.Encrypt(pt, ck) },
		func(e *nostr.Event) error { return e.Sign(k.SecretHex) },
		func(gw *nostr.Event) {
			gw.Kind = SignalKind
			gw.CreatedAt = now
			gw.Tags = append(gw.Tags, nostr.Tag{"expiration", exp})
		})
}

// Unwrapped is a verified signal: who sealed it and what it says.
type Unwrapped struct {
	SenderHex string
	Content   []byte
	WrapID    string
}

// UnwrapSignal opens a gift wrap addressed to k: the wrap's id and
// signature, its kind and p tag, then the seal (kind 13, id, signature),
// then the rumor (kind 14, the seal's author). The sender is the seal's
// author.
func UnwrapSignal(k Keys, gw *nostr.Event) (Unwrapped, error) {
	if gw.Kind != SignalKind {
		return Unwrapped{}, fmt.Errorf("%w: kind %d is not a traversal signal", ErrInvalidEvent, gw.Kind)
	}
	if len(gw.Content) > maxSignalContent {
		return Unwrapped{}, fmt.Errorf("%w: content of %d bytes", ErrInvalidEvent, len(gw.Content))
	}
	if err := CheckEvent(gw); err != nil {
		return Unwrapped{}, err
	}
	if !gw.Tags.ContainsAny("p", []string{k.PublicHex}) {
		return Unwrapped{}, fmt.Errorf("%w: not addressed to us", ErrInvalidEvent)
	}
	open := func(peerHex, ct string) ([]byte, error) {
		ck, err := nip44.GenerateConversationKey(peerHex, k.SecretHex)
		if err != nil {
			return nil, fmt.Errorf("%w: conversation key: %w", ErrInvalidEvent, err)
		}
		pt, err := nip44.Decrypt(ct, ck)
		if err != nil {
			return nil, fmt.Errorf("%w: nip44: %w", ErrInvalidEvent, err)
		}
		return []byte(pt), nil
	}
	sj, err := open(gw.PubKey, gw.Content)
	if err != nil {
		return Unwrapped{}, err
	}
	var seal nostr.Event
	if err := json.Unmarshal(sj, &seal); err != nil {
		return Unwrapped{}, fmt.Errorf("%w: seal: %w", ErrInvalidEvent, err)
	}
	if seal.Kind != SealKind {
		return Unwrapped{}, fmt.Errorf("%w: seal kind %d", ErrInvalidEvent, seal.Kind)
	}
	if err := CheckEvent(&seal); err != nil {
		return Unwrapped{}, fmt.Errorf("seal: %w", err)
	}
	rj, err := open(seal.PubKey, seal.Content)
	if err != nil {
		return Unwrapped{}, err
	}
	var rumor nostr.Event
	if err := json.Unmarshal(rj, &rumor); err != nil {
		return Unwrapped{}, fmt.Errorf("%w: rumor: %w", ErrInvalidEvent, err)
	}
	if rumor.PubKey != seal.PubKey {
		return Unwrapped{}, fmt.Errorf("%w: rumor author differs from seal author", ErrInvalidEvent)
	}
	if rumor.Kind != RumorKind {
		return Unwrapped{}, fmt.Errorf("%w: rumor kind %d", ErrInvalidEvent, rumor.Kind)
	}
	return Unwrapped{SenderHex: seal.PubKey, Content: []byte(rumor.Content), WrapID: gw.ID}, nil
}

// Freshness is check_freshness's verdict.
type Freshness int

// Verdicts.
const (
	Fresh Freshness = iota
	FreshWithinSkew
	FutureDated
	Stale
)

// CheckFreshness is upstream's check_freshness (all times Unix ms).
func CheckFreshness(issued, expires, now, ttl uint64) Freshness {
	effExp := min(expires, satAdd(issued, ttl))
	var ahead, age uint64
	if issued > now {
		ahead = issued - now
	} else {
		age = now - issued
	}
	switch {
	case ahead == 0 && effExp > now && age <= ttl:
		return Fresh
	case ahead > SkewToleranceMs:
		return FutureDated
	case satAdd(effExp, SkewToleranceMs) > now && age <= satAdd(ttl, SkewToleranceMs):
		return FreshWithinSkew
	}
	return Stale
}

// DecodeOffer parses an offer, requiring type "offer".
func DecodeOffer(b []byte) (Offer, error) {
	var o Offer
	if err := json.Unmarshal(b, &o); err != nil {
		return o, protoErr("invalid-offer", err)
	}
	if o.Type != msgTypeOffer {
		return o, protoErr("invalid-offer", nil)
	}
	if o.LocalAddresses == nil {
		return o, protoErr("invalid-offer", fmt.Errorf("missing field `localAddresses`"))
	}
	return o, nil
}

// DecodeAnswer parses an answer, requiring type "answer".
func DecodeAnswer(b []byte) (Answer, error) {
	var a Answer
	if err := json.Unmarshal(b, &a); err != nil {
		return a, protoErr("invalid-answer", err)
	}
	if a.Type != msgTypeAnswer {
		return a, protoErr("invalid-answer", nil)
	}
	if a.LocalAddresses == nil {
		return a, protoErr("invalid-answer", fmt.Errorf("missing field `localAddresses`"))
	}
	return a, nil
}

// ValidateOffer checks an offer's freshness and that it is from the seal's
// author to us. The error names upstream's reason.
func ValidateOffer(o *Offer, sealNpub, ownNpub string, nowMs, ttlMs uint64) error {
	switch CheckFreshness(o.IssuedAt, o.ExpiresAt, nowMs, ttlMs) {
	case Stale:
		return protoErr("expired-offer", ErrStale)
	case FutureDated:
		return protoErr("future-dated-offer", ErrFutureDated)
	}
	if o.SenderNpub != sealNpub || o.RecipientNpub != ownNpub {
		return protoErr("identity-mismatch", ErrIdentityMismatch)
	}
	return nil
}

// ValidateAnswer checks an answer against the offer it replies to, as
// upstream's initiator does after receipt.
func ValidateAnswer(o *Offer, a *Answer, sealNpub string, nowMs, ttlMs uint64) error {
	switch CheckFreshness(o.IssuedAt, o.ExpiresAt, nowMs, ttlMs) {
	case Stale:
		return protoErr("expired-offer-in-answer", ErrStale)
	case FutureDated:
		return protoErr("future-dated-offer-in-answer", ErrFutureDated)
	}
	switch CheckFreshness(a.IssuedAt, a.ExpiresAt, nowMs, ttlMs) {
	case Stale:
		return protoErr("expired-answer", ErrStale)
	case FutureDated:
		return protoErr("future-dated-answer", ErrFutureDated)
	}
	if o.SessionID != a.SessionID || a.InReplyTo != o.Nonce {
		return protoErr("session-mismatch", ErrSessionMismatch)
	}
	if a.SenderNpub != sealNpub || a.SenderNpub != o.RecipientNpub || a.RecipientNpub != o.SenderNpub {
		return protoErr("identity-mismatch", ErrIdentityMismatch)
	}
	if a.Accepted {
		if a.ReflexiveAddress == nil && len(a.LocalAddresses) == 0 {
			return protoErr("missing-addresses", ErrMissingAddresses)
		}
	} else if a.Reason == nil || *a.Reason == "" {
		return protoErr("missing-rejection-reason", ErrMissingRejectText)
	}
	return nil
}

// EstimateSkewMs is the NTP-style offset ((T2-T1)+(T3-T4))/2 of the
// responder's clock against ours, when the answer says when the offer
// arrived.
func EstimateSkewMs(o *Offer, a *Answer, answerReceivedMs uint64) (int64, bool) {
	if a.OfferReceivedAt == nil {
		return 0, false
	}
	t1, t2, t3, t4 := int64(o.IssuedAt), int64(*a.OfferReceivedAt), int64(a.IssuedAt), int64(answerReceivedMs)
	return ((t2 - t1) + (t3 - t4)) / 2, true
}

// DeletionEvent is the unsigned NIP-09 kind-5 deletion of ids.
func DeletionEvent(pubHex string, ids []string, nowMs uint64) nostr.Event {
	ev := nostr.Event{PubKey: pubHex, CreatedAt: nostr.Timestamp(nowMs / 1000), Kind: DeletionKind, Tags: nostr.Tags{}}
	for _, id := range ids {
		ev.Tags = append(ev.Tags, nostr.Tag{"e", id})
	}
	return ev
}

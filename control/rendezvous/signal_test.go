package rendezvous

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"
)

func TestWrapUnwrapSignal(t *testing.T) {
	a, b, c := newID(t), newID(t), newID(t)
	now := uint64(time.Now().UnixMilli())
	payload := []byte(`{"type":"offer"}`)
	gw, err := WrapSignal(keysOf(a), b.PublicKey().Hex(), payload, 120, now)
	if err != nil {
		t.Fatal(err)
	}
	if gw.Kind != 21059 || gw.PubKey == a.PublicKey().Hex() {
		t.Errorf("wrap kind %d, pubkey is sender's: %v", gw.Kind, gw.PubKey == a.PublicKey().Hex())
	}
	if int64(gw.CreatedAt) != int64(now/1000) {
		t.Errorf("wrap created_at %d, want now %d", gw.CreatedAt, now/1000)
	}
	exp := gw.Tags.GetFirst([]string{"expiration", ""})
	if exp == nil || (*exp)[1] != strconv.FormatUint((now+120_000)/1000, 10) {
		t.Errorf("expiration tag = %v", exp)
	}
	if p := gw.Tags.GetFirst([]string{"p", ""}); p == nil || (*p)[1] != b.PublicKey().Hex() {
		t.Errorf("p tag = %v", p)
	}
	if ok, err := gw.CheckSignature(); !ok || err != nil || !gw.CheckID() {
		t.Fatal("wrap fails go-nostr verification")
	}
	// The seal is kind 13 by the sender, the rumor kind 14 p-tagged:
	// open them as a standard NIP-59 client would.
	ck, _ := nip44.GenerateConversationKey(gw.PubKey, b.Secret().Hex())
	sj, err := nip44.Decrypt(gw.Content, ck)
	if err != nil {
		t.Fatal(err)
	}
	var seal nostr.Event
	if err := json.Unmarshal([]byte(sj), &seal); err != nil {
		t.Fatal(err)
	}
	if seal.Kind != 13 || seal.PubKey != a.PublicKey().Hex() || len(seal.Tags) != 0 {
		t.Errorf("seal kind %d tags %v", seal.Kind, seal.Tags)
	}
	if ok, _ := seal.CheckSignature(); !ok {
		t.Error("seal signature invalid")
	}
	ck2, _ := nip44.GenerateConversationKey(seal.PubKey, b.Secret().Hex())
	rj, _ := nip44.Decrypt(seal.Content, ck2)
	var rumor nostr.Event
	if err := json.Unmarshal([]byte(rj), &rumor); err != nil {
		t.Fatal(err)
	}
	if rumor.Kind != 14 || rumor.Sig != "" || rumor.Content != string(payload) || rumor.ID != rumor.GetID() {
		t.Errorf("rumor = %+v", rumor)
	}

	u, err := UnwrapSignal(keysOf(b), &gw)
	if err != nil {
		t.Fatal(err)
	}
	if u.SenderHex != a.PublicKey().Hex() || string(u.Content) != string(payload) {
		t.Errorf("unwrapped = %+v", u)
	}
	if _, err := UnwrapSignal(keysOf(c), &gw); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("third party opened it: %v", err)
	}
	tampered := gw
	// Change the 11th base64 character to another one (replacing it by a
	// fixed "A" left the wrap intact whenever it already was one).
	c10 := byte('A')
	if gw.Content[10] == c10 {
		c10 = 'B'
	}
	tampered.Content = gw.Content[:10] + string(c10) + gw.Content[11:]
	if _, err := UnwrapSignal(keysOf(b), &tampered); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("tampered wrap accepted: %v", err)
	}
}

// A seal whose rumor claims another author is refused: the sender is
// the seal's signer only.
func TestUnwrapRejectsForgedRumorAuthor(t *testing.T) {
	a, b, victim := newID(t), newID(t), newID(t)
	rumor := nostr.Event{PubKey: victim.PublicKey().Hex(), CreatedAt: nostr.Now(), Kind: 14,
		Tags: nostr.Tags{{"p", b.PublicKey().Hex()}}, Content: "x"}
	rumor.ID = rumor.GetID()
	ck, _ := nip44.GenerateConversationKey(b.PublicKey().Hex(), a.Secret().Hex())
	rct, _ := nip44.Encrypt(rumor.String(), ck)
	seal := nostr.Event{Kind: 13, CreatedAt: nostr.Now(), Content: rct, Tags: nostr.Tags{}}
	if err := seal.Sign(a.Secret().Hex()); err != nil {
		t.Fatal(err)
	}
	eph := newID(t)
	ck3, _ := nip44.GenerateConversationKey(b.PublicKey().Hex(), eph.Secret().Hex())
	sct, _ := nip44.Encrypt(seal.String(), ck3)
	gw := nostr.Event{Kind: SignalKind, CreatedAt: nostr.Now(), Content: sct, Tags: nostr.Tags{{"p", b.PublicKey().Hex()}}}
	if err := gw.Sign(eph.Secret().Hex()); err != nil {
		t.Fatal(err)
	}
	if _, err := UnwrapSignal(keysOf(b), &gw); err == nil || !strings.Contains(err.Error(), "rumor author") {
		t.Errorf("forged rumor author accepted: %v", err)
	}
}

func TestCheckFreshness(t *testing.T) {
	const ttl = 120_000
	now := uint64(10_000_000)
	for _, c := range []struct {
		issued, expires uint64
		want            Freshness
	}{
		{now - 1000, now + ttl, Fresh},
		{now, now + 1, Fresh},
		{now + 1000, now + ttl, FreshWithinSkew},
		{now + 60_000, now + ttl, FreshWithinSkew},
		{now + 60_001, now + ttl, FutureDated},
		{now - ttl - 1, now + 1000, FreshWithinSkew},
		{now - ttl - 60_001, now + 1000, Stale},
		{now - 1000, now - 60_000, Stale},
		{now - 1000, now - 59_999, FreshWithinSkew},
	} {
		if got := CheckFreshness(c.issued, c.expires, now, ttl); got != c.want {
			t.Errorf("CheckFreshness(%d, %d) = %d, want %d", int64(c.issued-now), int64(c.expires-now), got, c.want)
		}
	}
}

func testOffer(now uint64, from, to string) Offer {
	n := Nonce(now)
	return Offer{Type: "offer", SessionID: n, Nonce: n, IssuedAt: now, ExpiresAt: now + 120_000, SenderNpub: from,
		RecipientNpub: to, ReflexiveAddress: &TraversalAddress{"udp", "198.51.100.7", 40001}, LocalAddresses: []TraversalAddress{}}
}

func TestOfferAnswerJSONShape(t *testing.T) {
	o := testOffer(1_717_171_717_171, "npub1a", "npub1b")
	o.ReflexiveAddress = nil
	b, _ := json.Marshal(o)
	for _, want := range []string{`"reflexiveAddress":null`, `"localAddresses":[]`, `"stunServer":null`, `"sessionId":"1717171717171-`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("offer JSON lacks %s: %s", want, b)
		}
	}
	a := Answer{Type: "answer", LocalAddresses: []TraversalAddress{}}
	b, _ = json.Marshal(a)
	for _, want := range []string{`"punch":null`, `"reason":null`, `"inReplyTo":""`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("answer JSON lacks %s: %s", want, b)
		}
	}
	if strings.Contains(string(b), "offerReceivedAt") {
		t.Errorf("absent offerReceivedAt serialized: %s", b)
	}
	if _, err := DecodeOffer([]byte(`{"type":"offer","sessionId":"x","issuedAt":1,"expiresAt":2,"nonce":"x","senderNpub":"a","recipientNpub":"b","reflexiveAddress":null,"stunServer":null}`)); !errors.Is(err, ErrProtocol) {
		t.Errorf("offer without localAddresses accepted: %v", err)
	}
	if _, err := DecodeOffer([]byte(`{"type":"answer","localAddresses":[]}`)); !errors.Is(err, ErrProtocol) {
		t.Errorf("answer decoded as offer: %v", err)
	}
}

func TestValidateOfferAndAnswer(t *testing.T) {
	now := uint64(time.Now().UnixMilli())
	o := testOffer(now, "npub1a", "npub1b")
	if err := ValidateOffer(&o, "npub1a", "npub1b", now, 120_000); err != nil {
		t.Fatal(err)
	}
	if err := ValidateOffer(&o, "npub1x", "npub1b", now, 120_000); !errors.Is(err, ErrIdentityMismatch) {
		t.Errorf("seal/sender mismatch: %v", err)
	}
	if err := ValidateOffer(&o, "npub1a", "npub1b", now+400_000, 120_000); !errors.Is(err, ErrStale) {
		t.Errorf("stale offer: %v", err)
	}
	future := testOffer(now+120_000, "npub1a", "npub1b")
	if err := ValidateOffer(&future, "npub1a", "npub1b", now, 120_000); !errors.Is(err, ErrFutureDated) {
		t.Errorf("future offer: %v", err)
	}
	good := Answer{Type: "answer", SessionID: o.SessionID, IssuedAt: now, ExpiresAt: now + 120_000, Nonce: Nonce(now),
		SenderNpub: "npub1b", RecipientNpub: "npub1a", InReplyTo: o.Nonce, Accepted: true,
		ReflexiveAddress: &TraversalAddress{"udp", "203.0.113.9", 51000}, LocalAddresses: []TraversalAddress{}}
	if err := ValidateAnswer(&o, &good, "npub1b", now, 120_000); err != nil {
		t.Fatal(err)
	}
	mut := func(f func(*Answer)) *Answer { a := good; f(&a); return &a }
	reason := ""
	for name, c := range map[string]struct {
		a    *Answer
		seal string
		want error
	}{
		"session":   {mut(func(a *Answer) { a.SessionID = "other" }), "npub1b", ErrSessionMismatch},
		"inReplyTo": {mut(func(a *Answer) { a.InReplyTo = "other" }), "npub1b", ErrSessionMismatch},
		"seal":      {&good, "npub1c", ErrIdentityMismatch},
		"recipient": {mut(func(a *Answer) { a.RecipientNpub = "npub1c" }), "npub1b", ErrIdentityMismatch},
		"addresses": {mut(func(a *Answer) { a.ReflexiveAddress = nil }), "npub1b", ErrMissingAddresses},
		"reason":    {mut(func(a *Answer) { a.Accepted = false; a.Reason = &reason }), "npub1b", ErrMissingRejectText},
		"stale":     {mut(func(a *Answer) { a.IssuedAt = now - 300_000; a.ExpiresAt = now - 200_000 }), "npub1b", ErrStale},
	} {
		if err := ValidateAnswer(&o, c.a, c.seal, now, 120_000); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	recv := now + 1000
	sk := good
	sk.OfferReceivedAt = &recv
	sk.IssuedAt = now + 1100
	if skew, ok := EstimateSkewMs(&o, &sk, now+200); !ok || skew != 950 {
		t.Errorf("skew = %d %v, want 950", skew, ok)
	}
}

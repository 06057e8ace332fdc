package rendezvous

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/fips-go/fips/control/identity"
)

// answerWrap is an answer from `from` to `to`, in reply to offer nonce,
// its JSON written by hand and gift-wrapped.
func answerWrap(t *testing.T, from, to *identity.Identity, inReplyTo string) *nostr.Event {
	t.Helper()
	now := uint64(time.Now().UnixMilli())
	nonce := fmt.Sprintf("%d-%x", now, from.PublicKey().Hex()[:16])
	body := fmt.Sprintf(`{"type":"answer","sessionId":%q,"issuedAt":%d,"expiresAt":%d,"nonce":%q,"senderNpub":%q,`+
		`"recipientNpub":%q,"inReplyTo":%q,"accepted":true,"reflexiveAddress":null,"localAddresses":[],"stunServer":null,"punch":null,"reason":null}`,
		inReplyTo, now, now+3000, nonce, from.Npub(), to.Npub(), inReplyTo)
	ev, err := WrapSignal(keysOf(from), to.PublicKey().Hex(), []byte(body), 3, now)
	if err != nil {
		t.Fatal(err)
	}
	return &ev
}

// Issue 27: a gift-wrap flood from strangers fills the strangers' signal
// queue (the overflow counted as signals_dropped_stranger), and a
// configured peer's signal arriving behind it — an answer to our offer —
// is still queued and dispatched (wanted peers' queue first), and the
// strangers' queued signals after it.
func TestSignalFloodKeepsConfiguredPeersSignal(t *testing.T) {
	own, peer := newID(t), newID(t)
	cfg := testConfig(t, own, "", "")
	cfg.DMRelays, cfg.AdvertRelays, cfg.STUNServers = nil, nil, nil
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetWanted([]identity.PublicKey{peer.PublicKey()})
	const ourOffer = "offer-nonce-1"
	answers := make(chan answerMsg, 1)
	s.mu.Lock()
	s.pending[ourOffer] = answers
	s.mu.Unlock()

	// The flood: strangers' wraps, as the relay reader hands them over,
	// before dispatch runs.
	const flood = 3 * signalQueue
	for range flood {
		s.deliver(relayEvent{ev: answerWrap(t, newID(t), own, "someone-elses-offer"), url: "wss://relay.test"})
	}
	s.deliver(relayEvent{ev: answerWrap(t, peer, own, ourOffer), url: "wss://relay.test"})
	st := s.Stats()
	if st.SignalsReceived != flood+1 || st.SignalsDropped != flood-signalQueue || st.SignalsStrangerDrops != flood-signalQueue {
		t.Fatalf("received %d, dropped %d (strangers' %d); want %d, %d (%d)", st.SignalsReceived, st.SignalsDropped,
			st.SignalsStrangerDrops, flood+1, flood-signalQueue, flood-signalQueue)
	}

	s.Start(context.Background())
	defer s.Close()
	select {
	case a := <-answers:
		if a.sender != peer.Npub() || a.answer.InReplyTo != ourOffer {
			t.Fatalf("answer %+v from %s", a.answer, a.sender)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the configured peer's answer was not dispatched")
	}
	waitFor(t, 5*time.Second, "the strangers' backlog dispatched", func() bool {
		return s.Stats().AnswersUnmatched == signalQueue
	})
}

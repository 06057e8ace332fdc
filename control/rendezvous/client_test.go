package rendezvous

import (
	"context"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/fips-go/fips/control/rendezvous/relaytest"
)

// A subscription nobody reads any more must not wedge the connection:
// close returns though the relay keeps sending its events.
func TestRelayClientCloseWithUnreadSubscription(t *testing.T) {
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	ctx := context.Background()
	sub, err := dialRelay(ctx, relay.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sub.subscribe(ctx, nostr.Filters{{Kinds: []int{1}}})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := dialRelay(ctx, relay.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.close()
	k := keysOf(newID(t))
	for i := range 3 {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: string(rune('a' + i)), Tags: nostr.Tags{}}
		if err := ev.Sign(k.SecretHex); err != nil {
			t.Fatal(err)
		}
		if err := pub.publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	_ = s // never read: the reader is blocked on its first event
	done := make(chan struct{})
	go func() { sub.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close blocked on an unread subscription")
	}
}

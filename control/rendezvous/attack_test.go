package rendezvous

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/rendezvous/relaytest"
	"github.com/fips-go/fips/control/wire"
)

// throwawayAdvert is an attacker's advert, built by hand from a fresh
// key: a valid kind-37195 event with a public endpoint, and, when
// withExp, an expiration tag far beyond any genuine one (under the old
// "evict the soonest to expire" rule that made it outlast every honest
// advert).
func throwawayAdvert(t testing.TB, i int, withExp bool) *nostr.Event {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ev := &nostr.Event{PubKey: pk, CreatedAt: nostr.Timestamp(now.Unix()), Kind: 37195,
		Tags: nostr.Tags{{"d", "fips-overlay-v1"}, {"protocol", "fips-overlay-v1"}, {"version", "1"}},
		Content: fmt.Sprintf(`{"identifier":"fips-overlay-v1","version":1,"endpoints":[{"transport":"udp","addr":"8.8.%d.%d:2121"}]}`,
			i/250, i%250+1)}
	if withExp {
		ev.Tags = append(ev.Tags, nostr.Tag{"expiration", strconv.FormatInt(now.Add(1000*time.Hour).Unix(), 10)})
	}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// Strangers' adverts, however many and however long they claim to live,
// never evict a wanted author's (kept outside the bound) nor, while
// unproven ones remain, a proven one's; among strangers the
// oldest-received go.
func TestAdvertCacheStrangersCannotEvictProtected(t *testing.T) {
	for _, tc := range []struct {
		name          string
		protect       func(c *AdvertCache)
		len, evicted  int
		newestStrange int // the newest strangers kept
	}{
		{"wanted", func(c *AdvertCache) { c.SetWanted([]string{"peer"}) }, 5, 96, 4},
		{"proven", func(c *AdvertCache) { c.MarkProven("peer") }, 4, 97, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewAdvertCache(4)
			tc.protect(c)
			now := uint64(1000)
			if !c.Insert(CachedAdvert{AuthorHex: "peer", CreatedAt: 1, ValidUntilMs: 2000}, now) {
				t.Fatal("protected advert refused")
			}
			for i := range 100 {
				c.Insert(CachedAdvert{AuthorHex: fmt.Sprintf("s%03d", i), CreatedAt: 1, ValidUntilMs: 1 << 60}, now)
			}
			if _, ok := c.Get("peer", now); !ok {
				t.Fatal("a stranger evicted the protected advert")
			}
			if c.Len() != tc.len || c.Evicted != uint64(tc.evicted) {
				t.Errorf("len %d evicted %d, want %d and %d", c.Len(), c.Evicted, tc.len, tc.evicted)
			}
			for i := 100 - tc.newestStrange; i < 100; i++ {
				if _, ok := c.Get(fmt.Sprintf("s%03d", i), now); !ok {
					t.Errorf("newest stranger s%03d evicted (oldest-received should go)", i)
				}
			}
		})
	}
}

// An advert without an expiration tag lives one TTL, not the two an
// expiration-tagged one may: it never outlives a genuine advert.
func TestAdvertMaxAgeWithoutExpiration(t *testing.T) {
	bare, tagged := throwawayAdvert(t, 0, false), throwawayAdvert(t, 1, true)
	if got := AdvertMaxAgeMs(bare, 3_600_000); got != 3_600_000 {
		t.Errorf("untagged max age %d, want one TTL", got)
	}
	if got := AdvertMaxAgeMs(tagged, 3_600_000); got != 7_200_000 {
		t.Errorf("tagged max age %d, want two TTLs", got)
	}
	now := uint64(time.Now().UnixMilli())
	until, ok := ValidUntilMs(bare, AdvertMaxAgeMs(bare, 3_600_000), now)
	if !ok || until > now+3_600_000 {
		t.Errorf("untagged advert valid until %d (now %d)", until, now)
	}
}

// Keys ground to sort first do not take an open-discovery sweep: the
// sample is random, so honest adverts are looked at too.
func TestOpenCandidatesNotInKeyOrder(t *testing.T) {
	c := NewAdvertCache(1000)
	for i := range 128 {
		prefix := "f" // honest keys sort last
		if i < 64 {
			prefix = "0" // the attacker's ground keys sort first
		}
		c.Insert(CachedAdvert{AuthorHex: fmt.Sprintf("%s%063d", prefix, i), CreatedAt: 1, ValidUntilMs: 1 << 60}, 1)
	}
	got := c.Sample(1, "", OpenSweepPull)
	if len(got) != OpenSweepPull {
		t.Fatalf("sample of %d", len(got))
	}
	honest := 0
	for _, e := range got {
		if strings.HasPrefix(e.AuthorHex, "f") {
			honest++
		}
	}
	// All 64 from the attacker by chance: 1 in C(128,64) ≈ 1e37.
	if honest == 0 {
		t.Error("the sweep took the attacker's keys only: sorted by key")
	}
}

// Issue 27 item 1's acceptance: 2,500 throwaway adverts on the relay
// (more than advert_cache_max_entries) do not make a configured
// via_nostr peer unfindable; the flood is evicted and counted.
func TestAdvertFloodDoesNotHideWantedPeer(t *testing.T) {
	p := startPair(t, func(_ bool, c *Config) { c.AdvertCacheMax = 2048 })
	p.a.SetWanted([]identity.PublicKey{p.idb.PublicKey()})
	p.b.SetWanted([]identity.PublicKey{p.ida.PublicKey()})
	waitFor(t, 5*time.Second, "A's advert at B", func() bool {
		_, ok := p.b.CachedAdvert(p.ida.PublicKey())
		return ok && p.a.Stats().RelaysConnected == 1 && p.b.Stats().RelaysConnected == 1
	})
	base := p.b.Stats().AdvertsReceived
	const flood, batch = 2500, 200
	for sent := 0; sent < flood; {
		n := min(batch, flood-sent)
		for i := range n {
			p.relay.Inject(throwawayAdvert(t, sent+i, (sent+i)%2 == 0))
		}
		sent += n
		// Each batch fits B's queue; wait until it is ingested so that
		// the flood reaches the cache rather than the drop counter.
		waitFor(t, 20*time.Second, "batch ingested", func() bool {
			st := p.b.Stats()
			return st.AdvertsReceived+st.EventsDropped >= base+uint64(sent)
		})
	}
	// B's received counter also counts re-deliveries (the catch-up
	// query), so await the flood's eviction itself.
	waitFor(t, 20*time.Second, "flood evicted", func() bool {
		st := p.b.Stats()
		return st.AdvertCacheEvicted+st.EventsDropped >= flood-2048
	})
	st := p.b.Stats()
	if _, ok := p.b.CachedAdvert(p.ida.PublicKey()); !ok {
		t.Fatalf("A's advert evicted by the flood: %+v", st)
	}
	if st.AdvertCacheEntries > 2048+1 {
		t.Errorf("cache entries %d evicted %d dropped %d", st.AdvertCacheEntries, st.AdvertCacheEvicted, st.EventsDropped)
	}
	est, err := p.b.Connect(context.Background(), p.ida.PublicKey())
	if err != nil {
		t.Fatalf("via_nostr peer unreachable after the flood: %v", err)
	}
	est.Conn.Close()
	waitFor(t, 5*time.Second, "A's responder side", func() bool { return p.a.Stats().ResponderSucceeded == 1 })
	select {
	case e := <-p.a.Established():
		e.Conn.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("A established nothing")
	}
}

// Even with nothing cached and no reservation, a lookup asks the relays
// by author, so a flood that filled the cache does not hide a peer.
func TestFetchAdvertByAuthorPastFullCache(t *testing.T) {
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	srv := startSTUN(t)
	peerID := newID(t)
	k := keysOf(peerID)
	genuine := signedAdvert(t, k, OverlayAdvert{Identifier: AdvertIdentifier, Version: 1,
		Endpoints: []Endpoint{{EndpointUDP, "8.8.4.4:2121"}}}, AdvertIdentifier, 3600, uint64(time.Now().UnixMilli()))
	relay.Inject(&genuine)
	for i := range 20 {
		relay.Inject(throwawayAdvert(t, i, true))
	}
	cfg := testConfig(t, newID(t), relay.URL, srv.addr())
	cfg.AdvertCacheMax = 4
	cfg.Advertise = false
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	t.Cleanup(s.Close)
	waitFor(t, 5*time.Second, "relay connection", func() bool { return s.Stats().RelaysConnected == 1 })
	// Flood the cache after the subscription is up: the genuine advert,
	// received first, is the oldest and is evicted.
	for i := 20; i < 40; i++ {
		relay.Inject(throwawayAdvert(t, i, true))
	}
	waitFor(t, 5*time.Second, "flood ingested", func() bool { return s.Stats().AdvertCacheEvicted >= 37 })
	a, err := s.FetchAdvert(context.Background(), peerID.PublicKey())
	if err != nil || len(a.Endpoints) != 1 || a.Endpoints[0].Addr != "8.8.4.4:2121" {
		t.Fatalf("advert %+v: %v", a, err)
	}
}

// sink counts punch probes arriving at one UDP socket.
type sink struct {
	conn   *net.UDPConn
	mu     sync.Mutex
	probes int
}

func startSinks(t *testing.T, n int) []*sink {
	t.Helper()
	var wg sync.WaitGroup
	out := make([]*sink, n)
	for i := range out {
		s := &sink{conn: listen4(t)}
		out[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1500)
			for {
				n, _, err := s.conn.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				if _, err := wire.ParsePunchPacket(buf[:n]); err == nil {
					s.mu.Lock()
					s.probes++
					s.mu.Unlock()
				}
			}
		}()
	}
	t.Cleanup(func() {
		for _, s := range out {
			s.conn.Close()
		}
		wg.Wait()
	})
	return out
}

// strangerOffer is an offer from a fresh key, its JSON written by hand,
// naming every sink (as documentation addresses the test maps back to
// loopback) as a candidate: eight addresses for the victim to probe.
func strangerOffer(t *testing.T, victim *identity.Identity, sinks []*sink, from *identity.Identity) nostr.Event {
	t.Helper()
	now := uint64(time.Now().UnixMilli())
	addr := func(s *sink) string {
		return fmt.Sprintf(`{"protocol":"udp","ip":"192.0.2.1","port":%d}`, s.conn.LocalAddr().(*net.UDPAddr).Port)
	}
	var locals []string
	for _, s := range sinks[1:] {
		locals = append(locals, addr(s))
	}
	nonce := fmt.Sprintf("%d-%x", now, from.PublicKey().Hex()[:16])
	body := fmt.Sprintf(`{"type":"offer","sessionId":%q,"issuedAt":%d,"expiresAt":%d,"nonce":%q,"senderNpub":%q,`+
		`"recipientNpub":%q,"reflexiveAddress":%s,"localAddresses":[%s],"stunServer":null}`,
		nonce, now, now+3000, nonce, from.Npub(), victim.Npub(), addr(sinks[0]), strings.Join(locals, ","))
	// The NIP-59 wrap is the one part not written by hand.
	ev, err := WrapSignal(keysOf(from), victim.PublicKey().Hex(), []byte(body), 3, now)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// Issue 27 item 7: strangers' offers naming eight addresses each make
// the node probe at most MaxStrangerPunchTargets of them, for at most
// StrangerOfferBurst offers at once, one offer per stranger per
// interval; a configured peer still links meanwhile.
func TestStrangerOfferFloodBounded(t *testing.T) {
	p := startPair(t)
	p.a.SetWanted([]identity.PublicKey{p.idb.PublicKey()})
	p.b.SetWanted([]identity.PublicKey{p.ida.PublicKey()})
	waitFor(t, 5*time.Second, "relays and adverts", func() bool {
		_, ok := p.b.CachedAdvert(p.ida.PublicKey())
		return ok && p.a.Stats().RelaysConnected == 1 && p.b.Stats().RelaysConnected == 1
	})
	sinks := startSinks(t, MaxPunchTargets)
	const strangers = 10
	repeat := newID(t)
	offers := []nostr.Event{strangerOffer(t, p.ida, sinks, repeat), strangerOffer(t, p.ida, sinks, repeat)}
	for range strangers - 1 {
		offers = append(offers, strangerOffer(t, p.ida, sinks, newID(t)))
	}
	for i := range offers {
		p.relay.Inject(&offers[i])
	}
	waitFor(t, 10*time.Second, "every offer seen", func() bool { return p.a.Stats().OffersReceived == strangers+1 })
	st := p.a.Stats()
	// Past the burst a stranger's offer is refused by the shared rate or,
	// once the admitted ones' responders hold half the offer slots, by
	// the slots (checked first): which one depends on how soon those
	// responders start, so only the sum is fixed.
	if refused := st.OffersRefusedStrangerRate + st.OffersRefusedStrangerSlots; st.OffersRefusedStrangerAuthor != 1 || refused != strangers-StrangerOfferBurst {
		t.Errorf("refused per author %d (want 1), by rate %d and slots %d (want %d together)",
			st.OffersRefusedStrangerAuthor, st.OffersRefusedStrangerRate, st.OffersRefusedStrangerSlots, strangers-StrangerOfferBurst)
	}
	// The configured peer is not a stranger: it links while the admitted
	// strangers' punches run.
	est, err := p.b.Connect(context.Background(), p.ida.PublicKey())
	if err != nil {
		t.Fatalf("configured peer refused during the flood: %v", err)
	}
	est.Conn.Close()
	select {
	case e := <-p.a.Established():
		e.Conn.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("A established nothing with B")
	}
	waitFor(t, 15*time.Second, "strangers' punches over", func() bool {
		return p.a.Stats().ResponderFailed == StrangerOfferBurst
	})
	st = p.a.Stats()
	if want := uint64(StrangerOfferBurst * (MaxPunchTargets - MaxStrangerPunchTargets)); st.StrangerTargetsCapped != want {
		t.Errorf("targets capped %d, want %d", st.StrangerTargetsCapped, want)
	}
	probed := 0
	for _, s := range sinks {
		s.mu.Lock()
		if s.probes > 0 {
			probed++
		}
		s.mu.Unlock()
	}
	if probed > MaxStrangerPunchTargets {
		t.Errorf("%d of the strangers' addresses probed, want at most %d", probed, MaxStrangerPunchTargets)
	}
}

// A packet carrying the session hash from a source the punch did not
// target is neither answered nor adopted; the peer's own is.
func TestPunchIgnoresForeignSource(t *testing.T) {
	a, b := listen4(t), listen4(t)
	evil, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	t.Cleanup(func() { evil.Close() })
	aa := netip.MustParseAddrPort(a.LocalAddr().String())
	ba := netip.MustParseAddrPort(b.LocalAddr().String())
	h := SessionHash("sess-f")
	var pkt [wire.PunchPacketSize]byte
	if _, err := (wire.PunchPacket{SessionHash: h[:]}).MarshalTo(pkt[:]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := evil.WriteToUDPAddrPort(pkt[:], aa); err != nil {
			t.Fatal(err)
		}
	}
	hint := PunchHint{StartAtMs: uint64(time.Now().Add(50 * time.Millisecond).UnixMilli()), IntervalMs: 20, DurationMs: 2000}
	done := make(chan error, 1)
	go func() {
		_, err := Punch(context.Background(), b, "sess-f", []netip.AddrPort{aa}, hint, 3*time.Second)
		done <- err
	}()
	r, err := Punch(context.Background(), a, "sess-f", []netip.AddrPort{ba}, hint, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.Remote != ba || r.Foreign != 3 {
		t.Errorf("remote %s (want %s), foreign %d (want 3)", r.Remote, ba, r.Foreign)
	}
	// No ack went to the foreign source.
	evil.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, from, err := evil.ReadFromUDPAddrPort(make([]byte, 64)); err == nil {
		t.Errorf("foreign source answered: %d bytes from %s", n, from)
	}
}

// The stranger gate's three bounds, each counted: one offer per author
// per interval, the shared bucket (refilled with time), and half the
// concurrent offer slots.
func TestStrangerGateBounds(t *testing.T) {
	g := NewStrangerGate(4) // strangers may hold 2 slots
	now := uint64(1_000_000)
	if !g.Acquire("a", now) || !g.Acquire("b", now) {
		t.Fatal("first strangers refused")
	}
	if g.Acquire("c", now) {
		t.Error("a third stranger took a slot past half of 4")
	}
	g.Release()
	g.Release()
	if g.Acquire("a", now+1) {
		t.Error("an author admitted twice within the interval")
	}
	if !g.Acquire("c", now) || !g.Acquire("d", now) {
		t.Fatal("bucket emptied early")
	}
	g.Release()
	g.Release()
	if g.Acquire("e", now) {
		t.Error("admitted past the burst")
	}
	if !g.Acquire("e", now+StrangerOfferEveryMs) {
		t.Error("bucket not refilled after one interval")
	}
	g.Release()
	if rate, author, slots := g.Counts(); rate != 1 || author != 1 || slots != 1 {
		t.Errorf("refused rate %d author %d slots %d, want 1 each", rate, author, slots)
	}
}

package rendezvous

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/rendezvous/relaytest"
)

func testConfig(t *testing.T, id *identity.Identity, relay, stunSrv string) Config {
	return Config{Identity: id, Advertise: true, AdvertRelays: []string{relay}, DMRelays: []string{relay},
		STUNServers: []string{stunSrv}, App: AdvertIdentifier, SignalTTL: 3 * time.Second, ReplayWindow: 300 * time.Second,
		AttemptTimeout: 3 * time.Second, PunchStartDelay: 100 * time.Millisecond, PunchInterval: 20 * time.Millisecond,
		PunchDuration: 2 * time.Second, AdvertTTL: time.Hour, AdvertRefresh: 30 * time.Minute,
		MaxIncomingOffers: 16, MaxOffersPerNpub: 4, AdvertCacheMax: 64, SeenSessionsMax: 64,
		Failure: FailurePolicy{StreakThreshold: 2, CooldownMs: 60_000, WarnIntervalMs: 300_000, MaxEntries: 64, MismatchCooldownMs: 86_400_000},
		Log:     testLog(t)}
}

type pair struct {
	relay *relaytest.Relay
	stun  *stunResponder
	a, b  *Service
	ida   *identity.Identity
	idb   *identity.Identity
}

func startPair(t *testing.T, mods ...func(b bool, c *Config)) *pair {
	t.Helper()
	return startPairWith(t, nil, mods...)
}

// startPairWith is startPair with setup run on each service before it
// starts.
func startPairWith(t *testing.T, setup func(*Service), mods ...func(b bool, c *Config)) *pair {
	t.Helper()
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	srv := startSTUN(t)
	srv.mu.Lock()
	srv.mapped = loopbackToDoc
	srv.mu.Unlock()
	p := &pair{relay: relay, stun: srv, ida: newID(t), idb: newID(t)}
	for _, x := range []struct {
		id  *identity.Identity
		dst **Service
	}{{p.ida, &p.a}, {p.idb, &p.b}} {
		cfg := testConfig(t, x.id, relay.URL, srv.addr())
		for _, m := range mods {
			m(x.id == p.idb, &cfg)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.mapTarget = docToLoopback
		if setup != nil {
			setup(s)
		}
		s.Start(context.Background())
		t.Cleanup(s.Close)
		s.SetEndpoints([]Endpoint{{EndpointUDP, "nat"}})
		*x.dst = s
	}
	return p
}

// Each advert reaches the relay valid for standard tooling, and the other
// node's standing subscription caches it without a fetch.
func TestAdvertPublishAndSubscription(t *testing.T) {
	p := startPair(t)
	waitFor(t, 5*time.Second, "both adverts cached by the other side", func() bool {
		_, ab := p.b.CachedAdvert(p.ida.PublicKey())
		_, ba := p.a.CachedAdvert(p.idb.PublicKey())
		return ab && ba
	})
	evs := p.relay.Stored(AdvertKind)
	if len(evs) != 2 {
		t.Fatalf("relay holds %d adverts", len(evs))
	}
	for _, ev := range evs {
		if err := CheckEvent(ev); err != nil {
			t.Errorf("stored advert invalid: %v", err)
		}
	}
	c, _ := p.b.CachedAdvert(p.ida.PublicKey())
	if !c.Advert.HasNAT() || len(c.Advert.SignalRelays) != 1 || len(c.Advert.StunServers) != 1 {
		t.Errorf("cached advert %+v", c.Advert)
	}
	waitFor(t, 5*time.Second, "inbox lists", func() bool { return len(p.relay.Stored(InboxRelaysKind)) == 2 })
	for _, ev := range p.relay.Stored(InboxRelaysKind) {
		if got := InboxRelays(ev); len(got) != 1 || got[0] != p.relay.URL {
			t.Errorf("inbox relays %v", got)
		}
	}
	// A changed body is republished and replaces the old one.
	p.a.SetEndpoints([]Endpoint{{EndpointUDP, "nat"}, {EndpointTCP, "8.8.8.8:443"}})
	waitFor(t, 5*time.Second, "republished advert", func() bool {
		c, ok := p.b.CachedAdvert(p.ida.PublicKey())
		return ok && len(c.Advert.Endpoints) == 2
	})
	if got := p.relay.Stored(AdvertKind); len(got) != 2 {
		t.Errorf("replaceable advert stored %d times", len(got))
	}
	if cands := p.a.OpenCandidates(10); len(cands) != 1 || cands[0].AuthorHex != p.idb.PublicKey().Hex() {
		t.Errorf("open candidates %v", cands)
	}
}

// The whole traversal on loopback: advert, offer, answer, STUN, punch;
// both sides end with a socket whose remote is the other's socket.
func TestTraversalEndToEnd(t *testing.T) {
	p := startPair(t)
	waitFor(t, 5*time.Second, "relay connections and A's advert", func() bool {
		_, ok := p.b.CachedAdvert(p.ida.PublicKey())
		return ok && p.a.Stats().RelaysConnected == 1 && p.b.Stats().RelaysConnected == 1
	})
	est, err := p.b.Connect(context.Background(), p.ida.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	defer est.Conn.Close()
	var resp Established
	select {
	case resp = <-p.a.Established():
	case <-time.After(5 * time.Second):
		t.Fatal("responder did not report the punched path")
	}
	defer resp.Conn.Close()
	if est.Peer != p.ida.PublicKey() || resp.Peer != p.idb.PublicKey() || est.SessionID != resp.SessionID || !est.Initiator || resp.Initiator {
		t.Errorf("initiator %+v responder %+v", est, resp)
	}
	port := func(c interface{ LocalAddr() net.Addr }) uint16 { return uint16(c.LocalAddr().(*net.UDPAddr).Port) }
	if est.Remote.Port() != port(resp.Conn) || resp.Remote.Port() != port(est.Conn) || !est.Remote.Addr().IsLoopback() {
		t.Errorf("remotes: initiator→%s (responder socket %s), responder→%s (initiator socket %s)",
			est.Remote, resp.Conn.LocalAddr(), resp.Remote, est.Conn.LocalAddr())
	}
	sa, sb := p.a.Stats(), p.b.Stats()
	if sb.OffersSent != 1 || sa.OffersReceived != 1 || sa.AnswersSent != 1 || sb.AnswersReceived != 1 ||
		sb.AttemptsSucceeded != 1 || sa.ResponderSucceeded != 1 {
		t.Errorf("stats a %+v b %+v", sa, sb)
	}
	// Every gift wrap the relay saw is verifiable (ephemeral: check
	// what the fixture counted as accepted vs refused).
	if _, refused := p.relay.Counts(); refused != 0 {
		t.Errorf("relay refused %d events", refused)
	}
}

// When answers never arrive the initiator fails with SignalTimeout,
// counts the failure, and after the streak threshold is in cooldown.
func TestTraversalTimeoutAndCooldown(t *testing.T) {
	p := startPair(t, func(b bool, c *Config) {
		if b {
			c.SignalTTL = 300 * time.Millisecond
		}
	})
	waitFor(t, 5*time.Second, "advert", func() bool { _, ok := p.b.CachedAdvert(p.ida.PublicKey()); return ok })
	p.relay.Drop(SignalKind, true)
	for i := 1; i <= 2; i++ {
		_, err := p.b.Connect(context.Background(), p.ida.PublicKey())
		d := p.b.RecordFailure(p.ida.Npub())
		if !errors.Is(err, ErrSignalTimeout) || d.ConsecutiveFailures != uint32(i) {
			t.Fatalf("attempt %d: %v %+v", i, err, d)
		}
		if i == 2 && (!d.CrossedThreshold || d.CooldownUntilMs == 0) {
			t.Errorf("threshold not crossed: %+v", d)
		}
	}
	if _, err := p.b.Connect(context.Background(), p.ida.PublicKey()); !errors.Is(err, ErrCooldown) {
		t.Errorf("attempt in cooldown: %v", err)
	}
	if st := p.b.Stats(); st.AttemptsFailed != 2 || st.Cooldowns != 1 {
		t.Errorf("stats %+v", st)
	}
}

// A replayed offer (same session id) is not answered twice.
func TestOfferReplayRefused(t *testing.T) {
	p := startPair(t)
	now := uint64(time.Now().UnixMilli())
	o := testOffer(now, p.idb.Npub(), p.ida.Npub())
	if !p.a.replay.Check(o.SessionID, now) {
		t.Fatal("fresh id refused")
	}
	if err := p.a.respond(p.idb.PublicKey(), o, false); !errors.Is(err, ErrReplay) {
		t.Errorf("replay: %v", err)
	}
	// The dual-initiator election: a's initiator to b is in flight and
	// a's NodeAddr is the smaller, so a does not answer b's offer.
	small, big := p.a, p.idb
	if p.ida.NodeAddr().Compare(p.idb.NodeAddr()) > 0 {
		small, big = p.b, p.ida
	}
	small.initiators.Begin(big.Npub())
	defer small.initiators.End(big.Npub())
	o2 := testOffer(now, big.Npub(), small.npub)
	if err := small.respond(big.PublicKey(), o2, false); !errors.Is(err, ErrElectionYield) {
		t.Errorf("election: %v", err)
	}
}

// The stale-advert check: an advert that is still the one cached keeps
// the cooldown; a peer with no advert left is evicted and its streak
// dropped.
func TestRefetchAdvert(t *testing.T) {
	p := startPair(t)
	waitFor(t, 5*time.Second, "advert", func() bool { _, ok := p.b.CachedAdvert(p.ida.PublicKey()); return ok })
	if got := p.b.RefetchAdvert(context.Background(), p.ida.PublicKey()); got != RefetchSame {
		t.Errorf("unchanged advert: %s", got)
	}
	gone := newID(t)
	p.b.RecordFailure(gone.Npub())
	if got := p.b.RefetchAdvert(context.Background(), gone.PublicKey()); got != RefetchEvicted {
		t.Errorf("absent advert: %s", got)
	}
	if _, ok := p.b.Failures().Get(gone.Npub(), uint64(time.Now().UnixMilli())); ok {
		t.Error("streak kept after eviction")
	}
}

// share_local_candidates: with it, offers and answers carry the host
// candidates on the punch socket's port and the punch reaches the peer by
// them alone (STUN answers nothing here); without it, localAddresses is
// [] and, with no reflexive address either, the responder declines.
func TestShareLocalCandidates(t *testing.T) {
	// 192.0.2.1 stands for a host address both sides share a /24 with;
	// the punch maps it back to loopback.
	hostAddr := netip.MustParseAddr("192.0.2.1")
	p := startPairWith(t, func(s *Service) {
		s.localCandidates = func(port uint16) []netip.AddrPort { return []netip.AddrPort{netip.AddrPortFrom(hostAddr, port)} }
	}, func(_ bool, c *Config) { c.ShareLocalCandidates = true })
	stunOff(t, p)
	waitFor(t, 5*time.Second, "relay connections and A's advert", func() bool {
		_, ok := p.b.CachedAdvert(p.ida.PublicKey())
		return ok && p.a.Stats().RelaysConnected == 1 && p.b.Stats().RelaysConnected == 1
	})
	est, err := p.b.Connect(context.Background(), p.ida.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	defer est.Conn.Close()
	var resp Established
	select {
	case resp = <-p.a.Established():
	case <-time.After(5 * time.Second):
		t.Fatal("responder did not report the punched path")
	}
	defer resp.Conn.Close()
	port := func(c *net.UDPConn) uint16 { return uint16(c.LocalAddr().(*net.UDPAddr).Port) }
	if est.Remote.Port() != port(resp.Conn) || resp.Remote.Port() != port(est.Conn) {
		t.Errorf("remotes %s %s", est.Remote, resp.Remote)
	}
	offer, answer := signalsSent(t, p)
	if offer.ReflexiveAddress != nil || answer.ReflexiveAddress != nil {
		t.Errorf("STUN was silent, yet reflexive %v %v", offer.ReflexiveAddress, answer.ReflexiveAddress)
	}
	if want := (TraversalAddress{"udp", "192.0.2.1", port(est.Conn)}); len(offer.LocalAddresses) != 1 || offer.LocalAddresses[0] != want {
		t.Errorf("offer localAddresses %v, want [%v]", offer.LocalAddresses, want)
	}
	if want := (TraversalAddress{"udp", "192.0.2.1", port(resp.Conn)}); !answer.Accepted || len(answer.LocalAddresses) != 1 || answer.LocalAddresses[0] != want {
		t.Errorf("answer %+v", answer)
	}
}

func TestLocalCandidatesOffByDefault(t *testing.T) {
	p := startPairWith(t, func(s *Service) {
		s.localCandidates = func(uint16) []netip.AddrPort { t.Error("host candidates gathered while sharing is off"); return nil }
	})
	stunOff(t, p)
	waitFor(t, 5*time.Second, "relay connections and A's advert", func() bool {
		_, ok := p.b.CachedAdvert(p.ida.PublicKey())
		return ok && p.a.Stats().RelaysConnected == 1 && p.b.Stats().RelaysConnected == 1
	})
	if _, err := p.b.Connect(context.Background(), p.ida.PublicKey()); !errors.Is(err, ErrRejected) {
		t.Errorf("no addresses on either side: %v", err)
	}
	offer, answer := signalsSent(t, p)
	if offer.LocalAddresses == nil || len(offer.LocalAddresses) != 0 || answer.Accepted || answer.Reason == nil || *answer.Reason != "no-usable-addresses" {
		t.Errorf("offer %+v answer %+v", offer, answer)
	}
	for _, ev := range p.relay.Relayed(SignalKind) {
		for _, k := range []Keys{keysOf(p.ida), keysOf(p.idb)} {
			if u, err := UnwrapSignal(k, ev); err == nil && !strings.Contains(string(u.Content), `"localAddresses":[]`) {
				t.Errorf("signal JSON %s", u.Content)
			}
		}
	}
}

// stunOff makes the pair's STUN responder silent.
func stunOff(t *testing.T, p *pair) {
	t.Helper()
	srv := p.stun
	srv.mu.Lock()
	srv.silent = true
	srv.mu.Unlock()
}

// signalsSent opens the offer (to A) and the answer (to B) the relay
// passed on.
func signalsSent(t *testing.T, p *pair) (Offer, Answer) {
	t.Helper()
	var o Offer
	var a Answer
	var gotO, gotA bool
	for _, ev := range p.relay.Relayed(SignalKind) {
		if u, err := UnwrapSignal(keysOf(p.ida), ev); err == nil {
			if o, err = DecodeOffer(u.Content); err != nil {
				t.Fatalf("offer: %v", err)
			}
			gotO = true
		}
		if u, err := UnwrapSignal(keysOf(p.idb), ev); err == nil {
			if a, err = DecodeAnswer(u.Content); err != nil {
				t.Fatalf("answer: %v", err)
			}
			gotA = true
		}
	}
	if !gotO || !gotA {
		t.Fatalf("relay passed on offer %v answer %v", gotO, gotA)
	}
	return o, a
}

package rendezvous

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/rendezvous/relaytest"
	"github.com/nbd-wtf/go-nostr"
)

// injectAdvert hands the relay id's signed advert with the given
// created_at and TTL.
func injectAdvert(t *testing.T, relay *relaytest.Relay, id *identity.Identity, created time.Time, ttl time.Duration, eps ...Endpoint) {
	t.Helper()
	relay.Inject(advertEvent(t, relay, id, created, ttl, eps...))
}

// advertEvent is id's signed advert with the given created_at and TTL.
func advertEvent(t *testing.T, relay *relaytest.Relay, id *identity.Identity, created time.Time, ttl time.Duration, eps ...Endpoint) *nostr.Event {
	t.Helper()
	a := OverlayAdvert{Identifier: AdvertIdentifier, Version: AdvertVersion, Endpoints: eps}
	if a.HasNAT() {
		a.SignalRelays, a.StunServers = []string{relay.URL}, []string{"stun:192.0.2.1:3478"}
	}
	ev, err := BuildAdvertEvent(id.PublicKey().Hex(), a, AdvertIdentifier, uint64(ttl/time.Second), uint64(created.UnixMilli()))
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Sign(id.Secret().Hex()); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// startSilent starts a service for self on relay that publishes nothing.
func startSilent(t *testing.T, self *identity.Identity, relay *relaytest.Relay) *Service {
	t.Helper()
	cfg := testConfig(t, self, relay.URL, "stun:127.0.0.1:9")
	cfg.Advertise = false
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc.Start(context.Background())
	t.Cleanup(svc.Close)
	return svc
}

// TestAdvertStoredWhileSubscribingIsCaughtUp: an advert the relay stores
// between answering the service's REQ and registering its subscription
// (relaytest.Gap, as @nostr-relay/core does) comes neither in the answer
// nor live; the catch-up query after EOSE finds it, where it used to wait
// for its author's next publish (30 min).
func TestAdvertStoredWhileSubscribingIsCaughtUp(t *testing.T) {
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	self, other := newID(t), newID(t)
	relay.Gap(advertEvent(t, relay, other, time.Now(), time.Hour, Endpoint{Transport: EndpointUDP, Addr: "nat"}))
	svc := startSilent(t, self, relay)
	waitFor(t, 10*time.Second, "the gap's advert cached", func() bool {
		_, ok := svc.CachedAdvert(other.PublicKey())
		return ok
	})
	if n := len(relay.Stored(AdvertKind)); n != 1 {
		t.Errorf("relay stores %d adverts, want the gap's 1", n)
	}
	// Delivered once more by nothing: the cache counts it once.
	if got := svc.Stats().AdvertsReceived; got != 1 {
		t.Errorf("adverts received %d, want 1", got)
	}
}

// sweepNode is a fake node for SweepView: sets of peers in each state.
type sweepNode struct {
	configured, cooldown           map[identity.PublicKey]bool
	connected, pending, connecting map[identity.NodeAddr]bool
	expedited                      []identity.PublicKey
}

func newSweepNode() *sweepNode {
	return &sweepNode{configured: map[identity.PublicKey]bool{}, cooldown: map[identity.PublicKey]bool{},
		connected: map[identity.NodeAddr]bool{}, pending: map[identity.NodeAddr]bool{}, connecting: map[identity.NodeAddr]bool{}}
}

func (n *sweepNode) view() SweepView {
	return SweepView{
		Configured: func(pk identity.PublicKey) bool { return n.configured[pk] },
		Connected:  func(na identity.NodeAddr) bool { return n.connected[na] },
		Pending:    func(na identity.NodeAddr) bool { return n.pending[na] },
		InCooldown: func(npub string) bool {
			for pk := range n.cooldown {
				if pk.Npub() == npub {
					return true
				}
			}
			return false
		},
		Connecting: func(na identity.NodeAddr) bool { return n.connecting[na] },
		Expedite:   func(pk identity.PublicKey) { n.expedited = append(n.expedited, pk) },
	}
}

// The sweep over adverts a service cached from the relay fixture: the
// startup sweep skips adverts older than its bound, the per-tick one does
// not; every other skip is counted in upstream's order (a peer in two
// states is counted once, by the first), and a configured peer's retry is
// pulled forward.
func TestOpenSweepOverRelayAdverts(t *testing.T) {
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	self := newID(t)
	svc := startSilent(t, self, relay)

	now := time.Now()
	ep := Endpoint{Transport: EndpointUDP, Addr: "nat"}
	names := []string{"old", "configured", "connected", "pending", "cooldown", "connecting", "fresh", "both"}
	ids := map[string]*identity.Identity{}
	for _, name := range names {
		ids[name] = newID(t)
		created := now.Add(-10 * time.Second)
		if name == "old" {
			created = now.Add(-3700 * time.Second) // past the 3600 s bound, still valid with a 4 h TTL
		}
		injectAdvert(t, relay, ids[name], created, 4*time.Hour, ep, ep, Endpoint{Transport: EndpointTCP, Addr: "8.8.8.8:443"})
	}
	waitFor(t, 5*time.Second, "every advert cached", func() bool { return len(svc.OpenCandidates(OpenSweepPull)) == len(names) })

	n := newSweepNode()
	n.configured[ids["configured"].PublicKey()] = true
	n.connected[ids["connected"].NodeAddr()] = true
	n.pending[ids["pending"].NodeAddr()] = true
	n.cooldown[ids["cooldown"].PublicKey()] = true
	n.connecting[ids["connecting"].NodeAddr()] = true
	// Connected and pending at once: counted as connected.
	n.connected[ids["both"].NodeAddr()] = true
	n.pending[ids["both"].NodeAddr()] = true

	maxAge := uint64(3600)
	nowMs := uint64(now.UnixMilli())
	picks, tally := PlanOpenSweep(nowMs, &maxAge, self.PublicKey().Hex(), svc.OpenCandidates(OpenSweepPull), 64, n.view())
	want := SweepTally{Startup: true, Cached: 8, Queued: 1, SkippedAge: 1, SkippedConfigured: 1, SkippedConnected: 2,
		SkippedRetryPending: 1, SkippedCooldown: 1, SkippedConn: 1}
	if tally != want {
		t.Errorf("startup tally %+v, want %+v", tally, want)
	}
	if len(picks) != 1 || picks[0].PublicKey != ids["fresh"].PublicKey() ||
		!slices.Equal(picks[0].Endpoints, []Endpoint{ep, {Transport: EndpointTCP, Addr: "8.8.8.8:443"}}) {
		t.Errorf("picks %+v", picks)
	}
	if len(n.expedited) != 1 || n.expedited[0] != ids["configured"].PublicKey() {
		t.Errorf("expedited %v", n.expedited)
	}
	if !tally.ShouldLog() || tally.Caller() != "startup" || tally.SkippedTotal() != 7 {
		t.Errorf("log gate %v caller %s total %d", tally.ShouldLog(), tally.Caller(), tally.SkippedTotal())
	}

	// The per-tick sweep has no age bound: the old advert is queued too.
	picks, tally = PlanOpenSweep(nowMs, nil, self.PublicKey().Hex(), svc.OpenCandidates(OpenSweepPull), 64, n.view())
	if tally.Startup || tally.SkippedAge != 0 || tally.Queued != 2 || len(picks) != 2 || tally.Caller() != "per-tick" {
		t.Errorf("per-tick tally %+v", tally)
	}
	var got []identity.PublicKey
	for _, p := range picks {
		got = append(got, p.PublicKey)
	}
	if !slices.Contains(got, ids["old"].PublicKey()) || !slices.Contains(got, ids["fresh"].PublicKey()) {
		t.Errorf("per-tick picks %v", got)
	}

	// A budget of one queues one and stops looking; zero looks at nothing.
	n.expedited = nil
	picks, tally = PlanOpenSweep(nowMs, nil, self.PublicKey().Hex(), svc.OpenCandidates(OpenSweepPull), 1, n.view())
	if len(picks) != 1 || tally.Queued != 1 {
		t.Errorf("budget 1: %+v", tally)
	}
	n.expedited = nil
	picks, tally = PlanOpenSweep(nowMs, &maxAge, self.PublicKey().Hex(), svc.OpenCandidates(OpenSweepPull), 0, n.view())
	if len(picks) != 0 || !tally.BudgetZero || tally.ShouldLog() || len(n.expedited) != 0 || tally.SkippedTotal() != 0 {
		t.Errorf("budget 0: %+v, expedited %v", tally, n.expedited)
	}
}

// A sweep pulls at most 64 cached adverts, never our own.
func TestOpenSweepPull(t *testing.T) {
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	self := newID(t)
	cfg := testConfig(t, self, relay.URL, "stun:127.0.0.1:9")
	cfg.AdvertCacheMax = 256
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc.Start(context.Background())
	t.Cleanup(svc.Close)
	svc.SetEndpoints([]Endpoint{{EndpointUDP, "nat"}})
	for range 70 {
		injectAdvert(t, relay, newID(t), time.Now(), time.Hour, Endpoint{Transport: EndpointUDP, Addr: "nat"})
	}
	waitFor(t, 5*time.Second, "70 adverts and ours cached", func() bool {
		_, own := svc.CachedAdvert(self.PublicKey())
		return own && svc.Stats().AdvertCacheEntries == 71
	})
	cands := svc.OpenCandidates(OpenSweepPull)
	if len(cands) != OpenSweepPull {
		t.Errorf("pulled %d", len(cands))
	}
	for _, c := range cands {
		if c.AuthorHex == self.PublicKey().Hex() {
			t.Error("own advert among the candidates")
		}
	}
	picks, tally := PlanOpenSweep(uint64(time.Now().UnixMilli()), nil, self.PublicKey().Hex(), cands, 64, newSweepNode().view())
	if len(picks) != 64 || tally.Cached != 64 || tally.Queued != 64 {
		t.Errorf("sweep %+v", tally)
	}
}

// Our own advert, were it among the candidates, is counted as upstream's
// driver counts it: too old first, then configured, then self. An advert
// with no endpoints and a key that does not parse are skipped too.
func TestOpenSweepSelfAndMalformed(t *testing.T) {
	self, other := newID(t), newID(t)
	nowMs := uint64(time.Now().UnixMilli())
	eps := []Endpoint{{EndpointUDP, "nat"}}
	created := int64(nowMs/1000) - 10
	own := CachedAdvert{AuthorHex: self.PublicKey().Hex(), Advert: OverlayAdvert{Endpoints: eps}, CreatedAt: created}
	oldOwn := own
	oldOwn.CreatedAt = created - 7200
	cands := []CachedAdvert{own, oldOwn,
		{AuthorHex: "zz", Advert: OverlayAdvert{Endpoints: eps}, CreatedAt: created},
		{AuthorHex: other.PublicKey().Hex(), CreatedAt: created}}
	maxAge := uint64(3600)
	n := newSweepNode()
	picks, tally := PlanOpenSweep(nowMs, &maxAge, self.PublicKey().Hex(), cands, 8, n.view())
	if len(picks) != 0 || tally.SkippedSelf != 1 || tally.SkippedAge != 1 || tally.SkippedInvalidNpub != 1 || tally.SkippedNoEndpoints != 1 {
		t.Errorf("tally %+v", tally)
	}
	n.configured[self.PublicKey()] = true
	_, tally = PlanOpenSweep(nowMs, nil, self.PublicKey().Hex(), cands[:1], 8, n.view())
	if tally.SkippedConfigured != 1 || tally.SkippedSelf != 0 || len(n.expedited) != 0 {
		t.Errorf("configured self %+v (expedited %v)", tally, n.expedited)
	}
}

func TestOpenSweepBudget(t *testing.T) {
	for _, c := range []struct{ maxPending, pending, hs, peers, want int }{
		{64, 0, -1, -1, 64},
		{64, 60, -1, -1, 4},
		{64, 70, -1, -1, 0},
		{64, 0, 3, -1, 3},
		{64, 0, 10, 2, 2},
		{64, 0, 0, 5, 0},
	} {
		if got := OpenSweepBudget(c.maxPending, c.pending, c.hs, c.peers); got != c.want {
			t.Errorf("OpenSweepBudget(%d, %d, %d, %d) = %d, want %d", c.maxPending, c.pending, c.hs, c.peers, got, c.want)
		}
	}
}

func TestStartupSweepOnce(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	s := StartupSweep{Started: t0, Delay: 5 * time.Second, MaxAge: time.Hour}
	if _, due := s.Due(t0.Add(4999 * time.Millisecond)); due {
		t.Error("due before the delay")
	}
	age, due := s.Due(t0.Add(5 * time.Second))
	if !due || age != 3600 || !s.Done() {
		t.Errorf("at the delay: %d %v", age, due)
	}
	if _, due := s.Due(t0.Add(time.Hour)); due {
		t.Error("due twice")
	}
}

package rendezvous

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
)

// Fixed lookup timeouts (upstream's constants).
const (
	advertFetchTimeout = 2 * time.Second
	inboxFetchTimeout  = 1500 * time.Millisecond
	inboxSince         = 30 * 24 * time.Hour
	eventQueue         = 256 // relay adverts awaiting dispatch
	signalQueue        = 64  // strangers' signals awaiting dispatch, apart: an advert flood cannot crowd them out
	wantedSignalQueue  = 16  // wanted peers' signals awaiting dispatch: strangers' cannot crowd them out
	establishedQueue   = 16  // responder results awaiting the node
)

// Config is node.rendezvous.nostr.* as the service uses it.
type Config struct {
	Identity             *identity.Identity
	Advertise            bool
	AdvertRelays         []string
	DMRelays             []string
	STUNServers          []string
	ShareLocalCandidates bool
	App                  string
	// Namespaces are the overlays the node publishes its advert under and
	// reads others' from; empty means master's alone, with App.
	Namespaces        []Namespace
	SignalTTL         time.Duration
	ReplayWindow      time.Duration
	AttemptTimeout    time.Duration
	PunchStartDelay   time.Duration
	PunchInterval     time.Duration
	PunchDuration     time.Duration
	AdvertTTL         time.Duration
	AdvertRefresh     time.Duration
	MaxIncomingOffers int
	MaxOffersPerNpub  int
	AdvertCacheMax    int
	SeenSessionsMax   int
	Failure           FailurePolicy
	Log               *slog.Logger
	// Now is the wall clock (tests move it); nil: time.Now.
	Now func() time.Time
	// TestMapTarget, for tests on loopback only, rewrites each planned
	// punch target: a loopback reflexive address is never punchable, and
	// the production filter is not weakened for tests, so a test's STUN
	// responder reports a documentation address that this maps back.
	// nil in production.
	TestMapTarget func(netip.AddrPort) netip.AddrPort
}

// Established is a punched path the node adopts as a UDP transport: it
// owns Conn from here on.
type Established struct {
	SessionID string
	Peer      identity.PublicKey
	Remote    netip.AddrPort
	Conn      *net.UDPConn
	Initiator bool
}

// Stats are the service's counters (show_metrics "rendezvous").
type Stats struct {
	RelaysConfigured     int    `json:"relays_configured"`
	RelaysConnected      int    `json:"relays_connected"`
	RelayConnects        uint64 `json:"relay_connects"`
	RelayConnectFailures uint64 `json:"relay_connect_failures"`
	AdvertsPublished     uint64 `json:"adverts_published"`
	AdvertPublishErrors  uint64 `json:"advert_publish_errors"`
	InboxPublished       uint64 `json:"inbox_relays_published"`
	AdvertsReceived      uint64 `json:"adverts_received"`
	AdvertsRejected      uint64 `json:"adverts_rejected"`
	AdvertCacheEntries   int    `json:"advert_cache_entries"`
	AdvertCacheEvicted   uint64 `json:"advert_cache_evicted"`
	EventsDropped        uint64 `json:"relay_events_dropped"`
	SignalsReceived      uint64 `json:"signals_received"`
	SignalsInvalid       uint64 `json:"signals_invalid"`
	SignalsDropped       uint64 `json:"signals_dropped"`
	// SignalsStrangerDrops counts the strangers' signals among
	// SignalsDropped: past signalQueue queued. Wanted peers' signals have
	// their own queue, which strangers cannot fill.
	SignalsStrangerDrops uint64 `json:"signals_dropped_stranger"`
	OffersSent           uint64 `json:"offers_sent"`
	OffersReceived       uint64 `json:"offers_received"`
	OffersRejected       uint64 `json:"offers_rejected"`
	OffersRefusedGlobal  uint64 `json:"offers_refused_global"`
	OffersRefusedNpub    uint64 `json:"offers_refused_per_npub"`
	OffersReplayed       uint64 `json:"offers_replayed"`
	// SeenSessionsEvicted counts session ids dropped, oldest first, from
	// the full replay cache (seen_sessions_max).
	SeenSessionsEvicted uint64 `json:"seen_sessions_evicted"`
	// Offers from strangers (neither configured nor being initiated to)
	// refused by the shared rate, the per-author interval and the
	// concurrency share (StrangerGate).
	OffersRefusedStrangerRate   uint64 `json:"offers_refused_stranger_rate"`
	OffersRefusedStrangerAuthor uint64 `json:"offers_refused_stranger_author"`
	OffersRefusedStrangerSlots  uint64 `json:"offers_refused_stranger_slots"`
	// StrangerTargetsCapped counts a stranger's planned punch targets
	// dropped past MaxStrangerPunchTargets.
	StrangerTargetsCapped uint64 `json:"stranger_punch_targets_capped"`
	// PunchForeign counts punch packets with the session hash from a
	// source outside the session's targets: ignored, never adopted.
	PunchForeign       uint64 `json:"punch_packets_foreign"`
	OffersElection     uint64 `json:"offers_yielded_election"`
	AnswersSent        uint64 `json:"answers_sent"`
	AnswersReceived    uint64 `json:"answers_received"`
	AnswersUnmatched   uint64 `json:"answers_unmatched"`
	AttemptsStarted    uint64 `json:"traversals_started"`
	AttemptsSucceeded  uint64 `json:"traversals_succeeded"`
	AttemptsFailed     uint64 `json:"traversals_failed"`
	ResponderSucceeded uint64 `json:"responder_punches_succeeded"`
	ResponderFailed    uint64 `json:"responder_punches_failed"`
	EstablishedDropped uint64 `json:"established_dropped"`
	STUNFailures       uint64 `json:"stun_failures"`
	Cooldowns          uint64 `json:"cooldowns_entered"`
}

type counters struct {
	advertsPublished, advertPublishErrors, inboxPublished   atomic.Uint64
	advertsReceived, advertsRejected, eventsDropped         atomic.Uint64
	signalsReceived, signalsInvalid, signalsDropped         atomic.Uint64
	signalsDroppedStranger                                  atomic.Uint64
	offersSent, offersReceived, offersRejected              atomic.Uint64
	offersElection                                          atomic.Uint64
	answersSent, answersReceived, answersUnmatched          atomic.Uint64
	attemptsStarted, attemptsSucceeded, attemptsFailed      atomic.Uint64
	responderSucceeded, responderFailed, establishedDropped atomic.Uint64
	stunFailures, cooldowns                                 atomic.Uint64
	strangerTargetsCapped, punchForeign                     atomic.Uint64
}

type answerMsg struct {
	answer   Answer
	sender   string
	wrapID   string
	received uint64
}

// Service is one node's Nostr rendezvous.
type Service struct {
	cfg     Config
	log     *slog.Logger
	keys    Keys
	npub    string
	ownAddr identity.NodeAddr

	relays       *relaySet
	advertRelays []string
	dmRelays     []string
	pool         []string

	mu        sync.Mutex
	cache     *AdvertCache
	pending   map[string]chan answerMsg // by offer nonce
	endpoints []Endpoint                // the advert body to publish
	published string                    // content last published
	advertID  string

	replay     *ReplayCache
	admission  *Admission
	strangers  *StrangerGate
	failures   *FailureState
	initiators Initiators
	canAccept  atomic.Bool

	events chan relayEvent // adverts
	// Unwrapped signals awaiting dispatch, by sender: wantedSignals from
	// configured, proven and initiated-to peers (dispatched first),
	// signals from everyone else.
	signals, wantedSignals chan signal
	publishReq             chan struct{}
	est                    chan Established
	c                      counters

	// mapTarget rewrites planned punch targets; nil in production. Tests
	// on loopback set it, because a loopback reflexive address is never
	// punchable and the production filter must not be weakened.
	mapTarget func(netip.AddrPort) netip.AddrPort
	// localCandidates finds the host candidates for a port
	// (LocalCandidates); tests replace it.
	localCandidates func(port uint16) []netip.AddrPort

	wg      sync.WaitGroup
	closed  bool // under mu: no new tracked work after Close
	cancel  context.CancelFunc
	ctx     context.Context
	started atomic.Bool
}

// New makes a service; Start connects it.
func New(cfg Config) (*Service, error) {
	if cfg.Identity == nil {
		return nil, errors.New("rendezvous: no identity")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.App == "" {
		cfg.App = AdvertIdentifier
	}
	if len(cfg.Namespaces) == 0 {
		cfg.Namespaces = []Namespace{{Identifier: AdvertIdentifier, App: cfg.App}}
	}
	for i, ns := range cfg.Namespaces {
		if ns.Identifier == "" || ns.App == "" {
			return nil, fmt.Errorf("rendezvous: namespace %d has no identifier or app", i)
		}
		for _, o := range cfg.Namespaces[:i] {
			if o.Identifier == ns.Identifier {
				return nil, fmt.Errorf("rendezvous: namespace %q given twice", ns.Identifier)
			}
		}
	}
	cfg.Namespaces = slices.Clone(cfg.Namespaces)
	norm := func(in []string) []string {
		var out []string
		for _, u := range in {
			if n := NormalizeRelayURL(u); n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out
	}
	s := &Service{
		cfg: cfg, log: cfg.Log.With("component", "rendezvous"),
		keys:          Keys{SecretHex: cfg.Identity.Secret().Hex(), PublicHex: cfg.Identity.PublicKey().Hex()},
		npub:          cfg.Identity.Npub(),
		ownAddr:       cfg.Identity.NodeAddr(),
		advertRelays:  norm(cfg.AdvertRelays),
		dmRelays:      norm(cfg.DMRelays),
		cache:         NewAdvertCache(cfg.AdvertCacheMax),
		pending:       map[string]chan answerMsg{},
		replay:        NewReplayCache(cfg.SeenSessionsMax, uint64(cfg.ReplayWindow.Milliseconds())),
		admission:     NewAdmission(cfg.MaxIncomingOffers, cfg.MaxOffersPerNpub),
		strangers:     NewStrangerGate(cfg.MaxIncomingOffers),
		failures:      NewFailureState(cfg.Failure),
		events:        make(chan relayEvent, eventQueue),
		signals:       make(chan signal, signalQueue),
		wantedSignals: make(chan signal, wantedSignalQueue),
		publishReq:    make(chan struct{}, 1),
		est:           make(chan Established, establishedQueue),
	}
	s.mapTarget = cfg.TestMapTarget
	s.localCandidates = LocalCandidates
	s.pool = norm(append(append([]string(nil), s.advertRelays...), s.dmRelays...))
	s.relays = newRelaySet(s.log, s.pool)
	s.canAccept.Store(true)
	return s, nil
}

func (s *Service) nowMs() uint64 { return uint64(s.cfg.Now().UnixMilli()) }

// Npub is the node's npub.
func (s *Service) Npub() string { return s.npub }

// Established delivers the paths this node punched as responder.
func (s *Service) Established() <-chan Established { return s.est }

// SetAcceptingPeers is the node's capacity (below max_peers): offers are
// ignored and no initiator starts while it is false.
func (s *Service) SetAcceptingPeers(ok bool) { s.canAccept.Store(ok) }

// Failures is the per-npub failure state.
func (s *Service) Failures() *FailureState { return s.failures }

// Start connects to the relays and runs until ctx ends or Close.
func (s *Service) Start(ctx context.Context) {
	if !s.started.CompareAndSwap(false, true) {
		return
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	own := s.keys.PublicHex
	s.relays.onConnect = func(url string) {
		if slices.Contains(s.dmRelays, url) {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.publishInbox(url)
			}()
		}
		s.RequestPublish()
	}
	s.relays.run(s.ctx, func(url string) nostr.Filters {
		var fs nostr.Filters
		if slices.Contains(s.dmRelays, url) {
			fs = append(fs, nostr.Filter{Kinds: []int{SignalKind}, Tags: nostr.TagMap{"p": {own}}, LimitZero: true})
		}
		if slices.Contains(s.advertRelays, url) {
			fs = append(fs, nostr.Filter{Kinds: []int{AdvertKind}, Tags: nostr.TagMap{"d": s.identifiers()}})
		}
		return fs
	}, s.deliver)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.dispatch()
	}()
	go func() {
		defer s.wg.Done()
		s.publishLoop()
	}()
	s.log.Info("Nostr rendezvous started", "npub", s.npub, "advert_relays", len(s.advertRelays),
		"dm_relays", len(s.dmRelays), "stun_servers", len(s.cfg.STUNServers), "advertise", s.cfg.Advertise)
}

// Close stops everything and waits for it. Established paths not yet
// taken are closed.
func (s *Service) Close() {
	if !s.started.Load() {
		return
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.relays.wait()
	s.wg.Wait()
	for {
		select {
		case e := <-s.est:
			e.Conn.Close()
		default:
			return
		}
	}
}

// Stats reads the counters.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	entries, evicted := s.cache.Len(), s.cache.Evicted
	s.mu.Unlock()
	c := &s.c
	s.admission.mu.Lock()
	rg, rn := s.admission.RefusedGlobal, s.admission.RefusedNpub
	s.admission.mu.Unlock()
	s.replay.mu.Lock()
	replays, seenEvicted := s.replay.Replays, s.replay.Evicted
	s.replay.mu.Unlock()
	sRate, sAuthor, sSlots := s.strangers.Counts()
	return Stats{
		RelaysConfigured: len(s.pool), RelaysConnected: s.relays.count(),
		RelayConnects: s.relays.connects.Load(), RelayConnectFailures: s.relays.failures.Load(),
		AdvertsPublished: c.advertsPublished.Load(), AdvertPublishErrors: c.advertPublishErrors.Load(),
		InboxPublished: c.inboxPublished.Load(), AdvertsReceived: c.advertsReceived.Load(),
		AdvertsRejected: c.advertsRejected.Load(), AdvertCacheEntries: entries, AdvertCacheEvicted: evicted,
		EventsDropped: c.eventsDropped.Load(), SignalsReceived: c.signalsReceived.Load(),
		SignalsInvalid: c.signalsInvalid.Load(), SignalsDropped: c.signalsDropped.Load(),
		SignalsStrangerDrops: c.signalsDroppedStranger.Load(), OffersSent: c.offersSent.Load(),
		OffersReceived: c.offersReceived.Load(), OffersRejected: c.offersRejected.Load(),
		OffersRefusedGlobal: rg, OffersRefusedNpub: rn, OffersReplayed: replays, SeenSessionsEvicted: seenEvicted,
		OffersElection: c.offersElection.Load(), AnswersSent: c.answersSent.Load(),
		AnswersReceived: c.answersReceived.Load(), AnswersUnmatched: c.answersUnmatched.Load(),
		AttemptsStarted: c.attemptsStarted.Load(), AttemptsSucceeded: c.attemptsSucceeded.Load(),
		AttemptsFailed: c.attemptsFailed.Load(), ResponderSucceeded: c.responderSucceeded.Load(),
		ResponderFailed: c.responderFailed.Load(), EstablishedDropped: c.establishedDropped.Load(),
		STUNFailures: c.stunFailures.Load(), Cooldowns: c.cooldowns.Load(),
		OffersRefusedStrangerRate: sRate, OffersRefusedStrangerAuthor: sAuthor, OffersRefusedStrangerSlots: sSlots,
		StrangerTargetsCapped: c.strangerTargetsCapped.Load(), PunchForeign: c.punchForeign.Load(),
	}
}

// PublicIP asks the STUN servers, from a fresh ephemeral IPv4 socket, for
// this host's public address (the advert of a public transport bound to a
// wildcard address): 5 s per server.
func (s *Service) PublicIP(ctx context.Context) (netip.Addr, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: bind: %w", ErrSTUN, err)
	}
	defer conn.Close()
	r, err := Discover(ctx, conn, s.cfg.STUNServers, AdvertSTUNTimeout)
	if err != nil {
		return netip.Addr{}, err
	}
	return r.Reflexive.Addr(), nil
}

// --- adverts ---

// SetEndpoints sets the advert body from the transports; a change is
// published at once.
func (s *Service) SetEndpoints(eps []Endpoint) {
	s.mu.Lock()
	changed := !slices.Equal(eps, s.endpoints)
	s.endpoints = slices.Clone(eps)
	s.mu.Unlock()
	if changed {
		s.RequestPublish()
	}
}

// RequestPublish asks the publish loop to (re)publish the advert.
func (s *Service) RequestPublish() {
	select {
	case s.publishReq <- struct{}{}:
	default:
	}
}

// localAdvert is the advert to publish, or false when there is nothing
// to advertise.
func (s *Service) localAdvert() (OverlayAdvert, bool) {
	s.mu.Lock()
	eps := slices.Clone(s.endpoints)
	s.mu.Unlock()
	if !s.cfg.Advertise {
		return OverlayAdvert{}, false
	}
	var kept []Endpoint
	for _, e := range eps {
		if PubliclyUsable(e) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return OverlayAdvert{}, false
	}
	a := OverlayAdvert{Version: AdvertVersion, Endpoints: kept}
	if a.HasNAT() {
		a.SignalRelays = slices.Clone(s.dmRelays)
		a.StunServers = slices.Clone(s.cfg.STUNServers)
	}
	return a, true
}

func (s *Service) publishLoop() {
	refresh := time.NewTicker(max(s.cfg.AdvertRefresh, time.Second))
	defer refresh.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.publishReq:
		case <-refresh.C:
		}
		s.publishAdvert()
	}
}

// publishAdvert signs and sends the advert to every connected advert
// relay: on a body change, on each relay (re)connection and on the
// refresh timer, as upstream.
func (s *Service) publishAdvert() {
	a, ok := s.localAdvert()
	if !ok {
		return
	}
	if s.relays.count() == 0 {
		return // each relay connection requests a publish
	}
	for i, ns := range s.cfg.Namespaces {
		a.Identifier = ns.Identifier
		s.publishIn(ns, a, i == 0)
	}
}

// publishIn signs and sends the advert a under the namespace ns; first
// says it is the node's main namespace, whose body and event id are
// recorded.
func (s *Service) publishIn(ns Namespace, a OverlayAdvert, first bool) {
	body, _ := json.Marshal(a)
	ev, err := BuildAdvertEvent(s.keys.PublicHex, a, ns.App, uint64(s.cfg.AdvertTTL/time.Second), s.nowMs())
	if err == nil {
		err = ev.Sign(s.keys.SecretHex)
	}
	if err != nil {
		s.c.advertPublishErrors.Add(1)
		s.log.Warn("cannot build overlay advert", "error", err)
		return
	}
	n, err := s.relays.publish(s.ctx, s.advertRelays, ev)
	if err != nil {
		s.c.advertPublishErrors.Add(1)
		s.log.Warn("overlay advert publish failed", "error", err)
		return
	}
	s.c.advertsPublished.Add(1)
	if first {
		s.mu.Lock()
		s.published, s.advertID = string(body), ev.ID
		s.mu.Unlock()
	}
	// Our own advert is cached too (never used as a candidate).
	s.ingestAdvert(&ev)
	log := []any{"id", ev.ID, "relays", n, "endpoints", endpointSummary(a.Endpoints)}
	if len(s.cfg.Namespaces) > 1 {
		log = append(log, "namespace", ns.Identifier)
	}
	s.log.Info("overlay advert published", log...)
}

// identifiers are the d tags of the node's namespaces.
func (s *Service) identifiers() []string {
	out := make([]string, len(s.cfg.Namespaces))
	for i, ns := range s.cfg.Namespaces {
		out[i] = ns.Identifier
	}
	return out
}

// parseAdvert parses ev in the namespace its d tag names, which must be
// one of the node's.
func (s *Service) parseAdvert(ev *nostr.Event) (OverlayAdvert, error) {
	d := ev.Tags.GetD()
	for _, ns := range s.cfg.Namespaces {
		if ns.Identifier == d {
			return ParseAdvertEventIn(ev, ns)
		}
	}
	if len(s.cfg.Namespaces) == 1 {
		// One namespace: its checks name what is wrong, as before.
		return ParseAdvertEventIn(ev, s.cfg.Namespaces[0])
	}
	return OverlayAdvert{}, fmt.Errorf("%w: identifier %q is none of this node's", ErrInvalidAdvert, d)
}

func endpointSummary(eps []Endpoint) string {
	out := ""
	for i, e := range eps {
		if i > 0 {
			out += ","
		}
		out += e.Transport + ":" + e.Addr
	}
	return out
}

func (s *Service) publishInbox(url string) {
	ev := nostr.Event{PubKey: s.keys.PublicHex, CreatedAt: nostr.Timestamp(s.nowMs() / 1000), Kind: InboxRelaysKind, Tags: nostr.Tags{}}
	for _, u := range s.dmRelays {
		ev.Tags = append(ev.Tags, nostr.Tag{"r", u})
	}
	if err := ev.Sign(s.keys.SecretHex); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, relayOpTimeout)
	defer cancel()
	if _, err := s.relays.publish(ctx, []string{url}, ev); err != nil {
		s.log.Debug("inbox relay list publish failed", "relay", url, "error", err)
		return
	}
	s.c.inboxPublished.Add(1)
}

// ingestAdvert validates an advert event and caches it. It returns the
// advert when it is valid, whether or not the cache kept it.
func (s *Service) ingestAdvert(ev *nostr.Event) (OverlayAdvert, bool) {
	now := s.nowMs()
	a, err := s.parseAdvert(ev)
	if err != nil {
		s.c.advertsRejected.Add(1)
		s.log.Debug("overlay advert rejected", "author", ev.PubKey, "error", err)
		return OverlayAdvert{}, false
	}
	until, ok := ValidUntilMs(ev, AdvertMaxAgeMs(ev, uint64(s.cfg.AdvertTTL.Milliseconds())), now)
	if !ok {
		s.c.advertsRejected.Add(1)
		return OverlayAdvert{}, false
	}
	s.mu.Lock()
	stored := s.cache.Insert(CachedAdvert{AuthorHex: ev.PubKey, Advert: a, CreatedAt: int64(ev.CreatedAt), ValidUntilMs: until}, now)
	s.mu.Unlock()
	if stored {
		s.c.advertsReceived.Add(1)
	}
	return a, true
}

// SetWanted names the peers whose adverts the node needs (its configured
// peers): the cache keeps them apart from strangers' adverts, which can
// never evict them. Call it before Start.
func (s *Service) SetWanted(pks []identity.PublicKey) {
	hexes := make([]string, 0, len(pks))
	for _, pk := range pks {
		hexes = append(hexes, pk.Hex())
	}
	s.mu.Lock()
	s.cache.SetWanted(hexes)
	s.mu.Unlock()
}

// MarkProven notes a peer the node linked to though it is not
// configured (open discovery): its advert is evicted only after every
// unproven stranger's.
func (s *Service) MarkProven(pk identity.PublicKey) {
	s.mu.Lock()
	s.cache.MarkProven(pk.Hex())
	s.mu.Unlock()
}

// CachedAdvert returns a peer's cached advert.
func (s *Service) CachedAdvert(pk identity.PublicKey) (CachedAdvert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.Prune(s.nowMs())
	return s.cache.Get(pk.Hex(), s.nowMs())
}

// OpenCandidates are up to limit valid cached adverts of other nodes,
// picked at random (see AdvertCache.Sample).
func (s *Service) OpenCandidates(limit int) []CachedAdvert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache.Sample(s.nowMs(), s.keys.PublicHex, limit)
}

// FetchAdvert returns pk's advert: from the cache, else from the advert
// relays within 2 s (the newest valid one), asked for by author so that
// no one else's adverts stand in the way.
func (s *Service) FetchAdvert(ctx context.Context, pk identity.PublicKey) (OverlayAdvert, error) {
	if c, ok := s.CachedAdvert(pk); ok {
		return c.Advert, nil
	}
	qctx, cancel := context.WithTimeout(ctx, advertFetchTimeout)
	defer cancel()
	evs := s.relays.query(qctx, s.advertRelays, nostr.Filter{Authors: []string{pk.Hex()}, Kinds: []int{AdvertKind},
		Tags: nostr.TagMap{"d": s.identifiers()}}, 16)
	slices.SortFunc(evs, func(a, b *nostr.Event) int { return int(b.CreatedAt - a.CreatedAt) })
	for _, ev := range evs {
		if ev.PubKey != pk.Hex() {
			continue
		}
		if a, ok := s.ingestAdvert(ev); ok {
			return a, nil
		}
	}
	return OverlayAdvert{}, fmt.Errorf("%w: %s", ErrMissingAdvert, pk.Npub())
}

// Refetch outcomes of RefetchAdvert (upstream's stale-advert check).
const (
	RefetchEvicted   = "evicted"   // no advert on the relays: cache entry and streak dropped
	RefetchRefreshed = "refreshed" // a newer advert: cached, streak reset
	RefetchSame      = "same"      // the cached advert stands, and so does the cooldown
	RefetchSkipped   = "skipped"   // no relay answered
)

// RefetchAdvert asks the advert relays for pk's advert again, bypassing
// the cache, after its failure streak reached the threshold: a peer whose
// advert is gone or newer gets a fresh start.
func (s *Service) RefetchAdvert(ctx context.Context, pk identity.PublicKey) string {
	if s.relays.count() == 0 {
		return RefetchSkipped
	}
	qctx, cancel := context.WithTimeout(ctx, advertFetchTimeout)
	defer cancel()
	evs := s.relays.query(qctx, s.advertRelays, nostr.Filter{Authors: []string{pk.Hex()}, Kinds: []int{AdvertKind},
		Tags: nostr.TagMap{"d": s.identifiers()}}, 16)
	old, had := s.CachedAdvert(pk)
	var newest *nostr.Event
	for _, ev := range evs {
		if ev.PubKey != pk.Hex() {
			continue
		}
		if _, err := s.parseAdvert(ev); err != nil {
			continue
		}
		if newest == nil || ev.CreatedAt > newest.CreatedAt {
			newest = ev
		}
	}
	switch {
	case newest == nil:
		s.mu.Lock()
		s.cache.Remove(pk.Hex())
		s.mu.Unlock()
		s.failures.Reset(pk.Npub())
		return RefetchEvicted
	case !had || int64(newest.CreatedAt) > old.CreatedAt:
		s.ingestAdvert(newest)
		s.failures.Reset(pk.Npub())
		return RefetchRefreshed
	}
	return RefetchSame
}

// inboxRelays is the peer's kind-10050 list (newest), empty on failure.
func (s *Service) inboxRelays(ctx context.Context, peerHex string) []string {
	qctx, cancel := context.WithTimeout(ctx, inboxFetchTimeout)
	defer cancel()
	since := nostr.Timestamp(s.cfg.Now().Add(-inboxSince).Unix())
	urls := append(append([]string(nil), s.dmRelays...), s.advertRelays...)
	evs := s.relays.query(qctx, urls, nostr.Filter{Authors: []string{peerHex}, Kinds: []int{InboxRelaysKind}, Since: &since}, 16)
	var best *nostr.Event
	for _, ev := range evs {
		if ev.PubKey == peerHex && CheckEvent(ev) == nil && (best == nil || ev.CreatedAt > best.CreatedAt) {
			best = ev
		}
	}
	if best == nil {
		return nil
	}
	return InboxRelays(best)
}

// --- dispatch ---

// dispatch handles queued events, wanted peers' signals first.
func (s *Service) dispatch() {
	for {
		select {
		case sg := <-s.wantedSignals:
			s.handleSignal(sg)
			continue
		default:
		}
		select {
		case <-s.ctx.Done():
			return
		case sg := <-s.wantedSignals:
			s.handleSignal(sg)
		case sg := <-s.signals:
			s.handleSignal(sg)
		case re := <-s.events:
			s.ingestAdvert(re.ev)
		}
	}
}

// signal is an unwrapped traversal signal and its authenticated sender.
type signal struct {
	u      Unwrapped
	sender identity.PublicKey
}

// deliver queues a relay event for dispatch, adverts and signals apart,
// dropping (and counting) what does not fit. A gift wrap hides its sender,
// so a signal is unwrapped here, on its relay's reader, before it is
// queued: a wanted peer's signal goes to its own queue, which strangers'
// signals cannot fill, and a flood of gift wraps slows the relay that
// carries it rather than pushing a wanted peer's signal out.
func (s *Service) deliver(re relayEvent) {
	switch re.ev.Kind {
	case SignalKind:
		sg, ok := s.unwrap(re.ev)
		if !ok {
			return
		}
		q, stranger := s.signals, true
		if s.wantedPeer(sg.sender) {
			q, stranger = s.wantedSignals, false
		}
		select {
		case q <- sg:
		default:
			s.c.signalsDropped.Add(1)
			if stranger {
				s.c.signalsDroppedStranger.Add(1)
			}
		}
	case AdvertKind:
		select {
		case s.events <- re:
		default:
			s.c.eventsDropped.Add(1)
		}
	}
}

// unwrap opens a gift wrap addressed to us (counted as received, and as
// invalid when it does not open).
func (s *Service) unwrap(ev *nostr.Event) (signal, bool) {
	s.c.signalsReceived.Add(1)
	u, err := UnwrapSignal(s.keys, ev)
	if err != nil {
		s.c.signalsInvalid.Add(1)
		s.log.Debug("dropping traversal signal", "id", ev.ID, "error", err)
		return signal{}, false
	}
	senderPK, err := identity.ParsePublicKeyHex(u.SenderHex)
	if err != nil {
		s.c.signalsInvalid.Add(1)
		return signal{}, false
	}
	return signal{u: u, sender: senderPK}, true
}

func (s *Service) handleSignal(sg signal) {
	u, senderPK := sg.u, sg.sender
	if a, err := DecodeAnswer(u.Content); err == nil {
		if a.RecipientNpub != s.npub {
			s.c.signalsInvalid.Add(1)
			return
		}
		s.c.answersReceived.Add(1)
		s.mu.Lock()
		ch := s.pending[a.InReplyTo]
		s.mu.Unlock()
		if ch == nil {
			s.c.answersUnmatched.Add(1)
			return
		}
		select {
		case ch <- answerMsg{answer: a, sender: senderPK.Npub(), wrapID: u.WrapID, received: s.nowMs()}:
		default:
		}
		return
	}
	o, err := DecodeOffer(u.Content)
	if err != nil || o.RecipientNpub != s.npub {
		s.c.signalsInvalid.Add(1)
		return
	}
	s.c.offersReceived.Add(1)
	sender := senderPK.Npub()
	stranger := !s.wantedPeer(senderPK)
	if stranger && !s.strangers.Acquire(senderPK.Hex(), s.nowMs()) {
		s.log.Debug("traversal offer dropped: stranger over its allowance", "peer", sender)
		return
	}
	releaseStranger := func() {
		if stranger {
			s.strangers.Release()
		}
	}
	switch s.admission.TryAcquire(sender) {
	case PerNpubFull:
		releaseStranger()
		s.log.Debug("traversal offer dropped: per-npub admission full", "peer", sender)
		return
	case GlobalFull:
		releaseStranger()
		s.log.Warn("traversal offer dropped: global admission full", "peer", sender)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer releaseStranger()
		defer s.admission.Release(sender)
		if err := s.respond(senderPK, o, stranger); err != nil {
			s.log.Debug("traversal responder ended", "peer", sender, "session", o.SessionID, "error", err)
		}
	}()
}

// wantedPeer reports whether an offer's sender is one the node wants: a
// configured peer (SetWanted), an open-discovery peer it has linked to
// (MarkProven) or one it is initiating to. Everyone else is a stranger
// (see StrangerGate).
func (s *Service) wantedPeer(pk identity.PublicKey) bool {
	s.mu.Lock()
	wanted := s.cache.Wanted(pk.Hex()) || s.cache.Proven(pk.Hex())
	s.mu.Unlock()
	return wanted || s.initiators.Active(pk.Npub())
}

func (s *Service) punchHint() PunchHint {
	return PunchHint{StartAtMs: s.nowMs() + uint64(s.cfg.PunchStartDelay.Milliseconds()),
		IntervalMs: uint64(s.cfg.PunchInterval.Milliseconds()), DurationMs: uint64(s.cfg.PunchDuration.Milliseconds())}
}

// candidates binds the punch socket and learns its addresses (upstream's
// observe_traversal_addresses): the reflexive address by STUN on that
// socket, and with share_local_candidates the host candidates on its
// port; without, an empty (never null) list.
func (s *Service) candidates(ctx context.Context) (*net.UDPConn, *TraversalAddress, []TraversalAddress, *string, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("bind punch socket: %w", err)
	}
	var refl *TraversalAddress
	var server *string
	r, err := Discover(ctx, conn, s.cfg.STUNServers, TraversalSTUNTimeout)
	stunLog := logging.WithTarget(s.log, "fips::nostr::stun")
	if err != nil {
		s.c.stunFailures.Add(1)
		stunLog.Debug("stun observation failed, falling back to LAN-only addresses", "error", err)
	} else {
		refl = &TraversalAddress{Protocol: "udp", IP: r.Reflexive.Addr().String(), Port: r.Reflexive.Port()}
		srv := r.Server
		server = &srv
		stunLog.Debug("STUN observation succeeded", "stun_server", srv, "reflexive", r.Reflexive.String())
	}
	local := []TraversalAddress{}
	if s.cfg.ShareLocalCandidates {
		port := uint16(conn.LocalAddr().(*net.UDPAddr).Port)
		for _, ap := range s.localCandidates(port) {
			local = append(local, TraversalAddress{Protocol: "udp", IP: ap.Addr().String(), Port: ap.Port()})
		}
	}
	return conn, refl, local, server, nil
}

func (s *Service) sendSignal(ctx context.Context, relays []string, peerHex string, payload any) (string, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return "", fmt.Errorf("encode signal: %w", err)
	}
	ev, err := WrapSignal(s.keys, peerHex, b, uint64(s.cfg.SignalTTL/time.Second), s.nowMs())
	if err != nil {
		return "", err
	}
	if _, err := s.relays.publish(ctx, relays, ev); err != nil {
		return "", err
	}
	return ev.ID, nil
}

// deleteEvents publishes a best-effort NIP-09 deletion. Wraps are signed
// by one-time keys, so relays may ignore a deletion by the identity key;
// upstream sends it all the same.
func (s *Service) deleteEvents(relays []string, ids []string) {
	ev := DeletionEvent(s.keys.PublicHex, ids, s.nowMs())
	if ev.Sign(s.keys.SecretHex) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, relayOpTimeout)
	defer cancel()
	_, _ = s.relays.publish(ctx, relays, ev)
}

// respond answers one admitted offer and punches (upstream's
// handle_incoming_offer after admission).
func (s *Service) respond(sender identity.PublicKey, o Offer, stranger bool) error {
	if !s.canAccept.Load() {
		return ErrCapacity
	}
	now := s.nowMs()
	senderNpub := sender.Npub()
	if err := ValidateOffer(&o, senderNpub, s.npub, now, uint64(s.cfg.SignalTTL.Milliseconds())); err != nil {
		s.c.offersRejected.Add(1)
		if errors.Is(err, ErrStale) {
			s.log.Debug("traversal offer rejected", "peer", senderNpub, "error", err)
		} else {
			s.log.Warn("traversal offer rejected", "peer", senderNpub, "error", err)
		}
		return err
	}
	if ElectionSkipsAnswer(s.initiators.Active(senderNpub), s.ownAddr, sender.NodeAddr()) {
		s.c.offersElection.Add(1)
		return ErrElectionYield
	}
	if !s.replay.Check(o.SessionID, now) {
		return fmt.Errorf("%w: %s", ErrReplay, o.SessionID)
	}
	relays := SignalRelays(s.inboxRelays(s.ctx, sender.Hex()), nil, s.dmRelays, s.pool)
	if len(relays) == 0 {
		return fmt.Errorf("%w: %s", ErrMissingRelays, senderNpub)
	}
	conn, refl, local, server, err := s.candidates(s.ctx)
	if err != nil {
		return err
	}
	keep := false
	defer func() {
		if !keep {
			conn.Close()
		}
	}()
	s.log.Debug("traversal: responder STUN observed", "peer", senderNpub, "session", o.SessionID,
		"accepted", refl != nil || len(local) > 0, "reflexive", addrOrDash(refl), "local", len(local))
	issued := s.nowMs()
	recv := now
	a := Answer{Type: msgTypeAnswer, SessionID: o.SessionID, IssuedAt: issued,
		ExpiresAt: issued + uint64(s.cfg.SignalTTL.Milliseconds()), Nonce: Nonce(issued),
		SenderNpub: s.npub, RecipientNpub: o.SenderNpub, InReplyTo: o.Nonce,
		Accepted: refl != nil || len(local) > 0, ReflexiveAddress: refl, LocalAddresses: local,
		StunServer: server, OfferReceivedAt: &recv}
	var hint PunchHint
	if a.Accepted {
		hint = s.punchHint()
		a.Punch = &hint
	} else {
		reason := reasonNoAddresses
		a.Reason = &reason
	}
	answerID, err := s.sendSignal(s.ctx, relays, sender.Hex(), a)
	if err != nil {
		return fmt.Errorf("send answer: %w", err)
	}
	s.c.answersSent.Add(1)
	defer s.deleteEvents(relays, []string{answerID})
	if !a.Accepted {
		return fmt.Errorf("%w: %s", ErrNoReflexive, reasonNoAddresses)
	}
	targets, tally := PlanTargets(local, refl, o.LocalAddresses, o.ReflexiveAddress)
	s.logTally(senderNpub, o.SessionID, tally)
	if stranger && len(targets) > MaxStrangerPunchTargets {
		s.c.strangerTargetsCapped.Add(uint64(len(targets) - MaxStrangerPunchTargets))
		targets = targets[:MaxStrangerPunchTargets]
	}
	targets = s.mapTargets(targets)
	res, err := Punch(s.ctx, conn, o.SessionID, targets, hint, s.cfg.AttemptTimeout)
	s.c.punchForeign.Add(uint64(res.Foreign))
	if err != nil {
		s.c.responderFailed.Add(1)
		return err
	}
	s.c.responderSucceeded.Add(1)
	est := Established{SessionID: o.SessionID, Peer: sender, Remote: res.Remote, Conn: conn}
	select {
	case s.est <- est:
		keep = true
	default:
		s.c.establishedDropped.Add(1)
		return errors.New("established queue full")
	}
	s.log.Info("traversal punched (responder)", "peer", senderNpub, "session", o.SessionID, "remote", res.Remote.String())
	return nil
}

func (s *Service) mapTargets(ts []netip.AddrPort) []netip.AddrPort {
	if s.mapTarget == nil {
		return ts
	}
	out := make([]netip.AddrPort, len(ts))
	for i, t := range ts {
		out[i] = s.mapTarget(t)
	}
	return out
}

func (s *Service) logTally(peer, session string, t Refusal) {
	if t.Quiet() {
		return
	}
	lvl := slog.LevelDebug
	if t.Suspicious() {
		lvl = slog.LevelWarn
	}
	s.log.Log(context.Background(), lvl, "traversal: punch candidates refused", "peer", peer, "session", session,
		"offered", t.Offered, "admitted", t.Admitted, "unparsable", t.Unparsable, "zeroport", t.ZeroPort,
		"unroutable", t.Unroutable, "offsubnet", t.OffSubnet, "capped", t.Capped,
		"reflexive", orDash(t.Reflexive), "sample", orDash(t.Sample))
}

// Connect runs one initiator traversal to pk (upstream's connect_peer):
// advert, relays, STUN, offer, answer, punch. It blocks up to the signal
// TTL plus the attempt timeout. A failure is not counted here: the caller
// records it with RecordFailure unless the peer linked meanwhile, as
// upstream's lifecycle does.
func (s *Service) Connect(ctx context.Context, pk identity.PublicKey) (Established, error) {
	npub := pk.Npub()
	if !s.canAccept.Load() {
		return Established{}, ErrCapacity
	}
	if until, cool := s.failures.InCooldown(npub, s.nowMs()); cool {
		return Established{}, fmt.Errorf("%w until %s", ErrCooldown, time.UnixMilli(int64(until)).UTC().Format(time.RFC3339))
	}
	if !s.initiators.Begin(npub) {
		return Established{}, ErrBusy
	}
	defer s.initiators.End(npub)
	if !s.track() {
		return Established{}, context.Canceled
	}
	defer s.wg.Done()
	s.c.attemptsStarted.Add(1)
	est, err := s.connect(ctx, pk)
	if err != nil {
		s.c.attemptsFailed.Add(1)
		return Established{}, err
	}
	s.c.attemptsSucceeded.Add(1)
	s.failures.RecordSuccess(npub)
	return est, nil
}

// track counts a caller's work in s.wg unless Close has begun (a
// WaitGroup must not grow from zero while Close waits on it).
func (s *Service) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.started.Load() {
		return false
	}
	s.wg.Add(1)
	return true
}

// RecordFailure counts a failed attempt to npub in the failure state.
func (s *Service) RecordFailure(npub string) FailureDecision {
	d := s.failures.RecordFailure(npub, s.nowMs())
	if d.CrossedThreshold {
		s.c.cooldowns.Add(1)
	}
	return d
}

func (s *Service) connect(ctx context.Context, pk identity.PublicKey) (Established, error) {
	npub := pk.Npub()
	adv, err := s.FetchAdvert(ctx, pk)
	if err != nil {
		return Established{}, err
	}
	if !adv.HasNAT() {
		return Established{}, fmt.Errorf("%w: %s", ErrMissingNAT, npub)
	}
	relays := SignalRelays(s.inboxRelays(ctx, pk.Hex()), adv.SignalRelays, s.dmRelays, s.pool)
	if len(relays) == 0 {
		return Established{}, fmt.Errorf("%w: %s", ErrMissingRelays, npub)
	}
	conn, refl, local, server, err := s.candidates(ctx)
	if err != nil {
		return Established{}, err
	}
	keep := false
	defer func() {
		if !keep {
			conn.Close()
		}
	}()
	srvName := "-"
	if server != nil {
		srvName = *server
	}
	s.log.Debug("traversal: initiator STUN observed", "peer", npub, "reflexive", addrOrDash(refl), "local", len(local), "stun", srvName)
	now := s.nowMs()
	nonce := Nonce(now)
	o := Offer{Type: msgTypeOffer, SessionID: nonce, IssuedAt: now, ExpiresAt: now + uint64(s.cfg.SignalTTL.Milliseconds()),
		Nonce: nonce, SenderNpub: s.npub, RecipientNpub: npub, ReflexiveAddress: refl, LocalAddresses: local, StunServer: server}
	ch := make(chan answerMsg, 1)
	s.mu.Lock()
	s.pending[nonce] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, nonce)
		s.mu.Unlock()
	}()
	offerID, err := s.sendSignal(ctx, relays, pk.Hex(), o)
	if err != nil {
		return Established{}, fmt.Errorf("send offer: %w", err)
	}
	s.c.offersSent.Add(1)
	wait := time.NewTimer(s.cfg.SignalTTL)
	defer wait.Stop()
	var am answerMsg
	select {
	case <-ctx.Done():
		return Established{}, ctx.Err()
	case <-s.ctx.Done():
		return Established{}, s.ctx.Err()
	case <-wait.C:
		return Established{}, fmt.Errorf("%w from %s after %s", ErrSignalTimeout, npub, s.cfg.SignalTTL)
	case am = <-ch:
	}
	if skew, ok := EstimateSkewMs(&o, &am.answer, am.received); ok {
		s.failures.NoteSkew(npub, skew, s.nowMs())
		if skew >= 30_000 || skew <= -30_000 {
			s.log.Debug("traversal peer clock skew", "peer", npub, "skew_ms", skew)
		}
	}
	if err := ValidateAnswer(&o, &am.answer, am.sender, s.nowMs(), uint64(s.cfg.SignalTTL.Milliseconds())); err != nil {
		return Established{}, err
	}
	if !am.answer.Accepted {
		return Established{}, fmt.Errorf("%w: %s", ErrRejected, *am.answer.Reason)
	}
	targets, tally := PlanTargets(local, refl, am.answer.LocalAddresses, am.answer.ReflexiveAddress)
	s.logTally(npub, nonce, tally)
	targets = s.mapTargets(targets)
	// Upstream's initiator punches on its own schedule, not answer.punch.
	res, err := Punch(ctx, conn, nonce, targets, s.punchHint(), s.cfg.AttemptTimeout)
	s.c.punchForeign.Add(uint64(res.Foreign))
	if err != nil {
		return Established{}, err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.deleteEvents(relays, []string{offerID, am.wrapID})
	}()
	keep = true
	return Established{SessionID: nonce, Peer: pk, Remote: res.Remote, Conn: conn, Initiator: true}, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func addrOrDash(a *TraversalAddress) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%s:%d", a.IP, a.Port) // upstream's form: no brackets
}

package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Relay timing (upstream's fixed constants).
const (
	relayOpTimeout    = 5 * time.Second
	relayBackoffStart = 2 * time.Second
	relayBackoffMax   = 60 * time.Second
	publishTimeout    = 10 * time.Second
)

// After the standing subscription's EOSE, the filters that ask for
// stored events are asked once more, for what was created since the
// subscription was sent (minus catchUpSlack for publishers' clocks). A
// relay that answers a REQ by querying its store and only then
// registering the subscription — @nostr-relay/core does — gives that REQ
// neither the stored answer nor the broadcast of an event stored in
// between. An advert lost so stayed unknown until its author republished
// it (advert_refresh_secs, 30 min): two nodes starting together could each
// miss the other's.
const (
	catchUpDelay = time.Second
	catchUpSlack = 2 * time.Minute
	catchUpLimit = 256
)

// catchUpFilters are filters' catch-up: each one that wants stored
// events, limited to those created at since-catchUpSlack or later.
func catchUpFilters(filters nostr.Filters, since time.Time) nostr.Filters {
	var out nostr.Filters
	ts := nostr.Timestamp(since.Add(-catchUpSlack).Unix())
	for _, f := range filters {
		if f.LimitZero {
			continue
		}
		c := f.Clone()
		if c.Since == nil || *c.Since < ts {
			c.Since = &ts
		}
		if c.Limit <= 0 || c.Limit > catchUpLimit {
			c.Limit = catchUpLimit
		}
		out = append(out, c)
	}
	return out
}

// relayEvent is one event a subscription delivered.
type relayEvent struct {
	ev  *nostr.Event
	url string
}

// relaySet keeps one connection per relay URL, each with its standing
// subscription, reconnecting with backoff until ctx ends. go-nostr's pool
// is not used: its reconnect sleeps ignore cancellation.
type relaySet struct {
	log   *slog.Logger
	mu    sync.Mutex
	conns map[string]*relayClient // connected relays by normalized URL
	urls  []string
	// onConnect runs after each (re)connection and subscription.
	onConnect func(url string)
	wg        sync.WaitGroup
	connects  atomic.Uint64
	failures  atomic.Uint64
}

func newRelaySet(log *slog.Logger, urls []string) *relaySet {
	return &relaySet{log: log, conns: map[string]*relayClient{}, urls: urls}
}

// run starts one goroutine per relay. filtersFor gives each relay's
// standing subscription (nil: none); each event is handed to deliver,
// which must not block.
func (s *relaySet) run(ctx context.Context, filtersFor func(url string) nostr.Filters, deliver func(relayEvent)) {
	for _, u := range s.urls {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.keep(ctx, u, filtersFor(u), deliver)
		}()
	}
}

func (s *relaySet) keep(ctx context.Context, url string, filters nostr.Filters, deliver func(relayEvent)) {
	backoff := relayBackoffStart
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, relayOpTimeout)
		r, err := dialRelay(cctx, url, func(n string) { s.log.Debug("relay notice", "relay", url, "notice", n) })
		var sub *relaySub
		subscribed := time.Now()
		if err == nil && len(filters) > 0 {
			sub, err = r.subscribe(cctx, filters)
			if err != nil {
				r.close()
			}
		}
		cancel()
		if err != nil {
			s.failures.Add(1)
			s.log.Debug("relay connection failed", "relay", url, "error", err, "retry_in", backoff)
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, relayBackoffMax)
			continue
		}
		backoff = relayBackoffStart
		s.connects.Add(1)
		s.mu.Lock()
		s.conns[url] = r
		s.mu.Unlock()
		s.log.Debug("relay connected", "relay", url)
		if s.onConnect != nil {
			s.onConnect(url)
		}
		s.pump(ctx, r, sub, catchUpFilters(filters, subscribed), url, deliver)
		s.mu.Lock()
		delete(s.conns, url)
		s.mu.Unlock()
		r.close()
		if ctx.Err() == nil {
			s.log.Debug("relay connection lost", "relay", url, "error", r.err)
			if !sleepCtx(ctx, backoff) {
				return
			}
		}
	}
}

// pump forwards the subscription's events until it or the connection
// ends, and, catchUpDelay after its first EOSE, those of one query with
// catchUp (see catchUpFilters) too. The cache they feed keeps the newest
// advert per author, so what both deliver is stored once.
func (s *relaySet) pump(ctx context.Context, r *relayClient, sub *relaySub, catchUp nostr.Filters, url string, deliver func(relayEvent)) {
	if sub == nil {
		select {
		case <-ctx.Done():
		case <-r.done:
		}
		return
	}
	defer r.unsub(sub)
	forward := func(ev *nostr.Event) {
		deliver(relayEvent{ev: ev, url: url})
	}
	var (
		timer  *time.Timer
		due    <-chan time.Time
		catch  *relaySub
		cEv    chan *nostr.Event
		cEnd   chan struct{}
		cClose chan string
		caught int
	)
	endCatch := func() {
		r.unsub(catch)
		s.log.Debug("relay catch-up query done", "relay", url, "events", caught)
		catch, cEv, cEnd, cClose = nil, nil, nil, nil
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if catch != nil {
			r.unsub(catch)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.done:
			return
		case reason := <-sub.closed:
			s.log.Debug("relay closed our subscription", "relay", url, "reason", reason)
			return
		case <-sub.eose:
			if timer == nil && len(catchUp) > 0 {
				timer = time.NewTimer(catchUpDelay)
				due = timer.C
			}
		case <-due:
			due = nil
			cctx, cancel := context.WithTimeout(ctx, relayOpTimeout)
			c, err := r.subscribe(cctx, catchUp)
			cancel()
			if err != nil {
				s.log.Debug("relay catch-up query failed", "relay", url, "error", err)
				continue
			}
			catch, cEv, cEnd, cClose = c, c.events, c.eose, c.closed
		case ev := <-sub.events:
			forward(ev)
		case ev := <-cEv:
			caught++
			forward(ev)
		case <-cEnd:
			endCatch()
		case <-cClose:
			endCatch()
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// connected returns the connected relays among urls (all when urls is nil).
func (s *relaySet) connected(urls []string) map[string]*relayClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*relayClient{}
	if urls == nil {
		for u, r := range s.conns {
			out[u] = r
		}
		return out
	}
	for _, u := range urls {
		if r := s.conns[NormalizeRelayURL(u)]; r != nil {
			out[NormalizeRelayURL(u)] = r
		}
	}
	return out
}

// Count is how many relays are connected now.
func (s *relaySet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

var errNoRelay = errors.New("no relay connected")

// publish sends ev to every connected relay in urls at once and reports
// how many accepted it; an error only when none did.
func (s *relaySet) publish(ctx context.Context, urls []string, ev nostr.Event) (int, error) {
	rs := s.connected(urls)
	if len(rs) == 0 {
		return 0, fmt.Errorf("%w: %w among %v", ErrRelay, errNoRelay, urls)
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := 0
	var errs []error
	for u, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.publish(ctx, ev)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", u, err))
			} else {
				ok++
			}
		}()
	}
	wg.Wait()
	if ok == 0 {
		return 0, fmt.Errorf("%w: %w", ErrRelay, errors.Join(errs...))
	}
	return ok, nil
}

// query asks every connected relay in urls for filter's stored events
// until EOSE or ctx ends, and returns what came back (duplicates removed).
func (s *relaySet) query(ctx context.Context, urls []string, filter nostr.Filter, limit int) []*nostr.Event {
	rs := s.connected(urls)
	var mu sync.Mutex
	var wg sync.WaitGroup
	seen := map[string]bool{}
	var out []*nostr.Event
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			qctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sub, err := r.subscribe(qctx, nostr.Filters{filter})
			if err != nil {
				return
			}
			defer r.unsub(sub)
			for {
				select {
				case <-qctx.Done():
					return
				case <-r.done:
					return
				case <-sub.eose:
					return
				case <-sub.closed:
					return
				case ev := <-sub.events:
					mu.Lock()
					if !seen[ev.ID] && len(out) < limit {
						seen[ev.ID] = true
						out = append(out, ev)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// wait blocks until every relay goroutine has returned.
func (s *relaySet) wait() { s.wg.Wait() }

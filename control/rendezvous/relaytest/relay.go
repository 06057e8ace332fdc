// Package relaytest is an in-process Nostr relay for tests: NIP-01 EVENT
// (id and signature checked, OK sent), REQ (stored events, EOSE, then
// live ones), CLOSE; ephemeral kinds are relayed and not stored,
// replaceable and parameterized-replaceable kinds keep the newest. It
// listens on loopback only.
package relaytest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/nbd-wtf/go-nostr"
)

// Relay is a running fixture relay.
type Relay struct {
	URL string

	srv *http.Server
	ln  net.Listener
	wg  sync.WaitGroup

	mu     sync.Mutex
	stored []*nostr.Event
	conns  map[*client]bool
	// Received counts EVENTs accepted, Refused those that failed checks.
	received, refused int
	// hold, when set, drops events of that kind instead of relaying them.
	hold map[int]bool
	// relayed keeps the last maxRelayed ephemeral events relayed, for
	// tests to inspect what was sent (relays do not store them).
	relayed []*nostr.Event
	// gap holds events the next REQ that asks for stored events stores
	// between reading its answer and registering its subscription.
	gap []*nostr.Event
}

// maxRelayed bounds Relay.relayed.
const maxRelayed = 256

type client struct {
	conn net.Conn
	wmu  sync.Mutex
	subs map[string]nostr.Filters
}

// Start listens on 127.0.0.1 and serves until Close.
func Start() (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{URL: "ws://" + ln.Addr().String(), ln: ln, conns: map[*client]bool{}, hold: map[int]bool{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve)}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Close stops the relay and every connection.
func (r *Relay) Close() {
	_ = r.srv.Shutdown(context.Background())
	r.mu.Lock()
	for c := range r.conns {
		c.conn.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// Drop makes the relay swallow events of kind (accepted, never stored nor
// relayed), or relay them again.
func (r *Relay) Drop(kind int, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold[kind] = on
}

// Gap makes the next REQ that asks for stored events race with evs as
// relays that read their store before registering a subscription do
// (@nostr-relay/core): evs are stored after that REQ's answer is read and
// before its subscription is registered, so it gets them neither way;
// later REQs find them stored.
func (r *Relay) Gap(evs ...*nostr.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gap = append(r.gap, evs...)
}

// Stored returns the stored events of kind.
func (r *Relay) Stored(kind int) []*nostr.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*nostr.Event
	for _, e := range r.stored {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Inject takes ev as if a client had sent it (no checks): stored or
// relayed to matching subscriptions.
func (r *Relay) Inject(ev *nostr.Event) { r.accept(ev) }

// Relayed returns the last ephemeral events of kind the relay passed on
// (at most 256 of all kinds are kept).
func (r *Relay) Relayed(kind int) []*nostr.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*nostr.Event
	for _, e := range r.relayed {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Counts is (accepted, refused) EVENTs so far.
func (r *Relay) Counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.received, r.refused
}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	conn, _, _, err := ws.UpgradeHTTP(req, w)
	if err != nil {
		return
	}
	c := &client{conn: conn, subs: map[string]nostr.Filters{}}
	r.mu.Lock()
	r.conns[c] = true
	r.mu.Unlock()
	r.wg.Add(1)
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		conn.Close()
		r.wg.Done()
	}()
	for {
		msg, op, err := wsutil.ReadClientData(conn)
		if err != nil {
			return
		}
		if op != ws.OpText {
			continue
		}
		r.handle(c, msg)
	}
}

func (c *client) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = wsutil.WriteServerText(c.conn, b)
}

func (c *client) sendRaw(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = wsutil.WriteServerText(c.conn, b)
}

var errBad = errors.New("invalid: bad id or signature")

func (r *Relay) handle(c *client, msg []byte) {
	switch env := nostr.ParseMessage(msg).(type) {
	case *nostr.EventEnvelope:
		ev := env.Event
		ok, _ := ev.CheckSignature()
		if !ev.CheckID() || !ok {
			r.mu.Lock()
			r.refused++
			r.mu.Unlock()
			c.send([]any{"OK", ev.ID, false, errBad.Error()})
			return
		}
		r.accept(&ev)
		c.send([]any{"OK", ev.ID, true, ""})
	case *nostr.ReqEnvelope:
		r.mu.Lock()
		var backlog []*nostr.Event
		for _, f := range env.Filters {
			if f.LimitZero {
				continue
			}
			var m []*nostr.Event
			for _, e := range r.stored {
				if f.Matches(e) {
					m = append(m, e)
				}
			}
			sort.Slice(m, func(i, j int) bool { return m[i].CreatedAt > m[j].CreatedAt })
			if f.Limit > 0 && len(m) > f.Limit {
				m = m[:f.Limit]
			}
			backlog = append(backlog, m...)
		}
		gap := r.gap
		if slices.ContainsFunc(env.Filters, func(f nostr.Filter) bool { return !f.LimitZero }) {
			r.gap = nil
		} else {
			gap = nil
		}
		r.mu.Unlock()
		for _, e := range gap {
			r.accept(e)
		}
		r.mu.Lock()
		c.subs[env.SubscriptionID] = env.Filters
		r.mu.Unlock()
		for _, e := range backlog {
			c.sendRaw(eventMsg(env.SubscriptionID, e))
		}
		c.send([]any{"EOSE", env.SubscriptionID})
	case *nostr.CloseEnvelope:
		r.mu.Lock()
		delete(c.subs, string(*env))
		r.mu.Unlock()
	}
}

func eventMsg(sub string, e *nostr.Event) []byte {
	id := sub
	b, _ := (&nostr.EventEnvelope{SubscriptionID: &id, Event: *e}).MarshalJSON()
	return b
}

func (r *Relay) accept(ev *nostr.Event) {
	r.mu.Lock()
	r.received++
	if r.hold[ev.Kind] {
		r.mu.Unlock()
		return
	}
	switch {
	case ev.Kind >= 20000 && ev.Kind < 30000: // ephemeral
		if len(r.relayed) == maxRelayed {
			r.relayed = r.relayed[1:]
		}
		r.relayed = append(r.relayed, ev)
	case ev.Kind == 0 || ev.Kind == 3 || (ev.Kind >= 10000 && ev.Kind < 20000) || (ev.Kind >= 30000 && ev.Kind < 40000):
		d := ev.Tags.GetD()
		kept := r.stored[:0]
		newest := true
		for _, e := range r.stored {
			if e.Kind == ev.Kind && e.PubKey == ev.PubKey && (ev.Kind < 30000 || e.Tags.GetD() == d) {
				if e.CreatedAt > ev.CreatedAt {
					newest = false
					kept = append(kept, e)
				}
				continue
			}
			kept = append(kept, e)
		}
		r.stored = kept
		if newest {
			r.stored = append(r.stored, ev)
		}
	default:
		r.stored = append(r.stored, ev)
	}
	type target struct {
		c   *client
		sub string
	}
	var out []target
	for c := range r.conns {
		for id, fs := range c.subs {
			if fs.Match(ev) {
				out = append(out, target{c, id})
			}
		}
	}
	r.mu.Unlock()
	for _, t := range out {
		t.c.sendRaw(eventMsg(t.sub, ev))
	}
}

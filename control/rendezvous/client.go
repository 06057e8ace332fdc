package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"
)

// maxRelayMessage bounds one message from a relay; larger ones end the
// connection (an advert or a gift wrap is a few KiB).
const maxRelayMessage = 1 << 20

var errMessageTooLarge = errors.New("relay message too large")

// ErrRelayClosed: the connection ended before the answer came.
var ErrRelayClosed = errors.New("relay connection closed")

// relayClient is one websocket to a relay speaking NIP-01 with go-nostr's
// connection and envelope codecs. go-nostr's Relay is not used: its Close
// races with its own connection goroutine.
type relayClient struct {
	url  string
	conn *nostr.Connection
	wmu  sync.Mutex
	done chan struct{}
	err  error // why the reader stopped; set before done closes
	// closing is closed by close: the reader stops waiting on slow
	// subscribers at once.
	closing   chan struct{}
	closeOnce sync.Once

	mu   sync.Mutex
	subs map[string]*relaySub
	oks  map[string]chan okResult
	next atomic.Uint64
	// notice receives NOTICE texts; nil drops them.
	notice func(string)
}

type okResult struct {
	ok     bool
	reason string
}

type relaySub struct {
	id     string
	events chan *nostr.Event
	eose   chan struct{}
	closed chan string
	// gone is closed when the subscriber stops reading (unsub): the
	// reader never blocks on a subscription nobody reads.
	gone     chan struct{}
	goneOnce sync.Once
	once     sync.Once
}

func dialRelay(ctx context.Context, url string, notice func(string)) (*relayClient, error) {
	conn, err := nostr.NewConnection(ctx, url, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRelay, url, err)
	}
	c := &relayClient{url: url, conn: conn, done: make(chan struct{}), closing: make(chan struct{}), subs: map[string]*relaySub{},
		oks: map[string]chan okResult{}, notice: notice}
	go c.read()
	return c, nil
}

type limitedBuf struct {
	b []byte
}

func (l *limitedBuf) Write(p []byte) (int, error) {
	if len(l.b)+len(p) > maxRelayMessage {
		return 0, errMessageTooLarge
	}
	l.b = append(l.b, p...)
	return len(p), nil
}

func (c *relayClient) read() {
	defer close(c.done)
	var buf limitedBuf
	for {
		buf.b = buf.b[:0]
		if err := c.conn.ReadMessage(context.Background(), &buf); err != nil {
			c.err = err
			c.conn.Close()
			return
		}
		env, ok := parseRelayMessage(buf.b)
		if !ok {
			continue
		}
		switch env := env.(type) {
		case *nostr.EventEnvelope:
			if env.SubscriptionID == nil {
				continue
			}
			c.mu.Lock()
			s := c.subs[*env.SubscriptionID]
			c.mu.Unlock()
			if s != nil {
				ev := env.Event
				select {
				case s.events <- &ev:
				case <-s.gone:
				case <-c.closing:
				}
			}
		case *nostr.EOSEEnvelope:
			c.mu.Lock()
			s := c.subs[string(*env)]
			c.mu.Unlock()
			if s != nil {
				select {
				case s.eose <- struct{}{}:
				default:
				}
			}
		case *nostr.ClosedEnvelope:
			c.mu.Lock()
			s := c.subs[env.SubscriptionID]
			delete(c.subs, env.SubscriptionID)
			c.mu.Unlock()
			if s != nil {
				select {
				case s.closed <- env.Reason:
				default:
				}
			}
		case *nostr.OKEnvelope:
			c.mu.Lock()
			ch := c.oks[env.EventID]
			delete(c.oks, env.EventID)
			c.mu.Unlock()
			if ch != nil {
				ch <- okResult{env.OK, env.Reason}
			}
		case *nostr.NoticeEnvelope:
			if c.notice != nil {
				c.notice(string(*env))
			}
		}
	}
}

// parseRelayMessage is go-nostr's envelope parser, made safe against a
// panic on hostile input (its event checks index fields unchecked).
func parseRelayMessage(b []byte) (env nostr.Envelope, ok bool) {
	defer func() {
		if recover() != nil {
			env, ok = nil, false
		}
	}()
	env = nostr.ParseMessage(b)
	return env, env != nil
}

func (c *relayClient) write(ctx context.Context, b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return ErrRelayClosed
	default:
	}
	if err := c.conn.WriteMessage(ctx, b); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRelay, c.url, err)
	}
	return nil
}

// subscribe sends a REQ; the subscription's events channel is read by
// the caller until it calls unsub or the connection ends (c.done).
func (c *relayClient) subscribe(ctx context.Context, filters nostr.Filters) (*relaySub, error) {
	s := &relaySub{id: "fips:" + strconv.FormatUint(c.next.Add(1), 10), events: make(chan *nostr.Event),
		eose: make(chan struct{}, 1), closed: make(chan string, 1), gone: make(chan struct{})}
	c.mu.Lock()
	c.subs[s.id] = s
	c.mu.Unlock()
	b, err := (&nostr.ReqEnvelope{SubscriptionID: s.id, Filters: filters}).MarshalJSON()
	if err == nil {
		err = c.write(ctx, b)
	}
	if err != nil {
		c.drop(s)
		return nil, err
	}
	return s, nil
}

func (c *relayClient) drop(s *relaySub) {
	c.mu.Lock()
	delete(c.subs, s.id)
	c.mu.Unlock()
	s.goneOnce.Do(func() { close(s.gone) })
}

// unsub sends CLOSE and forgets the subscription.
func (c *relayClient) unsub(s *relaySub) {
	c.drop(s)
	s.once.Do(func() {
		b, _ := nostr.CloseEnvelope(s.id).MarshalJSON()
		_ = c.write(context.Background(), b)
	})
}

// publish sends an EVENT and waits for the relay's OK.
func (c *relayClient) publish(ctx context.Context, ev nostr.Event) error {
	ch := make(chan okResult, 1)
	c.mu.Lock()
	c.oks[ev.ID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.oks, ev.ID)
		c.mu.Unlock()
	}()
	b, err := (&nostr.EventEnvelope{Event: ev}).MarshalJSON()
	if err != nil {
		return fmt.Errorf("%w: encode: %w", ErrInvalidEvent, err)
	}
	if err := c.write(ctx, b); err != nil {
		return err
	}
	select {
	case r := <-ch:
		if !r.ok {
			return fmt.Errorf("%w: %s refused the event: %s", ErrRelay, c.url, r.reason)
		}
		return nil
	case <-c.done:
		return ErrRelayClosed
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: no OK: %w", ErrRelay, c.url, ctx.Err())
	}
}

// close ends the connection and waits for the reader.
func (c *relayClient) close() {
	c.closeOnce.Do(func() { close(c.closing) })
	c.conn.Close()
	<-c.done
}

//go:build unix

package ctl

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// At most MaxHandlers handlers run at once, however many connections
// are being served: the others wait for a slot (within the handler
// timeout) and are then answered as usual. A show_cache of a full
// default cache builds some 300 MB on its way to 23 MB of JSON, so 64
// of them at once could exhaust memory; upstream answers such commands
// one at a time on its event loop.
func TestServerHandlerConcurrencyBound(t *testing.T) {
	reg := NewRegistry()
	var running, most atomic.Int64
	gate := make(chan struct{})
	reg.Register("slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return "done", nil
	})
	s := startServer(t, Config{MaxHandlers: 2, HandlerTimeout: time.Minute}, reg)
	const clients = 6
	var wg sync.WaitGroup
	answers := make(chan string, clients)
	for range clients {
		wg.Go(func() {
			data, err := Call(context.Background(), s.Addr(), "slow", nil)
			if err != nil {
				answers <- err.Error()
				return
			}
			answers <- string(data)
		})
	}
	// Every request has been read (no connection is still reading) and
	// two handlers are running.
	waitFor(t, func() bool {
		s.readersMu.Lock()
		defer s.readersMu.Unlock()
		return len(s.sem) == clients && len(s.readers) == 0 && running.Load() == 2
	})
	if m := most.Load(); m != 2 {
		t.Errorf("%d handlers ran at once, want 2", m)
	}
	close(gate)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a != `"done"` {
			t.Errorf("answer %q", a)
		}
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d handlers ran at once, want at most 2", m)
	}
}

// A handler that ignores its context keeps its slot after its client was
// told "query timeout": a request that finds no free slot within the
// handler timeout is answered "query timeout" too, and counted, so
// abandoned handlers cannot pile up without bound.
func TestServerHandlerSlotsHeldByStuckHandlers(t *testing.T) {
	reg := testRegistry()
	release := make(chan struct{})
	reg.Register("stubborn", func(context.Context, json.RawMessage) (any, error) {
		<-release
		return "late", nil
	})
	s := startServer(t, Config{MaxHandlers: 1, HandlerTimeout: 50 * time.Millisecond}, reg)
	if got := roundTrip(t, s.Addr(), `{"command":"stubborn"}`+"\n", false); got != errLine("query timeout") {
		t.Fatalf("stubborn: %q", got)
	}
	if n := s.Busy(); n != 0 {
		t.Errorf("busy = %d before any wait", n)
	}
	if got := roundTrip(t, s.Addr(), `{"command":"show_status"}`+"\n", false); got != errLine("query timeout") {
		t.Errorf("with the only slot stuck: %q", got)
	}
	if n := s.Busy(); n != 1 {
		t.Errorf("busy = %d, want 1", n)
	}
	close(release)
	waitFor(t, func() bool { return len(s.handlers) == 0 })
	if got := roundTrip(t, s.Addr(), `{"command":"show_status"}`+"\n", false); !strings.HasPrefix(got, `{"status":"ok"`) {
		t.Errorf("after release: %q", got)
	}
}

package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The endpoint answers GET /metrics, refuses other paths and methods, and
// shuts down, leaving no goroutine behind, when its context ends.
func TestServerServesAndShutsDown(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg, _, _ := newTestRegistry(t, fullSnapshot(1), 4)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := Listen("127.0.0.1:0", Handler(reg, log), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	base := "http://" + srv.Addr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "# HELP fips_peers ") ||
		!strings.Contains(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %q\n%.300s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/"}, {"POST", "/metrics"}} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("%s %s answered 200", c.method, c.path)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if _, err := client.Get(base + "/metrics"); err == nil {
		t.Error("still answering after shutdown")
	}
}

// A taken address is reported, naming it.
func TestListenError(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := Listen("127.0.0.1:0", http.NotFoundHandler(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer a.ln.Close()
	_, err = Listen(a.Addr().String(), http.NotFoundHandler(), log)
	if err == nil || !strings.Contains(err.Error(), a.Addr().String()) {
		t.Fatalf("second Listen on %s: %v", a.Addr(), err)
	}
}

// The endpoint holds at most MaxConns connections: past that, a new one is
// closed at once and counted, so clients that connect and send nothing
// cannot make the daemon hold an unbounded number of sockets (file
// descriptors its transports and control socket need too). A scrape gets
// through again once a slot is free.
func TestServerConnectionBound(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg, _, _ := newTestRegistry(t, fullSnapshot(1), 4)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := Listen("127.0.0.1:0", Handler(reg, log), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range MaxConns {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// Every slot is taken once the server has accepted them all; a new
	// connection is then closed unanswered.
	extra, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("connection %d over the bound: read %d, %v; want it closed", MaxConns+1, n, err)
	}
	if got := srv.Refused(); got != 1 {
		t.Errorf("Refused() = %d, want 1", got)
	}
	idle[0].Close()
	idle = idle[1:]
	// The slot comes free when the server reads the close.
	deadline := time.Now().Add(5 * time.Second)
	for srv.Open() >= MaxConns {
		if time.Now().After(deadline) {
			t.Fatalf("slot not freed: %d open", srv.Open())
		}
		time.Sleep(10 * time.Millisecond)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + srv.Addr().String() + "/metrics")
	if err != nil {
		t.Fatalf("scrape after a slot freed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape after a slot freed: %d", resp.StatusCode)
	}
}

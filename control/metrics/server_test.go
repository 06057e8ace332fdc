package metrics

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

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

//go:build unix

package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sockPath is a fresh socket path short enough for sun_path (104 bytes on
// macOS, 108 on Linux).
func sockPath(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "control.sock")
	if len(p) < 100 {
		return p
	}
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "control.sock")
}

type testServer struct {
	*Server
	stop func() error // cancels Serve and returns its result
}

func startServer(t *testing.T, cfg Config, reg *Registry) *testServer {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = sockPath(t)
	}
	cfg.Logger = discardLogger()
	srv, err := listenWith(cfg, reg, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() { cancel(); serveErr = <-done })
		return serveErr
	}
	t.Cleanup(func() { stop() })
	return &testServer{srv, stop}
}

func testRegistry() *Registry {
	reg := NewRegistry()
	reg.Register("echo", func(_ context.Context, p json.RawMessage) (any, error) { return p, nil })
	reg.Register("show_status", func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"state": "running"}, nil
	})
	reg.Register("connect", func(_ context.Context, raw json.RawMessage) (any, error) {
		p, err := RequireParams("connect", raw)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"refreshed": false}
		for _, f := range []string{"npub", "address", "transport"} {
			v, err := p.String(f)
			if err != nil {
				return nil, err
			}
			out[f] = v
		}
		return out, nil
	})
	return reg
}

// roundTrip writes payload synchronously, optionally half-closes, and reads
// the whole reply.
func roundTrip(t *testing.T, path string, payload string, closeWrite bool) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A server that answers without reading (refusal, oversize) may close
	// before the write completes; what it answered is still readable.
	c.Write([]byte(payload))
	if closeWrite {
		c.(*net.UnixConn).CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	// A reset after the whole answer (the server closed with our request
	// partly unread) is what a client reading one line never sees.
	if err != nil && !(errors.Is(err, syscall.ECONNRESET) && strings.HasSuffix(string(b), "\n")) {
		t.Fatalf("read: %v (got %q)", err, b)
	}
	return string(b)
}

func errLine(msg string) string {
	b, _ := json.Marshal(Fail(msg))
	return string(b) + "\n"
}

func TestServerFraming(t *testing.T) {
	s := startServer(t, Config{}, testRegistry())
	for _, tc := range []struct {
		name, in   string
		closeWrite bool
		want       string
	}{
		{"ok", `{"command":"show_status"}` + "\n", false, `{"status":"ok","data":{"state":"running"}}` + "\n"},
		{"ok without newline", `{"command":"show_status"}`, true, `{"status":"ok","data":{"state":"running"}}` + "\n"},
		{"surrounding whitespace", " \t{\"command\":\"show_status\"} \r\n", false, `{"status":"ok","data":{"state":"running"}}` + "\n"},
		{"bytes after the line are ignored", `{"command":"show_status"}` + "\ngarbage", true, `{"status":"ok","data":{"state":"running"}}` + "\n"},
		{"params", `{"command":"connect","params":{"npub":"npub1x","address":"192.0.2.1:2121","transport":"udp"}}` + "\n", false,
			`{"status":"ok","data":{"address":"192.0.2.1:2121","npub":"npub1x","refreshed":false,"transport":"udp"}}` + "\n"},
		{"empty request", "", true, errLine("empty request")},
		{"blank line", "\n", false, errLine("invalid request: EOF while parsing a value at line 1 column 0")},
		{"missing command", `{"not_command": "foo"}` + "\n", false, errLine("invalid request: missing field `command` at line 1 column 22")},
		{"unknown command", `{"command":"show_nope"}` + "\n", false, errLine("unknown command: show_nope")},
		{"missing params", `{"command":"connect"}` + "\n", false, errLine("missing params for connect")},
		{"null params", `{"command":"connect","params":null}` + "\n", false, errLine("missing params for connect")},
		{"missing field", `{"command":"connect","params":{"npub":"npub1x","transport":"udp"}}` + "\n", false, errLine("missing 'address' parameter")},
		{"invalid utf-8", "{\"command\":\"\xff\"}\n", false, errLine("read error: stream did not contain valid UTF-8")},
	} {
		if got := roundTrip(t, s.Addr(), tc.in, tc.closeWrite); got != tc.want {
			t.Errorf("%s: got %q want %q", tc.name, got, tc.want)
		}
	}
	// Malformed JSON is "invalid request: <decoder message>".
	if got := roundTrip(t, s.Addr(), "{\"command\":\n", false); !strings.HasPrefix(got, `{"status":"error","message":"invalid request: `) {
		t.Errorf("malformed: %q", got)
	}
}

func TestServerRequestSizeLimit(t *testing.T) {
	s := startServer(t, Config{}, testRegistry())
	// A request of exactly n bytes, newline included when nl.
	request := func(n int, nl bool) string {
		head, tail := `{"command":"echo","params":{"pad":"`, `"}}`
		pad := n - len(head) - len(tail)
		if nl {
			pad--
		}
		r := head + strings.Repeat("x", pad) + tail
		if nl {
			r += "\n"
		}
		if len(r) != n {
			t.Fatalf("built %d bytes, want %d", len(r), n)
		}
		return r
	}
	tooLarge := errLine("read error: request too large")
	for _, tc := range []struct {
		n      int
		nl     bool
		accept bool
	}{
		{MaxRequestSize, true, true},
		{MaxRequestSize + 1, true, false},
		{MaxRequestSize, false, true},
		{MaxRequestSize + 1, false, false},
		{64 << 10, true, false},
	} {
		got := roundTrip(t, s.Addr(), request(tc.n, tc.nl), !tc.nl)
		if tc.accept != strings.HasPrefix(got, `{"status":"ok"`) || (!tc.accept && got != tooLarge) {
			t.Errorf("%d bytes (newline %v): got %.80q", tc.n, tc.nl, got)
		}
	}
	// An oversize request that never ends is cut off without waiting for
	// the read timeout.
	c, err := net.Dial("unix", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Repeat("x", MaxRequestSize+1))); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, _ := io.ReadAll(c)
	if string(got) != tooLarge {
		t.Errorf("unterminated oversize: %q", got)
	}
}

func TestServerReadTimeout(t *testing.T) {
	s := startServer(t, Config{ReadTimeout: 50 * time.Millisecond}, testRegistry())
	c, err := net.Dial("unix", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(`{"command":"sho`)); err != nil { // and never finish
		t.Fatal(err)
	}
	// The server answers and closes: ReadAll returns at EOF.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != errLine("read timeout") {
		t.Errorf("got %q", got)
	}
}

func TestServerHandlerTimeout(t *testing.T) {
	reg := NewRegistry()
	reg.Register("polite", func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	release := make(chan struct{})
	reg.Register("stubborn", func(context.Context, json.RawMessage) (any, error) {
		<-release // ignores its context
		return "late", nil
	})
	s := startServer(t, Config{HandlerTimeout: 50 * time.Millisecond}, reg)
	for _, cmd := range []string{"polite", "stubborn"} {
		if got := roundTrip(t, s.Addr(), `{"command":"`+cmd+`"}`+"\n", false); got != errLine("query timeout") {
			t.Errorf("%s: got %q", cmd, got)
		}
	}
	// Shutdown waits for the stubborn handler; release it so it can.
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	select {
	case <-stopped:
		t.Fatal("shutdown did not wait for the running handler")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

func TestServerPanickingHandler(t *testing.T) {
	reg := NewRegistry()
	reg.Register("boom", func(context.Context, json.RawMessage) (any, error) { panic("boom") })
	s := startServer(t, Config{}, reg)
	if got := roundTrip(t, s.Addr(), `{"command":"boom"}`+"\n", false); got != errLine("response channel closed") {
		t.Errorf("got %q", got)
	}
}

// TestServerConnectionLimit: with every slot running a handler, a further
// connection is refused, counted and answered "too many connections";
// once a handler finishes its slot serves again.
func TestServerConnectionLimit(t *testing.T) {
	reg := testRegistry()
	release := make(chan struct{})
	reg.Register("block", func(ctx context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	})
	s := startServer(t, Config{MaxConns: 2, HandlerTimeout: time.Minute}, reg)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("unix", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(`{"command":"block"}` + "\n")); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	waitFor(t, func() bool {
		s.readersMu.Lock()
		defer s.readersMu.Unlock()
		return len(s.sem) == 2 && len(s.readers) == 0
	})

	// The third is refused and counted: busy handlers are not evicted.
	if got := roundTrip(t, s.Addr(), `{"command":"show_status"}`+"\n", false); got != errLine("too many connections") {
		t.Errorf("over limit: got %q", got)
	}
	if n := s.Refused(); n != 1 {
		t.Errorf("refused = %d", n)
	}
	// The client reports the refusal as the server's answer.
	_, err := Call(context.Background(), s.Addr(), "show_status", nil)
	if se := (*ServerError)(nil); !errors.As(err, &se) || se.Message != "too many connections" {
		t.Errorf("Call over limit: %v", err)
	}
	if n, e := s.Refused(), s.Evicted(); n != 2 || e != 0 {
		t.Errorf("refused = %d, evicted = %d", n, e)
	}
	// Finishing the handlers frees their slots.
	close(release)
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, _ := io.ReadAll(c); !strings.HasPrefix(string(b), `{"status":"ok"`) {
			t.Errorf("held: %q", b)
		}
	}
	waitFor(t, func() bool { return len(s.sem) == 0 })
	if got := roundTrip(t, s.Addr(), `{"command":"show_status"}`+"\n", false); !strings.HasPrefix(got, `{"status":"ok"`) {
		t.Errorf("after release: %q", got)
	}
	if n := s.Refused(); n != 2 {
		t.Errorf("refused = %d", n)
	}
}

// TestServerIdleConnectionsCannotStarve: a member of group fips opening
// more idle connections than there are slots cannot lock fipsctl out:
// each new connection evicts the longest-idle one (answered "too many
// connections" and counted), and a real request is answered at once —
// long before the read timeout, set to a minute here, could free a slot.
func TestServerIdleConnectionsCannotStarve(t *testing.T) {
	s := startServer(t, Config{ReadTimeout: time.Minute}, testRegistry())
	const idle = DefaultMaxConns + 16
	conns := make([]net.Conn, 0, idle)
	for i := range idle {
		c, err := net.Dial("unix", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		if i < DefaultMaxConns {
			// Fill the slots one at a time, so the order of the idle
			// readers is the order of the connections.
			waitFor(t, func() bool { s.readersMu.Lock(); defer s.readersMu.Unlock(); return len(s.readers) == i+1 })
		}
	}
	waitFor(t, func() bool { return s.Evicted() == idle-DefaultMaxConns })
	if len(s.sem) != DefaultMaxConns {
		t.Fatalf("slots in use %d", len(s.sem))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	v, err := Call(ctx, s.Addr(), "show_status", nil)
	if err != nil {
		t.Fatalf("fipsctl starved: %v", err)
	}
	if !strings.Contains(string(v), "running") {
		t.Errorf("answer %s", v)
	}
	if d := time.Since(start); d >= time.Minute/2 {
		t.Errorf("answered after %v: waited for a read timeout", d)
	}
	if n := s.Evicted(); n != idle-DefaultMaxConns+1 {
		t.Errorf("evicted = %d", n)
	}
	if n := s.Refused(); n != 0 {
		t.Errorf("refused = %d", n)
	}
	// The first connections, the idlest, were the ones evicted, and were
	// told why.
	for _, c := range conns[:2] {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, _ := io.ReadAll(c); string(b) != errLine("too many connections") {
			t.Errorf("evicted connection got %q", b)
		}
	}
}

func TestServerConcurrentClients(t *testing.T) {
	s := startServer(t, Config{}, testRegistry())
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			data, err := Call(context.Background(), s.Addr(), "echo", map[string]int{"i": i})
			if err != nil {
				errs <- err
				return
			}
			if string(data) != fmt.Sprintf(`{"i":%d}`, i) {
				errs <- fmt.Errorf("client %d got %s", i, data)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestServerShutdown(t *testing.T) {
	reg := testRegistry()
	started := make(chan struct{})
	reg.Register("block", func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s := startServer(t, Config{ReadTimeout: time.Minute, HandlerTimeout: time.Minute}, reg)

	// One connection inside a handler, one still sending its request.
	inHandler, err := net.Dial("unix", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer inHandler.Close()
	inHandler.Write([]byte(`{"command":"block"}` + "\n"))
	<-started
	reading, err := net.Dial("unix", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer reading.Close()
	reading.Write([]byte(`{"comm`))
	waitFor(t, func() bool { return len(s.sem) == 2 })

	if err := s.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, c := range []net.Conn{inHandler, reading} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, _ := io.ReadAll(c); string(b) != errLine("node shutting down") {
			t.Errorf("in flight: %q", b)
		}
	}
	if _, err := os.Lstat(s.Addr()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file left behind: %v", err)
	}
	if _, err := net.Dial("unix", s.Addr()); err == nil {
		t.Error("still accepting")
	}
	if err := s.Serve(context.Background()); !errors.Is(err, ErrServerClosed) {
		t.Errorf("second Serve: %v", err)
	}
}

func TestServerClose(t *testing.T) {
	// Close without Serve releases the socket; Close with Serve stops it.
	path := sockPath(t)
	srv, err := listenWith(Config{Path: path, Logger: discardLogger()}, nil, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left: %v", err)
	}
	if err := srv.Serve(context.Background()); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Close: %v", err)
	}

	s := startServer(t, Config{}, testRegistry())
	roundTrip(t, s.Addr(), `{"command":"show_status"}`+"\n", false) // serving
	s.Close()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.Addr()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left: %v", err)
	}
}

func TestSocketPermissions(t *testing.T) {
	// A parent this bind creates gets 0750; the socket 0770; both chowned.
	base := t.TempDir()
	if len(base) > 80 {
		t.Skip("temp dir too long for a socket path")
	}
	parent := filepath.Join(base, "run", "fips")
	path := filepath.Join(parent, "control.sock")
	var chowned []string
	srv, err := listenWith(Config{Path: path, Logger: discardLogger()}, nil, func(p string) { chowned = append(chowned, p) })
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	assertMode(t, path, 0o770)
	assertMode(t, parent, 0o750)
	if strings.Join(chowned, ",") != parent+","+path {
		t.Errorf("chowned %v", chowned)
	}
	fi, _ := os.Lstat(path)
	if fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("not a socket: %v", fi.Mode())
	}

	// An existing, unmanaged parent keeps its mode.
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o711); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o711)
	chowned = nil
	srv2, err := listenWith(Config{Path: filepath.Join(shared, "c.sock"), Logger: discardLogger()}, nil, func(p string) { chowned = append(chowned, p) })
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	assertMode(t, shared, 0o711)
	assertMode(t, filepath.Join(shared, "c.sock"), 0o770)
	if len(chowned) != 1 {
		t.Errorf("chowned %v", chowned)
	}
}

// TestBindPrivate: the socket is bound in a private directory and linked
// into place, which leaves nothing else behind, never replaces what is at
// the path (a regular file there is EADDRINUSE, left as it was), and
// falls back to binding in place where the temporary path is too long.
func TestBindPrivate(t *testing.T) {
	base := t.TempDir()
	if len(base) > 60 {
		t.Skip("temp dir too long for a socket path")
	}
	path := filepath.Join(base, "c.sock")
	ln, err := bindPrivate(path)
	if err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o770)
	if got := roundTripListener(t, ln, path); got != "hello" {
		t.Errorf("through the linked path: %q", got)
	}
	ln.Close()
	entries, _ := os.ReadDir(base)
	if len(entries) != 1 || entries[0].Name() != "c.sock" {
		t.Errorf("left in the directory: %v", entries)
	}

	taken := filepath.Join(base, "taken.sock")
	if err := os.WriteFile(taken, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bindPrivate(taken); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("bind over a file: %v, want EADDRINUSE", err)
	}
	if b, _ := os.ReadFile(taken); string(b) != "keep" {
		t.Errorf("the file at the path became %q", b)
	}

	// A path longer than a socket address holds is refused, as binding
	// there always was: a link would leave a socket nobody can reach.
	tooLong := filepath.Join(base, strings.Repeat("s", 120)+".sock")
	if _, err := bindPrivate(tooLong); err == nil {
		t.Errorf("bound at a %d-byte path", len(tooLong))
	}
	if _, err := os.Lstat(tooLong); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%d-byte path: %v", len(tooLong), err)
	}

	// A path whose temporary sibling would not fit a socket address.
	long := filepath.Join(base, strings.Repeat("d", maxSocketPath-len(base)-12))
	if err := os.Mkdir(long, 0o755); err != nil {
		t.Fatal(err)
	}
	lp := filepath.Join(long, "c.sock")
	ln2, err := bindPrivate(lp)
	if err != nil {
		t.Fatalf("bind at %d-byte path: %v", len(lp), err)
	}
	defer ln2.Close()
	assertMode(t, lp, 0o770)
	if entries, _ := os.ReadDir(long); len(entries) != 1 {
		t.Errorf("left beside the long path: %v", entries)
	}
}

// roundTripListener accepts one connection on ln, made to path, and
// returns what the client wrote.
func roundTripListener(t *testing.T, ln *net.UnixListener, path string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b := make([]byte, 16)
		n, _ := c.Read(b)
		got <- string(b[:n])
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	c.Close()
	return <-got
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", path, got, want)
	}
}

func TestStaleAndLiveSocket(t *testing.T) {
	path := sockPath(t)
	// A socket file with no listener (an unclean exit) is replaced.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	s := startServer(t, Config{Path: path}, testRegistry())
	if got := roundTrip(t, path, `{"command":"show_status"}`+"\n", false); !strings.HasPrefix(got, `{"status":"ok"`) {
		t.Fatalf("got %q", got)
	}
	// A live one is not taken over.
	_, err = listenWith(Config{Path: path, Logger: discardLogger()}, nil, func(string) {})
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "control socket already in use: "+path) {
		t.Errorf("second bind: %v", err)
	}
	if got := roundTrip(t, s.Addr(), `{"command":"show_status"}`+"\n", false); !strings.HasPrefix(got, `{"status":"ok"`) {
		t.Errorf("first server disturbed: %q", got)
	}
}

func TestClient(t *testing.T) {
	s := startServer(t, Config{}, testRegistry())
	ctx := context.Background()
	data, err := Call(ctx, s.Addr(), "show_status", nil)
	if err != nil || string(data) != `{"state":"running"}` {
		t.Errorf("show_status: %s %v", data, err)
	}
	data, err = Call(ctx, s.Addr(), "echo", json.RawMessage(`{"x":[1,2]}`))
	if err != nil || string(data) != `{"x":[1,2]}` {
		t.Errorf("echo: %s %v", data, err)
	}
	_, err = Call(ctx, s.Addr(), "show_nope", nil)
	var se *ServerError
	if !errors.As(err, &se) || se.Message != "unknown command: show_nope" {
		t.Errorf("server error: %#v", err)
	}
	_, err = Call(ctx, s.Addr(), "connect", map[string]string{"npub": "npub1x"})
	if !errors.As(err, &se) || se.Message != "missing 'address' parameter" {
		t.Errorf("server error: %#v", err)
	}

	missing := filepath.Join(t.TempDir(), "nope.sock")
	_, err = Call(ctx, missing, "show_status", nil)
	var ce *ConnectError
	if !errors.As(err, &ce) || err.Error() != "cannot connect to "+missing+": no such file or directory" ||
		ce.Hint() != "Is the FIPS daemon running?" || ce.PermissionDenied() {
		t.Errorf("connect error: %v", err)
	}
	if !(&ConnectError{Addr: "x", Err: syscall.EACCES}).PermissionDenied() {
		t.Error("EACCES is not permission denied")
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Call(cctx, s.Addr(), "show_status", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestClientResponses drives the client against hand-written servers.
func TestClientResponses(t *testing.T) {
	for _, tc := range []struct{ reply, data, err string }{
		{`{"status":"ok","data":{"a":1}}` + "\n", `{"a":1}`, ""},
		{`{"status":"ok","data":null}`, `null`, ""},
		{`{"status":"ok"}` + "\r\n", `{"status":"ok"}`, ""},
		{`{"status":"error"}` + "\n", "", "unknown error"},
		{`{"status":"error","message":"peer not found: x"}` + "\n" + "ignored", "", "peer not found: x"},
		{"", "", "no response from daemon"},
		{"not json\n", "", "invalid response JSON: "},
	} {
		path := sockPath(t)
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		var req []byte
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			req, _ = io.ReadAll(c) // the client half-closes after its request
			c.Write([]byte(tc.reply))
		}()
		data, err := Call(context.Background(), path, "show_status", nil)
		<-done
		ln.Close()
		if string(req) != `{"command":"show_status"}`+"\n" {
			t.Errorf("request %q", req)
		}
		switch {
		case tc.err == "" && (err != nil || string(data) != tc.data):
			t.Errorf("%q: got %s %v", tc.reply, data, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: got %v, want %q", tc.reply, err, tc.err)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSocketPathNotSocket: whatever is at the socket path and is not a
// socket — a regular file, an empty or full directory, a symlink (even to
// a stale socket), a named pipe — makes Listen fail with ErrNotSocket and
// is left exactly as it was.
func TestSocketPathNotSocket(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		make       func(t *testing.T, path string)
	}{
		{"regular file", "a regular file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty directory", "a directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", "a directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "f"), []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to a stale socket", "a symbolic link", func(t *testing.T, p string) {
			target := p + ".real"
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: target, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			ln.SetUnlinkOnClose(false)
			ln.Close()
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"named pipe", "a named pipe", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := sockPath(t)
			tc.make(t, path)
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckSocketPath(path); !errors.Is(err, ErrNotSocket) {
				t.Errorf("CheckSocketPath: %v", err)
			}
			_, err = listenWith(Config{Path: path, Logger: discardLogger()}, nil, func(string) {})
			if !errors.Is(err, ErrNotSocket) {
				t.Fatalf("Listen: %v, want ErrNotSocket", err)
			}
			if msg := err.Error(); !strings.Contains(msg, path+" is "+tc.kind+", not a socket; refusing to remove it") || strings.Contains(msg, "\n") {
				t.Errorf("message: %q", msg)
			}
			after, err := os.Lstat(path)
			if err != nil {
				t.Fatalf("removed: %v", err)
			}
			if !os.SameFile(before, after) || before.Mode() != after.Mode() || before.Size() != after.Size() {
				t.Errorf("changed: %v → %v", before.Mode(), after.Mode())
			}
			if tc.name == "regular file" {
				if b, _ := os.ReadFile(path); string(b) != "precious" {
					t.Errorf("content: %q", b)
				}
			}
		})
	}
	// Nothing at the path, and a socket file, pass the check.
	path := sockPath(t)
	if err := CheckSocketPath(path); err != nil {
		t.Errorf("absent: %v", err)
	}
	s := startServer(t, Config{Path: path}, testRegistry())
	if err := CheckSocketPath(s.Addr()); err != nil {
		t.Errorf("socket: %v", err)
	}
}

// TestShutdownLeavesNonSocket: a socket replaced while the server ran is
// not removed at shutdown.
func TestShutdownLeavesNonSocket(t *testing.T) {
	path := sockPath(t)
	s := startServer(t, Config{Path: path}, testRegistry())
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "precious" {
		t.Errorf("after shutdown: %q %v", b, err)
	}
}

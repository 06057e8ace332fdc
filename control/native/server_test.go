//go:build linux || darwin || freebsd

package native_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/native"
	"github.com/fips-go/fips/control/native/client"
)

// fakeHost serves a registry under a mutex, as the node's loop would,
// and records what clients send.
type fakeHost struct {
	mu   sync.Mutex
	reg  *native.Registry
	npub string
	out  chan native.Outbound
}

func (h *fakeHost) Registry(_ context.Context, f func(r *native.Registry, now time.Time)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h.reg, time.Now())
	return nil
}

func (h *fakeHost) Send(o native.Outbound) error {
	h.out <- o
	return nil
}

func (h *fakeHost) MaxPayload() uint16 { return 1362 }
func (h *fakeHost) Npub() string       { return h.npub }

func startServer(t *testing.T, debug bool) (*native.Server, *fakeHost, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fns")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := identity.Generate(nil)
	l := native.Limits{PerFlow: 4, Backlog: 2, MaxFlows: 8}
	h := &fakeHost{reg: native.NewRegistry(l), npub: id.Npub(), out: make(chan native.Outbound, 64)}
	path := filepath.Join(dir, "api.sock")
	s, err := native.Bind(native.Config{Path: path, Limits: l, Debug: debug}, h, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		<-done
		os.RemoveAll(dir)
	})
	return s, h, path
}

// ask sends lines on one connection and returns a reply per line.
func ask(t *testing.T, path string, lines ...string) []map[string]any {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	var out []map[string]any
	for _, l := range lines {
		if _, err := io.WriteString(c, l+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: reply %q", l, line)
		}
		out = append(out, m)
	}
	return out
}

func errnoOf(m map[string]any) string {
	d, _ := m["data"].(map[string]any)
	s, _ := d["errno"].(string)
	return s
}

func TestServerRefusalsAreLinesAndTheConnectionStays(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	_, _, path := startServer(t, false)
	got := ask(t, path,
		`garbage`,
		`{"command":"teleport"}`,
		`{"command":"listen","params":{"local_port":256}}`,
		`{"command":"connect","params":{"peer":"npub1nope","remote_port":4242}}`,
		`{"command":"stats","params":{"flow_id":1}}`,
		`{"command":"listen"}`,
	)
	for i, want := range []string{"EINVAL", "EINVAL", "EADDRNOTAVAIL", "EINVAL", "ECONNREFUSED", "EINVAL"} {
		if got[i]["status"] != "error" || errnoOf(got[i]) != want {
			t.Errorf("reply %d: %v, want %s", i, got[i], want)
		}
	}
	if msg, _ := got[4]["message"].(string); !strings.Contains(msg, "node.native_api.debug_commands") {
		t.Errorf("debug refusal %q", msg)
	}
}

// TestServerCommandTooLarge: a line over 8192 bytes ends the connection
// with nothing written back.
func TestServerCommandTooLarge(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	_, _, path := startServer(t, false)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, strings.Repeat("x", native.MaxCommand+1)+"\n")
	if b, err := io.ReadAll(c); len(b) != 0 || err != nil {
		t.Fatalf("read %q, %v", b, err)
	}
}

// TestServerDebugArrivalHandOver: an arrival announced on a listener is
// handed over with its held datagrams already on the flow; stats and
// inject reach the flow; closing descriptors releases ports and flows.
func TestServerDebugArrivalHandOver(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	_, h, path := startServer(t, true)
	lis, err := client.Listen(path, 4242)
	if err != nil {
		t.Fatal(err)
	}
	peer, _ := identity.Generate(nil)
	arrive := `{"command":"arrive","params":{"peer":"` + peer.Npub() + `","src_port":5000,"dst_port":4242,"data":"aa"}}`
	got := ask(t, path, arrive, arrive, arrive,
		`{"command":"arrive","params":{"peer":"`+peer.Npub()+`","src_port":5000,"dst_port":9999,"data":"aa"}}`)
	for i, r := range got[:3] {
		d := r["data"].(map[string]any)
		if o := d["outcome"]; o != "announced" && o != "held" && o != "delivered" {
			t.Errorf("arrival %d: %v", i, r)
		}
	}
	if d := got[3]["data"].(map[string]any); d["outcome"] != "dropped: no listener or flow on that port" || d["flow_id"] != nil {
		t.Errorf("unheld port: %v", got[3])
	}
	lis.SetDeadline(time.Now().Add(5 * time.Second))
	c, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if c.RemoteAddr().Key != peer.PublicKey() || c.RemoteAddr().Port != 5000 || c.LocalAddr().Port != 4242 || c.MaxPayload() != 1362 {
		t.Fatalf("accepted %v → %v", c.RemoteAddr(), c.LocalAddr())
	}
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 3 {
		if n, err := c.Recv(buf); err != nil || n != 1 || buf[0] != 0xaa {
			t.Fatalf("datagram %d: %x, %v", i, buf[:n], err)
		}
	}
	// What the client writes reaches the host, stamped with the flow.
	if err := c.Send([]byte("up")); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-h.out:
		if string(o.Payload) != "up" || o.Key.Local != 4242 || o.Key.Remote != 5000 || o.PubKey != peer.PublicKey() {
			t.Errorf("outbound %+v", o)
		}
		o.Done()
	case <-time.After(5 * time.Second):
		t.Fatal("nothing sent")
	}
	id := c.FlowID()
	st := ask(t, path, `{"command":"stats","params":{"flow_id":`+itoa(id)+`}}`,
		`{"command":"inject","params":{"flow_id":`+itoa(id)+`,"data":"00ff10","repeat":3}}`)
	if d := st[0]["data"].(map[string]any); d["rx_datagrams"] != 1.0 || d["rx_bytes"] != 2.0 || d["closed"] != false {
		t.Errorf("stats %v", st[0])
	}
	for range 3 {
		if n, err := c.Recv(buf); err != nil || string(buf[:n]) != "\x00\xff\x10" {
			t.Fatalf("injected: %x, %v", buf[:n], err)
		}
	}
	c.Close()
	lis.Close()
	ok := false
	for range 200 {
		var flows, ports int
		h.Registry(context.Background(), func(r *native.Registry, _ time.Time) { flows, ports = r.FlowCount(), r.PortCount() })
		if flows == 0 && ports == 0 {
			ok = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok {
		t.Fatal("closing the descriptors released nothing")
	}
	// A connect: EINVAL for a bad npub, EADDRINUSE for a held port.
	l2, err := client.Listen(path, 4242)
	if err != nil {
		t.Fatalf("rebind: %v", err)
	}
	defer l2.Close()
	if _, err := client.Dial(path, 4242, client.Addr{Key: peer.PublicKey(), Port: 4242}); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("connect from a held port: %v", err)
	}
	if _, err := client.Dial(path, 0, client.Addr{Key: peer.PublicKey(), Port: 80}); !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("connect to port 80: %v", err)
	}
}

func itoa(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// TestServerConnectionBound: at most MaxConns setup connections at once;
// one more evicts the longest-idle connection and is served.
func TestServerConnectionBound(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	s, _, path := startServer(t, false)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range native.MaxConns {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		time.Sleep(time.Millisecond) // distinct idle times: held[0] is the oldest
	}
	if r := ask(t, path, `{"command":"teleport"}`); errnoOf(r[0]) != "EINVAL" {
		t.Fatalf("past the bound: %v", r)
	}
	if s.Evicted() != 1 || s.Refused() != 0 {
		t.Fatalf("evicted %d, refused %d", s.Evicted(), s.Refused())
	}
	held[0].SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := held[0].Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("the oldest idle connection: %d, %v", n, err)
	}
}

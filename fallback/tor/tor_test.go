package tor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/transport/transporttest"
	"github.com/fips-go/fips/control/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type logBuf = transporttest.LogBuffer

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(transporttest.Wait)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func msg1(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, wire.FMPMsg1Size)
	if _, err := (wire.FMPMsg1{SenderIndex: 9, Noise: bytes.Repeat([]byte{9}, wire.IKMsg1Size)}).MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func baseOptions(mode string) Options {
	return Options{Mode: mode, Socks5Addr: "127.0.0.1:9", ConnectTimeout: 5 * time.Second, MTU: DefaultMTU,
		ControlAddr: "127.0.0.1:9", ControlAuth: "password:pw", CookiePath: "/nonexistent",
		MaxInboundConnections: DefaultMaxInbound, HostnameFile: "/nonexistent", BindAddr: "127.0.0.1:0",
		AdvertisedPort: DefaultAdvertisedPort, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond}
}

func start(t *testing.T, o Options, log *logBuf) (*Transport, *transporttest.Sink) {
	t.Helper()
	tr, err := New(1, "", o, log.Logger())
	if err != nil {
		t.Fatal(err)
	}
	in := transporttest.NewSink(16)
	if err := tr.Start(context.Background(), in.Deliver); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, in
}

// fakeProxy is a SOCKS5 proxy: CONNECT to a name in routes is piped to
// its address; reply, when set, refuses every CONNECT with that code.
type fakeProxy struct {
	ln     net.Listener
	routes map[string]string
	reply  byte
	wg     sync.WaitGroup
}

func newFakeProxy(t *testing.T, routes map[string]string, reply byte) *fakeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProxy{ln: ln, routes: routes, reply: reply}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *fakeProxy) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	h := make([]byte, 3)
	if _, err := io.ReadFull(r, h); err != nil {
		return
	}
	c.Write([]byte{5, 2})
	r.ReadByte() // version
	ul, _ := r.ReadByte()
	io.CopyN(io.Discard, r, int64(ul))
	pl, _ := r.ReadByte()
	io.CopyN(io.Discard, r, int64(pl))
	c.Write([]byte{1, 0})
	req := make([]byte, 5)
	if _, err := io.ReadFull(r, req); err != nil || req[3] != 3 {
		return
	}
	host := make([]byte, int(req[4])+2)
	io.ReadFull(r, host)
	name := net.JoinHostPort(string(host[:len(host)-2]), itoa(binary.BigEndian.Uint16(host[len(host)-2:])))
	to, ok := p.routes[name]
	if p.reply != 0 || !ok {
		code := p.reply
		if code == 0 {
			code = RepOnionDescNotFound
		}
		c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	up, err := net.Dial("tcp", to)
	if err != nil {
		c.Write([]byte{5, RepConnectionRefused, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
	done := make(chan struct{})
	go func() { io.Copy(up, r); up.Close(); close(done) }()
	io.Copy(c, up)
	c.Close()
	<-done
}

func itoa(v uint16) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), v).String()[len("0.0.0.0:"):]
}

func TestDirectoryModeReachedThroughSOCKS5(t *testing.T) {
	onion := OnionAddress(testKey(5))
	dir := t.TempDir()
	hostname := filepath.Join(dir, "hostname")
	var la logBuf
	o := baseOptions(ModeDirectory)
	o.HostnameFile = hostname
	a, ain := start(t, o, &la)
	// Tor writes the hostname file after we start: the service comes up then.
	time.Sleep(30 * time.Millisecond)
	if a.OnionAddress() != "" {
		t.Fatal("onion address before the hostname file exists")
	}
	if err := os.WriteFile(hostname, []byte(onion+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the onion address", func() bool { return a.OnionAddress() == onion })
	if !strings.Contains(la.String(), "Tor onion service not up; retrying") {
		t.Errorf("no retry line logged:\n%s", la.String())
	}

	proxy := newFakeProxy(t, map[string]string{onion + ":443": a.LocalAddr()}, 0)
	var lb logBuf
	ob := baseOptions(ModeSOCKS5)
	ob.Socks5Addr = proxy.ln.Addr().String()
	b, _ := start(t, ob, &lb)
	to, err := b.ResolveAddr(context.Background(), strings.ToUpper(onion)+":443")
	if err != nil {
		t.Fatal(err)
	}
	if !SyntheticPrefix().Contains(to.IP.Addr()) || b.HostName(to) != onion+":443" {
		t.Fatalf("resolved to %v (%q)", to, b.HostName(to))
	}
	if again, _ := b.ResolveAddr(context.Background(), onion+":443"); again != to {
		t.Fatalf("second resolve %v != %v", again, to)
	}
	if err := b.Send(to, msg1(t)); err != nil {
		t.Fatal(err)
	}
	if p := ain.Next(t); !bytes.Equal(p.Data, msg1(t)) {
		t.Fatal("msg1 not delivered intact")
	}
	if !strings.Contains(lb.String(), "Tor circuit established via SOCKS5") {
		t.Errorf("no circuit line:\n%s", lb.String())
	}
	if b.Type() != "tor" || !a.AcceptConnections() || b.AcceptConnections() {
		t.Errorf("type %s accept %v %v", b.Type(), a.AcceptConnections(), b.AcceptConnections())
	}
}

func TestSOCKS5RefusalNamedAndCounted(t *testing.T) {
	proxy := newFakeProxy(t, nil, RepConnectionRefused)
	var l logBuf
	o := baseOptions(ModeSOCKS5)
	o.Socks5Addr = proxy.ln.Addr().String()
	b, _ := start(t, o, &l)
	to, err := b.ResolveAddr(context.Background(), OnionAddress(testKey(1))+":443")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Send(to, msg1(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refusal", func() bool { return b.Stats().ConnectRefused == 1 })
	if s := l.String(); !strings.Contains(s, "Tor SOCKS5 connection failed") || !strings.Contains(s, "connection refused (0x05)") {
		t.Errorf("refusal not logged by name:\n%s", s)
	}
}

func TestTorNotRunning(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	var l logBuf
	o := baseOptions(ModeControlPort)
	o.Socks5Addr, o.ControlAddr = dead, dead
	b, _ := start(t, o, &l)
	if b.State() != transport.StateUp {
		t.Fatalf("state %s", b.State())
	}
	to, _ := b.ResolveAddr(context.Background(), "example.org:443")
	b.Send(to, msg1(t))
	eventually(t, "both failures logged", func() bool {
		s := l.String()
		return strings.Contains(s, "SOCKS5 proxy unreachable (is Tor running") && strings.Contains(s, "tor control port unreachable (is Tor running")
	})
	if n := strings.Count(l.String(), "level=WARN msg=\"Tor onion service not up"); n != 1 {
		t.Errorf("%d warnings for one repeated failure", n)
	}
}

// fakeControl is a Tor control port that takes password "pw".
type fakeControl struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	cmds []string
	kick chan struct{} // closes the current connection
}

func newFakeControl(t *testing.T) *fakeControl {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeControl{ln: ln, kick: make(chan struct{}, 1)}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeControl) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

func (f *fakeControl) serve(c net.Conn) {
	defer c.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		r := bufio.NewScanner(c)
		for r.Scan() {
			lines <- r.Text()
		}
	}()
	defer func() {
		c.Close()
		for range lines {
		}
	}()
	for {
		select {
		case <-f.kick:
			return
		case l, ok := <-lines:
			if !ok {
				return
			}
			f.mu.Lock()
			f.cmds = append(f.cmds, l)
			f.mu.Unlock()
			switch {
			case l == `AUTHENTICATE "pw"`:
				io.WriteString(c, "250 OK\r\n")
			case strings.HasPrefix(l, "AUTHENTICATE"):
				io.WriteString(c, "515 Authentication failed: Password did not match HashedControlPassword value from configuration\r\n")
			case strings.HasPrefix(l, "ADD_ONION NEW:"):
				io.WriteString(c, "250-ServiceID="+OnionAddress(testKey(2))[:56]+"\r\n250-PrivateKey=ED25519-V3:KEY\r\n250 OK\r\n")
			case strings.HasPrefix(l, "ADD_ONION ED25519-V3:KEY "):
				io.WriteString(c, "250-ServiceID="+OnionAddress(testKey(2))[:56]+"\r\n250 OK\r\n")
			default:
				io.WriteString(c, "510 Unrecognized command\r\n")
			}
		}
	}
}

func TestControlPortAddOnion(t *testing.T) {
	fc := newFakeControl(t)
	var l logBuf
	o := baseOptions(ModeControlPort)
	o.ControlAddr = fc.ln.Addr().String()
	o.AdvertisedPort = 2121
	a, _ := start(t, o, &l)
	onion := OnionAddress(testKey(2))
	eventually(t, "the onion service", func() bool { return a.OnionAddress() == onion })
	want := []string{`AUTHENTICATE "pw"`, "ADD_ONION NEW:ED25519-V3 Port=2121," + a.LocalAddr()}
	if got := fc.commands(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("commands %q, want %q", got, want)
	}
	// Tor restarts: the service is re-created with the same key.
	fc.kick <- struct{}{}
	eventually(t, "the service re-created", func() bool { return len(fc.commands()) == 4 && a.OnionAddress() == onion })
	if got := fc.commands()[3]; got != "ADD_ONION ED25519-V3:KEY Port=2121,"+a.LocalAddr() {
		t.Fatalf("re-created with %q", got)
	}
}

func TestControlPortAuthFailure(t *testing.T) {
	fc := newFakeControl(t)
	var l logBuf
	o := baseOptions(ModeControlPort)
	o.ControlAddr = fc.ln.Addr().String()
	o.ControlAuth = "password:wrong"
	a, _ := start(t, o, &l)
	eventually(t, "the auth failure", func() bool { return strings.Contains(l.String(), "tor control port authentication failed") })
	if a.OnionAddress() != "" || a.State() != transport.StateUp {
		t.Fatalf("onion %q state %s", a.OnionAddress(), a.State())
	}
}

func TestResolveRefusesMalformed(t *testing.T) {
	tr, err := New(1, "", baseOptions(ModeSOCKS5), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, s := range []string{"abc.onion:443", OnionAddress(testKey(1)), "localhost:80", "[100::5]:443", "a.b:0", "a.b:99999", "bad host.org:1"} {
		_, err := tr.ResolveAddr(context.Background(), s)
		if !errors.Is(err, transport.ErrInvalidAddress) {
			t.Errorf("ResolveAddr(%q) = %v", s, err)
		}
	}
	if _, err := tr.ResolveAddr(context.Background(), "abc.onion:443"); !errors.Is(err, ErrMalformedOnion) {
		t.Errorf("malformed onion: %v", err)
	}
	a, err := tr.ResolveAddr(context.Background(), "192.0.2.1:443")
	if err != nil || a.IP.String() != "192.0.2.1:443" {
		t.Errorf("IP: %v %v", a, err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := baseOptions(ModeSOCKS5)
	o.DirectoryService = true
	for _, bad := range []Options{o, {Mode: "embedded"}, func() Options { o := baseOptions(ModeControlPort); o.ControlAuth = "none"; return o }(),
		func() Options { o := baseOptions(ModeSOCKS5); o.Socks5Addr = "nohost"; return o }()} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	// New accepts them; Start refuses (the node runs degraded without it).
	tr, err := New(1, "", Options{Mode: "embedded", MTU: DefaultMTU, ConnectTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background(), transporttest.NewSink(1).Deliver); err == nil || !strings.Contains(err.Error(), `unsupported mode "embedded"`) {
		t.Errorf("Start with mode embedded: %v", err)
	}
	tr.Close()
	u := baseOptions(ModeControlPort)
	u.ControlAddr = "/run/tor/control"
	if err := u.Validate(); err != nil {
		t.Error(err)
	}
}

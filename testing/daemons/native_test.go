//go:build linux || darwin || freebsd

package daemons

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/native/client"
)

// TestNativeAPIAcrossALine: three daemons in a line over UDP, TUN off,
// the ends with node.native_api on; a program on each end exchanges
// datagrams by npub:port through the relay, the API socket has mode 0770,
// and both ends list the flow in show_native_flows; then the example
// program docs/examples/native-echo does the same on each end.
func TestNativeAPIAcrossALine(t *testing.T) {
	const n = 3
	ids := make([]*identity.Identity, n)
	ports := make([]int, n)
	for i := range ids {
		ids[i], _ = identity.Generate(nil)
		ports[i] = FreePort(t)
	}
	ds := make([]*Daemon, n)
	for i := range ds {
		var peers strings.Builder
		for _, j := range []int{i - 1, i + 1} {
			if j >= 0 && j < n {
				fmt.Fprintf(&peers, "  - npub: %q\n    addresses:\n      - { transport: udp, addr: \"127.0.0.1:%d\" }\n", ids[j].Npub(), ports[j])
			}
		}
		api := ""
		if i != 1 {
			api = "  native_api: { enabled: true, socket_path: \"{{DIR}}/api.sock\" }\n"
		}
		cfg := fmt.Sprintf("node:\n  identity: { nsec: %q }\n  control: { socket_path: \"{{DIR}}/control.sock\" }\n%s"+
			"tun: { enabled: false }\ntransports:\n  udp: { bind_addr: \"127.0.0.1:%d\" }\npeers:\n%s",
			ids[i].Secret().Hex(), api, ports[i], peers.String())
		ds[i] = New(t, bins, fmt.Sprintf("n%d", i), cfg)
		ds[i].Start()
	}
	sockA, sockB := filepath.Join(ds[0].Dir, "api.sock"), filepath.Join(ds[2].Dir, "api.sock")
	for i, sock := range []string{sockA, sockB} {
		if _, ok := WaitFor(10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }); !ok {
			t.Fatalf("no API socket:\n%s", ds[2*i].Logs())
		}
	}
	if fi, err := os.Stat(sockB); err != nil || fi.Mode().Perm() != 0o770 {
		t.Errorf("API socket mode %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(ds[1].Dir, "api.sock")); err == nil {
		t.Error("the relay, API off, bound a socket")
	}

	l, err := client.Listen(sockB, 4242)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := client.Dial(sockA, 0, client.Addr{Key: ids[2].PublicKey(), Port: 4242})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan *client.Conn, 1)
	go func() {
		l.SetDeadline(time.Now().Add(30 * time.Second))
		a, err := l.Accept()
		if err != nil {
			close(got)
			return
		}
		got <- a
	}()
	var b *client.Conn
	for end := time.Now().Add(30 * time.Second); b == nil && time.Now().Before(end); {
		if err := c.Send([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		select {
		case b = <-got:
		case <-time.After(500 * time.Millisecond):
		}
	}
	if b == nil {
		t.Fatalf("no flow arrived\n%s", ds[2].Logs())
	}
	defer b.Close()
	if b.RemoteAddr().Key != ids[0].PublicKey() || b.RemoteAddr() != c.LocalAddr() {
		t.Fatalf("arrived from %v, sent from %v", b.RemoteAddr(), c.LocalAddr())
	}
	if err := b.Send([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if k, err := c.Recv(buf); err != nil || string(buf[:k]) != "pong" {
		t.Fatalf("A got %q, %v", buf[:k], err)
	}
	if _, err := client.Listen(sockB, 4242); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second listen: %v", err)
	}
	var fa, fb ctl.NativeFlowsJSON
	if err := ds[0].Call("show_native_flows", nil, &fa); err != nil {
		t.Fatal(err)
	}
	if err := ds[2].Call("show_native_flows", nil, &fb); err != nil {
		t.Fatal(err)
	}
	if len(fa.Flows) != 1 || fa.Flows[0].Peer != ids[2].Npub() || fa.Flows[0].State != "established" || fa.Stats.ReceivedDatagrams != 1 {
		t.Errorf("A: %+v", fa)
	}
	if len(fb.Flows) != 1 || fb.Flows[0].Peer != ids[0].Npub() || len(fb.Listeners) != 1 || fb.Stats.FlowsAccepted != 1 {
		t.Errorf("B: %+v", fb)
	}

	// The example program of docs/native-api.md, on each end: an echo
	// served at C, a message sent to it from A by npub:port.
	echo := filepath.Join(t.TempDir(), "native-echo")
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", echo, "./docs/examples/native-echo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build native-echo: %v\n%s", err, out)
	}
	serve := exec.Command(echo, "-socket", sockB, "serve", "4343")
	var served strings.Builder
	serve.Stdout = &served
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	out, err := exec.Command(echo, "-socket", sockA, "-wait", "30s", "send", ids[2].Npub()+":4343", "hello", "mesh").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "hello mesh (from "+ids[2].Npub()+":4343)") {
		t.Fatalf("native-echo send: %v\n%s\nC:\n%s", err, out, ds[2].Logs())
	}
	t.Logf("native-echo send: %s", strings.TrimSpace(string(out)))
}

//go:build unix

// Package daemons builds the fips binaries once and runs real daemons as
// child processes for integration tests: configs in a temp directory,
// control-socket queries, kill -9 and restart, log inspection, and cleanup
// of every process a test started, even when it fails.
package daemons

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
)

// Binaries are the built fips and fipsctl.
type Binaries struct {
	Fips, Fipsctl string
}

// Build compiles cmd/fips and cmd/fipsctl into dir.
func Build(dir string) (Binaries, error) {
	root, err := ModuleRoot()
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Fips: filepath.Join(dir, "fips"), Fipsctl: filepath.Join(dir, "fipsctl")}
	for out, pkg := range map[string]string{b.Fips: "./cmd/fips", b.Fipsctl: "./cmd/fipsctl"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return Binaries{}, fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	return b, nil
}

// ModuleRoot is the directory of this module's go.mod (found from this
// source file, so tests and `go run` programs agree).
func ModuleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate source")
	}
	return filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
}

// FreePort returns a loopback port that was free for both UDP and TCP a
// moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 50 {
		l, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.LocalAddr().(*net.UDPAddr).Port
		l.Close()
		tl, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		tl.Close()
		return port
	}
	t.Fatal("no free port")
	return 0
}

// Daemon is one fips process with its own directory and config.
type Daemon struct {
	t      testing.TB
	bin    Binaries
	Name   string
	Dir    string
	Config string
	Socket string
	// Env is added to the daemon's environment (RUST_LOG=…), after the
	// test's own.
	Env []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// New prepares a daemon named name whose fips.yaml is config (which may
// refer to {{DIR}} for the daemon's directory).
func New(t testing.TB, bin Binaries, name, config string) *Daemon {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{t: t, bin: bin, Name: name, Dir: dir, Config: filepath.Join(dir, "fips.yaml"),
		Socket: filepath.Join(dir, "control.sock")}
	config = strings.ReplaceAll(config, "{{DIR}}", dir)
	if err := os.WriteFile(d.Config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	return d
}

// Start launches the daemon.
func (d *Daemon) Start() {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.starts++
	logPath := filepath.Join(d.Dir, fmt.Sprintf("log.%d", d.starts))
	f, err := os.Create(logPath)
	if err != nil {
		d.t.Fatal(err)
	}
	cmd := exec.Command(d.bin.Fips, "-c", d.Config)
	// hosts and peers.allow/deny are read from the daemon's directory,
	// not the machine's /etc/fips.
	cmd.Env = append(append(os.Environ(), config.EtcDirEnv+"="+d.Dir), d.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		d.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(exited)
	}()
	d.cmd, d.exited = cmd, exited
}

// Kill sends SIGKILL and waits for the process to go away.
func (d *Daemon) Kill() { d.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits for a clean exit.
func (d *Daemon) Stop() int {
	d.signal(syscall.SIGTERM)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || d.cmd.ProcessState == nil {
		return -1
	}
	return d.cmd.ProcessState.ExitCode()
}

func (d *Daemon) signal(sig syscall.Signal) {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Logs returns everything every run of the daemon has logged so far.
func (d *Daemon) Logs() string {
	var b strings.Builder
	for i := 1; i <= d.starts; i++ {
		data, _ := os.ReadFile(filepath.Join(d.Dir, fmt.Sprintf("log.%d", i)))
		fmt.Fprintf(&b, "--- run %d ---\n%s", i, data)
	}
	return b.String()
}

// Call sends one control request and decodes the data into out (if not nil).
func (d *Daemon) Call(command string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := ctl.Call(ctx, d.Socket, command, params)
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Peers returns the npubs show_peers lists.
func (d *Daemon) Peers() []string { return d.npubs("show_peers", "peers") }

// Sessions returns the npubs of the sessions show_sessions lists.
func (d *Daemon) Sessions() []string { return d.npubs("show_sessions", "sessions") }

// npubs is the npub of every entry of the list named list in command's
// data (nil when the daemon does not answer).
func (d *Daemon) npubs(command, list string) []string {
	var data map[string]json.RawMessage
	if err := d.Call(command, nil, &data); err != nil {
		return nil
	}
	var entries []struct {
		Npub string `json:"npub"`
	}
	if err := json.Unmarshal(data[list], &entries); err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Npub)
	}
	return out
}

// HasPeer reports whether show_peers lists npub.
func (d *Daemon) HasPeer(npub string) bool {
	for _, p := range d.Peers() {
		if p == npub {
			return true
		}
	}
	return false
}

// WaitFor polls cond every 10 ms until it holds or timeout passes, and
// returns how long it took.
func WaitFor(timeout time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > timeout {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FilterEstimate is the estimated_count show_bloom reports for a filter
// holding exactly addrs. A test waiting for filters to cover some nodes
// compares with it, not with len(addrs): an address whose k bit indices
// coincide (h2 a multiple of 2048, about 1 address in 2,000) or addresses
// sharing bits make the estimate of a complete filter fall short of the
// count.
func FilterEstimate(addrs ...identity.NodeAddr) float64 {
	f := bloom.NewFilter()
	for _, a := range addrs {
		f.Insert(a)
	}
	n, _ := f.EstimateCount(math.Inf(1))
	return n
}

// Line starts n daemons named prefix0…prefix(n-1) in a line over UDP on
// loopback, each with its two neighbours as static peers, and returns them
// with their identities.
func Line(t testing.TB, bin Binaries, prefix string, n int) ([]*Daemon, []*identity.Identity) {
	t.Helper()
	return LineEnv(t, bin, prefix, n, nil)
}

// LineEnv is Line with env added to every daemon's environment.
func LineEnv(t testing.TB, bin Binaries, prefix string, n int, env []string) ([]*Daemon, []*identity.Identity) {
	t.Helper()
	ids := make([]*identity.Identity, n)
	ports := make([]int, n)
	for i := range ids {
		id, err := identity.Generate(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i], ports[i] = id, FreePort(t)
	}
	ds := make([]*Daemon, n)
	for i := range ds {
		var peers strings.Builder
		for _, j := range []int{i - 1, i + 1} {
			if j < 0 || j >= n {
				continue
			}
			fmt.Fprintf(&peers, "  - npub: %q\n    addresses:\n      - { transport: udp, addr: \"127.0.0.1:%d\" }\n", ids[j].Npub(), ports[j])
		}
		cfg := fmt.Sprintf("node:\n  identity: { nsec: %q }\n  control: { socket_path: \"{{DIR}}/control.sock\" }\n"+
			"transports:\n  udp: { bind_addr: \"127.0.0.1:%d\" }\npeers:\n%s", ids[i].Secret().Hex(), ports[i], peers.String())
		ds[i] = New(t, bin, fmt.Sprintf("%s%d", prefix, i), cfg)
		ds[i].Env = env
		ds[i].Start()
	}
	return ds, ids
}

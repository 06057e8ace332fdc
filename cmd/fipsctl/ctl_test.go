//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fips-go/fips/control/ctl"
	"go.uber.org/goleak"
)

const (
	npubA = "npub1sx42mj99aql52aklsg70y2jmr95u7uz2p40k769aw46ppjv302kqkhmu5r"
	npubB = "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6"
)

// daemon is an in-process control socket recording what it was asked.
type daemon struct {
	path string
	mu   sync.Mutex
	reqs []string // "command params"
}

func (d *daemon) record(cmd string, p json.RawMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reqs = append(d.reqs, strings.TrimSpace(cmd+" "+string(p)))
}

func (d *daemon) last() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.reqs) == 0 {
		return ""
	}
	return d.reqs[len(d.reqs)-1]
}

func startDaemon(t *testing.T) *daemon {
	t.Helper()
	d := &daemon{}
	reg := ctl.NewRegistry()
	reg.Register("show_status", func(_ context.Context, p json.RawMessage) (any, error) {
		d.record("show_status", p)
		return ctl.ShowStatus{State: "running", Npub: npubA, EffectiveIPv6MTU: 1203,
			Sparklines: ctl.Sparklines{LossRate: ctl.List[ctl.Float]{0, 0.25}}}, nil
	})
	for _, target := range showTargets[1:] {
		name := "show_" + strings.ReplaceAll(target, "-", "_")
		reg.Register(name, func(_ context.Context, p json.RawMessage) (any, error) {
			d.record(name, p)
			return map[string]any{"command": name, "empty": []int{}, "nested": map[string]any{}}, nil
		})
	}
	reg.Register("show_acl", func(_ context.Context, p json.RawMessage) (any, error) {
		d.record("show_acl", p)
		return ctl.ShowACL{EffectiveMode: "default_open", DefaultDecision: "allow"}, nil
	})
	for _, name := range []string{"connect", "disconnect"} {
		reg.Register(name, func(_ context.Context, raw json.RawMessage) (any, error) {
			d.record(name, raw)
			p, err := ctl.RequireParams(name, raw)
			if err != nil {
				return nil, err
			}
			npub, err := p.String("npub")
			if err != nil {
				return nil, err
			}
			if npub == npubB {
				return nil, ctl.Errorf("peer not found: %s", npub)
			}
			if name == "disconnect" {
				return map[string]any{"npub": npub, "disconnected": true}, nil
			}
			addr, _ := p.String("address")
			tr, _ := p.String("transport")
			return map[string]any{"npub": npub, "address": addr, "transport": tr, "refreshed": false}, nil
		})
	}
	registerStats(d, reg)
	d.path = serve(t, reg)
	return d
}

// serve runs a control socket answering from reg until the test ends and
// returns its path.
func serve(t *testing.T, reg *ctl.Registry) string {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	dir, err := os.MkdirTemp("", "fipsctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "control.sock")
	srv, err := ctl.Listen(ctl.Config{Path: path}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return path
}

func TestShowStatusRoundTrip(t *testing.T) {
	d := startDaemon(t)
	code, out, errs := fipsctl(t, "", "-s", d.path, "show", "status")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if d.last() != "show_status" {
		t.Errorf("daemon saw %q", d.last())
	}
	// Upstream's layout: sorted keys, two-space indent, floats with a
	// decimal point, empty containers inline, one trailing newline.
	for _, want := range []string{
		"{\n  \"connection_count\": 0,\n",
		"  \"effective_ipv6_mtu\": 1203,\n",
		"  \"estimated_mesh_size\": null,\n",
		"  \"sparklines\": {\n    \"bytes_in\": [],\n",
		"    \"loss_rate\": [\n      0.0,\n      0.25\n    ],\n",
		"  \"transport_peer_counts\": {},\n",
		"  \"version\": \"\"\n}\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.HasSuffix(out, "\n\n") {
		t.Error("extra blank line")
	}
}

func TestShowEveryTarget(t *testing.T) {
	d := startDaemon(t)
	for _, target := range showTargets[1:] {
		code, out, errs := fipsctl(t, "", "--socket", d.path, "show", target)
		cmd := "show_" + strings.ReplaceAll(target, "-", "_")
		if code != 0 || d.last() != cmd {
			t.Errorf("%s: exit %d, daemon saw %q: %s", target, code, d.last(), errs)
		}
		want := "{\n  \"command\": \"" + cmd + "\",\n  \"empty\": [],\n  \"nested\": {}\n}\n"
		if out != want {
			t.Errorf("%s: got %q", target, out)
		}
	}
	code, out, _ := fipsctl(t, "", "-s", d.path, "acl", "show")
	if code != 0 || d.last() != "show_acl" || !strings.Contains(out, "\"effective_mode\": \"default_open\"") {
		t.Errorf("acl show: exit %d, %q, %s", code, d.last(), out)
	}
}

func TestConnectDisconnect(t *testing.T) {
	d := startDaemon(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("# aliases\n\ntest-us01 "+npubA+"\nbad_name "+npubA+"\n"+
		"gone npub1notvalid\nthree fields here\nnpub1lookalike "+npubA+"\nTEST-us02 "+npubA+"\n"), 0o644)

	code, out, errs := fipsctlWith(t, hosts, "-s", d.path, "connect", npubA, "192.0.2.1:2121", "udp")
	if code != 0 || d.last() != `connect {"address":"192.0.2.1:2121","npub":"`+npubA+`","transport":"udp"}` {
		t.Fatalf("connect: exit %d %s; daemon saw %s", code, errs, d.last())
	}
	if !strings.Contains(out, "\"refreshed\": false") {
		t.Errorf("connect output %s", out)
	}
	// Aliases resolve through the hosts file, case-insensitively.
	for _, alias := range []string{"test-us01", "TEST-US01", "test-us02"} {
		code, _, errs = fipsctlWith(t, hosts, "-s", d.path, "disconnect", alias)
		if code != 0 || d.last() != `disconnect {"npub":"`+npubA+`"}` {
			t.Errorf("disconnect %s: exit %d %s; daemon saw %s", alias, code, errs, d.last())
		}
	}
	// Invalid hosts lines are skipped; unknown names are refused locally.
	before := d.last()
	for _, alias := range []string{"gone", "bad_name", "three", "nobody"} {
		code, out, errs = fipsctlWith(t, hosts, "-s", d.path, "disconnect", alias)
		want := "error: unknown host '" + alias + "'\nNot found in " + hosts + " and not an npub.\n"
		if code != 1 || out != "" || errs != want {
			t.Errorf("disconnect %s: exit %d %q %q", alias, code, out, errs)
		}
	}
	if d.last() != before {
		t.Error("unknown host reached the daemon")
	}
	// A server error is "error: MESSAGE" and exit 1.
	code, out, errs = fipsctlWith(t, hosts, "-s", d.path, "disconnect", npubB)
	if code != 1 || out != "" || errs != "error: peer not found: "+npubB+"\n" {
		t.Errorf("server error: exit %d %q %q", code, out, errs)
	}
}

func TestConnectRejectsMeshAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr, transport string
		reject          bool
	}{
		{"fd9d:1234::1", "udp", true},
		{"[fd9d:1234::1]:2121", "tcp", true},
		{"fd9d:1234::1:2121", "udp", true},
		{"[fd00::1]:2121", "ethernet", true},
		{"FD00::1", "udp", true},
		{"[fd00::1]:2121", "tor", false},
		{"[fd00::1]:2121", "udp/main", false},
		{"[fe80::1]:2121", "udp", false},
		{"[2001:db8::1]:2121", "udp", false},
		{"192.0.2.1:2121", "udp", false},
		{"peer.example.com:2121", "tcp", false},
		{"fdxx.example.com:2121", "tcp", false},
		{"::ffff:253.0.0.1", "udp", false},
		{"[fd00::1]", "udp", false},
		{"[fd00::1]:", "udp", false},
	} {
		err := validateConnectAddress(tc.addr, tc.transport)
		if (err != nil) != tc.reject {
			t.Errorf("%s %s: %v", tc.addr, tc.transport, err)
		}
	}
	code, out, errs := fipsctl(t, "", "-s", "/nonexistent.sock", "connect", npubA, "[fd00::1]:2121", "udp")
	want := "error: '[fd00::1]:2121' is a FIPS mesh address (fd00::/8), not a reachable udp endpoint.\n" +
		"Provide the peer's routable IP/hostname and port (e.g., '192.0.2.1:2121' or 'peer.example.com:2121').\n"
	if code != 1 || out != "" || errs != want {
		t.Errorf("exit %d %q %q", code, out, errs)
	}
}

func TestDaemonNotRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "control.sock")
	code, out, errs := fipsctl(t, "", "-s", path, "show", "peers")
	want := "error: cannot connect to " + path + ": No such file or directory (os error 2)\nIs the FIPS daemon running?\n"
	if code != 1 || out != "" || errs != want {
		t.Errorf("exit %d %q %q", code, out, errs)
	}
	// A socket that refuses: nothing listens on it.
	stale := filepath.Join(t.TempDir(), "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	code, _, errs = fipsctl(t, "", "-s", stale, "stats", "list")
	want = "error: cannot connect to " + stale + ": Connection refused (os error 111)\nIs the FIPS daemon running?\n"
	if runtime.GOOS == "linux" && (code != 1 || errs != want) {
		t.Errorf("refused: exit %d %q", code, errs)
	}
}

// TestPermissionDenied: a socket this user may not open gets upstream's
// hint to join group fips (root opens anything, so the test drops to
// nobody when it runs as root).
func TestPermissionDenied(t *testing.T) {
	d := startDaemon(t)
	if err := os.Chmod(d.path, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chmod(filepath.Dir(d.path), 0o755); err != nil {
			t.Fatal(err)
		}
		dir, err := os.MkdirTemp("", "fipsctl-bin")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		bin := filepath.Join(dir, "fipsctl")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-s", d.path, "show", "status")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var errb strings.Builder
		cmd.Stderr = &errb
		err = cmd.Run()
		var ee *exec.ExitError
		want := "error: cannot connect to " + d.path + ": Permission denied (os error 13)\n" +
			"Hint: add your user to the 'fips' group: sudo usermod -aG fips $USER\n" +
			"Then log out and back in for the change to take effect.\n"
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || errb.String() != want {
			t.Errorf("as nobody: %v %q", err, errb.String())
		}
		return
	}
	// Not root: this user owns the socket, and 0600 lets its owner in;
	// without write permission, which connect needs, it is refused.
	if err := os.Chmod(d.path, 0); err != nil {
		t.Fatal(err)
	}
	code, out, errs := fipsctl(t, "", "-s", d.path, "show", "status")
	if code != 1 || out != "" || !strings.Contains(errs, "Permission denied (os error 13)\nHint: add your user to the 'fips' group") {
		t.Errorf("exit %d %q %q", code, out, errs)
	}
}

// TestCtlUsage: a bad command line exits 2 with clap's layout: the
// error, the usage, a pointer to --help.
func TestCtlUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"show"}, "a subcommand is required"},
		{[]string{"show", "nope"}, "unrecognized subcommand 'nope'"},
		{[]string{"show", "status", "extra"}, "unexpected argument 'extra' found"},
		{[]string{"acl"}, "a subcommand is required"},
		{[]string{"acl", "list"}, "unrecognized subcommand 'list'"},
		{[]string{"connect", npubA, "192.0.2.1:2121"}, "the following required arguments were not provided:\n  <TRANSPORT>"},
		{[]string{"disconnect"}, "the following required arguments were not provided:\n  <PEER>"},
		{[]string{"stats"}, "a subcommand is required"},
		{[]string{"stats", "graph"}, "unrecognized subcommand 'graph'"},
		{[]string{"stats", "list", "x"}, "unexpected argument 'x' found"},
		{[]string{"stats", "history"}, "the following required arguments were not provided:\n  <METRIC>"},
		{[]string{"stats", "history", "a", "b"}, "unexpected argument 'b' found"},
		{[]string{"stats", "history", "mesh_size", "--frob"}, "unexpected argument '-frob' found"},
		{[]string{"stats", "history", "mesh_size", "--window"}, "a value is required for '-window <VALUE>' but none was supplied"},
		{[]string{"stats", "history-all-peers", "srtt_ms", "--peer", "x"}, "unexpected argument '-peer' found"},
		{[]string{"--frob"}, "unexpected argument '-frob' found"},
		{[]string{"frob"}, "unrecognized subcommand 'frob'"},
		{[]string{"completion"}, "a shell is required"},
		{[]string{"completion", "fish"}, "unrecognized subcommand 'fish'"},
	} {
		code, out, errs := fipsctl(t, "", append([]string{"-s", "/nonexistent.sock"}, tc.args...)...)
		if code != 2 || out != "" || !strings.HasPrefix(errs, "error: "+tc.msg+"\n\nUsage: fipsctl ") ||
			!strings.HasSuffix(errs, "\n\nFor more information, try '--help'.\n") {
			t.Errorf("%v: exit %d %q %q", tc.args, code, out, errs)
		}
	}
	// Without a command: the usage, exit 2, as clap.
	if code, out, errs := fipsctl(t, ""); code != 2 || out != "" || !strings.Contains(errs, "usage: fipsctl") {
		t.Errorf("no command: %d %q %q", code, out, errs)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"-V"}, {"--version"}, {"stats", "--help"}, {"completion", "-h"}} {
		if code, out, errs := fipsctl(t, "", args...); code != 0 || out == "" || errs != "" {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
	code, out, _ := fipsctl(t, "", "show", "-h")
	if code != 0 || !strings.Contains(out, "identity-cache") {
		t.Errorf("show -h: %d %q", code, out)
	}
}

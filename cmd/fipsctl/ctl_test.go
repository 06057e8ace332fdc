//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	dir, err := os.MkdirTemp("", "fipsctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &daemon{path: filepath.Join(dir, "control.sock")}
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
	srv, err := ctl.Listen(ctl.Config{Path: d.path}, reg)
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
	return d
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
		want := "fipsctl disconnect: unknown host '" + alias + "'. Not found in " + hosts + " and not an npub.\n"
		if code != 1 || out != "" || errs != want {
			t.Errorf("disconnect %s: exit %d %q %q", alias, code, out, errs)
		}
	}
	if d.last() != before {
		t.Error("unknown host reached the daemon")
	}
	// A server error is one line and exit 1.
	code, out, errs = fipsctlWith(t, hosts, "-s", d.path, "disconnect", npubB)
	if code != 1 || out != "" || errs != "fipsctl disconnect: peer not found: "+npubB+"\n" {
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
	want := "fipsctl connect: '[fd00::1]:2121' is a FIPS mesh address (fd00::/8), not a reachable udp endpoint. " +
		"Provide the peer's routable IP/hostname and port (e.g., '192.0.2.1:2121' or 'peer.example.com:2121').\n"
	if code != 1 || out != "" || errs != want {
		t.Errorf("exit %d %q %q", code, out, errs)
	}
}

func TestDaemonNotRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "control.sock")
	code, out, errs := fipsctl(t, "", "-s", path, "show", "peers")
	want := "fipsctl show: cannot connect to " + path + ": no such file or directory. Is the FIPS daemon running?\n"
	if code != 1 || out != "" || errs != want {
		t.Errorf("exit %d %q %q", code, out, errs)
	}
}

func TestCtlUsage(t *testing.T) {
	for _, args := range [][]string{
		{"show"}, {"show", "nope"}, {"show", "status", "extra"}, {"acl"}, {"acl", "list"},
		{"connect", npubA, "192.0.2.1:2121"}, {"disconnect"},
	} {
		code, out, errs := fipsctl(t, "", append([]string{"-s", "/nonexistent.sock"}, args...)...)
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d %q %q", args, code, out, errs)
		}
	}
	code, out, _ := fipsctl(t, "", "show", "-h")
	if code != 0 || !strings.Contains(out, "identity-cache") {
		t.Errorf("show -h: %d %q", code, out)
	}
}

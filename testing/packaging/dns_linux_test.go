package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dnsMark is the line fips-dns-setup puts in every file it writes.
const dnsMark = "# managed by fips-dns-setup (fips.service); fips-dns-teardown removes it"

// dnsHost is a fake host for the DNS scripts: a root directory their paths
// are under (FIPS_DNS_ROOT) and stub systemctl, ip, resolvectl and nmcli
// that answer from the environment and log what they were asked to do.
type dnsHost struct {
	t       *testing.T
	scripts string // directory holding fips-dns-setup and fips-dns-teardown
	root    string
	stubs   string
	log     string
	env     []string
}

func newDNSHost(t *testing.T, scripts string, active []string, systemdVersion string) *dnsHost {
	h := &dnsHost{t: t, scripts: scripts, root: t.TempDir(), stubs: t.TempDir()}
	h.log = filepath.Join(h.stubs, "calls.log")
	writeStub(t, h.stubs, "systemctl", `case "$1" in
--version) echo "systemd $STUB_SYSTEMD_VERSION ($STUB_SYSTEMD_VERSION-1)"; exit 0 ;;
is-active) [ "$2" = --quiet ] && shift; case " $STUB_ACTIVE " in *" $2 "*) exit 0 ;; esac; exit 3 ;;
*) echo "systemctl $*" >> "$STUB_LOG" ;;
esac
`)
	writeStub(t, h.stubs, "ip", `case "$*" in
"link show fips0") [ -n "$STUB_FIPS0" ] && exit 0; exit 1 ;;
"-6 -o addr show dev fips0 scope global") echo "7: fips0    inet6 fd97:1::2/128 scope global \\       valid_lft forever preferred_lft forever" ;;
*) echo "ip $*" >> "$STUB_LOG" ;;
esac
`)
	writeStub(t, h.stubs, "resolvectl", `echo "resolvectl $*" >> "$STUB_LOG"`+"\n")
	writeStub(t, h.stubs, "nmcli", `echo "nmcli $*" >> "$STUB_LOG"`+"\n")
	h.env = append(os.Environ(), "PATH="+h.stubs+":/usr/sbin:/usr/bin:/sbin:/bin", "FIPS_DNS_ROOT="+h.root,
		"FIPS_DNS_WAIT=0", "STUB_LOG="+h.log, "STUB_ACTIVE="+strings.Join(active, " "),
		"STUB_SYSTEMD_VERSION="+systemdVersion, "STUB_FIPS0=1")
	return h
}

// script runs fips-dns-setup or fips-dns-teardown; it returns the output
// and the calls the stubs logged during the run.
func (h *dnsHost) script(name string, extraEnv ...string) (out string, calls []string, err error) {
	_ = os.Remove(h.log)
	cmd := exec.Command(filepath.Join(h.scripts, name))
	cmd.Env = append(append([]string{}, h.env...), extraEnv...)
	b, err := cmd.CombinedOutput()
	if l, rerr := os.ReadFile(h.log); rerr == nil {
		calls = strings.Split(strings.TrimSpace(string(l)), "\n")
	}
	return string(b), calls, err
}

func (h *dnsHost) mustScript(name string, extraEnv ...string) (string, []string) {
	h.t.Helper()
	out, calls, err := h.script(name, extraEnv...)
	if err != nil {
		h.t.Fatalf("%s: %v\n%s", name, err, out)
	}
	return out, calls
}

func (h *dnsHost) file(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(h.root, rel))
	return string(b), err == nil
}

func (h *dnsHost) mkdir(rel string) {
	if err := os.MkdirAll(filepath.Join(h.root, rel), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

func sourceScripts(t *testing.T) string {
	return filepath.Join(repoRoot(t), "cmd", "fips", "packaging", "dns")
}

// TestDNSBackends runs setup, setup again, teardown and teardown again for
// each resolver backend upstream supports, on a fake host where that
// backend is the one available, and checks the files, the state record and
// the reloads each step made.
func TestDNSBackends(t *testing.T) {
	cases := []struct {
		name, backend  string
		active         []string
		systemd        string
		prepare        func(h *dnsHost)
		file, content  string   // the file setup writes ("" for none)
		setupCalls     []string // what setup runs the first time
		teardownCalls  []string // what teardown runs
		forceBackendOK bool
	}{
		{name: "dns-delegate", backend: "dns-delegate", active: []string{"systemd-resolved.service"}, systemd: "258",
			file: "etc/systemd/dns-delegate.d/fips.dns-delegate", content: "[Delegate]\nDNS=[::1]:5354\nDomains=fips\n",
			setupCalls:    []string{"systemctl restart systemd-resolved.service"},
			teardownCalls: []string{"systemctl restart systemd-resolved.service"}},
		{name: "global-drop-in", backend: "global-drop-in", active: []string{"systemd-resolved.service"}, systemd: "252",
			file: "etc/systemd/resolved.conf.d/fips.conf", content: "[Resolve]\nDNS=[::1]:5354\nDomains=~fips\n",
			setupCalls:    []string{"systemctl restart systemd-resolved.service"},
			teardownCalls: []string{"systemctl restart systemd-resolved.service"}},
		{name: "resolvectl", backend: "resolvectl", active: []string{"systemd-resolved.service"}, systemd: "252",
			setupCalls:    []string{"resolvectl dns fips0 [fd97:1::2]:5354", "resolvectl domain fips0 ~fips"},
			teardownCalls: []string{"resolvectl revert fips0"}, forceBackendOK: true},
		{name: "dnsmasq", backend: "dnsmasq", active: []string{"dnsmasq.service"}, systemd: "252",
			prepare: func(h *dnsHost) { h.mkdir("etc/dnsmasq.d") },
			file:    "etc/dnsmasq.d/fips.conf", content: "server=/fips/::1#5354\n",
			setupCalls: []string{"systemctl reload dnsmasq.service"}, teardownCalls: []string{"systemctl reload dnsmasq.service"}},
		{name: "nm-dnsmasq", backend: "nm-dnsmasq", active: []string{"NetworkManager.service"}, systemd: "252",
			prepare: func(h *dnsHost) {
				h.mkdir("etc/NetworkManager/dnsmasq.d")
				h.mkdir("etc/NetworkManager/conf.d")
				if err := os.WriteFile(filepath.Join(h.root, "etc/NetworkManager/conf.d/dns.conf"), []byte("[main]\ndns=dnsmasq\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			file: "etc/NetworkManager/dnsmasq.d/fips.conf", content: "server=/fips/::1#5354\n",
			setupCalls: []string{"nmcli general reload"}, teardownCalls: []string{"nmcli general reload"}},
		{name: "none", backend: "none", systemd: "252"},
	}
	scripts := sourceScripts(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newDNSHost(t, scripts, c.active, c.systemd)
			if c.prepare != nil {
				c.prepare(h)
			}
			var env []string
			if c.forceBackendOK {
				// resolvectl is only reached when the drop-in is not
				// wanted; force it, as an operator would.
				env = append(env, "FIPS_DNS_BACKEND="+c.backend)
			}
			out, calls := h.mustScript("fips-dns-setup", env...)
			t.Logf("setup: %s", strings.TrimSpace(out))
			if state, _ := h.file("run/fips/dns-backend"); state != c.backend+"\n" {
				t.Fatalf("state file holds %q, want %q", state, c.backend)
			}
			if strings.Join(calls, "\n") != strings.Join(c.setupCalls, "\n") {
				t.Fatalf("setup ran %q, want %q", calls, c.setupCalls)
			}
			if c.file != "" {
				got, ok := h.file(c.file)
				if want := dnsMark + "\n" + c.content; !ok || got != want {
					t.Fatalf("%s = %q (exists %v), want %q", c.file, got, ok, want)
				}
			}
			// Idempotent: a second run rewrites nothing and reloads
			// nothing (resolvectl's settings are re-applied: they are
			// per-link and lost when fips0 is recreated).
			_, calls = h.mustScript("fips-dns-setup", env...)
			if c.file != "" && len(calls) != 0 {
				t.Fatalf("second setup ran %q, want nothing", calls)
			}
			if got, _ := h.file(c.file); c.file != "" && got != dnsMark+"\n"+c.content {
				t.Fatalf("second setup changed %s to %q", c.file, got)
			}

			_, calls = h.mustScript("fips-dns-teardown")
			if strings.Join(calls, "\n") != strings.Join(c.teardownCalls, "\n") {
				t.Fatalf("teardown ran %q, want %q", calls, c.teardownCalls)
			}
			if _, ok := h.file(c.file); c.file != "" && ok {
				t.Fatalf("teardown left %s", c.file)
			}
			if _, ok := h.file("run/fips/dns-backend"); ok {
				t.Fatal("teardown left the state file")
			}
			// With no record left, teardown sweeps every backend: it may
			// revert fips0's per-link settings (a no-op) but must not
			// restart or reload a resolver.
			_, calls = h.mustScript("fips-dns-teardown")
			for _, call := range calls {
				if call != "" && call != "resolvectl revert fips0" {
					t.Fatalf("second teardown ran %q", calls)
				}
			}
		})
	}
}

// TestDNSLeavesOperatorFiles: a resolver file fips-dns-setup did not write
// is neither replaced by setup nor removed by teardown, even when teardown
// has no state and sweeps every backend.
func TestDNSLeavesOperatorFiles(t *testing.T) {
	h := newDNSHost(t, sourceScripts(t), []string{"dnsmasq.service"}, "252")
	h.mkdir("etc/dnsmasq.d")
	const mine = "server=/fips/192.0.2.1#53\n"
	p := filepath.Join(h.root, "etc/dnsmasq.d/fips.conf")
	if err := os.WriteFile(p, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	out, calls := h.mustScript("fips-dns-setup")
	if !strings.Contains(out, "was not written by fips-dns-setup") || len(calls) != 0 {
		t.Fatalf("setup over an operator's file: output %q, calls %q", out, calls)
	}
	_ = os.Remove(filepath.Join(h.root, "run/fips/dns-backend")) // teardown with no record sweeps all
	h.mustScript("fips-dns-teardown")
	if got, _ := os.ReadFile(p); string(got) != mine {
		t.Fatalf("operator's file became %q", got)
	}
}

// TestDNSSetupNeedsFips0: without the daemon's adapter setup fails rather
// than pointing a resolver at nothing.
func TestDNSSetupNeedsFips0(t *testing.T) {
	h := newDNSHost(t, sourceScripts(t), []string{"dnsmasq.service"}, "252")
	h.mkdir("etc/dnsmasq.d")
	out, _, err := h.script("fips-dns-setup", "STUB_FIPS0=")
	if err == nil || !strings.Contains(out, "no fips0") {
		t.Fatalf("setup without fips0: err %v, output %q", err, out)
	}
	if _, ok := h.file("etc/dnsmasq.d/fips.conf"); ok {
		t.Fatal("setup without fips0 wrote the dnsmasq file")
	}
}

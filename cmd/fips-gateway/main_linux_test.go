package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fips.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Flags and exit codes as upstream's (clap): help and version 0, bad
// usage 2, any failure to start 1 with upstream's log line.
func TestRunFlagsAndRefusals(t *testing.T) {
	t.Setenv("RUST_LOG", "")
	t.Setenv("FIPS_LOG_FORMAT", "")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"help", []string{"-h"}, 0, "usage: fips-gateway [-c FILE] [-l LEVEL] [-V]", ""},
		{"help long", []string{"--help"}, 0, "--log-level LEVEL", ""},
		{"version", []string{"-V"}, 0, "fips-gateway " + Version + "\n", ""},
		{"version long", []string{"--version"}, 0, "fips-gateway " + Version + "\n", ""},
		{"bad flag", []string{"--nope"}, 2, "", "flag provided but not defined: -nope"},
		{"argument", []string{"extra"}, 2, "", `unexpected argument "extra"`},
		{"missing file", []string{"-c", "/nonexistent/fips.yaml"}, 1, "", "Failed to load config from /nonexistent/fips.yaml: "},
		{"no section", []string{"-c", writeConfig(t, "node: {}\n")}, 1, "", "No gateway section in configuration"},
		{"disabled", []string{"-c", writeConfig(t, "gateway:\n  enabled: false\n  pool: fd01::/112\n  lan_interface: eth0\n")}, 1, "",
			"Gateway section exists but is not enabled (gateway.enabled = false)"},
		{"duplicate forward", []string{"-c", writeConfig(t, `gateway:
  enabled: true
  pool: fd01::/112
  lan_interface: eth0
  port_forwards:
    - { listen_port: 80, proto: tcp, target: "[fd02::2]:80" }
    - { listen_port: 80, proto: tcp, target: "[fd02::3]:80" }
`)}, 1, "", "Invalid gateway.port_forwards: duplicate port_forward (Tcp 80) — each (listen_port, proto) must be unique"},
		{"zero port", []string{"-c", writeConfig(t, `gateway:
  enabled: true
  pool: fd01::/112
  lan_interface: eth0
  port_forwards:
    - { listen_port: 0, proto: udp, target: "[fd02::2]:80" }
`)}, 1, "", "Invalid gateway.port_forwards: port_forward listen_port must be non-zero"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := run(c.args, &out, &errw)
			if code != c.code || !strings.Contains(out.String(), c.stdout) || !strings.Contains(errw.String(), c.stderr) {
				t.Fatalf("run %v = %d\nstdout %q\nstderr %q\nwant %d, %q, %q", c.args, code, out.String(), errw.String(), c.code, c.stdout, c.stderr)
			}
			if c.code == 1 && !strings.Contains(errw.String(), "fips-gateway "+Version+" starting") {
				t.Fatalf("no startup line:\n%s", errw.String())
			}
		})
	}
}

func TestLogLevelFlag(t *testing.T) {
	t.Setenv("RUST_LOG", "")
	var errw bytes.Buffer
	run([]string{"-l", "error", "-c", writeConfig(t, "node: {}\n")}, &bytes.Buffer{}, &errw)
	if s := errw.String(); strings.Contains(s, "starting") || !strings.Contains(s, "ERROR fips_gateway: No gateway section") {
		t.Fatalf("-l error still logged info, or not the error:\n%s", s)
	}
	errw.Reset()
	run([]string{"-l", "bogus", "-c", writeConfig(t, "node: {}\n")}, &bytes.Buffer{}, &errw)
	if !strings.Contains(errw.String(), "INFO fips_gateway: fips-gateway") {
		t.Fatalf("an unknown level is not info:\n%s", errw.String())
	}
}

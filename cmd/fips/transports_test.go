package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/dataplane/ethernet"
)

// TestOnlyUnimplementedTransports: a configuration whose every transport
// is of a type fips-go does not run yet (ethernet, off Linux) exits 1
// after one stderr line naming those transports; one with udp beside
// them starts.
func TestOnlyUnimplementedTransports(t *testing.T) {
	bin := buildFips(t)
	cases := []struct{ name, transports, want string }{
		{"nym-ble", "  nym:\n    socks5_addr: \"127.0.0.1:1080\"\n  ble: {}\n", "transports.nym, transports.ble are not implemented in fips-go yet"},
	}
	if !ethernet.Supported { // Linux runs it
		cases = append(cases, struct{ name, transports, want string }{
			"ethernet", "  ethernet:\n    interface: eth0\n", "transports.ethernet is not implemented in fips-go yet"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "fips.yaml")
			body := "node:\n  control: { socket_path: \"" + filepath.Join(dir, "c.sock") + "\" }\ntun: { enabled: false }\n" +
				"dns: { enabled: false }\ntransports:\n" + tc.transports
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "-c", cfg)
			cmd.Env = append(os.Environ(), "FIPS_ETC_DIR="+dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("want exit 1, got %v\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "fips: no operational transports: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("want one line naming %q, got:\n%s", tc.want, stderr.String())
			}
		})
	}
}

// TestBeaconFormatsFollowWireFormat: node.wire_format v0 (or unset)
// announces master's beacons only, v1 next's only, auto both.
func TestBeaconFormatsFollowWireFormat(t *testing.T) {
	for f, want := range map[string]ethernet.BeaconFormats{
		"": ethernet.BeaconsMaster, "v0": ethernet.BeaconsMaster,
		"v1": ethernet.BeaconsNext, "auto": ethernet.BeaconsBoth,
	} {
		if got := beaconFormats(f); got != want {
			t.Errorf("wire_format %q: beacons %d, want %d", f, got, want)
		}
	}
}

//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runUntilServing runs the daemon in-process on cfgYAML (written to
// dir/fips.yaml, with the control socket in dir, DNS and TUN off, UDP on
// loopback), waits for "FIPS running", stops it and returns its log.
func runUntilServing(t *testing.T, dir, cfgYAML string) string {
	t.Helper()
	y := cfgYAML + "tun: {enabled: false}\ntransports:\n  udp: {bind_addr: \"127.0.0.1:0\"}\n"
	if !strings.Contains(cfgYAML, "dns:") {
		y += "dns: {enabled: false}\n"
	}
	if !strings.Contains(cfgYAML, "node:") {
		y += fmt.Sprintf("node:\n  control: {socket_path: %q}\n", filepath.Join(dir, "control.sock"))
	}
	cfg := filepath.Join(dir, "fips.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("FIPS_ETC_DIR") == "" {
		t.Setenv("FIPS_ETC_DIR", dir) // no hosts or ACL files of this host
	}
	t.Setenv("RUST_LOG", "")
	t.Setenv("FIPS_LOG_FORMAT", "")
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runDaemon(ctx, cfg, &stderr) }()
	deadline := time.After(15 * time.Second)
	for !strings.Contains(stderr.String(), " INFO fips: FIPS running\n") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("daemon exited (%v):\n%s", err, stderr.String())
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("not serving after 15 s:\n%s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("daemon: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

// TestIdentitySourceLogged: the daemon logs upstream's line saying where
// its identity came from — "Using identity from configuration" for an
// nsec, "Generated persistent identity, saved to key file" and then
// "Loaded persistent identity from key file" (with the key file's path)
// for a persistent node, "Using ephemeral identity (new keypair each
// start)" by default — under target fips, and no other identity line.
func TestIdentitySourceLogged(t *testing.T) {
	const nsec = "nsec14w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w4s5l3rd9"
	lines := []string{"Using identity from configuration", "Loaded persistent identity from key file",
		"Generated persistent identity, saved to key file", "Using ephemeral identity (new keypair each start)"}
	check := func(t *testing.T, out, want string) {
		t.Helper()
		if !strings.Contains(out, " INFO fips: "+want+"\n") {
			t.Errorf("no %q line:\n%s", want, out)
		}
		for _, l := range lines {
			if !strings.HasPrefix(want, l) && strings.Contains(out, l) {
				t.Errorf("%q logged too:\n%s", l, out)
			}
		}
	}
	t.Run("nsec", func(t *testing.T) {
		dir := t.TempDir()
		out := runUntilServing(t, dir, fmt.Sprintf("node:\n  identity: {nsec: %q}\n  control: {socket_path: %q}\n", nsec, filepath.Join(dir, "c.sock")))
		check(t, out, "Using identity from configuration")
	})
	t.Run("persistent", func(t *testing.T) {
		dir := t.TempDir()
		y := fmt.Sprintf("node:\n  identity: {persistent: true}\n  control: {socket_path: %q}\n", filepath.Join(dir, "c.sock"))
		key := filepath.Join(dir, "fips.key")
		check(t, runUntilServing(t, dir, y), "Generated persistent identity, saved to key file path="+key)
		check(t, runUntilServing(t, dir, y), "Loaded persistent identity from key file path="+key)
	})
	t.Run("unwritable public key file", func(t *testing.T) {
		dir := t.TempDir()
		pub := filepath.Join(dir, "fips.pub")
		if err := os.Mkdir(pub, 0o700); err != nil { // a directory where fips.pub goes
			t.Fatal(err)
		}
		out := runUntilServing(t, dir, "")
		if !strings.Contains(out, " WARN fips::config: Failed to write the public key file path="+pub+" error=") {
			t.Errorf("no fips::config warning for fips.pub:\n%s", out)
		}
	})
	t.Run("ephemeral", func(t *testing.T) {
		check(t, runUntilServing(t, t.TempDir(), ""), "Using ephemeral identity (new keypair each start)")
	})
}

// TestDNSResponderLogged: the responder's start is upstream's "DNS
// responder started for .fips domain (auto-reload enabled)" with bind and
// hosts (the hosts file's names and the peers' aliases); a port already
// taken is WARN "Failed to start DNS responder" with bind and error, and
// the daemon runs on.
func TestDNSResponderLogged(t *testing.T) {
	held, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.LocalAddr().(*net.UDPAddr).Port
	dir := t.TempDir()
	t.Setenv("FIPS_ETC_DIR", dir)
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("gw npub1qmc3cvfz0yu2hx96nq3gp55zdan2qclealn7xshgr448d3nh6lks7zel98\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bind := fmt.Sprintf("127.0.0.1:%d", port)
	out := runUntilServing(t, dir, fmt.Sprintf("dns: {enabled: true, bind_addr: 127.0.0.1, port: %d}\n", port))
	if want := " WARN fips::node::lifecycle: Failed to start DNS responder bind=" + bind + " error="; !strings.Contains(out, want) {
		t.Errorf("no %q in:\n%s", want, out)
	}
	held.Close()
	out = runUntilServing(t, dir, fmt.Sprintf("dns: {enabled: true, bind_addr: 127.0.0.1, port: %d}\n", port)+
		"peers:\n  - npub: npub1qmc3cvfz0yu2hx96nq3gp55zdan2qclealn7xshgr448d3nh6lks7zel98\n    alias: gateway\n    addresses: [{transport: udp, addr: \"127.0.0.1:9\"}]\n")
	if want := " INFO fips::node::lifecycle: DNS responder started for .fips domain (auto-reload enabled) bind=" + bind + " hosts=2\n"; !strings.Contains(out, want) {
		t.Errorf("no %q in:\n%s", want, out)
	}
}

// TestControlSocketBindFailureLogged: a control socket that cannot be
// created is upstream's WARN "Failed to bind control socket" (error; path
// is ours), and the daemon serves on without it.
func TestControlSocketBindFailureLogged(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, strings.Repeat("s", 120)+".sock") // longer than a Unix socket address holds
	out := runUntilServing(t, dir, fmt.Sprintf("node:\n  control: {socket_path: %q}\n", sock))
	if want := " WARN fips::node::dataplane::rx_loop: Failed to bind control socket error="; !strings.Contains(out, want) ||
		!strings.Contains(out, " path="+sock+"\n") {
		t.Errorf("no %q with path=%s in:\n%s", want, sock, out)
	}
}

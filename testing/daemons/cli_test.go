//go:build unix

package daemons

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartsWithoutAnyConfig: with no fips.yaml anywhere, fips starts on
// UDP with an ephemeral identity and says so (upstream refuses to start).
func TestStartsWithoutAnyConfig(t *testing.T) {
	if _, err := os.Stat("/etc/fips/fips.yaml"); err == nil {
		t.Fatal("/etc/fips/fips.yaml exists on this machine; this test needs a machine without one")
	}
	// The control socket's default directory is /run/fips when it exists
	// (as upstream's), else $XDG_RUNTIME_DIR/fips, which this test sets.
	for _, d := range []string{"/run/fips", "/var/run/fips"} {
		if _, err := os.Stat(d); err == nil {
			t.Fatalf("%s exists on this machine (an installed fips, or a run that left it); this test needs a machine without one", d)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(bins.Fips)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_RUNTIME_DIR="+dir)
	logPath := filepath.Join(dir, "log")
	f, _ := os.Create(logPath)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		f.Close()
	})
	socket := filepath.Join(dir, "fips", "control.sock")
	d := &Daemon{Socket: socket}
	var st status
	if _, ok := WaitFor(5*time.Second, func() bool { return d.Call("show_status", nil, &st) == nil && st.State == "running" }); !ok {
		logs, _ := os.ReadFile(logPath)
		t.Fatalf("no running daemon on %s\n%s", socket, logs)
	}
	logs, _ := os.ReadFile(logPath)
	if !strings.Contains(string(logs), "no configuration file found: starting with an ephemeral identity") {
		t.Errorf("no warning about the missing configuration:\n%s", logs)
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGINT: %v", err)
		}
		done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGINT")
	}
}

// TestBadConfigExitsOneWithFileAndLine: a malformed fips.yaml is refused
// with exit status 1 and a message naming the file and line.
func TestBadConfigExitsOneWithFileAndLine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fips.yaml")
	os.WriteFile(cfg, []byte("node:\n  log_level: info\ntransports:\n  udp: { bind_addr: \"127.0.0.1:1\"\n peers: []\n"), 0o600)
	out, err := exec.Command(bins.Fips, "-c", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1\n%s", err, out)
	}
	if !strings.Contains(string(out), cfg+":") {
		t.Errorf("message does not name the file and line: %s", out)
	}
	// A validation error (a peer with no addresses) is also status 1.
	os.WriteFile(cfg, []byte("transports:\n  udp: { bind_addr: \"127.0.0.1:0\" }\npeers:\n  - npub: \""+npubA+"\"\n"), 0o600)
	out, err = exec.Command(bins.Fips, "-c", cfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1\n%s", err, out)
	}
	t.Logf("validation error: %s", strings.TrimSpace(string(out)))
	if out, err := exec.Command(bins.Fips, "-V").Output(); err != nil || !strings.HasPrefix(string(out), "fips ") {
		t.Errorf("fips -V: %v %q", err, out)
	}
}

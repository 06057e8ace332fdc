//go:build linux

package packaging

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// needTools fails the test (never skips) when it is not root or a tool is
// missing, naming the apt package that provides it.
func needTools(t *testing.T, tools map[string]string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("these tests install a package and create network namespaces: run them as root")
	}
	var missing []string
	for bin, pkg := range tools {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("missing tools; apt-get install -y %s", strings.Join(missing, " "))
	}
}

// repoRoot is the top of the git work tree this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// run runs a command and fails the test on error, returning its combined
// output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := runErr(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(name string, args ...string) (string, error) {
	var b bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// newNetns makes a network namespace with lo up, deleted at cleanup.
func newNetns(t *testing.T) string {
	t.Helper()
	var r [4]byte
	_, _ = rand.Read(r[:])
	ns := "fgopkg" + hex.EncodeToString(r[:])
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { _, _ = runErr("ip", "netns", "del", ns) })
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	return ns
}

// eventually polls f every 100ms until it returns nil or d passes.
func eventually(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeStub writes an executable shell script.
func writeStub(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// commandNames lists the commands under cmd/ (the main packages), which
// every package ships: fips, fipsctl, and fipstop and fips-gateway once
// they exist.
func commandNames(t *testing.T, root string) []string {
	t.Helper()
	c := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.Dir}}{{end}}`, "./cmd/...")
	c.Dir = root
	out, err := c.Output()
	if err != nil {
		t.Fatalf("go list ./cmd/...: %v", err)
	}
	var names []string
	for _, d := range strings.Fields(string(out)) {
		names = append(names, filepath.Base(d))
	}
	if !slices.Contains(names, "fips") || !slices.Contains(names, "fipsctl") {
		t.Fatalf("commands under cmd/: %v, want fips and fipsctl among them", names)
	}
	return names
}

//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRefusesNonSocketAtControlPath: the daemon started with a regular
// file or a directory at node.control.socket_path refuses to start, with
// one line on stderr, and leaves what was there untouched.
func TestRefusesNonSocketAtControlPath(t *testing.T) {
	bin := buildFips(t)
	for _, kind := range []string{"a regular file", "a directory"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "control.sock")
			if kind == "a directory" {
				if err := os.Mkdir(sock, 0o700); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(sock, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "fips.yaml")
			y := fmt.Sprintf("node:\n  control: {socket_path: %q}\ntun: {enabled: false}\ndns: {enabled: false}\n"+
				"transports:\n  udp: {bind_addr: \"127.0.0.1:0\"}\n", sock)
			if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "-c", cfg)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("want exit status 1, got %v\n%s", err, stderr.String())
			}
			want := "fips: control socket path " + sock + " is " + kind + ", not a socket; refusing to remove it"
			if out := stderr.String(); strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, want) {
				t.Errorf("stderr %q, want one line starting %q", out, want)
			}
			fi, err := os.Lstat(sock)
			if err != nil {
				t.Fatalf("removed: %v", err)
			}
			if kind == "a regular file" {
				if b, _ := os.ReadFile(sock); string(b) != "precious" {
					t.Errorf("content %q", b)
				}
			} else if !fi.IsDir() {
				t.Errorf("mode %v", fi.Mode())
			}
			if _, err := os.Stat(filepath.Join(dir, "fips.key")); err == nil {
				t.Error("a key was written before refusing")
			}
		})
	}
}

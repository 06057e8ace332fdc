package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildFips compiles this package into a temporary directory: the tests
// below run the real binary, as an operator would.
func buildFips(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fips")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBadConfigFiles runs `fips -c FILE` on every file of
// control/config/testdata/bad (wrong types, out-of-range and non-finite
// values, huge buffers, bad npubs and addresses). Each must exit with
// status 1 after exactly one line on stderr that names the key the file's
// first line ("# key: KEY") declares, and no stack trace. Each file is
// copied to its own directory first, so nothing the daemon might write
// lands in the source tree.
func TestBadConfigFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "control", "config", "testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("%d bad configs, want at least 100", len(files))
	}
	bin := buildFips(t)
	for _, src := range files {
		t.Run(filepath.Base(src), func(t *testing.T) {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bytes.Cut(data, []byte("\n"))
			key, ok := strings.CutPrefix(string(first), "# key: ")
			if !ok {
				t.Fatalf("first line %q is not # key: KEY", first)
			}
			cfg := filepath.Join(t.TempDir(), "fips.yaml")
			if err := os.WriteFile(cfg, data, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "-c", cfg)
			var stderr, stdout bytes.Buffer
			cmd.Stderr, cmd.Stdout = &stderr, &stdout
			err = cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("want exit status 1, got %v\nstderr:\n%s", err, stderr.String())
			}
			var lines []string
			sc := bufio.NewScanner(&stderr)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			if len(lines) != 1 {
				t.Fatalf("want one stderr line, got %d:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			line := lines[0]
			if !strings.Contains(line, key) {
				t.Errorf("line does not name %s: %s", key, line)
			}
			if !strings.HasPrefix(line, "fips: ") || strings.Contains(line, "goroutine") || strings.Contains(line, "panic") {
				t.Errorf("not a plain error line: %s", line)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %s", stdout.String())
			}
		})
	}
}

package dns

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hosts file past MaxHostsFileSize is refused (an empty map and one
// warning) without being read whole: it used to be read into memory
// however large it was.
func TestParseHostsTooLarge(t *testing.T) {
	r := io.MultiReader(strings.NewReader("gw "+newKey(t).Npub()+"\n"), &zeros{n: MaxHostsFileSize})
	h, err := ParseHosts(r, nil)
	if !errors.Is(err, ErrHostsTooLarge) || h.Len() != 0 {
		t.Fatalf("got %d entries, %v", h.Len(), err)
	}
}

// zeros yields n '#' bytes (one long comment).
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	for i := range k {
		p[i] = '#'
	}
	z.n -= k
	return k, nil
}

// Bad lines are logged at most maxLoggedBadLines times per load, then once
// with the count of the rest, not once per line.
func TestHostsFileBadLinesLogBounded(t *testing.T) {
	const bad = 1000
	var b strings.Builder
	for i := range bad {
		fmt.Fprintf(&b, "bad line %d\n", i)
	}
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	OpenHostsFile(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if n := strings.Count(logs.String(), "Expected 'hostname npub', skipping") + strings.Count(logs.String(), "Skipping invalid hosts file entry"); n != maxLoggedBadLines {
		t.Errorf("%d lines logged, want %d", n, maxLoggedBadLines)
	}
	if want := fmt.Sprintf("more=%d", bad-maxLoggedBadLines); !strings.Contains(logs.String(), want) {
		t.Errorf("no summary with %s:\n%.500s", want, logs.String())
	}
}

package dns

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/logging"
)

// TestHostsFileLogs: upstream's hosts file lines under fips::upper::hosts
// — a line that is not two fields is "Expected 'hostname npub',
// skipping" (path, line, content), a bad name or npub "Skipping invalid
// hosts file entry" (path, line, error), a non-empty load "Loaded hosts
// file" (path, count), a change "Reloaded hosts file" (path, entries),
// an unreadable file "Failed to read hosts file" (path, error).
func TestHostsFileLogs(t *testing.T) {
	a := newKey(t)
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("gw "+a.Npub()+"\njust-one\nbad_name "+a.Npub()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(logging.New(&buf, logging.Options{Level: slog.LevelDebug}))
	f := OpenHostsFile(path, log)
	out := buf.String()
	for _, want := range []string{
		" WARN fips::upper::hosts: Expected 'hostname npub', skipping path=" + path + " line=2 content=just-one\n",
		" WARN fips::upper::hosts: Skipping invalid hosts file entry path=" + path + " line=3 error=invalid hostname \"bad_name\": invalid character '_' content=bad_name " + a.Npub() + "\n",
		" INFO fips::upper::hosts: Loaded hosts file path=" + path + " count=1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	buf.Reset()
	later := time.Now().Add(time.Hour)
	if err := os.WriteFile(path, []byte("gw "+a.Npub()+"\nnas "+newKey(t).Npub()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if !f.Reload() {
		t.Fatal("no reload")
	}
	inOrder := []string{
		" INFO fips::upper::hosts: Loaded hosts file path=" + path + " count=2\n",
		" INFO fips::upper::hosts: Reloaded hosts file path=" + path + " entries=2\n",
	}
	rest := buf.String()
	for _, want := range inOrder {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("no %q (in order) in:\n%s", want, buf.String())
		}
		rest = rest[i+len(want):]
	}

	buf.Reset()
	if err := os.WriteFile(path, []byte{0xff, 0xfe, '\n'}, 0o644); err != nil {
		t.Fatal(err)
	}
	OpenHostsFile(path, log)
	if want := " WARN fips::upper::hosts: Failed to read hosts file path=" + path + " error=hosts file is not valid UTF-8\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("no %q in:\n%s", want, buf.String())
	}
}

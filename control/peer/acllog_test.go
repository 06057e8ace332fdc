package peer

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Invalid ACL entries are logged at most maxLoggedBadEntries times per
// load, then once with the count of the rest: a file of a million bad
// lines used to log a million lines at every reload.
func TestACLBadEntriesLogBounded(t *testing.T) {
	const bad = 1000
	var b strings.Builder
	for i := range bad {
		fmt.Fprintf(&b, "not-a-peer-%d\n", i)
	}
	path := filepath.Join(t.TempDir(), "peers.allow")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	reloadList(path, time.Time{}, false, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if n := strings.Count(logs.String(), "Skipping invalid ACL entry"); n != maxLoggedBadEntries {
		t.Errorf("%d lines logged, want %d", n, maxLoggedBadEntries)
	}
	if want := fmt.Sprintf("more=%d", bad-maxLoggedBadEntries); !strings.Contains(logs.String(), want) {
		t.Errorf("no summary with %s", want)
	}
}

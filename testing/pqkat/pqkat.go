// Package pqkat keeps the post-quantum upgrades' known-answer vectors
// (vectors.json for sessions, link_vectors.json for links) in step with
// the Go code and runs check.mjs, which recomputes them outside Go with
// @noble/post-quantum and @noble/hashes (npm ci by testing/deps.sh unit).
package pqkat

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Seq is n bytes counting up from start: the vectors' deterministic inputs.
func Seq(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

// Golden compares v, as indented JSON, with the file at path, rewriting it
// first when FIPS_UPDATE_DOCS is set; update names the command that does.
func Golden(tb testing.TB, path string, v any, update string) {
	tb.Helper()
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	js = append(js, '\n')
	if os.Getenv("FIPS_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, js, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(old, js) {
		tb.Fatalf("%s is stale or missing (FIPS_UPDATE_DOCS=1 %s): %v", path, update, err)
	}
}

// Check runs check.mjs, beside the vectors file at path, on it. It fails,
// rather than skips, without node or the npm modules.
func Check(tb testing.TB, path string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("node not found (testing/deps.sh unit installs nodejs): %v", err)
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@noble", "post-quantum")); err != nil {
		tb.Fatalf("testing/pqkat's npm modules are missing (testing/deps.sh unit runs npm ci): %v", err)
	}
	out, err := exec.Command(node, filepath.Join(dir, "check.mjs"), path).CombinedOutput()
	if err != nil {
		tb.Fatalf("check.mjs: %v\n%s", err, out)
	}
	tb.Logf("%s", bytes.TrimSpace(out))
}

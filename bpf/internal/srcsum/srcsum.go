// Package srcsum records which C sources and headers the committed bpf2go
// objects were generated from, so a test can tell a stale object without
// clang: `make generate` writes the SHA-256 of every input and output into
// sources.sha256, and the test recomputes it.
package srcsum

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// FileName is the manifest written beside the package's C sources.
const FileName = "sources.sha256"

// Inputs lists, relative to dir, the files the objects are built from: every
// *.c in dir and every file in dir/headers, sorted.
func Inputs(dir string) ([]string, error) {
	var out []string
	for _, pat := range []string{"*.c", filepath.Join("headers", "*.h")} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, fmt.Errorf("srcsum: glob %s: %w", pat, err)
		}
		for _, p := range m {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return nil, fmt.Errorf("srcsum: %w", err)
			}
			out = append(out, filepath.ToSlash(rel))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("srcsum: no C sources in %s", dir)
	}
	return out, nil
}

// Render returns the manifest for dir: one "sha256  path" line per input,
// then one per generated output (outputs, relative to dir).
func Render(dir string, outputs []string) ([]byte, error) {
	in, err := Inputs(dir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Written by `make generate` (bpf/internal/srcsum). Do not edit.\n")
	for _, list := range [][]string{in, outputs} {
		for _, rel := range list {
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				return nil, fmt.Errorf("srcsum: %w", err)
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), rel)
		}
	}
	return b.Bytes(), nil
}

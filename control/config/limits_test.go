package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file past maxFileSize is refused before it is parsed, by Load and by
// LoadBytes alike: yaml.v3 holds about 40 bytes of node tree per byte of
// input, so a 16 MiB file used to cost a gigabyte and half a minute
// before being refused as "too many nodes".
func TestFileSizeBound(t *testing.T) {
	var b strings.Builder
	for b.Len() <= maxFileSize {
		fmt.Fprintf(&b, "k%d: 1\n", b.Len())
	}
	data := []byte(b.String())
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(p)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrRead) || !strings.Contains(e.Reason, fmt.Sprint(maxFileSize)) {
		t.Errorf("Load of %d bytes: %v", len(data), err)
	}
	start := time.Now()
	_, _, err = LoadBytes("big.yaml", data)
	if !errors.As(err, &e) || !errors.Is(err, ErrRead) || e.File != "big.yaml" {
		t.Errorf("LoadBytes of %d bytes: %v", len(data), err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusing took %v: the file was parsed", d)
	}
}

// Warnings are bounded: a file of many unknown keys yields maxWarnings
// warnings and one saying how many more there were, not one per key
// (each would be a log line at startup).
func TestWarningBound(t *testing.T) {
	const keys = 5000
	var b strings.Builder
	b.WriteString("node:\n")
	for i := range keys {
		fmt.Fprintf(&b, "  unknown_%d: 1\n", i)
	}
	_, w, err := LoadBytes("many.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != maxWarnings+1 {
		t.Fatalf("%d warnings, want %d", len(w), maxWarnings+1)
	}
	last := w[len(w)-1]
	if want := fmt.Sprintf("%d more warnings not shown", keys-maxWarnings); !strings.Contains(last.Message, want) || last.File != "many.yaml" {
		t.Errorf("last warning %v, want one saying %q", last, want)
	}
	// Across files the bound is the load's, not each file's.
	dir := t.TempDir()
	var paths []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.yaml", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	_, _, w, err = LoadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != maxWarnings+1 || !strings.Contains(w[len(w)-1].Message, fmt.Sprintf("%d more warnings not shown", 3*keys-maxWarnings)) {
		t.Errorf("merged load: %d warnings, last %v", len(w), w[len(w)-1])
	}
}

// Merging search-path files is linear in their keys: two files of many
// keys each (unknown ones, which only warn) used to be merged by comparing
// every key with every other, minutes of CPU at startup for a few MB.
func TestMergeManyKeys(t *testing.T) {
	const keys = 20000
	var b strings.Builder
	b.WriteString("node:\n")
	for i := range keys {
		fmt.Fprintf(&b, "  unknown_%d: %d\n", i, i)
	}
	b.WriteString("  limits:\n    max_peers: 7\n")
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	over := strings.Replace(b.String(), "max_peers: 7", "max_peers: 9", 1)
	if err := os.WriteFile(p1, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p2, []byte(over), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, _, _, err := LoadFiles([]string{p1, p2})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("merging two files of %d keys took %v", keys, d)
	}
	if c.Node.Limits.MaxPeers != 9 {
		t.Errorf("max_peers %d, want the later file's 9", c.Node.Limits.MaxPeers)
	}
}

// Lint is bounded like the loaders: a list of many peers with a
// placeholder npub gives maxWarnings warnings and a count, not one log
// line per peer.
func TestLintBound(t *testing.T) {
	const peers = 1000
	var b strings.Builder
	b.WriteString("peers:\n")
	for range peers {
		b.WriteString("  - {npub: npub1placeholder}\n")
	}
	c, _, err := LoadBytes("peers.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Lint()
	if len(w) != maxWarnings+1 {
		t.Fatalf("%d lint warnings, want %d", len(w), maxWarnings+1)
	}
	if last := w[len(w)-1]; !strings.Contains(last.Message, fmt.Sprintf("%d more warnings not shown", peers+1-maxWarnings)) {
		t.Errorf("last warning %v", last)
	}
}

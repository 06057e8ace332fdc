package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteZip: the archive depends on names, contents and the executable
// bit only, not on file times or the order the files were made in.
func TestWriteZip(t *testing.T) {
	epoch := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(order []string, mtime time.Time) []byte {
		dir := t.TempDir()
		for _, n := range order {
			p := filepath.Join(dir, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			mode := os.FileMode(0o600)
			if filepath.Ext(n) == ".exe" {
				mode = 0o700
			}
			if err := os.WriteFile(p, []byte("content of "+n), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(t.TempDir(), "x.zip")
		if err := writeZip(out, dir, epoch); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := mk([]string{"fips.exe", "README.txt", "sub/hosts"}, time.Now())
	b := mk([]string{"sub/hosts", "README.txt", "fips.exe"}, time.Now().Add(-time.Hour))
	if !bytes.Equal(a, b) {
		t.Fatal("same tree, different archives")
	}
	r, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		mode os.FileMode
	}{{"README.txt", 0o644}, {"fips.exe", 0o755}, {"sub/hosts", 0o644}}
	if len(r.File) != len(want) {
		t.Fatalf("%d entries, want %d", len(r.File), len(want))
	}
	for i, f := range r.File {
		if f.Name != want[i].name || f.Mode().Perm() != want[i].mode || !f.Modified.Equal(epoch) {
			t.Errorf("entry %d: %s %v %v, want %s %v %v", i, f.Name, f.Mode().Perm(), f.Modified, want[i].name, want[i].mode, epoch)
		}
	}
	if err := writeZip(filepath.Join(t.TempDir(), "e.zip"), t.TempDir(), epoch); err == nil {
		t.Error("an empty directory made an archive")
	}
}

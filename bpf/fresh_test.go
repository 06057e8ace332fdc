package bpf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/fips-go/fips/bpf/internal/srcsum"
)

// TestObjectsFresh fails when a C source or vendored header changed after
// the committed objects were generated (or the objects were edited): it
// recomputes sources.sha256 without clang. Fix: make generate.
func TestObjectsFresh(t *testing.T) {
	want, err := os.ReadFile(srcsum.FileName)
	if err != nil {
		t.Fatal(err)
	}
	got, err := srcsum.Render(".", []string{"xdp_bpfel.go", "xdp_bpfel.o", "tc_bpfel.go", "tc_bpfel.o"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("bpf objects are stale: run `make generate` and commit the result\nrecorded:\n%s\nnow:\n%s", want, got)
	}
}

// TestSrcsumSeesChanges: the manifest changes when a source, a header or
// an object changes, and lists a new header.
func TestSrcsumSeesChanges(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	render := func() []byte {
		t.Helper()
		b, err := srcsum.Render(dir, []string{"x.o"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write("x.c", "int a;")
	write("headers/h.h", "#define A 1")
	write("x.o", "obj")
	base := render()
	for _, change := range [][2]string{
		{"x.c", "int b;"}, {"headers/h.h", "#define A 2"}, {"headers/new.h", ""}, {"x.o", "obj2"},
	} {
		write(change[0], change[1])
		next := render()
		if bytes.Equal(next, base) {
			t.Errorf("changing %s left the manifest unchanged", change[0])
		}
		base = next
	}
	if _, err := srcsum.Render(t.TempDir(), nil); err == nil {
		t.Error("a directory without C sources rendered a manifest")
	}
}

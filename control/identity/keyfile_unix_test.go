//go:build unix

package identity

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadKeyFileRefusesUnprotected: as docs/security.md says, fips.key is
// refused when it is a symlink (even to a 0600 key), not a regular file,
// or readable or writable by group or others — the way ssh refuses an
// unprotected private key. The owner's own modes (0600, 0400) are fine.
func TestReadKeyFileRefusesUnprotected(t *testing.T) {
	dir := t.TempDir()
	sk := testKey(t, 1)
	good := filepath.Join(dir, "good.key")
	if err := WriteKeyFile(good, sk); err != nil {
		t.Fatal(err)
	}
	for _, m := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(good, m); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadKeyFile(good); err != nil || got.Hex() != sk.Hex() {
			t.Errorf("mode %04o: %v", m, err)
		}
	}
	os.Chmod(good, 0o600)

	for _, m := range []os.FileMode{0o640, 0o604, 0o644, 0o660, 0o602, 0o666} {
		p := filepath.Join(dir, "loose.key")
		os.Remove(p)
		if err := WriteKeyFile(p, sk); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
		_, err := ReadKeyFile(p)
		if !errors.Is(err, ErrKeyFileMode) {
			t.Errorf("mode %04o: %v, want ErrKeyFileMode", m, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, p) || !strings.Contains(msg, "chmod 600") || strings.Contains(msg, sk.Nsec()) {
			t.Errorf("message: %q", msg)
		}
	}

	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(link); !errors.Is(err, ErrKeyPathIsSymlink) || !strings.Contains(err.Error(), link) {
		t.Errorf("symlink: %v, want ErrKeyPathIsSymlink", err)
	}

	fifo := filepath.Join(dir, "fifo.key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(fifo); !errors.Is(err, ErrKeyFileType) {
		t.Errorf("named pipe: %v, want ErrKeyFileType", err)
	}
	if _, err := ReadKeyFile(dir); !errors.Is(err, ErrKeyFileType) {
		t.Errorf("directory: %v, want ErrKeyFileType", err)
	}
}

// TestResolveRefusesUnprotectedKeyFile: a persistent node with a
// world-readable or symlinked fips.key refuses to start rather than using
// it, and does not replace it with a new key either.
func TestResolveRefusesUnprotectedKeyFile(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for _, tc := range []struct {
		name string
		want error
		make func(t *testing.T, key string)
	}{
		{"world-readable", ErrKeyFileMode, func(t *testing.T, key string) {
			if err := os.Chmod(key, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink", ErrKeyPathIsSymlink, func(t *testing.T, key string) {
			real := key + ".real"
			if err := os.Rename(key, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, key); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			key, _ := KeyPaths(dir)
			if err := WriteKeyFile(key, testKey(t, 2)); err != nil {
				t.Fatal(err)
			}
			tc.make(t, key)
			before, _ := os.ReadFile(key)
			r, err := Resolve(ResolveOptions{Persistent: true, KeyDir: dir, Log: log})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Resolve: %v %v, want %v", r, err, tc.want)
			}
			if after, _ := os.ReadFile(key); !bytes.Equal(before, after) {
				t.Error("key file changed")
			}
		})
	}
}

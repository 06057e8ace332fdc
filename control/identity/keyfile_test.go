package identity

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func testKey(t *testing.T, i int) SecretKey {
	t.Helper()
	sk, err := ParseSecretKey(fixturePairs[i].secret)
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func TestKeyFileRoundTripAndModes(t *testing.T) {
	dir := t.TempDir()
	keyPath, pubPath := KeyPaths(dir)
	sk := testKey(t, 1)
	if err := WriteKeyFile(keyPath, sk); err != nil {
		t.Fatal(err)
	}
	if err := WritePubFile(pubPath, sk.PublicKey()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(keyPath)
	if string(b) != sk.Nsec()+"\n" {
		t.Errorf("fips.key = %q", b)
	}
	b, _ = os.ReadFile(pubPath)
	if string(b) != fixturePairs[1].npub+"\n" {
		t.Errorf("fips.pub = %q", b)
	}
	if runtime.GOOS != "windows" {
		if m := mode(t, keyPath); m != 0o600 {
			t.Errorf("fips.key mode %o", m)
		}
		if m := mode(t, pubPath); m != 0o644&^umask() {
			t.Errorf("fips.pub mode %o", m)
		}
	}
	got, err := ReadKeyFile(keyPath)
	if err != nil || got.Hex() != sk.Hex() {
		t.Fatalf("ReadKeyFile: %v %v", got, err)
	}
}

func TestWriteKeyFileTightensExistingMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits do not apply on Windows")
	}
	keyPath := filepath.Join(t.TempDir(), KeyFileName)
	if err := os.WriteFile(keyPath, []byte("old\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(keyPath, 0o666)
	if err := WriteKeyFile(keyPath, testKey(t, 1)); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, keyPath); m != 0o600 {
		t.Errorf("mode %o after rewrite, want 600", m)
	}
}

func TestKeyFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, KeyFileName)
	if err := os.Symlink(target, keyPath); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := WriteKeyFile(keyPath, testKey(t, 1)); !errors.Is(err, ErrKeyPathIsSymlink) {
		t.Errorf("WriteKeyFile through symlink: %v, want ErrKeyPathIsSymlink", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Errorf("symlink target overwritten: %q", b)
	}
	// A dangling symlink is refused too.
	dangling := filepath.Join(dir, PubFileName)
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	if err := WritePubFile(dangling, testKey(t, 1).PublicKey()); !errors.Is(err, ErrKeyPathIsSymlink) {
		t.Errorf("WritePubFile through dangling symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("dangling symlink target was created")
	}
}

func TestReadKeyFileFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		p := filepath.Join(dir, "k")
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	sk := testKey(t, 1)
	for _, content := range []string{sk.Nsec() + "\n", "  " + sk.Nsec() + "  \n\n", sk.Hex() + "\n", sk.Hex()} {
		got, err := ReadKeyFile(write(content))
		if err != nil || got.Hex() != sk.Hex() {
			t.Errorf("ReadKeyFile(%q) = %v, %v", content, got, err)
		}
	}
	if _, err := ReadKeyFile(write(" \n")); !errors.Is(err, ErrEmptyKeyFile) {
		t.Errorf("empty key file error %v", err)
	}
	if _, err := ReadKeyFile(write("npub1sjlh2c3x9w7kjsqg2ay080n2lff2uvt325vpan33ke34rn8l5jcqawh57m\n")); err == nil {
		t.Error("npub accepted as a secret")
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file error %v", err)
	}
}

func TestResolveRules(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))

	t.Run("explicit nsec wins and writes nothing", func(t *testing.T) {
		dir := t.TempDir()
		r, err := Resolve(ResolveOptions{Nsec: fixturePairs[6].secret, Persistent: true, KeyDir: dir, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != SourceConfig || r.Npub() != fixturePairs[6].npub {
			t.Errorf("got %s %s", r.Source, r.Npub())
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("files written: %v", entries)
		}
		if _, err := Resolve(ResolveOptions{Nsec: "nsec1garbage", KeyDir: dir, Log: quiet}); err == nil ||
			!strings.Contains(err.Error(), "node.identity.nsec") {
			t.Errorf("bad nsec error %v", err)
		}
	})

	t.Run("persistent generates then reloads", func(t *testing.T) {
		dir := t.TempDir()
		r1, err := Resolve(ResolveOptions{Persistent: true, KeyDir: dir, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if r1.Source != SourceGenerated {
			t.Errorf("first start source %s", r1.Source)
		}
		r2, err := Resolve(ResolveOptions{Persistent: true, KeyDir: dir, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if r2.Source != SourceKeyFile || r2.Npub() != r1.Npub() {
			t.Errorf("second start %s %s, want key_file %s", r2.Source, r2.Npub(), r1.Npub())
		}
		_, pub := KeyPaths(dir)
		if b, _ := os.ReadFile(pub); string(b) != r1.Npub()+"\n" {
			t.Errorf("fips.pub = %q", b)
		}
	})

	t.Run("persistent with a bad key file fails", func(t *testing.T) {
		dir := t.TempDir()
		key, _ := KeyPaths(dir)
		os.WriteFile(key, []byte("not a key\n"), 0o600)
		if _, err := Resolve(ResolveOptions{Persistent: true, KeyDir: dir, Log: quiet}); err == nil {
			t.Error("bad key file accepted")
		}
	})

	t.Run("persistent uses the legacy directory", func(t *testing.T) {
		dir, legacy := t.TempDir(), t.TempDir()
		lk, _ := KeyPaths(legacy)
		WriteKeyFile(lk, testKey(t, 3))
		var logs bytes.Buffer
		r, err := Resolve(ResolveOptions{Persistent: true, KeyDir: dir, LegacyKeyDir: legacy, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if r.Npub() != fixturePairs[3].npub || r.KeyPath != lk {
			t.Errorf("got %s from %s", r.Npub(), r.KeyPath)
		}
		if !strings.Contains(logs.String(), "legacy path") {
			t.Errorf("no legacy warning in %q", logs.String())
		}
	})

	t.Run("ephemeral is fresh every start and still written", func(t *testing.T) {
		dir := t.TempDir()
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		r1, err := Resolve(ResolveOptions{KeyDir: dir, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		r2, _ := Resolve(ResolveOptions{KeyDir: dir, Log: log})
		if r1.Source != SourceEphemeral || r2.Source != SourceEphemeral || r1.Npub() == r2.Npub() {
			t.Errorf("ephemeral: %s %s / %s %s", r1.Source, r1.Npub(), r2.Source, r2.Npub())
		}
		key, _ := KeyPaths(dir)
		got, err := ReadKeyFile(key)
		if err != nil || got.PublicKey() != r2.PublicKey() {
			t.Errorf("fips.key does not hold the current ephemeral key: %v", err)
		}
		if !strings.Contains(logs.String(), "replaced by a fresh ephemeral identity") {
			t.Errorf("no overwrite warning in %q", logs.String())
		}
	})

	t.Run("persistent with an unwritable directory runs ephemeral", func(t *testing.T) {
		// Root ignores directory modes, so make the directory impossible
		// instead: a path under a regular file.
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o644)
		var logs bytes.Buffer
		r, err := Resolve(ResolveOptions{Persistent: true, KeyDir: filepath.Join(f, "sub"), Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != SourceEphemeral || !strings.Contains(logs.String(), "ephemeral identity") {
			t.Errorf("source %s logs %q", r.Source, logs.String())
		}
	})
}

func mode(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

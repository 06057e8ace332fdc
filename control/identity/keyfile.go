package identity

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Key file names, in the directory of the last loaded config file.
const (
	KeyFileName = "fips.key"
	PubFileName = "fips.pub"
)

// ReadKeyFile reads a secret key file: one nsec (or 64 hex characters),
// surrounding whitespace ignored. As ssh does with an unprotected private
// key, it refuses a file it cannot be sure only its owner can read: a
// symlink (ErrKeyPathIsSymlink: the target's mode is not the daemon's to
// know), anything but a regular file (ErrKeyFileType), and, where files
// have mode bits, a file with any group or other permission
// (ErrKeyFileMode). The checks are made on the opened descriptor, so the
// path cannot be swapped between check and read.
func ReadKeyFile(path string) (SecretKey, error) {
	f, err := openKeyForRead(path)
	if err != nil {
		if isSymlinkRefusal(path, err) {
			return SecretKey{}, fmt.Errorf("refusing identity key file %s: %w; replace the link with the key file itself (mode 0600)", path, ErrKeyPathIsSymlink)
		}
		return SecretKey{}, fmt.Errorf("read key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return SecretKey{}, fmt.Errorf("read key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return SecretKey{}, fmt.Errorf("refusing identity key file %s: %w (%s)", path, ErrKeyFileType, fi.Mode().Type())
	}
	if looseMode(fi.Mode()) {
		return SecretKey{}, fmt.Errorf("refusing identity key file %s: %w (mode %04o); run chmod 600 %s", path, ErrKeyFileMode, fi.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	defer clear(b)
	if err != nil {
		return SecretKey{}, fmt.Errorf("read key file: %w", err)
	}
	if len(b) > maxKeyFileSize {
		return SecretKey{}, fmt.Errorf("key file %s: larger than %d bytes: %w", path, maxKeyFileSize, ErrInvalidSecret)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return SecretKey{}, fmt.Errorf("%w: %s", ErrEmptyKeyFile, path)
	}
	sk, err := ParseSecretKey(s)
	if err != nil {
		return SecretKey{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return sk, nil
}

// maxKeyFileSize bounds what ReadKeyFile reads: an nsec is 63 characters.
const maxKeyFileSize = 4096

// WriteKeyFile writes the nsec and a newline to path with mode 0600. A
// symlink at path is refused rather than followed, and an existing file is
// narrowed to 0600 through its descriptor before the secret is written.
func WriteKeyFile(path string, sk SecretKey) error {
	return writeLine(path, sk.Nsec(), 0o600, true)
}

// WritePubFile writes the npub and a newline to path, created 0644. The
// mode of an existing file is left alone so an operator's tighter mode
// survives restarts. Symlinks are refused.
func WritePubFile(path string, pk PublicKey) error {
	return writeLine(path, pk.Npub(), 0o644, false)
}

func writeLine(path, line string, mode fs.FileMode, enforceMode bool) error {
	f, err := openNoFollow(path, mode)
	if err != nil {
		if isSymlinkRefusal(path, err) {
			return fmt.Errorf("%w: %s", ErrKeyPathIsSymlink, path)
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	if enforceMode {
		if err := f.Chmod(mode); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			f.Close()
			return fmt.Errorf("chmod %s: %w", path, err)
		}
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func isSymlinkRefusal(path string, err error) bool {
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&fs.ModeSymlink != 0 && err != nil
}

// KeyPaths returns the fips.key and fips.pub paths in dir.
func KeyPaths(dir string) (key, pub string) {
	return filepath.Join(dir, KeyFileName), filepath.Join(dir, PubFileName)
}

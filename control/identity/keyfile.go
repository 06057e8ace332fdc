package identity

import (
	"errors"
	"fmt"
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
// surrounding whitespace ignored.
func ReadKeyFile(path string) (SecretKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SecretKey{}, fmt.Errorf("read key file: %w", err)
	}
	defer clear(b)
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

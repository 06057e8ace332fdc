package dns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
)

// MaxHostnameLen is the longest hostname the hosts file accepts (one DNS
// label).
const MaxHostnameLen = 63

// ErrInvalidHostname is wrapped by every hostname validation failure.
var ErrInvalidHostname = errors.New("invalid hostname")

// ErrMalformedLine is reported for a hosts line that is not exactly two
// whitespace-separated fields.
var ErrMalformedLine = errors.New("expected 'hostname npub'")

// ErrNotUTF8 is returned by ParseHosts for input that is not valid UTF-8;
// upstream cannot read such a file at all, so none of it is used.
var ErrNotUTF8 = errors.New("hosts file is not valid UTF-8")

// MaxHostsFileSize bounds a hosts file (fips-go; upstream reads any size):
// some hundred thousand entries.
const MaxHostsFileSize = 8 << 20

// ErrHostsTooLarge is returned by ParseHosts for input longer than
// MaxHostsFileSize; nothing of it is used.
var ErrHostsTooLarge = fmt.Errorf("hosts file larger than %d bytes", MaxHostsFileSize)

// maxLoggedBadLines bounds the bad entries logged per load of a hosts
// file; one more line counts the rest.
const maxLoggedBadLines = 20

// ValidateHostname checks a hosts-file or alias name: 1..63 ASCII letters,
// digits and hyphens, no leading or trailing hyphen, and not starting with
// "npub1" in any case (that would be ambiguous with an npub label).
func ValidateHostname(name string) error {
	bad := func(reason string) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidHostname, name, reason)
	}
	switch {
	case name == "":
		return bad("empty hostname")
	case len(name) > MaxHostnameLen:
		return bad("exceeds 63 characters")
	case strings.HasPrefix(strings.ToLower(name), "npub1"):
		return bad("must not start with 'npub1' (ambiguous with npub resolution)")
	case name[0] == '-':
		return bad("must not start with a hyphen")
	case name[len(name)-1] == '-':
		return bad("must not end with a hyphen")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return bad(fmt.Sprintf("invalid character %q", c))
		}
	}
	return nil
}

// Hosts maps hostnames (case-insensitive) to public keys and back. The zero
// value is an empty map ready for use; a Hosts is not safe for concurrent
// mutation, but lookups on one nobody mutates are.
type Hosts struct {
	byName map[string]identity.PublicKey
	byAddr map[identity.NodeAddr]string
}

// Insert validates name and npub and adds the mapping, replacing an earlier
// one for the same name (last wins).
func (h *Hosts) Insert(name, npub string) error {
	if err := ValidateHostname(name); err != nil {
		return err
	}
	pk, err := identity.DecodeNpub(npub)
	if err != nil {
		return fmt.Errorf("invalid npub %q: %w", npub, err)
	}
	h.insert(strings.ToLower(name), pk)
	return nil
}

func (h *Hosts) insert(key string, pk identity.PublicKey) {
	if h.byName == nil {
		h.byName = make(map[string]identity.PublicKey)
		h.byAddr = make(map[identity.NodeAddr]string)
	}
	h.byName[key] = pk
	h.byAddr[pk.NodeAddr()] = key
}

// Merge copies other's entries into h; other's win on conflict (upstream
// merges the hosts file over the peer-alias base this way).
func (h *Hosts) Merge(other Hosts) {
	for name, pk := range other.byName {
		h.insert(name, pk)
	}
	for addr, name := range other.byAddr {
		h.byAddr[addr] = name
	}
}

// Lookup returns the key mapped to name, ignoring ASCII case.
func (h Hosts) Lookup(name string) (identity.PublicKey, bool) {
	pk, ok := h.byName[strings.ToLower(name)]
	return pk, ok
}

// LookupNpub is Lookup returning the npub string.
func (h Hosts) LookupNpub(name string) (string, bool) {
	pk, ok := h.Lookup(name)
	if !ok {
		return "", false
	}
	return pk.Npub(), true
}

// NameOf returns the (lower-case) hostname mapped to the node, if any.
func (h Hosts) NameOf(addr identity.NodeAddr) (string, bool) {
	name, ok := h.byAddr[addr]
	return name, ok
}

// NameOfKey is NameOf for a public key.
func (h Hosts) NameOfKey(pk identity.PublicKey) (string, bool) {
	return h.NameOf(pk.NodeAddr())
}

// Len is the number of hostnames.
func (h Hosts) Len() int { return len(h.byName) }

// ParseHosts reads the hosts file format: one "hostname npub" pair per line
// separated by whitespace; blank lines and lines whose first non-blank
// character is '#' are ignored (an inline '#' is not a comment, so such a
// line has too many fields and is skipped). Each skipped line is reported to
// bad (if non-nil) with its 1-based number, trimmed text and reason; parsing
// goes on. Later entries for the same name win. The error is non-nil only
// if r fails, the input is not UTF-8 or it is longer than MaxHostsFileSize
// (ErrHostsTooLarge), in which case the Hosts is empty.
func ParseHosts(r io.Reader, bad func(line int, text string, err error)) (Hosts, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxHostsFileSize+1))
	if err != nil {
		return Hosts{}, err
	}
	if len(data) > MaxHostsFileSize {
		return Hosts{}, ErrHostsTooLarge
	}
	if !utf8.Valid(data) {
		return Hosts{}, ErrNotUTF8
	}
	var h Hosts
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Fields(text)
		var err error
		if len(f) != 2 {
			err = ErrMalformedLine
		} else {
			err = h.Insert(f[0], f[1])
		}
		if err != nil && bad != nil {
			bad(n, text, err)
		}
	}
	return h, sc.Err()
}

// HostsFile is a hosts file that is re-read when its modification time
// changes (including appearing or disappearing). A missing or unreadable
// file is an empty map. Safe for concurrent use.
type HostsFile struct {
	path string
	log  *slog.Logger

	mu    sync.Mutex // serialises Reload
	mtime time.Time
	exist bool
	cur   atomic.Pointer[Hosts]
}

// OpenHostsFile loads path now; it never fails (see HostsFile). Problems
// are logged to log (nil: slog.Default()).
func OpenHostsFile(path string, log *slog.Logger) *HostsFile {
	if log == nil {
		log = slog.Default()
	}
	log = logging.WithTarget(log, "fips::upper::hosts")
	f := &HostsFile{path: path, log: log}
	f.mu.Lock()
	f.mtime, f.exist = f.stat()
	f.load()
	f.mu.Unlock()
	return f
}

// Path is the file's path.
func (f *HostsFile) Path() string { return f.path }

func (f *HostsFile) stat() (time.Time, bool) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime(), true
}

// load reads the file, logging as upstream's load_hosts_file does.
func (f *HostsFile) load() {
	var h Hosts
	fh, err := os.Open(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f.log.Debug("No hosts file found, skipping", "path", f.path)
	case err != nil:
		f.log.Warn("Failed to read hosts file", "path", f.path, "error", err)
	default:
		bad := 0
		h, err = ParseHosts(fh, func(line int, text string, err error) {
			if bad++; bad > maxLoggedBadLines {
				return
			}
			if errors.Is(err, ErrMalformedLine) {
				f.log.Warn("Expected 'hostname npub', skipping", "path", f.path, "line", line, "content", text)
				return
			}
			f.log.Warn("Skipping invalid hosts file entry", "path", f.path, "line", line, "error", err, "content", text)
		})
		fh.Close()
		if bad > maxLoggedBadLines {
			f.log.Warn("more hosts file entries skipped, not logged", "path", f.path, "more", bad-maxLoggedBadLines)
		}
		if err != nil {
			f.log.Warn("Failed to read hosts file", "path", f.path, "error", err)
			h = Hosts{}
		}
		if h.Len() > 0 {
			f.log.Info("Loaded hosts file", "path", f.path, "count", h.Len())
		}
	}
	f.cur.Store(&h)
}

// Reload re-reads the file if its mtime (or existence) changed since the
// last load and reports whether it did.
func (f *HostsFile) Reload() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	mtime, exist := f.stat()
	if exist == f.exist && mtime.Equal(f.mtime) {
		return false
	}
	f.mtime, f.exist = mtime, exist
	f.load()
	f.log.Info("Reloaded hosts file", "path", f.path, "entries", f.Hosts().Len())
	return true
}

// Hosts is the current snapshot; do not mutate it.
func (f *HostsFile) Hosts() Hosts { return *f.cur.Load() }

// Lookup looks name up in the current snapshot.
func (f *HostsFile) Lookup(name string) (identity.PublicKey, bool) { return f.Hosts().Lookup(name) }

// NameOf looks addr up in the current snapshot.
func (f *HostsFile) NameOf(addr identity.NodeAddr) (string, bool) { return f.Hosts().NameOf(addr) }

package peer

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
)

// ACL is the peers.allow / peers.deny pair. Decision: an allow match (or
// ALL in allow) admits; else a deny match (or ALL in deny) refuses; else
// admit. An allowlist alone restricts nothing: put ALL in peers.deny for a
// strict allowlist.
type ACL struct {
	AllowFile, DenyFile string
	// Aliases resolves non-npub tokens (hosts names, peer aliases) to keys.
	Aliases func(name string) (identity.PublicKey, bool)

	allow, deny       aclList
	allowMod, denyMod time.Time
	allowOK, denyOK   bool
	loaded            bool // a file has been loaded once (the next load is a reload)
}

type aclList struct {
	all     bool
	keys    map[identity.PublicKey]struct{}
	entries []string // as written, for show_acl
}

// ACLDecision is the outcome of a check.
type ACLDecision struct {
	Allowed bool
	Rule    string // "allow", "allow_all", "deny", "deny_all", "default"
}

// Check decides for one key.
func (a *ACL) Check(pk identity.PublicKey) ACLDecision {
	if a == nil {
		return ACLDecision{true, "default"}
	}
	if _, ok := a.allow.keys[pk]; ok {
		return ACLDecision{true, "allow"}
	}
	if a.allow.all {
		return ACLDecision{true, "allow_all"}
	}
	if _, ok := a.deny.keys[pk]; ok {
		return ACLDecision{false, "deny"}
	}
	if a.deny.all {
		return ACLDecision{false, "deny_all"}
	}
	return ACLDecision{true, "default"}
}

// Reload re-reads a file whose modification time changed (or that appeared
// or vanished). It returns whether anything was reloaded. A missing file is
// an empty list.
func (a *ACL) Reload(log *slog.Logger) bool {
	log = logging.WithTarget(log, "fips::node::acl")
	changed := false
	if l, mod, ok, did := reloadList(a.AllowFile, a.allowMod, a.allowOK, a.Aliases, log); did {
		a.allow, a.allowMod, a.allowOK, changed = l, mod, ok, true
	}
	if l, mod, ok, did := reloadList(a.DenyFile, a.denyMod, a.denyOK, a.Aliases, log); did {
		a.deny, a.denyMod, a.denyOK, changed = l, mod, ok, true
	}
	if changed {
		// Upstream's lines: DEBUG at every load, INFO when it replaces
		// what was loaded before.
		args := []any{"allow_entries", len(a.allow.keys), "deny_entries", len(a.deny.keys),
			"allow_all", a.allow.all, "deny_all", a.deny.all}
		log.Debug("Loaded peer ACL files", args...)
		if a.loaded {
			log.Info("Reloaded peer ACL files", append([]any{"allow_file", a.AllowFile, "deny_file", a.DenyFile}, args...)...)
		}
		a.loaded = true
	}
	return changed
}

// Mode names the effective policy as upstream's show_acl does.
func (a *ACL) Mode() string {
	hasAllow, hasDeny := len(a.allow.keys) > 0, len(a.deny.keys) > 0
	switch {
	case a.allow.all:
		return "allow_all"
	case hasAllow && a.deny.all:
		return "allow_then_deny_all"
	case hasAllow && hasDeny:
		return "allow_then_deny"
	case hasAllow:
		return "allowlist"
	case a.deny.all:
		return "deny_all"
	case hasDeny:
		return "denylist"
	default:
		return "default_open"
	}
}

func (a *ACL) empty() bool {
	return len(a.allow.keys) == 0 && len(a.deny.keys) == 0 && !a.allow.all && !a.deny.all
}

// ACLSnapshot is what show_acl reports.
type ACLSnapshot struct {
	AllowFile, DenyFile           string
	EnforcementActive             bool
	EffectiveMode                 string
	DefaultDecision               string
	AllowAll, DenyAll             bool
	AllowFileLines, DenyFileLines []string // tokens as written, sorted, deduplicated
	AllowEntries, DenyEntries     []string // effective npubs, sorted
}

// Snapshot reports the loaded lists.
func (a *ACL) Snapshot() ACLSnapshot {
	s := ACLSnapshot{
		AllowFile: a.AllowFile, DenyFile: a.DenyFile,
		EnforcementActive: !a.empty(), EffectiveMode: a.Mode(), DefaultDecision: "allow",
		AllowAll: a.allow.all, DenyAll: a.deny.all,
		AllowFileLines: sortedUnique(a.allow.entries), DenyFileLines: sortedUnique(a.deny.entries),
		AllowEntries: npubs(a.allow.keys), DenyEntries: npubs(a.deny.keys),
	}
	if !a.allow.all && a.deny.all {
		s.DefaultDecision = "deny"
	}
	return s
}

func sortedUnique(in []string) []string {
	out := append([]string{}, in...)
	slices.Sort(out)
	return slices.Compact(out)
}

func npubs(keys map[identity.PublicKey]struct{}) []string {
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k.Npub())
	}
	slices.Sort(out)
	return out
}

func reloadList(path string, lastMod time.Time, wasPresent bool, aliases func(string) (identity.PublicKey, bool), log *slog.Logger) (aclList, time.Time, bool, bool) {
	if path == "" {
		return aclList{}, time.Time{}, false, false
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if wasPresent {
				return aclList{}, time.Time{}, false, true
			}
			return aclList{}, time.Time{}, false, false
		}
		log.Warn("Failed to read ACL file", "path", path, "error", err)
		return aclList{}, time.Time{}, false, false
	}
	if wasPresent && fi.ModTime().Equal(lastMod) {
		return aclList{}, lastMod, true, false
	}
	f, err := os.Open(path)
	if err != nil {
		log.Warn("Failed to read ACL file", "path", path, "error", err)
		return aclList{}, time.Time{}, false, false
	}
	defer f.Close()
	bad := 0
	l, err := ParseACL(f, aliases, func(line int, tok string, err error) {
		if bad++; bad > maxLoggedBadEntries {
			return
		}
		if errors.Is(err, ErrACLLineFields) {
			log.Warn("Expected one ACL entry per line, skipping", "path", path, "line", line, "content", tok)
			return
		}
		log.Warn("Skipping invalid ACL entry", "path", path, "line", line, "entry", tok, "error", err)
	})
	if bad > maxLoggedBadEntries {
		log.Warn("more invalid ACL entries skipped, not logged", "path", path, "more", bad-maxLoggedBadEntries)
	}
	if err != nil {
		log.Warn("Failed to read ACL file", "path", path, "error", err)
		return aclList{}, time.Time{}, false, false
	}
	return l, fi.ModTime(), true, true
}

// ErrACLLineFields is reported for an ACL line holding more than one
// whitespace-separated token (upstream skips the line).
var ErrACLLineFields = errors.New("expected one ACL entry per line")

// maxLoggedBadEntries bounds the invalid entries logged per load of an
// ACL file; one more line counts the rest.
const maxLoggedBadEntries = 20

// maxACLEntries bounds one ACL file.
const maxACLEntries = 65536

// ParseACL reads one ACL file: one token per line (npub, alias or ALL,
// case-insensitive), '#' starts a comment anywhere. Invalid tokens are
// reported through bad and skipped.
func ParseACL(r interface{ Read([]byte) (int, error) }, aliases func(string) (identity.PublicKey, bool), bad func(line int, tok string, err error)) (aclList, error) {
	l := aclList{keys: map[identity.PublicKey]struct{}{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		tok := strings.TrimSpace(line)
		if tok == "" {
			continue
		}
		if len(strings.Fields(tok)) != 1 {
			bad(n, tok, ErrACLLineFields)
			continue
		}
		if len(l.entries) >= maxACLEntries {
			bad(n, tok, fmt.Errorf("more than %d entries", maxACLEntries))
			continue
		}
		if strings.EqualFold(tok, "ALL") {
			l.all = true
			l.entries = append(l.entries, "ALL")
			continue
		}
		if strings.HasPrefix(tok, "npub1") {
			pk, err := identity.DecodeNpub(tok)
			if err != nil {
				bad(n, tok, err)
				continue
			}
			l.keys[pk] = struct{}{}
			l.entries = append(l.entries, tok)
			continue
		}
		if aliases != nil {
			if pk, ok := aliases(tok); ok {
				l.keys[pk] = struct{}{}
				l.entries = append(l.entries, tok)
				continue
			}
		}
		bad(n, tok, errors.New("neither an npub nor a known alias"))
	}
	return l, sc.Err()
}

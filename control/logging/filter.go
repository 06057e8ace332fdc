// Package logging is the daemon's slog handler: upstream's RUST_LOG
// filter (a global level and target=level directives over tracing's
// module-path targets), a text format laid out as tracing-subscriber's
// fmt layer lays out its lines, and the same records as JSON on request.
// It owns formatting and filtering only; what is logged, and when, belongs
// to the packages that log.
package logging

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
)

// Levels beyond slog's four: tracing's TRACE sits below DEBUG, and "off"
// above every level so nothing passes it.
const (
	LevelTrace = slog.LevelDebug - 4
	LevelOff   = slog.Level(math.MaxInt32)
)

// ErrLevel is returned for a level name tracing does not know.
var ErrLevel = errors.New("unknown log level")

// ParseLevel reads a level as tracing's LevelFilter does: off, error,
// warn, info, debug, trace in any case, or 0 (off) to 5 (trace). "warning"
// is accepted as well, as node.log_level accepts it.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "0":
		return LevelOff, nil
	case "error", "1":
		return slog.LevelError, nil
	case "warn", "warning", "2":
		return slog.LevelWarn, nil
	case "info", "3":
		return slog.LevelInfo, nil
	case "debug", "4":
		return slog.LevelDebug, nil
	case "trace", "5":
		return LevelTrace, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrLevel, s)
}

// LevelName is tracing's upper-case name of a slog level: the nearest
// tracing level at or below l.
func LevelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARN"
	case l >= slog.LevelInfo:
		return "INFO"
	case l >= slog.LevelDebug:
		return "DEBUG"
	}
	return "TRACE"
}

// maxDirectives bounds a filter: RUST_LOG is operator input, and each
// record walks the list.
const maxDirectives = 64

// directive is one target=level pair of an env filter.
type directive struct {
	target string
	level  slog.Level
}

// Filter is a parsed RUST_LOG: per-target levels over a default level.
// A record's level is checked against the directive with the longest
// target that prefixes the record's target (tracing's rule), else against
// the default. Targets nothing here logs under (nostr_sdk=info, hyper=warn)
// are kept and simply never match.
type Filter struct {
	def        slog.Leveler // nil: use the default level given to Level
	directives []directive  // longest target first
	// Dropped lists the directives that were not understood, as tracing's
	// parse_lossy drops them; Refused counts those over maxDirectives.
	Dropped []string
	Refused int
}

// ParseFilter parses an env-filter string leniently, as upstream's
// EnvFilter::parse_lossy does: comma-separated directives, each a bare
// level (the default), a bare target (trace for that target) or
// target=level; span and field selectors (target[span{f=v}]=level) are
// reduced to their target. Directives it cannot read are listed in
// Dropped and otherwise ignored.
func ParseFilter(s string) *Filter {
	f := &Filter{}
	for raw := range strings.SplitSeq(s, ",") {
		d := strings.TrimSpace(raw)
		if d == "" {
			continue
		}
		if len(f.directives) >= maxDirectives {
			f.Refused++
			continue
		}
		target, level, hasLevel := d, "", false
		if i := strings.LastIndexByte(d, '='); i >= 0 && !strings.ContainsAny(d[i:], "}]") {
			target, level, hasLevel = d[:i], d[i+1:], true
		}
		if j := strings.IndexByte(target, '['); j >= 0 {
			target = target[:j]
		}
		target = strings.TrimSpace(target)
		if !hasLevel {
			if l, err := ParseLevel(target); err == nil {
				f.def = l
				continue
			}
			if !validTarget(target) {
				f.Dropped = append(f.Dropped, d)
				continue
			}
			f.directives = append(f.directives, directive{target: target, level: LevelTrace})
			continue
		}
		l, err := ParseLevel(level)
		if err != nil || (target != "" && !validTarget(target)) {
			f.Dropped = append(f.Dropped, d)
			continue
		}
		if target == "" {
			f.def = l
			continue
		}
		f.directives = append(f.directives, directive{target: target, level: l})
	}
	// Longest target first; among equal targets the last written wins.
	slices.Reverse(f.directives)
	slices.SortStableFunc(f.directives, func(a, b directive) int { return len(b.target) - len(a.target) })
	return f
}

func validTarget(t string) bool {
	if t == "" {
		return false
	}
	for _, r := range t {
		if !(r == '_' || r == ':' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Level is the least level a record under target must have to pass:
// the most specific directive's, else the filter's own default, else def.
func (f *Filter) Level(target string, def slog.Leveler) slog.Level {
	if f != nil {
		for _, d := range f.directives {
			if strings.HasPrefix(target, d.target) {
				return d.level
			}
		}
		if f.def != nil {
			return f.def.Level()
		}
	}
	if def == nil {
		return slog.LevelInfo
	}
	return def.Level()
}

// Min is the least level any target can pass at: a cheap first check.
func (f *Filter) Min(def slog.Leveler) slog.Level {
	m := f.Level("", def)
	if f != nil {
		for _, d := range f.directives {
			m = min(m, d.level)
		}
	}
	return m
}

// String renders the filter back as directives (for the startup log).
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	var parts []string
	if f.def != nil {
		parts = append(parts, directiveLevel(f.def.Level()))
	}
	for _, d := range f.directives {
		parts = append(parts, d.target+"="+directiveLevel(d.level))
	}
	return strings.Join(parts, ",")
}

func directiveLevel(l slog.Level) string {
	if l >= LevelOff {
		return "off"
	}
	return strings.ToLower(LevelName(l))
}

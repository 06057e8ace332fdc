package logging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TargetKey is the attribute that names a logger's target. Give it with
// WithTarget; this handler takes it out of the fields and uses it as the
// line's target (and filters on it), other handlers print it as a field.
const TargetKey = "log.target"

// DefaultTarget is the target of records from a logger that never named
// one: the daemon binary's, as upstream's bin/fips logs under "fips".
const DefaultTarget = "fips"

// WithTarget is l logging under target (a tracing module path such as
// "fips::node::tree").
func WithTarget(l *slog.Logger, target string) *slog.Logger {
	return l.With(slog.String(TargetKey, target))
}

// Format is how records are written.
type Format int32

// Formats.
const (
	// FormatText is tracing-subscriber's default "full" line:
	// "2026-01-02T15:04:05.123456Z  INFO fips::node::tree: Parent switched new_seq=4".
	FormatText Format = iota
	// FormatJSON is tracing-subscriber's json layout, one object a line:
	// {"timestamp":…,"level":"INFO","fields":{"message":…,…},"target":…}.
	FormatJSON
)

// ErrFormat is returned for a log format other than text or json.
var ErrFormat = errors.New("unknown log format")

// ParseFormat reads "text" (or "") and "json", in any case.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "text", "full":
		return FormatText, nil
	case "json":
		return FormatJSON, nil
	}
	return 0, fmt.Errorf("%w: %q (want text or json)", ErrFormat, s)
}

func (f Format) String() string {
	if f == FormatJSON {
		return "json"
	}
	return "text"
}

// Options configure New.
type Options struct {
	// Level is the default level: what passes for a target no directive of
	// Filter names when Filter has no bare level. Nil is info. A
	// *slog.LevelVar may be changed later.
	Level slog.Leveler
	// Filter is a parsed RUST_LOG; nil filters on Level alone.
	Filter *Filter
	Format Format
	// Now is the clock for timestamps; nil is time.Now.
	Now func() time.Time
}

// sink is what every handler derived from one New shares.
type sink struct {
	mu     sync.Mutex
	w      io.Writer
	level  slog.Leveler
	filter atomic.Pointer[Filter]
	format atomic.Int32
	now    func() time.Time
}

// Handler is the slog.Handler; derive loggers with slog.New(h).With…
type Handler struct {
	s      *sink
	target string
	prefix string      // open groups, "a.b."
	attrs  []slog.Attr // from WithAttrs, keys already prefixed
}

// New is a handler writing to w.
func New(w io.Writer, o Options) *Handler {
	s := &sink{w: w, level: o.Level, now: o.Now}
	if s.level == nil {
		s.level = slog.LevelInfo
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.filter.Store(o.Filter)
	s.format.Store(int32(o.Format))
	return &Handler{s: s, target: DefaultTarget}
}

// SetFilter replaces the filter of h and every handler derived from it.
func (h *Handler) SetFilter(f *Filter) { h.s.filter.Store(f) }

// SetFormat replaces the format of h and every handler derived from it.
func (h *Handler) SetFormat(f Format) { h.s.format.Store(int32(f)) }

// Enabled reports whether a record at l under h's target passes the filter.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.s.filter.Load().Level(h.target, h.s.level)
}

// WithAttrs implements slog.Handler; a TargetKey attribute sets the target.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		if a.Key == TargetKey && h.prefix == "" {
			n.target = a.Value.String()
			continue
		}
		n.attrs = append(n.attrs, slog.Attr{Key: h.prefix + a.Key, Value: a.Value})
	}
	return &n
}

// WithGroup implements slog.Handler: keys after it are "name.key".
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.prefix = h.prefix + name + "."
	return &n
}

// Handle implements slog.Handler.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	ts := r.Time
	if ts.IsZero() {
		ts = h.s.now()
	}
	fields := make([]slog.Attr, 0, len(h.attrs)+r.NumAttrs())
	fields = append(fields, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = flatten(fields, h.prefix, a)
		return true
	})
	var b []byte
	if Format(h.s.format.Load()) == FormatJSON {
		b = h.appendJSON(nil, ts, r, fields)
	} else {
		b = h.appendText(nil, ts, r, fields)
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	_, err := h.s.w.Write(b)
	return err
}

// flatten appends a, with groups spelled out as dotted keys and empty
// attributes dropped (slog's rules).
func flatten(dst []slog.Attr, prefix string, a slog.Attr) []slog.Attr {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return dst
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			dst = flatten(dst, p, g)
		}
		return dst
	}
	return append(dst, slog.Attr{Key: prefix + a.Key, Value: a.Value})
}

const tsLayout = "2006-01-02T15:04:05.000000Z"

// appendText lays a record out as tracing-subscriber's Full format does:
// timestamp, level right-aligned in five columns, "target:", the message,
// then the fields as key=value with values in their Display form.
func (h *Handler) appendText(b []byte, ts time.Time, r slog.Record, fields []slog.Attr) []byte {
	b = ts.UTC().AppendFormat(b, tsLayout)
	b = append(b, ' ')
	lv := LevelName(r.Level)
	for range 5 - len(lv) {
		b = append(b, ' ')
	}
	b = append(b, lv...)
	b = append(b, ' ')
	b = append(b, h.target...)
	b = append(b, ": "...)
	b = append(b, r.Message...)
	for _, f := range fields {
		b = append(b, ' ')
		b = append(b, f.Key...)
		b = append(b, '=')
		b = appendDisplay(b, f.Value)
	}
	return append(b, '\n')
}

// appendDisplay is a value's Display form: strings raw, as tracing prints
// a field recorded with %.
func appendDisplay(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return append(b, v.String()...)
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return append(b, v.Duration().String()...)
	case slog.KindTime:
		return v.Time().UTC().AppendFormat(b, time.RFC3339Nano)
	}
	if err, ok := v.Any().(error); ok {
		return append(b, err.Error()...)
	}
	return fmt.Append(b, v.Any())
}

// appendJSON writes tracing-subscriber's json layout.
func (h *Handler) appendJSON(b []byte, ts time.Time, r slog.Record, fields []slog.Attr) []byte {
	b = append(b, `{"timestamp":"`...)
	b = ts.UTC().AppendFormat(b, tsLayout)
	b = append(b, `","level":"`...)
	b = append(b, LevelName(r.Level)...)
	b = append(b, `","fields":{"message":`...)
	b = appendJSONString(b, r.Message)
	for _, f := range fields {
		b = append(b, ',')
		b = appendJSONString(b, f.Key)
		b = append(b, ':')
		b = appendJSONValue(b, f.Value)
	}
	b = append(b, `},"target":`...)
	b = appendJSONString(b, h.target)
	return append(b, "}\n"...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func appendJSONValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendJSONString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		f := v.Float64()
		if f != f || f > 1e308 || f < -1e308 { // NaN and ±Inf are not JSON
			return appendJSONString(b, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration, slog.KindTime:
		return appendJSONString(b, string(appendDisplay(nil, v)))
	}
	if err, ok := v.Any().(error); ok {
		return appendJSONString(b, err.Error())
	}
	if m, ok := v.Any().(json.Marshaler); ok {
		if q, err := m.MarshalJSON(); err == nil {
			return append(b, q...)
		}
	}
	return appendJSONString(b, fmt.Sprint(v.Any()))
}

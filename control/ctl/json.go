package ctl

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
)

// Float is a float64 that marshals as serde_json does: shortest round-trip
// digits, integral values with a trailing ".0" ("3.0"), exponents without
// '+' ("1e16", "1.5e-7"), and null for NaN and ±Inf (which encoding/json
// refuses to encode at all).
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return appendFloat(nil, v), nil
}

// FloatPtr returns a pointer to v as a Float, for optional fields.
func FloatPtr(v float64) *Float { f := Float(v); return &f }

// FormatFloat renders a finite v as serde_json does (ryu's layout): plain
// decimal for exponents in [-5, 16], scientific otherwise.
func FormatFloat(v float64) string { return string(appendFloat(nil, v)) }

func appendFloat(dst []byte, v float64) []byte {
	switch { // not JSON; Rust's Display spelling, for messages
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-inf"...)
	case v == 0:
		if math.Signbit(v) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	s := strconv.AppendFloat(nil, v, 'e', -1, 64) // [-]d[.ddd]e±XX
	if s[0] == '-' {
		dst = append(dst, '-')
		s = s[1:]
	}
	epos := bytes.IndexByte(s, 'e')
	exp, _ := strconv.Atoi(string(s[epos+1:]))
	digits := make([]byte, 0, epos)
	for _, c := range s[:epos] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	length := len(digits)
	kk := exp + 1    // value = 0.d1d2… × 10^kk
	k := kk - length // value = d1d2… × 10^k
	switch {
	case k >= 0 && kk <= 16:
		dst = append(dst, digits...)
		for range k {
			dst = append(dst, '0')
		}
		dst = append(dst, ".0"...)
	case kk > 0 && kk <= 16:
		dst = append(dst, digits[:kk]...)
		dst = append(dst, '.')
		dst = append(dst, digits[kk:]...)
	case kk > -5 && kk <= 0:
		dst = append(dst, "0."...)
		for range -kk {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if length > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		dst = strconv.AppendInt(dst, int64(kk-1), 10)
	}
	return dst
}

// List is a slice that marshals as [] rather than null when nil, since
// upstream's arrays are never null.
type List[T any] []T

// MarshalJSON implements json.Marshaler.
func (l List[T]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return marshal([]T(l))
}

// Counts is a name → count object (keys sorted, as upstream's BTreeMap)
// that marshals as {} rather than null when nil.
type Counts map[string]uint64

// MarshalJSON implements json.Marshaler.
func (c Counts) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("{}"), nil
	}
	return marshal(map[string]uint64(c))
}

// Pretty re-renders a JSON document the way upstream fipsctl prints one
// (serde_json's to_string_pretty of a parsed Value): object keys sorted,
// two-space indent, "key": value, empty containers as {} and [], numbers
// normalised as serde would re-serialise them, and only '"', '\\' and
// control characters escaped in strings.
func Pretty(doc []byte) ([]byte, error) {
	v, err := decodeNumbers(doc)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	writePretty(&b, v, 0)
	return b.Bytes(), nil
}

// Canonical re-renders a JSON document compactly the way upstream's
// serde_json writes a Value: object keys sorted, numbers normalised as
// serde would re-serialise them (a float stays a float: 1.0), and only
// '"', '\\' and control characters escaped in strings.
func Canonical(doc []byte) ([]byte, error) {
	v, err := decodeNumbers(doc)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	writeJSON(&b, v, -1)
	return b.Bytes(), nil
}

func writePretty(b *bytes.Buffer, v any, depth int) { writeJSON(b, v, depth) }

// writeJSON writes v pretty-printed from depth, or compactly when depth is
// negative.
func writeJSON(b *bytes.Buffer, v any, depth int) {
	compact := depth < 0
	indent := func(d int) {
		if compact {
			return
		}
		b.WriteByte('\n')
		for range d {
			b.WriteString("  ")
		}
	}
	next := depth + 1
	if compact {
		next = -1
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(normalizeNumber(string(x)))
	case string:
		writeJSONString(b, x)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			writeJSON(b, e, next)
		}
		indent(depth)
		b.WriteByte(']')
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			writeJSONString(b, k)
			if compact {
				b.WriteByte(':')
			} else {
				b.WriteString(": ")
			}
			writeJSON(b, x[k], next)
		}
		indent(depth)
		b.WriteByte('}')
	}
}

// normalizeNumber re-renders a JSON number literal as serde_json does after
// parsing it into a Value: integers that fit u64/i64 verbatim, anything
// else through f64.
func normalizeNumber(s string) string {
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return s
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		if i == 0 { // serde parses "-0" as the float -0.0
			return "-0.0"
		}
		return strconv.FormatInt(i, 10)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return s
	}
	return FormatFloat(f)
}

// decodeNumbers decodes a JSON document keeping numbers as written.
func decodeNumbers(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

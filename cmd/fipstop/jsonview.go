package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The daemon's responses are read as generic JSON, as upstream's fipstop
// reads them: a field a newer or older daemon lacks renders as "-" instead
// of failing the whole tab.

// get walks path through nested objects; nil when any step is missing.
func get(v any, path ...string) any {
	for _, k := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// str is a string field, "-" when absent or not a string.
func str(v any, path ...string) string {
	s, ok := get(v, path...).(string)
	if !ok || s == "" {
		return "-"
	}
	return s
}

// num is a numeric field.
func num(v any, path ...string) (float64, bool) {
	switch x := get(v, path...).(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	}
	return 0, false
}

// ustr is a non-negative integer field rendered exactly ("-" when absent).
func ustr(v any, path ...string) string {
	switch x := get(v, path...).(type) {
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return "-"
}

// u64 is an integer field as a number (0 when absent).
func u64(v any, path ...string) uint64 {
	if n, ok := get(v, path...).(json.Number); ok {
		if u, err := strconv.ParseUint(n.String(), 10, 64); err == nil {
			return u
		}
	}
	f, _ := num(v, path...)
	if f < 0 || math.IsNaN(f) {
		return 0
	}
	return uint64(f)
}

// fixed renders a numeric field with prec decimals, "-" when absent.
func fixed(v any, prec int, path ...string) string {
	f, ok := num(v, path...)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// isTrue is a boolean field (false when absent).
func isTrue(v any, path ...string) bool {
	b, _ := get(v, path...).(bool)
	return b
}

// arr is an array field (nil when absent).
func arr(v any, path ...string) []any {
	a, _ := get(v, path...).([]any)
	return a
}

// floats is an array of numbers; non-numbers (null) become NaN.
func floats(v any, path ...string) []float64 {
	a := arr(v, path...)
	out := make([]float64, len(a))
	for i, x := range a {
		out[i] = math.NaN()
		if n, ok := num(x); ok {
			out[i] = n
		}
	}
	return out
}

// yesNo renders a boolean.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// fmtBytes renders a byte count in binary units.
func fmtBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// fmtRate renders bits per second.
func fmtRate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.1f Gb/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.1f Mb/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.1f kb/s", bps/1e3)
	}
	return fmt.Sprintf("%.0f b/s", bps)
}

// fmtUptime renders seconds as 1d 2h 3m 4s.
func fmtUptime(secs uint64) string {
	d, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	switch {
	case d > 0:
		return fmt.Sprintf("%dd %dh %dm", d, h, m)
	case h > 0:
		return fmt.Sprintf("%dh %dm %ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// ago renders a Unix-milliseconds timestamp as time before now.
func ago(now time.Time, ms uint64) string {
	if ms == 0 {
		return "-"
	}
	d := now.Sub(time.UnixMilli(int64(ms)))
	if d < 0 {
		d = 0
	}
	return fmtUptime(uint64(d.Seconds())) + " ago"
}

// short truncates s to n runes with an ellipsis.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 2 {
		return s
	}
	return string(r[:n-1]) + "…"
}

// sparkline renders values as one line of block characters, NaN as a
// space, scaled between the series' min and max.
func sparkline(vals []float64) string {
	const ticks = "▁▂▃▄▅▆▇█"
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	var b strings.Builder
	t := []rune(ticks)
	for _, v := range vals {
		switch {
		case math.IsNaN(v):
			b.WriteRune(' ')
		case hi <= lo:
			b.WriteRune(t[0])
		default:
			b.WriteRune(t[int((v-lo)/(hi-lo)*float64(len(t)-1)+0.5)])
		}
	}
	return b.String()
}

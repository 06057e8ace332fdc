package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// parseProcStat reads utime+stime from a /proc/PID/stat line (fields 14
// and 15; the command name in parentheses may contain spaces).
func parseProcStat(s string) (float64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: malformed /proc stat line")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: short /proc stat line")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: /proc stat times %q %q", f[11], f[12])
	}
	return float64(u+st) / clockTicks, nil
}

// parseMachineStat reads the busy time (everything but idle and
// iowait) of the aggregate "cpu" line of /proc/stat, in seconds.
func parseMachineStat(s string) (float64, error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("bench: unexpected /proc/stat")
	}
	var busy uint64
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/stat: %w", err)
		}
		// idle, iowait; guest and guest_nice are already in user and nice.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += n
	}
	return float64(busy) / clockTicks, nil
}

var pingTime = regexp.MustCompile(`time=([0-9.]+) ms`)

// ParsePing returns the RTT of every reply in ping's output, in ms.
func ParsePing(out string) []float64 {
	var rtts []float64
	for _, m := range pingTime.FindAllStringSubmatch(out, -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			rtts = append(rtts, v)
		}
	}
	return rtts
}

package bench

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	s, ok := Summarize([]float64{3, 1, math.NaN(), 2})
	if !ok || s.Median != 2 || s.Min != 1 || s.Max != 3 || len(s.Samples) != 3 {
		t.Fatalf("Summarize = %+v %v", s, ok)
	}
	if s, _ := Summarize([]float64{4, 1, 2, 3}); s.Median != 2.5 {
		t.Errorf("even count median = %v, want 2.5", s.Median)
	}
	if _, ok := Summarize([]float64{math.NaN(), math.Inf(1)}); ok {
		t.Error("Summarize of nothing finite reported ok")
	}
}

func TestPercentile(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i) // 200 … 1, unsorted input
	}
	for _, c := range []struct{ p, want float64 }{{50, 100}, {99, 198}, {100, 200}, {0.1, 1}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("percentile of no samples is not NaN")
	}
}

func TestParsePing(t *testing.T) {
	out := `PING fd00:77:1::2(fd00:77:1::2) 56 data bytes
64 bytes from fd00:77:1::2: icmp_seq=1 ttl=63 time=0.412 ms
From fd00:77:0::2 icmp_seq=2 Destination unreachable: No route
64 bytes from fd00:77:1::2: icmp_seq=3 ttl=63 time=12.5 ms

--- fd00:77:1::2 ping statistics ---
rtt min/avg/max/mdev = 0.412/6.456/12.500/6.044 ms
`
	got := ParsePing(out)
	if len(got) != 2 || got[0] != 0.412 || got[1] != 12.5 {
		t.Fatalf("ParsePing = %v", got)
	}
}

func TestParseProcStat(t *testing.T) {
	// comm with spaces and parentheses; utime 250, stime 50 ticks.
	line := "4242 (wireguard (go) x) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 50 0 0 20 0 9 0 100 0 0"
	got, err := parseProcStat(line)
	if err != nil || got != 3.0 {
		t.Fatalf("parseProcStat = %v, %v; want 3 s", got, err)
	}
	if _, err := parseProcStat("4242 (short) S 1"); err == nil {
		t.Error("short stat line accepted")
	}
	m, err := parseMachineStat("cpu  100 10 50 9000 40 5 5 0 7 0\ncpu0 1 2 3\n")
	// user+nice+system+irq+softirq+steal = 170 ticks; idle, iowait, guest not busy.
	if err != nil || m != 1.7 {
		t.Fatalf("parseMachineStat = %v, %v; want 1.7 s", m, err)
	}
}

func sampleRun(date string, fipsTCP float64) Run {
	st := func(xs ...float64) Stat { s, _ := Summarize(xs); return s }
	return Run{Date: date, Commit: "abc123", Command: "make bench", Repetitions: 3, Seconds: 5,
		Paths: []PathResult{
			{Topology: TopoTransit, Nodes: 3, System: SystemFips, Metrics: map[string]Stat{
				"tcp1_mbps": st(fipsTCP, fipsTCP-10, fipsTCP+10), "tcp1_cpu_relay_s_per_gb": st(4)},
				Notes: []string{"only 80 ping replies under load"}},
			{Topology: TopoTransit, Nodes: 3, System: SystemKernel, Metrics: map[string]Stat{"tcp1_mbps": st(20000)}},
			{Topology: TopoTransit, Nodes: 3, System: SystemWireGuard, Metrics: map[string]Stat{
				"tcp1_mbps": st(1000, 900, 1100), "tcp1_cpu_relay_s_per_gb": st(8)}},
		}}
}

func TestMarkdownShowsRatiosToWireGuard(t *testing.T) {
	md := Markdown(sampleRun("2026-12-01T00:00:00Z", 500), nil)
	for _, want := range []string{
		"### transit (3 nodes)",
		"| Figure | unit | kernel | wireguard-go | fips-go | fips-go / wg |",
		"| TCP, 1 stream | Mbit/s | 20,000 | 1,000 [900–1,100] | 500 [490–510] | 0.50× |",
		"| CPU s/GB, each relay's daemons (TCP 1 stream) | s/GB | — | 8 | 4 | 0.50× |",
		"fips-go: only 80 ping replies under load",
		"Command: `make bench`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// A figure no system has is left out.
	if strings.Contains(md, "UDP at 1 Gbit/s") {
		t.Errorf("row without figures rendered:\n%s", md)
	}
}

// TestMarkdownShowsAFailedRow: a system that could not be built (the
// Ethernet AF_XDP row before the XDP program takes Ethernet frames) has
// a column of dashes and says why in the notes.
func TestMarkdownShowsAFailedRow(t *testing.T) {
	run := sampleRun("2026-12-01T00:00:00Z", 500)
	run.Paths = append(run.Paths, PathResult{Topology: TopoTransit, Nodes: 3, System: SystemFipsEthernetAFXDP, Metrics: map[string]Stat{},
		Notes: []string{"not measured: the daemon on a exited at start: dataplane.mode is xdp, but no UDP transport is bound"}})
	md := Markdown(run, nil)
	for _, want := range []string{
		"| Figure | unit | kernel | wireguard-go | fips-go | fips-go ethernet afxdp | fips-go / wg | fips-go ethernet afxdp / wg |",
		"| TCP, 1 stream | Mbit/s | 20,000 | 1,000 [900–1,100] | 500 [490–510] | — | 0.50× | — |",
		"fips-go ethernet afxdp: not measured: the daemon on a exited at start: dataplane.mode is xdp, but no UDP transport is bound",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	doc := "# Performance\n\nintro\n"
	out, err := ReplaceSection(doc, "one\n")
	if err != nil || !strings.HasPrefix(out, doc) || !strings.Contains(out, BeginMarker+"\none\n"+EndMarker) {
		t.Fatalf("append: %v\n%s", err, out)
	}
	out2, err := ReplaceSection(out+"\n## After\n", "two\n")
	if err != nil || strings.Contains(out2, "one") || !strings.Contains(out2, "two\n") ||
		!strings.HasPrefix(out2, doc) || !strings.HasSuffix(out2, "## After\n") {
		t.Fatalf("replace: %v\n%s", err, out2)
	}
	for _, bad := range []string{BeginMarker + "\nx\n", "x\n" + EndMarker, EndMarker + "\n" + BeginMarker, out + out} {
		if _, err := ReplaceSection(bad, "y"); !errors.Is(err, ErrMarkers) {
			t.Errorf("unbalanced markers %q: %v", bad, err)
		}
	}
}

func TestPublishKeepsABoundedHistory(t *testing.T) {
	dir := t.TempDir()
	doc, js := filepath.Join(dir, "performance.md"), filepath.Join(dir, "bench.json")
	if err := os.WriteFile(doc, []byte("# Performance\n\nhand-written figures\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range MaxHistory + 5 {
		if err := Publish(sampleRun(string(rune('A'+i)), float64(100+i)), doc, js); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ReadHistory(js)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != MaxHistory || h.Runs[0].Date != string(rune('A'+MaxHistory+4)) {
		t.Fatalf("history has %d runs, newest %q", len(h.Runs), h.Runs[0].Date)
	}
	b, _ := os.ReadFile(doc)
	md := string(b)
	if !strings.HasPrefix(md, "# Performance\n\nhand-written figures\n") || strings.Count(md, BeginMarker) != 1 {
		t.Fatalf("document outside the markers changed or markers repeated:\n%s", md)
	}
	// The newest run in detail, earlier ones as ratio rows.
	if !strings.Contains(md, "| 124 [114–134] |") || !strings.Contains(md, "### Earlier runs") ||
		strings.Count(md, "| `abc123` | full | fips-go |") != MaxHistory {
		t.Errorf("report:\n%s", md)
	}
	if err := os.WriteFile(js, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Publish(sampleRun("Z", 1), doc, js); err == nil {
		t.Error("corrupt history overwritten without a word")
	}
}

package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// System names, in the order the tables show them.
const (
	SystemKernel    = "kernel"
	SystemWireGuard = "wireguard-go"
	SystemFips      = "fips-go"
	// SystemFipsXDP is fips-go with dataplane.mode xdp (the XDP program in
	// front of every underlay veth); SystemFips runs the default settings.
	SystemFipsXDP = "fips-go xdp"
	// SystemFipsAFXDP adds dataplane.afxdp: established frames reach the
	// workers through AF_XDP sockets instead of the UDP sockets.
	SystemFipsAFXDP = "fips-go afxdp"
	// SystemFipsAFXDPXSK adds dataplane.afxdp_transmit: xsk: what the
	// AF_XDP workers forward leaves through the sockets' TX rings.
	SystemFipsAFXDPXSK = "fips-go afxdp xsk"
	// SystemUpstream is upstream FIPS (BENCH_UPSTREAM) with the settings
	// of SystemFips's row: UDP, TUN, .fips DNS.
	SystemUpstream = "upstream fips"
	// SystemFipsEthernet is fips-go over Ethernet transports only
	// (AF_PACKET sockets on the veths, static peers by MAC) in
	// dataplane.mode userspace: the pair and the transit line.
	SystemFipsEthernet = "fips-go ethernet"
	// SystemFipsEthernetAFXDP is SystemFipsEthernet with dataplane.mode
	// xdp and dataplane.afxdp: established Ethernet frames meant to reach
	// the workers through AF_XDP sockets.
	SystemFipsEthernetAFXDP = "fips-go ethernet afxdp"
)

// Metric describes one figure of a path.
type Metric struct {
	Key   string // JSON key
	Label string // table row
	Unit  string
	// LowerBetter marks costs (CPU, latency, loss, retransmits).
	LowerBetter bool
}

// Metrics are every figure the bench reports, in table order. A path
// that has no value for one (the kernel has no daemon CPU, a pair has no
// relay) leaves it out.
var metrics = []Metric{
	{"tcp1_mbps", "TCP, 1 stream", "Mbit/s", false},
	{"tcp4_mbps", "TCP, 4 streams", "Mbit/s", false},
	{"udp_offered_mbps", "UDP at 1 Gbit/s offered: sent by iperf3", "Mbit/s", false},
	{"udp_delivered_mbps", "UDP at 1 Gbit/s offered: delivered", "Mbit/s", false},
	{"udp_loss_pct", "UDP at 1 Gbit/s offered: loss", "%", true},
	{"ping_idle_p50_ms", "ping idle p50", "ms", true},
	{"ping_idle_p99_ms", "ping idle p99", "ms", true},
	{"ping_idle_max_ms", "ping idle max", "ms", true},
	{"ping_load_p50_ms", "ping under TCP load p50", "ms", true},
	{"ping_load_p99_ms", "ping under TCP load p99", "ms", true},
	{"ping_load_max_ms", "ping under TCP load max", "ms", true},
	{"tcp1_cpu_src_s_per_gb", "CPU s/GB, sender's daemon (TCP 1 stream)", "s/GB", true},
	{"tcp1_cpu_relay_s_per_gb", "CPU s/GB, each relay's daemons (TCP 1 stream)", "s/GB", true},
	{"tcp1_cpu_dst_s_per_gb", "CPU s/GB, receiver's daemon (TCP 1 stream)", "s/GB", true},
	{"tcp1_cpu_machine_s_per_gb", "CPU s/GB, whole machine (TCP 1 stream)", "s/GB", true},
	{"tcp4_cpu_relay_s_per_gb", "CPU s/GB, each relay's daemons (TCP 4 streams)", "s/GB", true},
	{"tcp1_retransmits", "TCP retransmits, 1 stream", "segments", true},
	{"tcp4_retransmits", "TCP retransmits, 4 streams", "segments", true},
}

// Metrics returns the metric table (a copy).
func Metrics() []Metric { return slices.Clone(metrics) }

// Stat summarises the repetitions of one figure.
type Stat struct {
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

// Summarize returns the median, min and max of xs (NaNs dropped); ok is
// false when nothing is left.
func Summarize(xs []float64) (Stat, bool) {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Stat{}, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[len(s)-1], Samples: v}, true
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of xs.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// PathResult is every figure of one system on one topology.
type PathResult struct {
	// Underlay is "wire" for UnderlayWire; empty for the default
	// underlay, so those results keep the shape of the runs before
	// underlays existed.
	Underlay Underlay        `json:"underlay,omitempty"`
	Topology string          `json:"topology"`
	Nodes    int             `json:"nodes"`
	System   string          `json:"system"`
	Metrics  map[string]Stat `json:"metrics"`
	// Notes are what the run saw that a figure alone does not say
	// (a repetition that failed, a path with few ping samples).
	Notes []string `json:"notes,omitempty"`
}

// Run is one `make bench` run.
type Run struct {
	Date        string `json:"date"` // RFC 3339, UTC
	Commit      string `json:"commit"`
	Command     string `json:"command"`
	Quick       bool   `json:"quick"`
	Repetitions int    `json:"repetitions"`
	Seconds     int    `json:"seconds"` // per iperf3 run
	Machine     string `json:"machine"`
	Kernel      string `json:"kernel"`
	Go          string `json:"go"`
	WireGuard   string `json:"wireguard_go"`
	Iperf3      string `json:"iperf3"`
	// Upstream is the folder of upstream's binaries when the run measured
	// SystemUpstream (BENCH_UPSTREAM).
	Upstream string `json:"upstream,omitempty"`
	// Underlays are the underlays the run measured, in order (absent
	// from runs before underlays existed: default only).
	Underlays []Underlay   `json:"underlays,omitempty"`
	Paths     []PathResult `json:"paths"`
}

// History is the JSON file beside docs/performance.md: the newest run
// first, at most MaxHistory runs.
type History struct {
	Runs []Run `json:"runs"`
}

// MaxHistory bounds the runs kept in the JSON file.
const MaxHistory = 20

// UnderlayOf is the underlay p ran on.
func (p *PathResult) UnderlayOf() Underlay {
	if p.Underlay == "" {
		return UnderlayDefault
	}
	return p.Underlay
}

// Path returns r's result for system on topology on the default
// underlay, or nil.
func (r *Run) Path(topology, system string) *PathResult {
	return r.PathOn(UnderlayDefault, topology, system)
}

// PathOn returns r's result for system on topology on underlay u, or nil.
func (r *Run) PathOn(u Underlay, topology, system string) *PathResult {
	for i := range r.Paths {
		if r.Paths[i].UnderlayOf() == u && r.Paths[i].Topology == topology && r.Paths[i].System == system {
			return &r.Paths[i]
		}
	}
	return nil
}

// underlays returns r's underlays in the order they ran.
func (r *Run) underlays() []Underlay {
	var out []Underlay
	for i := range r.Paths {
		if u := r.Paths[i].UnderlayOf(); !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// topologies returns r's topologies on u in the order they ran.
func (r *Run) topologies(u Underlay) []string {
	var out []string
	for i, p := range r.Paths {
		if r.Paths[i].UnderlayOf() == u && !slices.Contains(out, p.Topology) {
			out = append(out, p.Topology)
		}
	}
	return out
}

// systems returns r's systems on topology and u in table order.
func (r *Run) systems(u Underlay, topology string) []string {
	var out []string
	for i, p := range r.Paths {
		if r.Paths[i].UnderlayOf() == u && p.Topology == topology && !slices.Contains(out, p.System) {
			out = append(out, p.System)
		}
	}
	order := func(s string) int {
		switch {
		case s == SystemKernel:
			return 0
		case s == SystemWireGuard:
			return 1
		default:
			return 2
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return order(a) - order(b) })
	return out
}

// Ratio is fips/wireguard-go for key on topology on the default
// underlay, and whether both exist.
func (r *Run) Ratio(topology, system, key string) (float64, bool) {
	return r.RatioOn(UnderlayDefault, topology, system, key)
}

// RatioOn is Ratio on underlay u.
func (r *Run) RatioOn(u Underlay, topology, system, key string) (float64, bool) {
	f, w := r.PathOn(u, topology, system), r.PathOn(u, topology, SystemWireGuard)
	if f == nil || w == nil {
		return 0, false
	}
	a, ok1 := f.Metrics[key]
	b, ok2 := w.Metrics[key]
	if !ok1 || !ok2 || b.Median == 0 {
		return 0, false
	}
	return a.Median / b.Median, true
}

func fmtNum(x float64) string {
	ax := math.Abs(x)
	switch {
	case x == math.Trunc(x) && ax < 1e15:
		return commas(fmt.Sprintf("%.0f", x))
	case ax >= 100:
		return commas(fmt.Sprintf("%.0f", x))
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	case ax >= 1:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}

func commas(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtStat(s Stat) string {
	if len(s.Samples) <= 1 || s.Min == s.Max {
		return fmtNum(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", fmtNum(s.Median), fmtNum(s.Min), fmtNum(s.Max))
}

// Markdown renders run as the section `make bench` writes into
// docs/performance.md, with a history table of earlier runs when given.
func Markdown(run Run, earlier []Run) string {
	var b strings.Builder
	kind := "full"
	if run.Quick {
		kind = "quick (BENCH_QUICK=1)"
	}
	fmt.Fprintf(&b, "## Mesh benchmark: `make bench` (%s run, %s)\n\n", kind, run.Date)
	fmt.Fprintf(&b, "- Command: `%s`\n", run.Command)
	fmt.Fprintf(&b, "- Commit: `%s`; machine: %s; kernel %s; %s; wireguard-go %s; %s\n",
		run.Commit, run.Machine, run.Kernel, run.Go, run.WireGuard, run.Iperf3)
	if run.Upstream != "" {
		fmt.Fprintf(&b, "- %s: upstream's fips and fipsctl from `%s` (BENCH_UPSTREAM), with the settings of the fips-go column\n", SystemUpstream, run.Upstream)
	}
	fmt.Fprintf(&b, "- Each figure: median [min–max] of %d repetition(s); iperf3 runs of %d s; "+
		"\"fips/wg\" is fips-go's median over wireguard-go's from this same run (for costs — CPU, latency, loss — lower is better).\n",
		run.Repetitions, run.Seconds)
	us := run.underlays()
	if slices.Contains(us, UnderlayWire) {
		b.WriteString("- Underlays: **default** (the veths as created: a GSO super-packet of up to 64 KB crosses a veth whole) " +
			"and **wire-like** (on every veth end the segmentation and receive-coalescing offloads are off, so no frame above " +
			"the MTU crosses; [how](#the-wire-like-underlay)); the tables of the wire-like one follow those of the default.\n")
	}
	b.WriteString("\n")
	for _, u := range us {
		for _, topo := range run.topologies(u) {
			writeTopology(&b, run, u, topo)
		}
	}
	if len(earlier) > 0 {
		b.WriteString("### Earlier runs (fips-go / wireguard-go, same-run ratios of medians)\n\n")
		b.WriteString("| Date | Commit | Kind | System | direct TCP 1 | transit TCP 1 | transit TCP 4 | line TCP 1 | transit relay CPU s/GB | transit ping p99 under load | wire transit TCP 1 |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range append([]Run{run}, earlier...) {
			k := "full"
			if r.Quick {
				k = "quick"
			}
			for _, s := range fipsSystemsOf(r) {
				ratioOn := func(u Underlay, topo, key string) string {
					if x, ok := r.RatioOn(u, topo, s, key); ok {
						return fmt.Sprintf("%.2f×", x)
					}
					return "—"
				}
				ratio := func(topo, key string) string { return ratioOn(UnderlayDefault, topo, key) }
				fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Date, r.Commit, k, s,
					ratio(TopoDirect, "tcp1_mbps"), ratio(TopoTransit, "tcp1_mbps"), ratio(TopoTransit, "tcp4_mbps"),
					ratio(TopoLine, "tcp1_mbps"), ratio(TopoTransit, "tcp1_cpu_relay_s_per_gb"), ratio(TopoTransit, "ping_load_p99_ms"),
					ratioOn(UnderlayWire, TopoTransit, "tcp1_mbps"))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeTopology writes the table of topo on underlay u.
func writeTopology(b *strings.Builder, run Run, u Underlay, topo string) {
	systems := run.systems(u, topo)
	nodes := 0
	if p := run.PathOn(u, topo, systems[0]); p != nil {
		nodes = p.Nodes
	}
	title := fmt.Sprintf("%s (%d nodes)", topo, nodes)
	if u != UnderlayDefault {
		title += ", wire-like underlay"
	}
	fmt.Fprintf(b, "### %s\n\n", title)
	b.WriteString("| Figure | unit |")
	var fipsSystems []string
	for _, s := range systems {
		fmt.Fprintf(b, " %s |", s)
		if s != SystemKernel && s != SystemWireGuard {
			fipsSystems = append(fipsSystems, s)
		}
	}
	for _, s := range fipsSystems {
		fmt.Fprintf(b, " %s / wg |", s)
	}
	b.WriteString("\n|---|---|")
	b.WriteString(strings.Repeat("---|", len(systems)+len(fipsSystems)))
	b.WriteString("\n")
	for _, m := range metrics {
		row := fmt.Sprintf("| %s | %s |", m.Label, m.Unit)
		any := false
		for _, s := range systems {
			st, ok := run.PathOn(u, topo, s).Metrics[m.Key]
			if ok {
				row += " " + fmtStat(st) + " |"
				any = true
			} else {
				row += " — |"
			}
		}
		for _, s := range fipsSystems {
			if x, ok := run.RatioOn(u, topo, s, m.Key); ok {
				row += fmt.Sprintf(" %.2f× |", x)
			} else {
				row += " — |"
			}
		}
		if any {
			b.WriteString(row + "\n")
		}
	}
	var notes []string
	for _, s := range systems {
		for _, n := range run.PathOn(u, topo, s).Notes {
			notes = append(notes, s+": "+n)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes: " + strings.Join(notes, "; ") + ".\n")
	}
	b.WriteString("\n")
}

func fipsSystemsOf(r Run) []string {
	var out []string
	for _, p := range r.Paths {
		if p.System != SystemKernel && p.System != SystemWireGuard && !slices.Contains(out, p.System) {
			out = append(out, p.System)
		}
	}
	return out
}

// Topology names.
const (
	TopoDirect  = "direct"
	TopoTransit = "transit"
	TopoLine    = "line"
)

// Markers delimit the part of docs/performance.md that `make bench` owns.
const (
	BeginMarker = "<!-- make bench: begin (generated; edit testing/bench, not this) -->"
	EndMarker   = "<!-- make bench: end -->"
)

// ErrMarkers is returned when a document has a begin marker without an
// end marker after it (or the reverse): rewriting it could lose text.
var ErrMarkers = errors.New("bench: unbalanced make-bench markers")

// ReplaceSection puts section between the markers of doc, or appends
// the markers and section when doc has none.
func ReplaceSection(doc, section string) (string, error) {
	block := BeginMarker + "\n" + section + EndMarker + "\n"
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	switch {
	case i < 0 && j < 0:
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		return doc + "\n" + block, nil
	case i < 0 || j < i || strings.Count(doc, BeginMarker) != 1 || strings.Count(doc, EndMarker) != 1:
		return "", ErrMarkers
	}
	return doc[:i] + block + strings.TrimPrefix(doc[j+len(EndMarker):], "\n"), nil
}

// ReadHistory reads the JSON history at path; a missing file is empty.
func ReadHistory(path string) (History, error) {
	var h History
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("bench: %w", err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("bench: %s: %w", path, err)
	}
	return h, nil
}

// Publish writes run into the history JSON (newest first, bounded) and
// its Markdown between the markers of the document at docPath. The
// history table shows the earlier runs kept in the JSON.
func Publish(run Run, docPath, historyPath string) error {
	h, err := ReadHistory(historyPath)
	if err != nil {
		return err
	}
	earlier := h.Runs
	if len(earlier) > MaxHistory-1 {
		earlier = earlier[:MaxHistory-1]
	}
	doc, err := os.ReadFile(docPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("bench: %w", err)
	}
	out, err := ReplaceSection(string(doc), Markdown(run, earlier))
	if err != nil {
		return fmt.Errorf("%w in %s", err, docPath)
	}
	h.Runs = append([]Run{run}, earlier...)
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(historyPath, js.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(docPath, []byte(out), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

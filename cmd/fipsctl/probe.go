package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/fips-go/fips/control/ctl"
)

var probeStages = []string{"bloom", "discovery", "path", "session", "rtt"}

// exitError is a failure whose one-line reason is printed as is; the
// probe uses it for a probe that ran but did not come back "ok".
type exitError struct{ msg string }

func (e exitError) Error() string { return e.msg }

func runProbe(e *env, args []string) error {
	fs := newFlags(e, "probe", "TARGET [--json] [--timeout SECS]\n\nTARGET is an npub or a name from "+e.hostsFile)
	asJSON := fs.Bool("json", false, "print the final report as one JSON document")
	timeout := fs.Uint("timeout", 0, "client ceiling in seconds (default: the daemon's budget + 5 s)")
	// Flags may follow the target.
	pos, err := fs.parseInterleaved(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{msg: "the following required arguments were not provided:\n  <TARGET>", usage: "probe <TARGET> [--json] [--timeout SECS]"}
	}
	npub, err := resolvePeer(e.hostsFile, pos[0])
	if err != nil {
		return err
	}
	call := func(cmd string, params any) (json.RawMessage, error) {
		return ctl.Call(context.Background(), e.socket, cmd, params)
	}
	raw, err := call("probe_start", map[string]string{"npub": npub})
	if err != nil {
		return err
	}
	var started struct {
		ProbeID  uint64 `json:"probe_id"`
		BudgetMs uint64 `json:"budget_ms"`
	}
	if err := json.Unmarshal(raw, &started); err != nil {
		return fmt.Errorf("invalid response JSON: %v", err)
	}
	if started.BudgetMs == 0 {
		started.BudgetMs = 30_000
	}
	ceiling := saturate(started.BudgetMs, time.Millisecond) + 5*time.Second
	if ceiling < 0 {
		ceiling = math.MaxInt64
	}
	if *timeout > 0 {
		ceiling = saturate(uint64(*timeout), time.Second)
	}
	var out *probeView
	if !*asJSON {
		out = &probeView{w: e.stdout, tty: isTerminal(e.stdout)}
	}
	id := map[string]uint64{"probe_id": started.ProbeID}
	begin := time.Now()
	for {
		time.Sleep(e.pollInterval)
		raw, err := call("probe_poll", id)
		if err != nil {
			return err
		}
		var poll struct {
			State  string          `json:"state"`
			Report json.RawMessage `json:"report"`
		}
		if err := json.Unmarshal(raw, &poll); err != nil {
			return fmt.Errorf("invalid response JSON: %v", err)
		}
		var rep probeReport
		if err := json.Unmarshal(poll.Report, &rep); err != nil {
			return fmt.Errorf("invalid response JSON: %v", err)
		}
		if poll.State == "done" {
			if out == nil {
				pretty, err := ctl.Pretty(poll.Report)
				if err != nil {
					return fmt.Errorf("invalid response JSON: %v", err)
				}
				fmt.Fprintf(e.stdout, "%s\n", pretty)
			} else {
				out.finish(&rep)
			}
			if rep.Overall != "ok" {
				return exitError{fmt.Sprintf("probe %s: %s", rep.Overall, rep.why())}
			}
			return nil
		}
		if out != nil {
			out.update(&rep)
		}
		if time.Since(begin) >= ceiling {
			// Best effort: the daemon's own deadline cleans up regardless.
			_, _ = call("probe_cancel", id)
			return fmt.Errorf("probe did not complete within %d ms", ceiling.Milliseconds())
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type probeStage struct {
	Verdict   string  `json:"verdict"`
	Reason    *string `json:"reason"`
	Detail    *string `json:"detail"`
	ElapsedMs *uint64 `json:"elapsed_ms"`

	Fanout   *int    `json:"fanout"`
	Source   *string `json:"source"`
	Attempts *int    `json:"attempts"`

	CoordsKnown  bool     `json:"coords_known"`
	OurCoords    []string `json:"our_coords"`
	TheirCoords  []string `json:"their_coords"`
	LCA          *string  `json:"lca"`
	TreeHopsUp   *int     `json:"tree_hops_up"`
	TreeHopsDown *int     `json:"tree_hops_down"`
	TreeDistance *int     `json:"tree_distance"`
	NextHop      *struct {
		NodeAddr    string `json:"node_addr"`
		DisplayName string `json:"display_name"`
		Class       string `json:"class"`
	} `json:"next_hop"`
	NoHopReason *string `json:"no_hop_reason"`

	Preexisting bool    `json:"preexisting"`
	Established bool    `json:"established"`
	PathMTU     *uint64 `json:"path_mtu"`

	RTTMs       *uint64  `json:"rtt_ms"`
	SRTTMs      *float64 `json:"srtt_ms"`
	ReportsSeen uint64   `json:"reports_seen"`
}

type probeReport struct {
	Target struct {
		Npub        string `json:"npub"`
		NodeAddr    string `json:"node_addr"`
		DisplayName string `json:"display_name"`
		IPv6Addr    string `json:"ipv6_addr"`
	} `json:"target"`
	Overall   string     `json:"overall"`
	ElapsedMs uint64     `json:"elapsed_ms"`
	TickMs    uint64     `json:"tick_ms"`
	Bloom     probeStage `json:"bloom"`
	Discovery probeStage `json:"discovery"`
	Path      probeStage `json:"path"`
	Session   probeStage `json:"session"`
	RTT       probeStage `json:"rtt"`
	Cleanup   struct {
		TornDown         bool    `json:"session_created_and_torn_down"`
		LeftIntactReason *string `json:"left_intact_reason"`
	} `json:"cleanup"`
}

func (r *probeReport) stage(name string) *probeStage {
	switch name {
	case "bloom":
		return &r.Bloom
	case "discovery":
		return &r.Discovery
	case "path":
		return &r.Path
	case "session":
		return &r.Session
	}
	return &r.RTT
}

// why names the first stage that failed, else the rtt stage's reason.
func (r *probeReport) why() string {
	for _, name := range probeStages {
		s := r.stage(name)
		if s.Verdict == "failed" {
			return name + " failed: " + str(s.Reason)
		}
	}
	if r.Overall == "cancelled" {
		return "cancelled"
	}
	return "rtt " + r.RTT.Verdict + ": " + str(r.RTT.Reason)
}

func str(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

func settled(v string) bool { return v == "ok" || v == "failed" || v == "skipped" }

// stageText is one stage's line after its name.
func stageText(name string, s *probeStage) string {
	if !settled(s.Verdict) {
		switch {
		case s.Verdict != "running":
			return s.Verdict
		case name == "discovery" && s.Attempts != nil:
			return fmt.Sprintf("running  (lookup attempt %d)", *s.Attempts)
		}
		return "running"
	}
	var b strings.Builder
	b.WriteString(s.Verdict)
	if s.ElapsedMs != nil {
		fmt.Fprintf(&b, "  %5d ms", *s.ElapsedMs)
	}
	b.WriteString("  ")
	reason := str(s.Reason)
	switch {
	case s.Reason != nil:
		b.WriteString(strings.ReplaceAll(reason, "_", " "))
	case name == "bloom" && s.Fanout != nil:
		fmt.Fprintf(&b, "claimed by a peer filter, request sent to %d peer(s)", *s.Fanout)
	case name == "bloom":
		b.WriteString("claimed by a peer filter")
	case name == "discovery":
		fmt.Fprintf(&b, "coordinates from %s", str(s.Source))
		if s.Attempts != nil {
			fmt.Fprintf(&b, " (attempt %d)", *s.Attempts)
		}
	case name == "path" && s.NextHop != nil:
		fmt.Fprintf(&b, "next hop %s (%s) class %s", short(s.NextHop.NodeAddr), s.NextHop.DisplayName, s.NextHop.Class)
	case name == "session":
		b.WriteString("established")
		if s.PathMTU != nil {
			fmt.Fprintf(&b, ", path mtu %d", *s.PathMTU)
		}
	case name == "rtt" && s.RTTMs != nil:
		fmt.Fprintf(&b, "%d ms round trip", *s.RTTMs)
		if s.SRTTMs != nil {
			fmt.Fprintf(&b, " (srtt %.1f ms)", *s.SRTTMs)
		}
	}
	if s.Detail != nil {
		fmt.Fprintf(&b, " — %s", *s.Detail)
	}
	return b.String()
}

func short(addr string) string {
	if len(addr) > 8 {
		return addr[:8]
	}
	return addr
}

// probeView renders progress: on a terminal the five-stage block is
// redrawn in place; otherwise each stage is printed once, when it settles.
type probeView struct {
	w       io.Writer
	tty     bool
	header  bool
	drawn   int // lines of the live block on screen
	emitted int // stages printed (piped)
	frame   int
}

var spinner = []string{"|", "/", "-", "\\"}

func (v *probeView) printHeader(r *probeReport) {
	if v.header {
		return
	}
	v.header = true
	fmt.Fprintf(v.w, "probe %s (%s)\n", r.Target.DisplayName, r.Target.Npub)
	fmt.Fprintf(v.w, "  node_addr  %s\n  ipv6       %s\n\n", r.Target.NodeAddr, r.Target.IPv6Addr)
}

func (v *probeView) lines(r *probeReport) []string {
	out := make([]string, 0, len(probeStages))
	for _, name := range probeStages {
		s := r.stage(name)
		mark := " "
		if s.Verdict == "running" {
			mark = spinner[v.frame%len(spinner)]
		}
		out = append(out, fmt.Sprintf("%s %-9s  %s", mark, name, stageText(name, s)))
	}
	return out
}

func (v *probeView) update(r *probeReport) {
	v.printHeader(r)
	if !v.tty {
		v.emit(r)
		return
	}
	v.frame++
	if v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA", v.drawn)
	}
	lines := v.lines(r)
	for _, l := range lines {
		fmt.Fprintf(v.w, "\x1b[2K%s\n", l)
	}
	v.drawn = len(lines)
}

// emit prints the stages that settled since the last call, in order.
func (v *probeView) emit(r *probeReport) {
	for v.emitted < len(probeStages) {
		name := probeStages[v.emitted]
		s := r.stage(name)
		if !settled(s.Verdict) {
			return
		}
		fmt.Fprintf(v.w, "  %-9s  %s\n", name, stageText(name, s))
		v.emitted++
	}
}

func (v *probeView) finish(r *probeReport) {
	if v.tty {
		v.update(r)
	} else {
		v.printHeader(r)
		v.emit(r)
	}
	p := &r.Path
	fmt.Fprintln(v.w)
	fmt.Fprintln(v.w, "path (computed locally: the route this node would select, not a traceroute)")
	if p.CoordsKnown {
		fmt.Fprintf(v.w, "  ours       %s\n", strings.Join(p.OurCoords, " > "))
		fmt.Fprintf(v.w, "  theirs     %s\n", strings.Join(p.TheirCoords, " > "))
		if p.LCA != nil && p.TreeHopsUp != nil && p.TreeHopsDown != nil && p.TreeDistance != nil {
			fmt.Fprintf(v.w, "  path:      %d up to %s, %d down (tree distance %d)\n",
				*p.TreeHopsUp, short(*p.LCA), *p.TreeHopsDown, *p.TreeDistance)
		} else {
			fmt.Fprintln(v.w, "  path:      none (different spanning-tree roots)")
		}
	} else {
		fmt.Fprintln(v.w, "  coords     none known for this target")
	}
	if p.NextHop != nil {
		fmt.Fprintf(v.w, "  next hop   %s (%s)  class %s\n", short(p.NextHop.NodeAddr), p.NextHop.DisplayName, p.NextHop.Class)
	} else {
		fmt.Fprintf(v.w, "  next hop   none (%s)\n", str(p.NoHopReason))
	}
	fmt.Fprintln(v.w)
	switch {
	case r.Cleanup.TornDown:
		fmt.Fprintln(v.w, "cleanup   session was opened by this probe and has been torn down")
	case r.Cleanup.LeftIntactReason != nil:
		fmt.Fprintf(v.w, "cleanup   session left in place (%s)\n", *r.Cleanup.LeftIntactReason)
	default:
		fmt.Fprintln(v.w, "cleanup   nothing to clean up")
	}
	fmt.Fprintf(v.w, "overall   %s  (%d ms; stage timings are quantized to the %d ms tick)\n", r.Overall, r.ElapsedMs, r.TickMs)
}

// saturate is n units as a duration, the longest duration when that does
// not fit (a ceiling too far away to reach, never a negative one).
func saturate(n uint64, unit time.Duration) time.Duration {
	if n > uint64(math.MaxInt64/unit) {
		return math.MaxInt64
	}
	return time.Duration(n) * unit
}

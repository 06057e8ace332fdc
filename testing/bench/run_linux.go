//go:build linux

package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fips-go/fips/testing/daemons"
	"github.com/fips-go/fips/testing/netns"
)

// Tools are the programs a run needs, with the Debian package of each.
var Tools = map[string]string{"ip": "iproute2", "iperf3": "iperf3", "ping": "iputils-ping", "ss": "iproute2", "dig": "dnsutils", "nft": "nftables"}

// Execute builds the binaries, then every topology for every system,
// route-checks each path and measures it; everything it made is gone
// when r's cleanups run (r.Run does that, also on interrupt).
func Execute(ctx context.Context, r *netns.Runner, cfg Config) (Run, error) {
	cfg.defaults()
	run := Run{Date: time.Now().UTC().Format(time.RFC3339), Command: cfg.Command, Quick: cfg.Quick,
		Repetitions: cfg.Repetitions, Seconds: cfg.Seconds, Go: runtime.Version(), Underlays: cfg.Underlays}
	if os.Geteuid() != 0 {
		return run, fmt.Errorf("bench: network namespaces need root (sudo make bench)")
	}
	tools := maps.Clone(Tools)
	if slices.Contains(cfg.Underlays, UnderlayWire) {
		tools["ethtool"] = "ethtool"
	}
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return run, fmt.Errorf("bench: %s not found (apt-get install %s)", tool, pkg)
		}
	}
	run.Machine, run.Kernel, run.Iperf3 = machine(), kernel(), iperf3Version()
	run.Commit = gitDescribe()

	dir, err := os.MkdirTemp("", "fips-bench-")
	if err != nil {
		return run, fmt.Errorf("bench: %w", err)
	}
	r.Cleanup(func() { os.RemoveAll(dir) })
	cfg.Log("building fips, fipsctl and wireguard-go")
	bins, err := daemons.Build(dir)
	if err != nil {
		return run, err
	}
	wg, wgVersion, err := BuildWireGuardGo(dir)
	if err != nil {
		return run, err
	}
	run.WireGuard = wgVersion
	opts := BuildOptions{Fips: bins, WireGuardGo: wg}
	if cfg.Upstream != "" {
		up := daemons.Binaries{Fips: filepath.Join(cfg.Upstream, "fips"), Fipsctl: filepath.Join(cfg.Upstream, "fipsctl")}
		for _, f := range []string{up.Fips, up.Fipsctl} {
			if st, err := os.Stat(f); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				return run, fmt.Errorf("bench: BENCH_UPSTREAM=%s: no executable %s", cfg.Upstream, f)
			}
		}
		opts.Upstream, run.Upstream = up, cfg.Upstream
	}

	// Each topology on every underlay in turn, so the two runs of a
	// topology are close in time; the report groups them by underlay.
	for _, topo := range cfg.Topologies {
		for _, u := range cfg.Underlays {
			r.Check(ctx)
			opts.Underlay = u
			results, err := measureTopology(ctx, r, cfg, topo, opts)
			if err != nil {
				return run, err
			}
			run.Paths = append(run.Paths, results...)
		}
	}
	slices.SortStableFunc(run.Paths, func(a, b PathResult) int {
		return slices.Index(cfg.Underlays, a.UnderlayOf()) - slices.Index(cfg.Underlays, b.UnderlayOf())
	})
	return run, nil
}

// builder is one system the bench measures.
type builder struct {
	system string
	build  func(netns.TB, Topology, BuildOptions) *Path
	// topologies are the ones the system runs on (nil: all).
	topologies []string
	// full leaves the system out of a quick run.
	full bool
	// upstream marks SystemUpstream: measured only when the run has
	// upstream's binaries (Config.Upstream).
	upstream bool
	// quickWire puts the system on the wire underlay in a quick run too
	// (a quick run measures the wire underlay on these alone).
	quickWire bool
	// optional systems may fail to build: the run goes on and the row
	// says why in its notes (tryBuild) instead of stopping.
	optional bool
}

// builders are the systems in the order they are built and measured.
// The Ethernet ones run on the pair and the transit line only; a quick
// run keeps the Ethernet socket path on transit and leaves AF_XDP over
// Ethernet out, to stay within its 3 minutes.
var builders = []builder{
	{system: SystemKernel, build: BuildKernel, quickWire: true},
	{system: SystemWireGuard, build: BuildWireGuard, quickWire: true},
	{system: SystemUpstream, build: BuildUpstream, upstream: true, optional: true},
	{system: SystemFips, build: BuildFips, quickWire: true},
	{system: SystemFipsXDP, build: BuildFipsXDP, quickWire: true},
	{system: SystemFipsAFXDP, build: BuildFipsAFXDP},
	{system: SystemFipsAFXDPXSK, build: BuildFipsAFXDPXSK, quickWire: true},
	{system: SystemFipsEthernet, build: BuildFipsEthernet, topologies: ethernetTopologies},
	{system: SystemFipsEthernetAFXDP, build: BuildFipsEthernetAFXDP, topologies: ethernetTopologies, full: true, optional: true},
}

// A quick run measures the wire underlay on the kernel, wireguard-go,
// fips-go in userspace, xdp and afxdp xsk only: the socket path against
// the kernel paths, within the quick run's 3–4 minutes.

// ethernetTopologies are where the Ethernet systems run: a pair and a
// line of three.
var ethernetTopologies = []string{TopoDirect, TopoTransit}

// runsOn reports whether b is measured on topo in a run of cfg's kind,
// on the default underlay.
func (b builder) runsOn(topo Topology, quick bool) bool {
	return b.runsOnUnderlay(UnderlayDefault, topo, quick)
}

// runsOnUnderlay reports whether b is measured on topo on underlay u in
// a run of cfg's kind: a full run measures every system on every
// underlay alike.
func (b builder) runsOnUnderlay(u Underlay, topo Topology, quick bool) bool {
	if quick && u == UnderlayWire && !b.quickWire {
		return false
	}
	return (b.topologies == nil || slices.Contains(b.topologies, topo.Name)) && !(quick && b.full)
}

// enabled reports whether b can be built with o: SystemUpstream only
// with upstream's binaries.
func (b builder) enabled(o BuildOptions) bool {
	return !b.upstream || o.Upstream.Fips != ""
}

// buildPath builds b on topo: a failure of an optional system is a
// path with Failed set, of any other a Fatalf of tb.
func (b builder) buildPath(tb netns.TB, topo Topology, o BuildOptions) *Path {
	if b.optional {
		return tryBuild(tb, b.system, b.build, topo, o)
	}
	return b.build(tb, topo, o)
}

func measureTopology(ctx context.Context, r *netns.Runner, cfg Config, topo Topology, opts BuildOptions) ([]PathResult, error) {
	u := underlayOf(opts)
	cfg.Log(fmt.Sprintf("== %s: %d nodes, %s underlay", topo.Name, topo.Nodes, u))
	var paths []*Path
	defer func() {
		for _, p := range paths {
			if p.Mesh != nil {
				p.Mesh.Close()
			}
		}
	}()
	for _, b := range builders {
		if !b.runsOnUnderlay(u, topo, cfg.Quick) || !b.enabled(opts) {
			continue
		}
		r.Check(ctx)
		start := time.Now()
		p := b.buildPath(r, topo, opts)
		paths = append(paths, p)
		if p.Failed != nil {
			cfg.Log(fmt.Sprintf("   %-22s not measured: %s", b.system, firstLine(p.Failed.Error())))
			continue
		}
		if err := p.CheckRoute(); err != nil {
			return nil, err
		}
		cfg.Log(fmt.Sprintf("   %-22s up in %4.1f s, route %s→%s via %v checked", b.system, time.Since(start).Seconds(), p.Src, p.Dst, p.Hops()))
		for _, n := range p.Notes {
			cfg.Log(fmt.Sprintf("   %-22s %s", b.system, n))
		}
	}
	samples := make([]map[string][]float64, len(paths))
	notes := make([][]string, len(paths))
	for i, p := range paths {
		samples[i] = map[string][]float64{}
		notes[i] = append(notes[i], p.Notes...)
		if p.Failed != nil {
			notes[i] = append(notes[i], "not measured: "+firstLine(p.Failed.Error()))
		}
	}
	record := func(i int, rep int, what string, vals map[string]float64, ns []string, err error) {
		if err != nil {
			notes[i] = append(notes[i], fmt.Sprintf("repetition %d, %s: %v", rep+1, what, firstLine(err.Error())))
			cfg.Log(fmt.Sprintf("   %-22s %s failed: %v", paths[i].System, what, err))
			return
		}
		notes[i] = append(notes[i], ns...)
		keys := make([]string, 0, len(vals))
		for k, v := range vals {
			samples[i][k] = append(samples[i][k], v)
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var line strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&line, " %s=%s", k, fmtNum(vals[k]))
		}
		cfg.Log(fmt.Sprintf("   %-22s %s:%s", paths[i].System, what, line.String()))
	}
	type step struct {
		what string
		run  func(p *Path, out map[string]float64) ([]string, error)
	}
	steps := []step{
		{"TCP 1 stream + ping", func(p *Path, out map[string]float64) ([]string, error) {
			return p.TCP(1, cfg.Seconds, true, out)
		}},
	}
	if !cfg.Quick {
		steps = append(steps, step{"TCP 4 streams", func(p *Path, out map[string]float64) ([]string, error) {
			return p.TCP(4, cfg.Seconds, false, out)
		}})
	}
	steps = append(steps,
		step{"UDP " + UDPRate, func(p *Path, out map[string]float64) ([]string, error) {
			return nil, p.UDP(UDPRate, UDPPayload, cfg.Seconds, out)
		}},
		step{"idle ping", func(p *Path, out map[string]float64) ([]string, error) {
			return p.IdlePing(200, out)
		}})
	for rep := range cfg.Repetitions {
		cfg.Log(fmt.Sprintf("   repetition %d of %d", rep+1, cfg.Repetitions))
		for _, s := range steps {
			for i, p := range paths {
				if p.Failed != nil {
					continue
				}
				r.Check(ctx)
				vals := map[string]float64{}
				ns, err := s.run(p, vals)
				record(i, rep, s.what, vals, ns, err)
			}
		}
	}
	var out []PathResult
	for i, p := range paths {
		res := PathResult{Topology: topo.Name, Nodes: topo.Nodes, System: p.System, Metrics: map[string]Stat{}, Notes: dedupe(notes[i])}
		if u != UnderlayDefault {
			res.Underlay = u
		}
		for k, xs := range samples[i] {
			if st, ok := Summarize(xs); ok {
				res.Metrics[k] = st
			}
		}
		out = append(out, res)
	}
	return out, nil
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%d × %s%s", runtime.NumCPU(), model, mem)
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func iperf3Version() string {
	out, err := exec.Command("iperf3", "--version").Output()
	if err != nil {
		return "iperf3 (unknown version)"
	}
	return firstLine(strings.TrimSpace(string(out)))
}

func gitDescribe() string {
	root, err := daemons.ModuleRoot()
	if err != nil {
		return "unknown"
	}
	cmd := exec.Command("git", "describe", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

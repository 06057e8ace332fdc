package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Record is one run as stored in docs/scale.json: the command and commit
// that made it, and what it measured.
type Record struct {
	Command string    `json:"command"`
	Commit  string    `json:"commit"`
	Date    time.Time `json:"date"`
	Seed    uint64    `json:"seed"`
	Result  *Result   `json:"result"`
}

func (r *Record) key() string {
	return fmt.Sprintf("%06d/%s/%s", r.Result.N, r.Result.Topology, r.Result.Routing)
}

// sizeClass is n to one significant digit: the grid's 961 nodes are
// reported with the 1,000-node runs.
func sizeClass(n int) int {
	p := 1
	for n >= 10*p {
		p *= 10
	}
	return (n + p/2) / p * p
}

// LoadRecords reads the stored runs (none when the file is absent).
func LoadRecords(path string) ([]*Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	var recs []*Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("sim: %s: %w", path, err)
	}
	return recs, nil
}

// MergeRecords replaces stored runs of the same size, topology and
// routing by the new ones, and sorts.
func MergeRecords(old, add []*Record) []*Record {
	byKey := map[string]*Record{}
	for _, r := range old {
		byKey[r.key()] = r
	}
	for _, r := range add {
		byKey[r.key()] = r
	}
	out := make([]*Record, 0, len(byKey))
	for _, r := range byKey {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Record) int { return strings.Compare(a.key(), b.key()) })
	return out
}

// SaveRecords writes the runs as a JSON array, one run per line.
func SaveRecords(path string, recs []*Record) error {
	b := []byte("[\n")
	for i, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		b = append(b, line...)
		if i < len(recs)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	b = append(b, "]\n"...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

var routingColor = map[string]color.Color{
	RoutingUpstream: color.RGBA{R: 200, G: 60, B: 40, A: 255},
	RoutingFipsGo:   color.RGBA{R: 30, G: 90, B: 200, A: 255},
	RoutingMixed:    color.RGBA{R: 90, G: 160, B: 60, A: 255},
}

// group is the runs of one size and topology, by routing.
type group struct {
	n    int
	topo string
	runs map[string]*Record
}

func groups(recs []*Record) []*group {
	var out []*group
	idx := map[string]*group{}
	for _, r := range recs {
		k := fmt.Sprintf("%06d/%s", sizeClass(r.Result.N), r.Result.Topology)
		g := idx[k]
		if g == nil {
			g = &group{n: sizeClass(r.Result.N), topo: r.Result.Topology, runs: map[string]*Record{}}
			idx[k] = g
			out = append(out, g)
		}
		g.runs[r.Result.Routing] = r
	}
	order := map[string]int{}
	for i, t := range Topologies {
		order[t] = i
	}
	slices.SortFunc(out, func(a, b *group) int {
		if a.n != b.n {
			return a.n - b.n
		}
		return order[a.topo] - order[b.topo]
	})
	return out
}

func routings(g *group) []string {
	var out []string
	for _, r := range []string{RoutingUpstream, RoutingFipsGo, RoutingMixed} {
		if g.runs[r] != nil {
			out = append(out, r)
		}
	}
	return out
}

// WritePlots draws, for each size and topology, the stretch CDF, the
// filter coverage and tree depth over time, and the control bytes over
// time, one line per routing, into dir; it returns the file names by
// group key.
func WritePlots(dir string, recs []*Record) (map[string][]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	files := map[string][]string{}
	for _, g := range groups(recs) {
		key := fmt.Sprintf("%s-%d", g.topo, g.n)
		for _, kind := range []string{"stretch", "coverage", "bytes"} {
			p := plot.New()
			p.Legend.Top = true
			switch kind {
			case "stretch":
				p.Title.Text = fmt.Sprintf("%s, %d nodes: next-hop stretch at the horizon", g.topo, g.n)
				p.X.Label.Text = "stretch (walk hops / shortest path)"
				p.Y.Label.Text = "fraction of sampled pairs ≤ x"
				p.Legend.Left = false
				p.Legend.Top = false
				p.Legend.XOffs = -10
				p.Legend.YOffs = 10
			case "coverage":
				p.Title.Text = fmt.Sprintf("%s, %d nodes: filter coverage", g.topo, g.n)
				p.X.Label.Text = "simulated seconds"
				p.Y.Label.Text = "covered fraction of sampled (node, peer, target)"
				p.Legend.Top = false
			case "bytes":
				p.Title.Text = fmt.Sprintf("%s, %d nodes: control traffic", g.topo, g.n)
				p.X.Label.Text = "simulated seconds"
				p.Y.Label.Text = "bytes sent per node per second"
				p.Y.Scale = plot.LogScale{}
				p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			}
			for _, rt := range routings(g) {
				res := g.runs[rt].Result
				var pts plotter.XYs
				switch kind {
				case "stretch":
					xs := slices.Clone(res.StretchSamples)
					slices.Sort(xs)
					for i, x := range xs {
						pts = append(pts, plotter.XY{X: x, Y: float64(i+1) / float64(len(xs))})
					}
				case "coverage":
					for _, s := range res.Series {
						pts = append(pts, plotter.XY{X: s.T.Seconds(), Y: s.Coverage})
					}
				case "bytes":
					for _, s := range res.Series {
						pts = append(pts, plotter.XY{X: s.T.Seconds(), Y: max(s.BytesPerNode, 1)})
					}
				}
				if len(pts) == 0 {
					continue
				}
				l, err := plotter.NewLine(pts)
				if err != nil {
					return nil, fmt.Errorf("sim: plot: %w", err)
				}
				l.Color = routingColor[rt]
				l.Width = vg.Points(1.5)
				if kind == "stretch" {
					l.StepStyle = plotter.PostStep
				}
				p.Add(l)
				p.Legend.Add(rt, l)
			}
			if kind == "stretch" {
				// The invariant's bound, from the fips-go run (or any).
				var bound *Result
				for _, rt := range []string{RoutingFipsGo, RoutingUpstream, RoutingMixed} {
					if g.runs[rt] != nil && len(g.runs[rt].Result.BoundSamples) > 0 {
						bound = g.runs[rt].Result
						break
					}
				}
				if bound != nil {
					xs := slices.Clone(bound.BoundSamples)
					slices.Sort(xs)
					var pts plotter.XYs
					for i, x := range xs {
						pts = append(pts, plotter.XY{X: x, Y: float64(i+1) / float64(len(xs))})
					}
					l, err := plotter.NewLine(pts)
					if err != nil {
						return nil, fmt.Errorf("sim: plot: %w", err)
					}
					l.Color = color.Gray{Y: 110}
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
					l.StepStyle = plotter.PostStep
					p.Add(l)
					p.Legend.Add("bound ("+bound.Routing+" tree)", l)
				}
			}
			if kind == "coverage" {
				p.Y.Min, p.Y.Max = 0, 1.02
				// Zoom on convergence when every run converged early.
				last := 0.0
				for _, rt := range routings(g) {
					r := g.runs[rt].Result
					if !r.BloomConverged {
						last = math.Inf(1)
						break
					}
					last = max(last, r.BloomTime.Seconds())
				}
				if !math.IsInf(last, 1) {
					p.X.Min, p.X.Max = 0, max(30, 2*last)
				}
			}
			p.Add(plotter.NewGrid())
			name := fmt.Sprintf("%s-%s.png", kind, key)
			if err := p.Save(6.5*vg.Inch, 3.6*vg.Inch, filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("sim: plot %s: %w", name, err)
			}
			files[key] = append(files[key], name)
		}
	}
	return files, nil
}

// WriteReport renders docs/scale.md from the stored runs; plotDir is the
// plots' directory relative to the report.
func WriteReport(path, plotDir string, recs []*Record, plots map[string][]string, intro string) error {
	var b strings.Builder
	b.WriteString(intro)
	var lastN int
	for _, g := range groups(recs) {
		if g.n != lastN {
			lastN = g.n
			fmt.Fprintf(&b, "\n## %d nodes\n", g.n)
			sizeTables(&b, recs, g.n)
		}
	}
	b.WriteString("\n## Plots\n\nPer size and topology: the stretch CDF of the sampled walks at the horizon, the filter coverage over time, and the control bytes per node per second over time; one line per routing choice.\n")
	for _, g := range groups(recs) {
		key := fmt.Sprintf("%s-%d", g.topo, g.n)
		fmt.Fprintf(&b, "\n### %s, %d nodes\n\n", g.topo, g.n)
		for _, f := range plots[key] {
			fmt.Fprintf(&b, "![%s](%s)\n", strings.TrimSuffix(f, ".png"), filepath.ToSlash(filepath.Join(plotDir, f)))
		}
	}
	b.WriteString("\n## Runs\n\n| size | topology | routing | command | commit | wall |\n|---|---|---|---|---|---|\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "| %d | %s | %s | `%s` | %s | %s |\n", r.Result.N, r.Result.Topology, r.Result.Routing, r.Command, r.Commit, r.Result.Wall.Round(time.Second))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

func wait(d time.Duration) string {
	if d < 0 {
		return "over 60"
	}
	return secs(d)
}

func sortedStrings(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

func sizeTables(b *strings.Builder, recs []*Record, n int) {
	var rows []*Result
	for _, g := range groups(recs) {
		if g.n != n {
			continue
		}
		for _, rt := range routings(g) {
			rows = append(rows, g.runs[rt].Result)
		}
	}
	b.WriteString("\n### Paths\n\n(The grid is the largest square not above the size: 31×31 = 961 nodes for 1,000, 100×100 for 10,000.)\n\nStretch = hops of the next-hop walk / BFS shortest path, over the sampled pairs that arrived. Walks are taken once every node's view of its peers' coordinates is current (the wait is in the last column). *Early*: as soon as the tree converged; *horizon*: at the horizon (120–180 s, see the run's command), after the tree's hold-down and periodic re-evaluation. *Bound*: the shortest path that strictly decreases tree distance at every hop, on the same tree — no rule keeping that invariant does better.\n\n")
	b.WriteString("| topology | routing | early mean | horizon mean | p50 | p90 | p99 | max | bound mean | mean hops | walks failed / loops / over TTL 64 | lookups found | lookup p50 / p90 | lookup failures | view wait early / horizon (s) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fails := []string{}
		for _, k := range sortedStrings(r.Lookup.Failures) {
			fails = append(fails, fmt.Sprintf("%s %d", k, r.Lookup.Failures[k]))
		}
		fmt.Fprintf(b, "| %s | %s | %.3f | **%.3f** | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f | %d / %d / %d of %d | %d / %d | %v / %v | %s | %s / %s |\n",
			r.Topology, r.Routing, r.Early.Mean, r.Settled.Mean, r.Settled.P50, r.Settled.P90, r.Settled.P99, r.Settled.Max, r.Bound.Mean,
			r.Settled.MeanHops, r.Settled.Failed, r.Settled.Loops, r.Settled.OverTTL, r.Settled.Walks, r.Lookup.Found, r.Lookup.Tried, r.Lookup.P50, r.Lookup.P90,
			strings.Join(fails, ", "), wait(r.EarlyWait), wait(r.SettledWait))
	}
	b.WriteString("\n### Convergence and cost\n\nTimes are simulated seconds from the start (all links dialled at once). Filters converged: every node's filter from every peer covers what is reachable through that peer (checked against 500 targets); a filter refused over the FPR cap covers nothing here, although with `full_filter_lookups: tree` (fips-go) lookups pass through it — past about 2,100 nodes every parent's filter is refused, so the filters never converge in this sense and the lookups column tells what still works. Bytes: everything the nodes sent per node per second (only control traffic flows): until the tree converged / from then until the filters converged (or the steady window) / in the steady window (the 30 s before the horizon). Memory: live heap per node, the harness included.\n\n")
	b.WriteString("| topology | routing | links | mean degree | tree converged | filters converged | coverage at horizon | filters refused (FPR cap) | depth max / mean | bytes/node/s converging / filters / steady | KB/node sent until filters converged | filters/node/s filter phase / steady | memory KB/node |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		bloom := "no"
		if r.BloomConverged {
			bloom = secs(r.BloomTime)
		}
		total := "–"
		if r.BloomConverged {
			total = fmt.Sprintf("%.1f", (r.BytesConverging*r.TreeTime.Seconds()+r.BytesBloomPhase*(r.BloomTime-r.TreeTime).Seconds())/1024)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %.2f | %s | %s | %.4f | %d | %d / %.2f | %.0f / %.0f / %.0f | %s | %.3f / %.4f | %.0f |\n",
			r.Topology, r.Routing, r.Links, r.MeanDegree, secs(r.TreeTime), bloom, r.BloomCoverage, r.FiltersRejected,
			r.DepthMax, r.DepthMean, r.BytesConverging, r.BytesBloomPhase, r.BytesSteady, total, r.FiltersBloomPhase, r.FiltersSteady, r.MemPerNode/1024)
	}
	b.WriteString("\n### Recovery\n\nRuns with `-churn=false` are left out. Churn: 5% of the nodes (never the root) crash at once; root failure: then the root crashes. Recovered: the survivors' tree converged and every link to a crashed node was declared dead (link dead timeout 30 s); the walks follow 30 s later, within the largest surviving component.\n\n")
	b.WriteString("| topology | routing | crashed | churn recovered in | walks failed / loops | stretch after | root failure recovered in | walks failed / loops | stretch after |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.Churn.Crashed == 0 {
			continue // run with -churn=false
		}
		rec := func(x Recovery) string {
			if !x.Converged {
				return "not in 5 min"
			}
			return secs(x.Time)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %d / %d | %.3f | %s | %d / %d | %.3f |\n", r.Topology, r.Routing, r.Churn.Crashed,
			rec(r.Churn), r.Churn.Walks.Failed, r.Churn.Walks.Loops, r.Churn.Walks.Mean,
			rec(r.RootFailure), r.RootFailure.Walks.Failed, r.RootFailure.Walks.Loops, r.RootFailure.Walks.Mean)
	}
}

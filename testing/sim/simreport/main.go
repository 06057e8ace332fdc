// Command simreport runs testing/sim experiments and writes the scale
// report: make sim N=1000 TOPO=all (docs/scale.md, docs/scale.json and
// the plots in docs/scale/). Runs of other sizes already in
// docs/scale.json are kept, so the report shows every size measured.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fips-go/fips/testing/sim"
)

func main() {
	var (
		sizes    = flag.String("n", "1000", "node counts, comma-separated")
		topos    = flag.String("topo", "all", "topologies, comma-separated, or all: "+strings.Join(sim.Topologies, ", "))
		routings = flag.String("routing", "upstream,fips-go,mixed", "routing choices, comma-separated")
		seed     = flag.Uint64("seed", 1, "seed for topologies, keys and samples")
		pairs    = flag.Int("pairs", 300, "sampled pairs walked for stretch")
		docs     = flag.String("docs", "docs", "directory of scale.md, scale.json and scale/")
		churn    = flag.Bool("churn", true, "run the churn and root-failure experiments")
		horizon  = flag.Duration("horizon", 180*time.Second, "simulated time of the settled measurements")
		render   = flag.Bool("render", false, "only re-render the report and plots from scale.json")
		merge    = flag.String("merge", "", "with -render: other scale.json files to merge in first, comma-separated")
		bounds   = flag.Bool("bounds", false, "run the bound study on the topologies alone (no nodes) and write docs/stretch-bound.md")
		searchN  = flag.Int("search-max-n", 300, "with -bounds: the largest size the tree search runs on")
		steps    = flag.Int("search-steps", 20000, "with -bounds: proposed re-parentings of the tree search")
	)
	flag.Parse()
	log.SetFlags(log.Ltime)
	ts := sim.Topologies
	if *topos != "all" {
		ts = strings.Split(*topos, ",")
	}
	command := os.Getenv("SIM_COMMAND")
	if command == "" {
		command = "go run ./testing/sim/simreport " + strings.Join(os.Args[1:], " ")
	}
	commit := gitCommit()
	if *bounds {
		if err := boundStudy(*sizes, ts, *seed, *pairs, *searchN, *steps, *docs, command, commit); err != nil {
			log.Fatal(err)
		}
		return
	}
	var recs []*sim.Record
	jsonPath := filepath.Join(*docs, "scale.json")
	if *render {
		var extra []*sim.Record
		for _, f := range strings.Split(*merge, ",") {
			if f == "" {
				continue
			}
			r, err := sim.LoadRecords(f)
			if err != nil {
				log.Fatal(err)
			}
			extra = append(extra, r...)
		}
		if err := save(jsonPath, *docs, extra); err != nil {
			log.Fatal(err)
		}
		return
	}
	for _, ns := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(ns))
		if err != nil {
			log.Fatalf("simreport: -n %q: %v", ns, err)
		}
		for _, t := range ts {
			topo, err := sim.Generate(strings.TrimSpace(t), n, *seed)
			if err != nil {
				log.Fatal(err)
			}
			for _, rt := range strings.Split(*routings, ",") {
				cfg := sim.Config{Topology: topo, Routing: strings.TrimSpace(rt), Seed: *seed, Pairs: *pairs, Horizon: *horizon,
					Progress: func(f string, a ...any) { log.Printf("  "+f, a...) }}
				if !*churn {
					cfg.Churn = -1
				}
				log.Printf("%s n=%d %s", topo.Name, topo.N, rt)
				res, err := sim.Run(cfg)
				if err != nil {
					log.Fatal(err)
				}
				log.Printf("  done in %v", res.Wall.Round(time.Second))
				recs = append(recs, &sim.Record{Command: command, Commit: commit, Date: time.Now().UTC(), Seed: *seed, Result: res})
				// Save as we go: a 10,000-node series takes long.
				if err := save(jsonPath, *docs, recs); err != nil {
					log.Fatal(err)
				}
			}
		}
	}
}

func save(jsonPath, docs string, recs []*sim.Record) error {
	old, err := sim.LoadRecords(jsonPath)
	if err != nil {
		return err
	}
	all := sim.MergeRecords(old, recs)
	if err := sim.SaveRecords(jsonPath, all); err != nil {
		return err
	}
	plots, err := sim.WritePlots(filepath.Join(docs, "scale"), all)
	if err != nil {
		return err
	}
	return sim.WriteReport(filepath.Join(docs, "scale.md"), "scale", all, plots, intro)
}

func boundStudy(sizes string, topos []string, seed uint64, pairs, searchN, steps int, docs, command, commit string) error {
	var studies []*sim.BoundStudy
	for _, ns := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(ns))
		if err != nil {
			return fmt.Errorf("simreport: -n %q: %w", ns, err)
		}
		for _, t := range topos {
			topo, err := sim.Generate(strings.TrimSpace(t), n, seed)
			if err != nil {
				return err
			}
			cfg := sim.StudyConfig{Pairs: pairs, Seed: seed}
			if topo.N <= searchN {
				cfg.SearchSteps = steps
			}
			start := time.Now()
			st, err := sim.StudyBound(topo, cfg)
			if err != nil {
				return err
			}
			msg := ""
			if st.Searched != nil {
				msg = fmt.Sprintf(", searched tree %.3f (from %.3f)", st.Searched.Bound, st.SearchStart.Bound)
			}
			log.Printf("%s n=%d: breadth-first bound %.3f over %d roots%s, %v", topo.Name, topo.N, st.RootMean, len(st.Roots)-1, msg, time.Since(start).Round(time.Second))
			studies = append(studies, st)
			if err := sim.WriteBoundReport(filepath.Join(docs, "stretch-bound.md"), boundIntro, command, commit, studies); err != nil {
				return err
			}
		}
	}
	return nil
}

const boundIntro = `# How short can paths be when every hop must get closer in the tree?

Written by ` + "`make sim-bound`" + ` (testing/sim/simreport ` + "`-bounds`" + `, the study in
testing/sim/bound.go). Issue 18 asks for next-hop paths within 1.2× of
the shortest (mean stretch ≤ 1.2) *and* for every hop to strictly decrease
tree distance to the destination, the invariant that keeps a mesh mixing
routing rules loop-free ([routing.md](routing.md)). This study asks what
that invariant allows on each topology, whatever the next-hop rule and
whatever spanning tree the nodes build. It needs no nodes: on the graph,
for a spanning tree, a pair's **bound** is the shortest path along which
every hop strictly decreases tree distance to the destination (a BFS
restricted to such hops). No rule keeping the invariant does better on
that tree — it may use any knowledge, global or not — and the bound
over the shortest path is its stretch. The **distance rule** column is
fips-go's default next hop (the neighbour least distant from the
destination in the tree) on the same tree, with perfect information.

The trees: breadth-first from the root (every node's parent one hop
nearer the root: the shallowest tree a root allows, which is what
upstream's parent selection, depth plus link cost, tends to), from random
roots (the root is the smallest address, a uniformly random node) and from
the highest-degree node (a root chosen for centrality, which the protocol
does not allow). On small graphs a local search looks for any spanning
tree with a lower bound.

Same topology generators and seed as ` + "`make sim`" + ` ([scale.md](scale.md)).
`

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+dirty"
	}
	return c
}

const intro = `# Scale: the in-process mesh at 1,000 and 10,000 nodes

Written by ` + "`make sim N=… TOPO=…`" + ` (testing/sim/simreport; the runs it
holds are listed at the end with their command and commit; the data is in
[scale.json](scale.json)). Every node is a complete fips-go Core — the real
link layer with Noise IK handshakes, the signed spanning tree, bloom
filters, the router and lookups — joined by simulated links on the
simulated clock of testing/mesh; nothing is mocked. What the routing
choices are and why a mesh mixing them stays loop-free:
[routing.md](routing.md).

Routing choices, side by side on the same topology, keys and samples:

- **upstream**: ` + "`node.routing.next_hop: upstream`, `node.routing.filter_schedule: tick`, `node.routing.full_filter_lookups: upstream`" + ` —
  upstream's find_next_hop order (bloom candidates by link cost, then
  greedy tree), filters sent on the 1 s tick only, and filters refused
  over the FPR cap counted for nothing.
- **fips-go**: the defaults, ` + "`distance`, `change`, `tree`" + ` — the peer closest to
  the destination in the tree, filters sent as soon as the debounce
  allows, and lookups through tree peers whose filter is full (over the
  cap, as in a mesh larger than about 2,100 nodes).
- **mixed**: a random half of the nodes on each (loop freedom across
  rules).

Topologies (testing/sim/topo.go): **random** — a random spanning tree plus
random links, mean degree 5, 2–20 ms (the in-process mesh tests' graph);
**geometric** — random geometric, points in the unit square linked within
the radius for mean degree 6, latency by distance; **scalefree** —
preferential attachment, 3 links per new node; **grid** — a square
lattice, 5 ms; **internet** — two tiers, a core of 5% of the nodes (mean
degree 10, 10–40 ms) with stubs homed on one or two core nodes, 30% of them
also linked to another stub.

Phases of a run: all links dial at time 0; *tree converged* when every
node has the smallest address as root and coordinates consistent with its
parent's; the run continues to the *horizon* (` + "`-horizon`" + `, 180 s by
default, 120 s in the runs below: past the tree's 30 s hold-down and its
first 60 s periodic re-evaluation, which turn the first, latency-shaped
tree into a shallower one); then 100 lookups (distinct sources and
targets), the sampled walks (300 pairs), and, unless ` + "`-churn=false`" + `, 5%
churn and a root failure.
`

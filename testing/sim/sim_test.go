package sim

import (
	"testing"
	"time"
)

// TestMixedRulesLoopFree is the small sibling of make sim: on a random
// and an internet-like mesh where a random half of the nodes run
// upstream's next-hop rule and filter schedule and the other half
// fips-go's, the tree and the filters converge, every lookup is
// answered, every sampled walk arrives without a loop (before and after
// 5% churn and a root failure), and no walk is shorter than the bound
// (the shortest path that strictly decreases tree distance at every
// hop): a walk shorter than it would have taken a hop that does not.
func TestMixedRulesLoopFree(t *testing.T) {
	for _, name := range []string{TopoRandom, TopoInternet} {
		t.Run(name, func(t *testing.T) {
			topo, err := Generate(name, 120, 3)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(Config{Topology: topo, Routing: RoutingMixed, Seed: 3, Pairs: 200, Lookups: 30,
				Horizon: 60 * time.Second, Progress: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			if !res.BloomConverged {
				t.Errorf("filters not converged by the horizon (coverage %.4f)", res.BloomCoverage)
			}
			if res.Lookup.Found != res.Lookup.Tried {
				t.Errorf("lookups: %d of %d found", res.Lookup.Found, res.Lookup.Tried)
			}
			for _, w := range []struct {
				name string
				st   Stretch
			}{{"horizon", res.Settled}, {"after churn", res.Churn.Walks}, {"after root failure", res.RootFailure.Walks}} {
				if w.st.Walks == 0 || w.st.Failed != 0 || w.st.Loops != 0 {
					t.Errorf("%s: %d walks, %d failed, %d loops (first: %s)", w.name, w.st.Walks, w.st.Failed, w.st.Loops, w.st.FirstFailure)
				}
			}
			if !res.Churn.Converged || !res.RootFailure.Converged {
				t.Errorf("no recovery: churn %v, root failure %v", res.Churn.Converged, res.RootFailure.Converged)
			}
			if res.Settled.Mean < res.Bound.Mean {
				t.Errorf("mean stretch %.3f below the invariant's bound %.3f", res.Settled.Mean, res.Bound.Mean)
			}
			for i, x := range res.StretchSamples {
				if x < 1 {
					t.Fatalf("walk %d shorter than the shortest path: stretch %.3f", i, x)
				}
			}
		})
	}
}

// TestDistanceRuleShortensPaths: on the same random mesh, keys and
// sampled pairs, fips-go's defaults give shorter next-hop paths than
// upstream's rules, never longer than the invariant allows, with
// filters converging no later.
func TestDistanceRuleShortensPaths(t *testing.T) {
	topo, err := Generate(TopoRandom, 150, 5)
	if err != nil {
		t.Fatal(err)
	}
	run := func(routing string) *Result {
		res, err := Run(Config{Topology: topo, Routing: routing, Seed: 5, Pairs: 300, Lookups: 10, Churn: -1,
			Horizon: 100 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Settled.Failed != 0 {
			t.Fatalf("%s: %d walks failed (%s)", routing, res.Settled.Failed, res.Settled.FirstFailure)
		}
		t.Logf("%s: stretch mean %.3f p90 %.2f, bound %.3f; filters converged %v at %v; steady %.0f B/node/s",
			routing, res.Settled.Mean, res.Settled.P90, res.Bound.Mean, res.BloomConverged, res.BloomTime, res.BytesSteady)
		return res
	}
	up, ours := run(RoutingUpstream), run(RoutingFipsGo)
	if ours.Settled.Mean >= up.Settled.Mean {
		t.Errorf("mean stretch %.3f with fips-go's rule, %.3f with upstream's", ours.Settled.Mean, up.Settled.Mean)
	}
	if !ours.BloomConverged || (up.BloomConverged && ours.BloomTime > up.BloomTime) {
		t.Errorf("filters converged at %v (%v) with fips-go's schedule, %v (%v) with upstream's",
			ours.BloomTime, ours.BloomConverged, up.BloomTime, up.BloomConverged)
	}
	if ours.BytesSteady > 2*up.BytesSteady {
		t.Errorf("steady control traffic %.0f B/node/s, upstream %.0f", ours.BytesSteady, up.BytesSteady)
	}
}

// TestLookupsBeyondFilterCapacity: a mesh larger than its filters hold
// (here 200 nodes under an FPR cap that passes about 100 entries, as 0.20
// passes about 2,100): the filters parents send are refused over the
// cap. With fips-go's full_filter_lookups (tree) every lookup is still
// answered — lookups go to the full parent and fullness is passed on down
// the tree — where upstream's behaviour leaves lookups failing at once;
// and the walks still arrive loop-free, with both rules mixed too.
func TestLookupsBeyondFilterCapacity(t *testing.T) {
	topo, err := Generate(TopoRandom, 200, 6)
	if err != nil {
		t.Fatal(err)
	}
	run := func(routing string) *Result {
		res, err := Run(Config{Topology: topo, Routing: routing, Seed: 6, Pairs: 100, Lookups: 40, Churn: -1,
			Horizon: 60 * time.Second, MaxInboundFPR: 1e-6})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: lookups %d/%d, failures %v; filters refused %d; walks failed %d, loops %d",
			routing, res.Lookup.Found, res.Lookup.Tried, res.Lookup.Failures, res.FiltersRejected, res.Settled.Failed, res.Settled.Loops)
		if res.FiltersRejected == 0 {
			t.Fatalf("%s: no filter refused over the cap: the mesh is not beyond filter capacity", routing)
		}
		if res.Settled.Failed != 0 || res.Settled.Loops != 0 {
			t.Errorf("%s: %d walks failed, %d loops (%s)", routing, res.Settled.Failed, res.Settled.Loops, res.Settled.FirstFailure)
		}
		return res
	}
	up, ours := run(RoutingUpstream), run(RoutingFipsGo)
	run(RoutingMixed) // walks only: upstream nodes do not pass fullness on
	if ours.Lookup.Found != ours.Lookup.Tried {
		t.Errorf("fips-go: %d of %d lookups found (%v)", ours.Lookup.Found, ours.Lookup.Tried, ours.Lookup.Failures)
	}
	if up.Lookup.Found >= ours.Lookup.Found {
		t.Errorf("upstream's behaviour found %d lookups, fips-go's %d: the cap does not bite", up.Lookup.Found, ours.Lookup.Found)
	}
}

func TestGenerateTopologies(t *testing.T) {
	for _, name := range Topologies {
		topo, err := Generate(name, 400, 1)
		if err != nil {
			t.Fatal(err)
		}
		if topo.N < 300 || topo.N > 400 {
			t.Errorf("%s: %d nodes", name, topo.N)
		}
		if d := topo.MeanDegree(); d < 2 || d > 12 {
			t.Errorf("%s: mean degree %.2f", name, d)
		}
		seen := map[[2]int]bool{}
		for _, e := range topo.Edges {
			k := [2]int{min(e.A, e.B), max(e.A, e.B)}
			if e.A == e.B || seen[k] || e.A < 0 || e.B >= topo.N || e.Latency <= 0 {
				t.Fatalf("%s: bad edge %+v", name, e)
			}
			seen[k] = true
		}
		again, _ := Generate(name, 400, 1)
		if len(again.Edges) != len(topo.Edges) || again.Edges[len(again.Edges)-1] != topo.Edges[len(topo.Edges)-1] {
			t.Errorf("%s: not deterministic for a seed", name)
		}
	}
	// Tiny meshes: every generator terminates with a connected graph.
	for _, name := range Topologies {
		for _, n := range []int{2, 3, 5, 13} {
			if _, err := Generate(name, n, 2); err != nil && !(name == TopoGrid && n < 4) {
				t.Errorf("%s with %d nodes: %v", name, n, err)
			}
		}
	}
	if _, err := Generate("torus", 100, 1); err == nil {
		t.Error("unknown topology accepted")
	}
}

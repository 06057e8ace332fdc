//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fips-go/fips/testing/daemons"
	"github.com/fips-go/fips/testing/netns"
)

// binaries builds fips, fipsctl and wireguard-go once per test.
func binaries(t *testing.T) BuildOptions {
	t.Helper()
	dir := t.TempDir()
	bins, err := daemons.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	wg, _, err := BuildWireGuardGo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return BuildOptions{Fips: bins, WireGuardGo: wg}
}

// TestTopologiesBuildAndRoute builds every topology for every system,
// and transit for every system on the wire underlay, passes the route
// check on each (traffic moves every relay's counter) and measures a
// short idle ping, as `make bench` does before measuring.
func TestTopologiesBuildAndRoute(t *testing.T) {
	o := binaries(t)
	type run struct {
		u    Underlay
		topo Topology
	}
	var runs []run
	for _, topo := range Topologies {
		runs = append(runs, run{UnderlayDefault, topo})
	}
	// Every system on the wire underlay too, on transit alone: the
	// underlay changes the veths, not the topology.
	runs = append(runs, run{UnderlayWire, Topology{TopoTransit, 3}})
	for _, r := range runs {
		topo := r.topo
		for _, b := range builders {
			if !b.runsOnUnderlay(r.u, topo, false) || !b.enabled(o) {
				continue
			}
			name := fmt.Sprintf("%s/%s", topo.Name, b.system)
			if r.u != UnderlayDefault {
				name = fmt.Sprintf("%s/%s/%s", r.u, topo.Name, b.system)
			}
			t.Run(name, func(t *testing.T) {
				o := o
				o.Underlay = r.u
				p := b.buildPath(t, topo, o)
				if p.Failed != nil {
					failedBuild(t, p)
				}
				if len(p.Relays) != topo.Nodes-2 || p.Src != "a" || p.Dst != nodeNames[topo.Nodes-1] {
					t.Fatalf("path %s→%s via %v on %d nodes", p.Src, p.Dst, p.Relays, topo.Nodes)
				}
				if err := p.CheckRoute(); err != nil {
					t.Fatal(err)
				}
				out := map[string]float64{}
				if _, err := p.IdlePing(20, out); err != nil {
					t.Fatal(err)
				}
				if !(out["ping_idle_p50_ms"] > 0 && out["ping_idle_p50_ms"] <= out["ping_idle_max_ms"]) {
					t.Errorf("idle ping figures %v", out)
				}
				// Daemon CPU is read for every node of a tunnel, never for the kernel.
				for _, n := range p.Mesh.Nodes() {
					if got := len(p.Daemons(n.Name)); (b.system == SystemKernel) != (got == 0) {
						t.Errorf("%s: %d daemon pids on %s", b.system, got, n.Name)
					}
				}
			})
		}
	}
}

// TestEthernetSystemsRunWhereSaid: the Ethernet systems run on the pair
// and the transit line only, a quick run keeps the socket path on
// transit alone, and only the AF_XDP one may fail without stopping the
// run.
func TestEthernetSystemsRunWhereSaid(t *testing.T) {
	type key struct {
		system string
		quick  bool
	}
	got := map[key][]string{}
	for _, quick := range []bool{false, true} {
		cfg := Config{Quick: quick, Log: func(string) {}}
		cfg.defaults()
		for _, topo := range cfg.Topologies {
			for _, b := range builders {
				if b.runsOn(topo, quick) {
					got[key{b.system, quick}] = append(got[key{b.system, quick}], topo.Name)
				}
				if b.optional != (b.system == SystemFipsEthernetAFXDP || b.system == SystemUpstream) || b.upstream != (b.system == SystemUpstream) {
					t.Errorf("%s optional: %v", b.system, b.optional)
				}
			}
		}
	}
	for k, want := range map[key][]string{
		{SystemFipsEthernet, false}:      {TopoDirect, TopoTransit},
		{SystemFipsEthernetAFXDP, false}: {TopoDirect, TopoTransit},
		{SystemFipsEthernet, true}:       {TopoTransit},
		{SystemFipsEthernetAFXDP, true}:  nil,
		{SystemFips, false}:              {TopoDirect, TopoTransit, TopoLine},
		{SystemFipsAFXDPXSK, true}:       {TopoTransit},
	} {
		if !slices.Equal(got[k], want) {
			t.Errorf("%s (quick %v) runs on %v, want %v", k.system, k.quick, got[k], want)
		}
	}
}

// failedBuild fails the test of an optional system that could not be
// built (the bench run would report it in the row's notes and go on; on
// the machines the tests run on, XDP and AF_XDP work), after checking
// that the failure left nothing behind.
func failedBuild(t *testing.T, p *Path) {
	t.Helper()
	if p.Mesh != nil {
		if left := leftovers(t, p.Mesh.Prefix, p.Mesh.Dir); len(left) > 0 {
			t.Errorf("a failed build of %s left %v", p.System, left)
		}
	}
	t.Fatalf("%s: %v", p.System, p.Failed)
}

// TestRouteCheckDetectsAWrongPath gives the transit topology a direct
// A–C link that the system's routing prefers: the route check must say
// the traffic bypasses the relay.
func TestRouteCheckDetectsAWrongPath(t *testing.T) {
	o := binaries(t)
	o.Shortcut = true
	for _, b := range []struct {
		system string
		build  func(netns.TB, Topology, BuildOptions) *Path
	}{{SystemKernel, BuildKernel}, {SystemFips, BuildFips}, {SystemFipsEthernet, BuildFipsEthernet}} {
		t.Run(b.system, func(t *testing.T) {
			p := b.build(t, Topology{TopoTransit, 3}, o)
			err := p.CheckRoute()
			if err == nil || !strings.Contains(err.Error(), "traffic bypasses b") {
				t.Fatalf("route check with an A–C shortcut: %v", err)
			}
			t.Log(err)
		})
	}
}

// leftovers lists what a mesh with prefix may have left behind.
func leftovers(t *testing.T, prefix, dir string) []string {
	t.Helper()
	var left []string
	if nss, err := netns.Namespaces(prefix); err != nil || len(nss) > 0 {
		left = append(left, fmt.Sprintf("namespaces %v %v", nss, err))
	}
	if links, err := netns.RootLinks(prefix); err != nil || len(links) > 0 {
		left = append(left, fmt.Sprintf("links %v %v", links, err))
	}
	for _, pattern := range []string{
		filepath.Join("/etc/netns", prefix+"*"),
		filepath.Join(netns.WireGuardSocketDir, prefix+"*"),
	} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			left = append(left, fmt.Sprintf("files %v", m))
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		left = append(left, "directory "+dir)
	}
	// Processes: anything whose command line names the run's directory
	// (daemons, wireguard-go) or prefix.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range procs {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		if s := string(b); strings.Contains(s, dir) || strings.Contains(s, prefix) {
			left = append(left, fmt.Sprintf("process %s: %q", filepath.Dir(c), strings.ReplaceAll(s, "\x00", " ")))
		}
	}
	return left
}

// TestCleanupLeavesNothing runs the transit topology of every system
// the way the bench program does — under a netns.Runner, measured, then
// interrupted — and checks that no namespace, link, process or file of
// the run is left; also of an optional system whose build failed.
func TestCleanupLeavesNothing(t *testing.T) {
	o := binaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &netns.Runner{Log: func(s string) { t.Log(s) }}
	var meshes []*netns.Mesh
	built, never := make(chan struct{}), make(chan struct{})
	defer close(never)
	go func() {
		<-built
		cancel() // Ctrl-C while the run is measuring
	}()
	err := r.Run(ctx, nil, func() error {
		transit := Topology{TopoTransit, 3}
		for _, b := range builders {
			if !b.runsOn(transit, false) || !b.enabled(o) {
				continue
			}
			p := b.buildPath(r, transit, o)
			if p.Mesh != nil {
				meshes = append(meshes, p.Mesh)
			}
			if p.Failed != nil { // closed already; checked below all the same
				t.Logf("%s: %v", b.system, firstLine(p.Failed.Error()))
				continue
			}
			out := map[string]float64{}
			if _, err := p.TCP(1, 1, false, out); err != nil {
				return err
			}
		}
		close(built)
		<-never // still running when the interrupt comes
		return nil
	})
	if err == nil || err.Error() != "interrupted" {
		t.Fatalf("run ended with %v, want interrupted", err)
	}
	for _, m := range meshes {
		if left := leftovers(t, m.Prefix, m.Dir); len(left) > 0 {
			t.Errorf("after cleanup of %s: %v", m.Prefix, left)
		}
	}
}

// childEnv marks the test binary re-executed as a bench run that gets
// killed.
const childEnv = "FIPS_BENCH_TEST_KILLED_RUN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		killedRun()
		return
	}
	os.Exit(m.Run())
}

// killedRun builds a transit path, says where, and waits to be killed.
func killedRun() {
	r := &netns.Runner{Log: func(string) {}}
	_ = r.Run(context.Background(), nil, func() error {
		p := BuildKernel(r, Topology{TopoTransit, 3}, BuildOptions{})
		fmt.Printf("%s %s\n", p.Mesh.Prefix, p.Mesh.Dir)
		select {}
	})
	os.Exit(2)
}

// TestKilledRunIsSweptByTheNext kills a run with SIGKILL (no cleanup
// runs) and checks that the next run's start removes what it left.
func TestKilledRunIsSweptByTheNext(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var prefix, dir string
	if _, err := fmt.Fscan(stdout, &prefix, &dir); err != nil {
		cmd.Process.Kill()
		t.Fatalf("child: %v", err)
	}
	if nss, _ := netns.Namespaces(prefix); len(nss) != 3 {
		t.Fatalf("child's namespaces: %v", nss)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if nss, _ := netns.Namespaces(prefix); len(nss) != 3 {
		t.Fatalf("a killed run should leave its namespaces (nothing ran its cleanup): %v", nss)
	}
	netns.New(t, netns.Options{NoDaemons: true}) // the next run starts
	if left := leftovers(t, prefix, dir); len(left) > 0 {
		t.Errorf("the killed run's leftovers were not swept: %v", left)
	}
}

// TestUnderlaysRunWhereSaid: a full run measures every system on every
// topology on both underlays alike; a quick run measures transit on both,
// the wire one on the kernel, wireguard-go, fips-go, fips-go xdp and
// fips-go afxdp xsk alone.
func TestUnderlaysRunWhereSaid(t *testing.T) {
	for _, quick := range []bool{false, true} {
		cfg := Config{Quick: quick, Log: func(string) {}}
		cfg.defaults()
		if !slices.Equal(cfg.Underlays, []Underlay{UnderlayDefault, UnderlayWire}) {
			t.Errorf("quick %v: underlays %v", quick, cfg.Underlays)
		}
		for _, topo := range cfg.Topologies {
			var wire []string
			for _, b := range builders {
				d, w := b.runsOnUnderlay(UnderlayDefault, topo, quick), b.runsOnUnderlay(UnderlayWire, topo, quick)
				if !quick && d != w {
					t.Errorf("full run: %s on %s: default %v, wire %v", b.system, topo.Name, d, w)
				}
				if w {
					wire = append(wire, b.system)
				}
			}
			want := []string{SystemKernel, SystemWireGuard, SystemFips, SystemFipsXDP, SystemFipsAFXDPXSK}
			if quick && !slices.Equal(wire, want) {
				t.Errorf("quick run, wire underlay on %s: %v, want %v", topo.Name, wire, want)
			}
		}
	}
}

// TestUpstreamSystem builds the upstream row on transit with fips-go's
// own binaries in upstream's place (upstream does not build on the
// machines these tests run on): the line comes up with no fips-go-only
// configuration and the route check passes on the kernel's counters.
func TestUpstreamSystem(t *testing.T) {
	o := binaries(t)
	if b := (builder{upstream: true}); b.enabled(o) {
		t.Fatal("the upstream system is enabled without upstream's binaries")
	}
	o.Upstream = o.Fips
	o.FipsConfig = "dataplane: { mode: xdp }\n" // must not reach the nodes
	p := BuildUpstream(t, Topology{TopoTransit, 3}, o)
	if p.System != SystemUpstream {
		t.Errorf("system %q", p.System)
	}
	for _, n := range p.Mesh.Nodes() {
		if b, err := os.ReadFile(n.Config); err != nil || strings.Contains(string(b), "dataplane") {
			t.Errorf("%s's config: %v\n%s", n.Name, err, b)
		}
	}
	if err := p.CheckRoute(); err != nil {
		t.Fatal(err)
	}
}

//go:build linux

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/fips-go/fips/testing/daemons"
	"github.com/fips-go/fips/testing/netns"
)

// ProfileConfig is one `make bench-profile` run.
type ProfileConfig struct {
	// Systems to profile (default: fips-go in userspace, xdp, afxdp and
	// afxdp xsk).
	Systems []string
	// Underlays to profile each system on (default: both).
	Underlays []Underlay
	// Seconds of sampling during one TCP stream (default 8).
	Seconds int
	// Dir keeps the perf data files (perf.data per path).
	Dir string
	Log func(string)
}

// ProfiledPath is one system on one underlay: its throughput while
// sampled and a row per daemon.
type ProfiledPath struct {
	System   string
	Underlay Underlay
	Mbps     float64
	Rows     []ProfileRow
}

// DefaultProfileSystems are the systems a profile run compares.
var DefaultProfileSystems = []string{SystemFips, SystemFipsXDP, SystemFipsAFXDP, SystemFipsAFXDPXSK}

// Profile builds each system on the 3-node transit line, runs one TCP
// stream for the sampled seconds plus a margin, records `perf record -a
// -g` over the middle of it and attributes the samples of each daemon.
func Profile(ctx context.Context, r *netns.Runner, cfg ProfileConfig) ([]ProfiledPath, error) {
	if len(cfg.Systems) == 0 {
		cfg.Systems = DefaultProfileSystems
	}
	if len(cfg.Underlays) == 0 {
		cfg.Underlays = Underlays
	}
	if cfg.Seconds <= 0 {
		cfg.Seconds = 8
	}
	if cfg.Log == nil {
		cfg.Log = func(string) {}
	}
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, fmt.Errorf("bench: profile needs perf (Debian linux-perf): %w", err)
	}
	dir, err := os.MkdirTemp("", "fipsprof-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg.Log("building fips and fipsctl")
	o := BuildOptions{}
	if o.Fips, err = daemons.Build(dir); err != nil {
		return nil, err
	}
	topo := Topology{TopoTransit, 3}
	var out []ProfiledPath
	for _, u := range cfg.Underlays {
		o.Underlay = u
		for _, sys := range cfg.Systems {
			i := slices.IndexFunc(builders, func(b builder) bool { return b.system == sys })
			if i < 0 || builders[i].upstream {
				return out, fmt.Errorf("bench: no system %q to profile", sys)
			}
			r.Check(ctx)
			p := builders[i].build(r, topo, o)
			pp, err := profilePath(p, cfg, filepath.Join(cfg.Dir, fmt.Sprintf("perf-%s-%s.data", u, sanitize(sys))))
			p.Mesh.Close()
			if err != nil {
				return out, err
			}
			cfg.Log(fmt.Sprintf("%-18s %-8s %6.0f Mbit/s while sampled", sys, u, pp.Mbps))
			out = append(out, pp)
		}
	}
	return out, nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' || c == '/' {
			b[i] = '-'
		}
	}
	return string(b)
}

func profilePath(p *Path, cfg ProfileConfig, data string) (ProfiledPath, error) {
	res := ProfiledPath{System: p.System, Underlay: p.Underlay}
	if err := os.MkdirAll(filepath.Dir(data), 0o755); err != nil {
		return res, err
	}
	type perfResult struct {
		out []byte
		err error
	}
	done := make(chan perfResult, 1)
	go func() {
		// Sample the middle of the stream: TCP's ramp and end left out.
		time.Sleep(2 * time.Second)
		c := exec.Command("perf", "record", "-F", "999", "-g", "-a", "-q", "-o", data, "--", "sleep", strconv.Itoa(cfg.Seconds))
		out, err := c.CombinedOutput()
		done <- perfResult{out, err}
	}()
	ir, err := p.iperf3(cfg.Seconds+4, "-P", "1")
	rec := <-done
	if err != nil {
		return res, err
	}
	if rec.err != nil {
		return res, fmt.Errorf("bench: perf record: %w: %s", rec.err, firstLines(string(rec.out), 5))
	}
	res.Mbps = ir.End.SumReceived.BitsPerSecond / 1e6
	script, err := exec.Command("perf", "script", "-i", data, "-F", "pid,ip,sym").Output()
	if err != nil {
		return res, fmt.Errorf("bench: perf script: %w", err)
	}
	m, err := ParsePerfScript(bytes.NewReader(script))
	if err != nil {
		return res, err
	}
	nodes := p.Mesh.Nodes()
	for i, n := range nodes {
		role := "relay"
		switch i {
		case 0:
			role = "sender"
		case len(nodes) - 1:
			role = "receiver"
		}
		for _, pid := range p.Daemons(n.Name) {
			pr := m.Processes[pid]
			if pr == nil {
				pr = &ProcessProfile{Pid: pid, ByCategory: map[string]int{}}
			}
			row := ProfileRow{Node: role + " " + n.Name, ProcessProfile: *pr}
			if m.Samples > 0 {
				row.MachineShare = float64(pr.Samples) / float64(m.Samples)
			}
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fips-go/fips/testing/bench"
	"github.com/fips-go/fips/testing/netns"
)

func run(ctx context.Context) error {
	cfg := bench.ProfileConfig{Dir: "out/bench", Log: func(s string) { fmt.Println(s) }}
	if v := os.Getenv("PROFILE_SYSTEMS"); v != "" {
		for _, s := range strings.Split(v, ",") {
			cfg.Systems = append(cfg.Systems, strings.TrimSpace(s))
		}
	}
	if v := os.Getenv("BENCH_UNDERLAYS"); v != "" {
		u, err := bench.ParseUnderlays(v)
		if err != nil {
			return err
		}
		cfg.Underlays = u
	}
	if v := os.Getenv("PROFILE_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 120 {
			return fmt.Errorf("PROFILE_SECONDS=%q: want a whole number from 1 to 120", v)
		}
		cfg.Seconds = n
	}
	r := &netns.Runner{}
	var paths []bench.ProfiledPath
	err := r.Run(ctx, func() { fmt.Println("cleaning up: daemons, namespaces, veths, files") }, func() error {
		var err error
		paths, err = bench.Profile(ctx, r, cfg)
		return err
	})
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Relay profiles (`make bench-profile`, %s)\n\n", time.Now().UTC().Format(time.RFC3339))
	b.WriteString("One TCP stream across the 3-node line; `perf record -a -g` over its middle seconds; each sample counted\n" +
		"as the innermost frame that names a kind of work (testing/bench/profile.go). Shares are of each process's samples.\n\n")
	for _, p := range paths {
		b.WriteString(bench.ProfileMarkdown(fmt.Sprintf("%s, %s underlay: %.0f Mbit/s while sampled", p.System, p.Underlay, p.Mbps), p.Rows))
		b.WriteString("\n")
	}
	out := filepath.Join("out", "bench", "profile.md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	fmt.Println("written to", out)
	return nil
}

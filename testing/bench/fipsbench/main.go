// Command fipsbench is `make bench`: fips-go side by side with
// wireguard-go and the kernel on 2-, 3- and 5-node namespace meshes (see
// package testing/bench). It needs Linux and root.
//
// Environment: BENCH_QUICK=1 for the ≤ 3-minute development subset,
// BENCH_REPS (default 3), BENCH_SECONDS per iperf3 run (default 5),
// BENCH_UNDERLAYS (default "default,wire": the veths as created, then
// wire-like with their offloads off; one of them alone to run just that),
// BENCH_UPSTREAM (a folder with upstream FIPS's fips and fipsctl: adds
// an "upstream fips" system, untested against upstream itself here),
// BENCH_DOC and BENCH_JSON for where the report goes (default
// docs/performance.md and docs/bench.json; a quick run writes
// out/bench/quick.md and out/bench/quick.json instead, so it never
// replaces the full figures).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/fips-go/fips/testing/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func envInt(name string) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100 {
		return 0, fmt.Errorf("%s=%q: want a whole number from 1 to 100", name, v)
	}
	return n, nil
}

func run() error {
	cfg := bench.Config{Quick: os.Getenv("BENCH_QUICK") == "1", Command: os.Getenv("BENCH_COMMAND"), Upstream: os.Getenv("BENCH_UPSTREAM")}
	var err error
	if cfg.Repetitions, err = envInt("BENCH_REPS"); err != nil {
		return err
	}
	if cfg.Seconds, err = envInt("BENCH_SECONDS"); err != nil {
		return err
	}
	if v := os.Getenv("BENCH_UNDERLAYS"); v != "" {
		if cfg.Underlays, err = bench.ParseUnderlays(v); err != nil {
			return err
		}
	}
	if cfg.Command == "" {
		cfg.Command = "go run ./testing/bench/fipsbench"
	}
	doc, js := "docs/performance.md", "docs/bench.json"
	if cfg.Quick {
		doc, js = "out/bench/quick.md", "out/bench/quick.json"
	}
	if v := os.Getenv("BENCH_DOC"); v != "" {
		doc = v
	}
	if v := os.Getenv("BENCH_JSON"); v != "" {
		js = v
	}
	for _, p := range []string{doc, js} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	res, err := execute(ctx, cfg)
	if err != nil {
		return err
	}
	if err := bench.Publish(res, doc, js); err != nil {
		return err
	}
	fmt.Printf("\n%s\nwritten to %s and %s\n", bench.Markdown(res, nil), doc, js)
	return nil
}

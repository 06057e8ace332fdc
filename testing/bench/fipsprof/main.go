// Command fipsprof is `make bench-profile`: it profiles fips-go's relay
// paths with perf while one TCP stream crosses a 3-node line, on both
// underlays, and writes where each daemon's CPU goes by kind of work
// (AEAD, the XDP and AF_XDP receive, sockets, TUN, scheduling, Go code)
// to out/bench/profile.md (Linux, root; docs/xdp-relay.md reads it).
//
//	PROFILE_SYSTEMS="fips-go,fips-go afxdp"  systems (default: fips-go, xdp, afxdp, afxdp xsk)
//	BENCH_UNDERLAYS=wire                     one underlay (default: both)
//	PROFILE_SECONDS=8                        sampled seconds per path
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "fipsprof: %v\n", err)
		os.Exit(1)
	}
}

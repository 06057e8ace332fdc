// Command fips-gateway lets hosts on a LAN that run no FIPS reach mesh
// nodes: it answers <npub>.fips on a LAN-facing DNS listener with an
// address from a virtual pool, and NATs traffic to that address onto the
// node's mesh address through fips0 (nftables), with inbound port
// forwards from the mesh to LAN hosts. It needs the fips daemon running
// on the same host, the gateway: section of fips.yaml enabled, IPv6
// forwarding and CAP_NET_ADMIN. Linux only.
//
// Without -c it reads the same search paths as fips.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/fips-go/fips/control/logging"
)

// Version is set at link time (-ldflags "-X main.Version=...").
var Version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: fips-gateway [-c FILE] [-l LEVEL] [-V]

  -c, --config FILE           configuration file (overrides the default search paths)
  -l, --log-level LEVEL       log level: trace, debug, info, warn, error (default: info)
      --control-socket PATH   control socket (default: /run/fips/gateway.sock)
  -V, --version               print version and exit
  -h, --help                  print this help and exit`

// run returns the exit status: 0, 1 for any failure to start, 2 for bad
// usage (as upstream's argument parser).
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fips-gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	fs.StringVar(&o.config, "c", "", "")
	fs.StringVar(&o.config, "config", "", "")
	fs.StringVar(&o.logLevel, "l", "info", "")
	fs.StringVar(&o.logLevel, "log-level", "info", "")
	// Ours: upstream's path is fixed; tests and second instances need
	// another.
	fs.StringVar(&o.socket, "control-socket", "", "")
	version := fs.Bool("V", false, "")
	fs.BoolVar(version, "version", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "fips-gateway: %v\n\n%s\n", err, usage)
		return 2
	}
	if *version {
		fmt.Fprintln(stdout, "fips-gateway", Version)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fips-gateway: unexpected argument %q\n\n%s\n", fs.Arg(0), usage)
		return 2
	}
	log := newLogger(stderr, o.logLevel, os.Getenv)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := runGateway(context.Background(), o, log, sigs); err != nil {
		return 1
	}
	return 0
}

type options struct {
	config, logLevel, socket string
}

// newLogger is upstream's: -l sets the default level (an unknown value is
// info), RUST_LOG's directives override it, FIPS_LOG_FORMAT picks the
// format.
func newLogger(w io.Writer, level string, env func(string) string) *slog.Logger {
	l, err := logging.ParseLevel(level)
	if err != nil {
		l = slog.LevelInfo
	}
	h := logging.New(w, logging.Options{Level: l})
	if f, err := logging.ParseFormat(env("FIPS_LOG_FORMAT")); err == nil {
		h.SetFormat(f)
	}
	if v := env("RUST_LOG"); strings.TrimSpace(v) != "" {
		h.SetFilter(logging.ParseFilter(v))
	}
	return logging.WithTarget(slog.New(h), "fips_gateway")
}

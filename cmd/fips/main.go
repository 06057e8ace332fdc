// Command fips is the FIPS mesh network daemon: it joins this host to a
// FIPS mesh, keeping encrypted links to peers over UDP and TCP, gives the
// host the IPv6 address derived from its key on fips0, answers .fips names
// on a local DNS responder and serves the control socket that fipsctl
// talks to. It runs until SIGINT or SIGTERM.
//
// Without -c it merges the standard search paths, lowest priority first:
// /etc/fips/fips.yaml, the user configuration directory, ~/.fips.yaml,
// ./fips.yaml.
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

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/logging"
)

// Version is set at link time (-ldflags "-X main.Version=...").
var Version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fips", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfgPath string
	fs.StringVar(&cfgPath, "c", "", "configuration file (default: merge the standard search paths)")
	fs.StringVar(&cfgPath, "config", "", "configuration file (long form)")
	version := fs.Bool("V", false, "print version and exit")
	fs.BoolVar(version, "version", false, "print version and exit (long form)")
	var svc serviceFlags
	fs.BoolVar(&svc.install, "install-service", false, "Windows: register fips as a service and exit")
	fs.BoolVar(&svc.uninstall, "uninstall-service", false, "Windows: stop and remove the fips service and exit")
	fs.BoolVar(&svc.run, "service", false, "Windows: run under the service control manager (used by the service)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: fips [-c FILE] [-V]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "fips: %v\n", err)
		return 1
	}
	if *version {
		fmt.Fprintln(stdout, "fips", Version)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fips: unexpected argument %q\n", fs.Arg(0))
		return 1
	}
	if svc.any() {
		if err := serviceCommand(svc, cfgPath, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "fips: %v\n", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runDaemon(ctx, cfgPath, stderr); err != nil {
		fmt.Fprintf(stderr, "fips: %v\n", err)
		return 1
	}
	return 0
}

// newLogger is the daemon's logger before the configuration is read: text
// lines at info, or as RUST_LOG and FIPS_LOG_FORMAT say. configureLogger
// then applies node.log_level and node.log_format beneath those.
func newLogger(w io.Writer, level slog.Leveler, env func(string) string) (*slog.Logger, *logging.Handler) {
	h := logging.New(w, logging.Options{Level: level})
	if f, err := logging.ParseFormat(env("FIPS_LOG_FORMAT")); err == nil {
		h.SetFormat(f)
	}
	if v := env("RUST_LOG"); strings.TrimSpace(v) != "" {
		h.SetFilter(logging.ParseFilter(v))
	}
	return slog.New(h), h
}

// configureLogger applies the configuration's log settings as upstream
// does: RUST_LOG, when set and not empty, overrides node.log_level (whose
// level stays the default for targets RUST_LOG does not name), and
// FIPS_LOG_FORMAT overrides node.log_format.
func configureLogger(log *slog.Logger, h *logging.Handler, level *slog.LevelVar, cfg *config.Config, env func(string) string) {
	level.Set(cfg.Node.SlogLevel())
	format := cfg.Node.LogFormat
	if v := env("FIPS_LOG_FORMAT"); v != "" {
		format = v
	}
	f, err := logging.ParseFormat(format)
	if err != nil {
		log.Warn("unrecognised log format; using text", "format", format)
	}
	h.SetFormat(f)
	if v := env("RUST_LOG"); strings.TrimSpace(v) != "" {
		flt := logging.ParseFilter(v)
		h.SetFilter(flt)
		for _, d := range flt.Dropped {
			log.Warn("ignoring RUST_LOG directive", "directive", d)
		}
		if flt.Refused > 0 {
			log.Warn("RUST_LOG has too many directives; the rest are ignored", "refused", flt.Refused)
		}
	}
}

// Command fipstop is a live terminal dashboard for a running FIPS daemon:
// it polls the control socket's show_* queries every refresh and shows
// them in tabs (Node, Peers, Transports, Sessions, Tree, Filters,
// Performance, Routing, Graphs, Gateway, and our Dataplane). Its only
// action is disconnecting a peer (Del, then Y). When the daemon goes away
// it says "Disconnected" and keeps retrying.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/ctl"
)

// Version is set at link time (-ldflags "-X main.Version=...").
var Version = "0.1.0-dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fipstop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var socket, gateway string
	var refresh int
	var version bool
	fs.StringVar(&socket, "s", "", "control socket path")
	fs.StringVar(&socket, "socket", "", "control socket path")
	fs.StringVar(&gateway, "gateway-socket", "", "fips-gateway control socket path")
	fs.IntVar(&refresh, "r", 2, "refresh interval in seconds")
	fs.IntVar(&refresh, "refresh", 2, "refresh interval in seconds")
	fs.BoolVar(&version, "V", false, "print version")
	fs.BoolVar(&version, "version", false, "print version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "fipstop: %v\n", err)
		usage(stderr)
		return 2
	}
	if version {
		fmt.Fprintln(stdout, "fipstop", Version)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fipstop: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if refresh < 1 || refresh > 3600 {
		fmt.Fprintf(stderr, "fipstop: -r %d: the refresh interval is 1 to 3600 seconds\n", refresh)
		return 2
	}
	if socket == "" {
		socket = ctl.DefaultSocketPath()
	}
	if gateway == "" {
		gateway = config.DefaultGatewaySocketPath()
	}
	c := &client{socket: socket, gateway: gateway, timeout: ctl.ClientTimeout, call: ctl.Call}
	p := tea.NewProgram(newModel(c, time.Duration(refresh)*time.Second, Version), tea.WithAltScreen())
	if _, err := p.Run(); err != nil {
		fmt.Fprintf(stderr, "fipstop: failed to initialise the terminal: %v\n", err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: fipstop [-s SOCKET] [--gateway-socket PATH] [-r SECONDS] [-V]

  -s, --socket PATH        daemon control socket (default: as fipsctl)
  --gateway-socket PATH    fips-gateway control socket (default: gateway.sock beside it)
  -r, --refresh SECONDS    poll interval (default 2)
  -V, --version            print the version

Press ? in fipstop for the keys of the current tab.`)
}

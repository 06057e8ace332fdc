// Command fipsctl controls and inspects a FIPS node: key generation and
// identity derivation offline, a packet dissector, and (through the control
// socket) the running daemon.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// usageError marks a bad command line; main prints usage hints for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

type command struct {
	name    string
	summary string
	run     func(env *env, args []string) error
}

// env carries what a command may touch, so tests can run commands in-process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	socket string // -s override; empty = default resolution
	// hostsFile is where peer aliases are resolved (upstream's
	// DEFAULT_HOSTS_PATH).
	hostsFile string
	// pollInterval is how often probe polls the daemon.
	pollInterval time.Duration
}

// defaultSocketHelp says where the control socket is looked for; fixed
// text, so that --help (and the man page made from it) does not depend on
// the machine it runs on.
const defaultSocketHelp = "/run/fips/control.sock when /run/fips exists, else $XDG_RUNTIME_DIR/fips/control.sock or /tmp/fips-control.sock; on Windows TCP port 21210 on 127.0.0.1"

func commands() []command {
	return []command{
		{"keygen", "generate a FIPS identity keypair (fips.key, fips.pub)", runKeygen},
		{"identity", "show the npub, node address and IPv6 address of a key", runIdentity},
		{"wire", "dissect FIPS packets: wire decode [HEX]", runWire},
		{"show", "query the daemon: show status|peers|links|tree|sessions|…", runShow},
		{"acl", "show the daemon's loaded peer ACL: acl show", runACL},
		{"connect", "connect to a peer: connect PEER ADDRESS TRANSPORT", runConnect},
		{"disconnect", "disconnect a peer: disconnect PEER", runDisconnect},
		{"stats", "counter families: stats metrics", runStats},
		{"bpf", "the XDP program's attachments, counters and maps: bpf stats [--json]", runBPF},
		{"probe", "diagnose reachability of a mesh node: probe TARGET [--json] [--timeout S]", runProbe},
	}
}

func main() {
	os.Exit(run(os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}))
}

// withDefaults fills the settings a caller left empty.
func (e *env) withDefaults() *env {
	if e.hostsFile == "" {
		e.hostsFile = defaultHostsFile()
	}
	if e.pollInterval == 0 {
		e.pollInterval = 250 * time.Millisecond
	}
	return e
}

// run executes one fipsctl invocation and returns the exit status: 0 on
// success, 1 on any failure, with one line of explanation on stderr.
func run(args []string, e *env) int {
	e.withDefaults()
	fs := flag.NewFlagSet("fipsctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.socket, "s", "", "control socket path (default: "+defaultSocketHelp+")")
	fs.StringVar(&e.socket, "socket", "", "control socket path (long form)")
	version := fs.Bool("V", false, "print version and exit")
	fs.BoolVar(version, "version", false, "print version and exit (long form)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(e.stdout)
			fmt.Fprintln(e.stdout, "\noptions:")
			fs.SetOutput(e.stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(e.stderr, "fipsctl: %v\n", err)
		return 1
	}
	if *version {
		fmt.Fprintln(e.stdout, "fipsctl", Version)
		return 0
	}
	if fs.NArg() == 0 {
		usage(e.stderr)
		return 1
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	for _, c := range commands() {
		if c.name == name {
			if err := c.run(e, rest); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return 0
				}
				fmt.Fprintf(e.stderr, "fipsctl %s: %v\n", name, err)
				return 1
			}
			return 0
		}
	}
	if name == "help" {
		usage(e.stdout)
		return 0
	}
	fmt.Fprintf(e.stderr, "fipsctl: unknown command %q (run 'fipsctl help')\n", name)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: fipsctl [-s SOCKET] <command> [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}

// flagSet is a subcommand's flags; parse errors come back as errors
// (printed once by run) and -h prints usage to stdout.
type flagSet struct {
	*flag.FlagSet
	e        *env
	synopsis string
}

func newFlags(e *env, name, synopsis string) flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return flagSet{fs, e, synopsis}
}

func (f flagSet) parse(args []string) error {
	err := f.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(f.e.stdout, "usage: fipsctl %s %s\n", f.Name(), f.synopsis)
		f.SetOutput(f.e.stdout)
		f.PrintDefaults()
		f.SetOutput(io.Discard)
	}
	return err
}

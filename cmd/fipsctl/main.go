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
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/fips-go/fips/control/ctl"
)

// usageError marks a bad command line: main prints it as clap does for
// upstream's fipsctl (the error, the usage line, a pointer to --help) and
// exits 2. usage is the synopsis after "fipsctl "; empty means the
// top-level one.
type usageError struct{ msg, usage string }

func (e usageError) Error() string { return e.msg }

// Exit statuses, as upstream's fipsctl (clap's for a bad command line).
const (
	statusOK     = 0
	statusFailed = 1
	statusUsage  = 2
)

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
		{"stats", "history and counters: stats list|metrics|peers|history METRIC|all-history|history-all-peers METRIC", runStats},
		{"bpf", "the XDP program's attachments, counters and maps: bpf stats [--json]", runBPF},
		{"probe", "diagnose reachability of a mesh node: probe TARGET [--json] [--timeout S]", runProbe},
		{"completion", "shell completion script: completion bash|zsh", runCompletion},
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

// run executes one fipsctl invocation and returns the exit status, as
// upstream's fipsctl: 0 on success, 1 when the command failed ("error:
// …" on stderr, with upstream's hint when the daemon cannot be reached),
// 2 for a bad command line.
func run(args []string, e *env) int {
	e.withDefaults()
	fs := flag.NewFlagSet("fipsctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
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
			return statusOK
		}
		return report(e, usageError{msg: clapFlagError(err)})
	}
	if *version {
		fmt.Fprintln(e.stdout, "fipsctl", Version)
		return statusOK
	}
	if fs.NArg() == 0 {
		usage(e.stderr)
		return statusUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		usage(e.stdout)
		return statusOK
	}
	for _, c := range commands() {
		if c.name == name {
			return report(e, c.run(e, rest))
		}
	}
	return report(e, usageError{msg: fmt.Sprintf("unrecognized subcommand '%s'", name)})
}

// report prints err as upstream's fipsctl does and returns the status.
func report(e *env, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return statusOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		syn := ue.usage
		if syn == "" {
			syn = "[-s SOCKET] <COMMAND>"
		}
		fmt.Fprintf(e.stderr, "error: %s\n\nUsage: fipsctl %s\n\nFor more information, try '--help'.\n", ue.msg, syn)
		return statusUsage
	}
	var ce *ctl.ConnectError
	if errors.As(err, &ce) {
		fmt.Fprintf(e.stderr, "error: %s\n", connectFailure(ce))
		return statusFailed
	}
	fmt.Fprintf(e.stderr, "error: %v\n", err)
	return statusFailed
}

// connectFailure is upstream's text for a socket it cannot reach: the
// reason, then what to do (join group fips, or start the daemon).
func connectFailure(ce *ctl.ConnectError) string {
	msg := fmt.Sprintf("cannot connect to %s: %s", ce.Addr, rustIOError(ce.Err))
	if ce.PermissionDenied() && runtime.GOOS != "windows" {
		return msg + "\nHint: add your user to the 'fips' group: sudo usermod -aG fips $USER\n" +
			"Then log out and back in for the change to take effect."
	}
	return msg + "\nIs the FIPS daemon running?"
}

// rustIOError spells an OS error as Rust's io::Error displays it:
// "No such file or directory (os error 2)".
func rustIOError(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	text := errno.Error()
	if text != "" {
		text = strings.ToUpper(text[:1]) + text[1:]
	}
	return fmt.Sprintf("%s (os error %d)", text, uintptr(errno))
}

// clapFlagError rewords the flag package's parse errors as clap words
// them.
func clapFlagError(err error) string {
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return fmt.Sprintf("unexpected argument '%s' found", f)
	}
	if f, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return fmt.Sprintf("a value is required for '%s <VALUE>' but none was supplied", f)
	}
	return msg
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: fipsctl [-s SOCKET] <command> [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}

// flagSet is a subcommand's flags; parse errors come back as usage
// errors (printed once by run) and -h prints usage to stdout.
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
		return err
	}
	if err != nil {
		return usageError{msg: clapFlagError(err), usage: f.Name() + " " + f.synopsis}
	}
	return nil
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments (as clap allows), and returns the positionals.
func (f flagSet) parseInterleaved(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.parse(args); err != nil {
			return nil, err
		}
		if f.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, f.Arg(0))
		args = f.Args()[1:]
	}
}

// set reports whether the flag name was given on the command line.
func (f flagSet) set(name string) bool {
	found := false
	f.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

//go:build linux

// Command interop runs fips-go and upstream's daemon side by side in
// network namespaces and prints a table of mixed scenarios: every
// A–B–C line of the two implementations, late joiners, a random mixed
// mesh probed between all ordered pairs, kill -9 restarts, rekeys under
// load, TCP links, and the fips-go relay in each dataplane mode between
// two upstream ends (docs/interop.md says what each row checks).
//
// FIPS_UPSTREAM names a folder holding upstream's fips and fipsctl; the
// harness gives those nodes only upstream's configuration keys and
// talks to them only with upstream's control commands (and fipsctl's
// probe). Run it as root: `make interop FIPS_UPSTREAM=…` or
// `FIPS_UPSTREAM=… go run ./testing/interop`. Every row's node configs
// and logs are kept under out/interop/; namespaces and processes are
// removed after each row, also on failure and Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/fips-go/fips/testing/daemons"
	"github.com/fips-go/fips/testing/netns"
)

// UpstreamEnv names the folder of upstream's fips and fipsctl.
const UpstreamEnv = "FIPS_UPSTREAM"

const howTo = `interop: set ` + UpstreamEnv + ` to a folder holding upstream's fips and fipsctl.

  To get them, build jmcorgan/fips (master) with ` + "`cargo build --release`" + ` and set
  ` + UpstreamEnv + ` to its target/release:

      make interop ` + UpstreamEnv + `=/path/to/fips/target/release

  To try the harness with fips-go in both roles, point it at fips-go's own:

      go build -o /tmp/fips-go-bin/ ./cmd/fips ./cmd/fipsctl
      make interop ` + UpstreamEnv + `=/tmp/fips-go-bin
`

// env is what every row needs: the two implementations' binaries.
type env struct {
	bin  map[Impl]daemons.Binaries
	out  string
	seed uint64
	// format is the node.wire_format of the fips-go nodes ("" or v0:
	// none given, master's); v1 or auto against an upstream next build.
	format string
}

func main() {
	run := flag.String("run", "", "run only the rows whose `scenario impls` matches this regular expression")
	list := flag.Bool("list", false, "list the rows and exit")
	seed := flag.Uint64("seed", 1, "seed of the random mixed mesh")
	out := flag.String("out", "", "folder for the rows' logs (default: out/interop in the module)")
	format := flag.String("format", "v0", "node.wire_format of the fips-go nodes: v0 against upstream master, v1 or auto against an upstream next build")
	flag.Parse()

	if err := checkFormat(*format); err != nil {
		fatal(2, "interop: -format: %v", err)
	}
	e := &env{seed: *seed, format: *format}
	rows := plan(e)
	if *run != "" {
		re, err := regexp.Compile(*run)
		if err != nil {
			fatal(2, "interop: -run: %v", err)
		}
		rows = filterRows(rows, re)
	}
	if *list {
		for k, r := range rows {
			fmt.Printf("%2d  %-22s %s\n", k+1, r.scenario, r.impls)
		}
		return
	}

	up := os.Getenv(UpstreamEnv)
	if up == "" {
		fmt.Fprint(os.Stderr, howTo)
		os.Exit(2)
	}
	ub := daemons.Binaries{Fips: filepath.Join(up, "fips"), Fipsctl: filepath.Join(up, "fipsctl")}
	for _, p := range []string{ub.Fips, ub.Fipsctl} {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "interop: %s is not an executable file\n\n", p)
			fmt.Fprint(os.Stderr, howTo)
			os.Exit(2)
		}
	}
	if os.Geteuid() != 0 {
		fatal(2, "interop: network namespaces need root; run it with sudo")
	}
	var missing []string
	for _, c := range []string{"ip", "ping", "dig", "iperf3", "curl", "python3", "nft", "ss"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		fatal(2, "interop: missing %s (make interop installs them: iproute2 iputils-ping dnsutils iperf3 curl python3 nftables)", strings.Join(missing, ", "))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := daemons.ModuleRoot()
	if err != nil {
		fatal(1, "interop: %v", err)
	}
	e.out = *out
	if e.out == "" {
		e.out = filepath.Join(root, "out", "interop")
	}
	if err := os.RemoveAll(e.out); err != nil {
		fatal(1, "interop: %v", err)
	}
	fmt.Printf("building fips-go into %s/bin\n", e.out)
	gb, err := daemons.Build(ensureDir(filepath.Join(e.out, "bin")))
	if err != nil {
		fatal(1, "interop: %v", err)
	}
	e.bin = map[Impl]daemons.Binaries{G: gb, U: ub}
	for _, i := range []Impl{G, U} {
		fmt.Printf("%s (%s): %s — %s\n", i, i.Name(), e.bin[i].Fips, version(e.bin[i].Fips))
	}
	if e.format != "v0" {
		fmt.Printf("fips-go nodes run node.wire_format %s (upstream must be a next build)\n", e.format)
	}

	if ctx.Err() != nil {
		fatal(130, "interrupted")
	}
	start := time.Now()
	var done []Row
	for k, r := range rows {
		if ctx.Err() != nil {
			break
		}
		row := runRow(ctx, e, k+1, r)
		done = append(done, row)
		fmt.Printf("%2d/%d %s  %s %s: %s (%s)\n", k+1, len(rows), row.Result, row.Scenario, row.Impls, row.Figure, Seconds(row.Took))
	}
	fmt.Printf("\n%s\n", Table(done))
	failed := 0
	for _, r := range done {
		if r.Result == Fail {
			failed++
			fmt.Printf("FAIL %s %s: logs in %s\n", r.Scenario, r.Impls, r.Logs)
		}
	}
	fmt.Printf("%d rows in %s: %d failed; logs of every row under %s\n", len(done), Seconds(time.Since(start)), failed, e.out)
	switch {
	case ctx.Err() != nil:
		fmt.Println("interrupted")
		os.Exit(130)
	case failed > 0 || len(done) < len(rows):
		os.Exit(1)
	}
}

func fatal(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

func ensureDir(d string) string {
	if err := os.MkdirAll(d, 0o755); err != nil {
		fatal(1, "interop: %v", err)
	}
	return d
}

// version is the first line of `fips --version`, or why there is none.
func version(fips string) string {
	out, err := exec.Command(fips, "--version").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(--version: %v)", err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// row is one planned line of the table: body runs it and returns its
// figure, or fails the row through the rowCtx (Fatalf) or skips it
// (Skipf).
type row struct {
	scenario, impls string
	body            func(c *rowCtx) string
}

func filterRows(rows []row, re *regexp.Regexp) []row {
	var out []row
	for _, r := range rows {
		if re.MatchString(r.scenario + " " + r.impls) {
			out = append(out, r)
		}
	}
	return out
}

// rowCtx is the driver of one row: a netns.Runner whose log is the row's
// harness.log, which every namespace, process and mesh of the row is
// cleaned up by.
type rowCtx struct {
	*netns.Runner
	ctx  context.Context
	env  *env
	dir  string
	skip string
}

// errSkip marks a row that cannot run here (a kernel feature missing).
var errSkip = errors.New("skipped")

// Skipf ends the row as skipped, saying why.
func (c *rowCtx) Skipf(format string, args ...any) {
	c.skip = fmt.Sprintf(format, args...)
	c.Fatalf("%v: %s", errSkip, c.skip)
}

// check ends the row if the run was interrupted.
func (c *rowCtx) check() { c.Check(c.ctx) }

// mesh is a mesh of the row with fips-go as the default binaries and the
// nodes' configs and logs kept in the row's folder.
func (c *rowCtx) mesh(o netns.Options) *netns.Mesh {
	c.check()
	o.Binaries = c.env.bin[G]
	o.KeepLogs = c.dir
	m := netns.New(c, o)
	c.Logf("namespaces %s*, run directory %s", m.Prefix, m.Dir)
	return m
}

// node adds a node of implementation i; goOnly is YAML for fips-go nodes
// only (dataplane). An upstream node gets only upstream's sections.
func (c *rowCtx) node(m *netns.Mesh, name string, i Impl, goOnly string) *netns.Node {
	c.check()
	n := m.AddNode(name)
	n.Bin = c.env.bin[i]
	n.ExtraConfig = ExtraFor(i, goOnly)
	n.NodeConfig = NodeFor(i, c.env.format)
	c.Logf("node %s: %s (%s), %s", name, i, i.Name(), n.Bin.Fips)
	if i == U {
		if err := UpstreamKeysOnly(n.ExtraConfig); err != nil {
			c.Fatalf("interop: %s's extra config: %v", name, err)
		}
	}
	return n
}

// runRow runs one row in its own Runner: whatever it started is gone
// when it returns.
func runRow(ctx context.Context, e *env, k int, r row) Row {
	slug := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(r.scenario+"-"+r.impls), "-"), "-")
	dir := ensureDir(filepath.Join(e.out, fmt.Sprintf("%02d-%s", k, slug)))
	logf, err := os.Create(filepath.Join(dir, "harness.log"))
	if err != nil {
		fatal(1, "interop: %v", err)
	}
	defer logf.Close()
	c := &rowCtx{ctx: ctx, env: e, dir: dir}
	c.Runner = &netns.Runner{Log: func(s string) {
		fmt.Fprintf(logf, "%s %s\n", time.Now().Format("15:04:05.000"), s)
	}}
	res := Row{Scenario: r.scenario, Impls: r.impls, Logs: dir}
	start := time.Now()
	var figure string
	err = c.Run(ctx, nil, func() error {
		figure = r.body(c)
		return nil
	})
	res.Took = time.Since(start)
	switch {
	case err == nil:
		res.Result, res.Figure = Pass, figure
	case c.skip != "":
		res.Result, res.Figure = Skip, c.skip
	default:
		res.Result = Fail
		first, _, _ := strings.Cut(err.Error(), "\n")
		res.Figure = clip(first, 100)
		_ = os.WriteFile(filepath.Join(dir, "error.txt"), []byte(err.Error()+"\n"), 0o644)
	}
	fmt.Fprintf(logf, "%s %s: %s\n", time.Now().Format("15:04:05.000"), res.Result, res.Figure)
	return res
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

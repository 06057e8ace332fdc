//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/node"
)

func script(t *testing.T, shell string) string {
	t.Helper()
	code, out, errs := fipsctl(t, "", "completion", shell)
	if code != 0 || errs != "" {
		t.Fatalf("completion %s: exit %d %s", shell, code, errs)
	}
	path := filepath.Join(t.TempDir(), "fipsctl."+shell)
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompletionTreeCoversCommands: every command and subcommand fipsctl
// runs is in the completion tree, and nothing else is.
func TestCompletionTreeCoversCommands(t *testing.T) {
	var names, tree []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	byName := map[string]compCmd{}
	for _, c := range completionTree() {
		tree = append(tree, c.name)
		byName[c.name] = c
		if c.summary == "" {
			t.Errorf("%s has no summary", c.name)
		}
	}
	sort.Strings(names)
	sort.Strings(tree)
	if !slices.Equal(names, tree) {
		t.Errorf("commands %v, completion %v", names, tree)
	}
	if got := subNames(byName["show"].subs); !slices.Equal(got, showTargets) {
		t.Errorf("show: %v", got)
	}
	if got := subNames(byName["stats"].subs); !slices.Equal(got, statsTargets) {
		t.Errorf("stats: %v", got)
	}
}

// bashComplete runs the bash script's completion function on a command
// line (the last word is the one being completed) and returns COMPREPLY.
func bashComplete(t *testing.T, path, hostsDir string, words ...string) []string {
	t.Helper()
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, "'"+w+"'")
	}
	prog := "source " + path + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n" +
		"_fipsctl\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prog)
	cmd.Env = append(os.Environ(), "FIPS_ETC_DIR="+hostsDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", words, err, out)
	}
	return strings.Fields(string(out))
}

func TestBashCompletion(t *testing.T) {
	path := script(t, "bash")
	out, err := exec.Command("bash", "--norc", "--noprofile", "-c", "source "+path+" && complete -p fipsctl").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "complete -F _fipsctl fipsctl" {
		t.Fatalf("complete -p fipsctl: %v %q", err, out)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hosts"), []byte("# peers\ntest-us01 "+npubA+"\ngw "+npubB+"\nbad line here\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "keys"), 0o755)
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"fipsctl", "st"}, []string{"stats"}},
		{[]string{"fipsctl", "-s", "/run/fips/control.sock", "sh"}, []string{"show"}},
		{[]string{"fipsctl", "--"}, []string{"--socket", "--version", "--help"}},
		{[]string{"fipsctl", "show", "id"}, []string{"identity-cache"}},
		{[]string{"fipsctl", "show", "status", ""}, nil},
		{[]string{"fipsctl", "stats", ""}, statsTargets},
		{[]string{"fipsctl", "stats", "history", "p"}, []string{"peer_count", "parent_switches", "packets_in", "packets_out"}},
		{[]string{"fipsctl", "stats", "history", "srtt_ms", "--"}, []string{"--peer", "--window", "--granularity", "--plot", "--help"}},
		{[]string{"fipsctl", "stats", "history", "srtt_ms", "--peer", ""}, []string{"test-us01", "gw"}},
		{[]string{"fipsctl", "stats", "history", "--granularity", "1m", "srtt_ms", "--window", ""}, []string{"1m", "10m", "1h", "24h"}},
		{[]string{"fipsctl", "stats", "history-all-peers", "s"}, []string{"srtt_ms"}},
		{[]string{"fipsctl", "disconnect", "t"}, []string{"test-us01"}},
		{[]string{"fipsctl", "connect", "gw", "192.0.2.1:2121", "t"}, []string{"tcp", "tor"}},
		{[]string{"fipsctl", "probe", "gw", "--"}, []string{"--json", "--timeout", "--help"}},
		{[]string{"fipsctl", "keygen", "-s", "-d", dir + "/k"}, []string{dir + "/keys"}},
		{[]string{"fipsctl", "completion", ""}, []string{"bash", "zsh"}},
		{[]string{"fipsctl", "bpf", "stats", "--j"}, []string{"--json"}},
	} {
		if got := bashComplete(t, path, dir, tc.words...); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.words, got, tc.want)
		}
	}
}

// TestZshCompletion: the zsh script parses (zsh -n) and, run with zsh's
// completion builtins stubbed to print their candidates, offers what the
// bash one does.
func TestZshCompletion(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatalf("zsh not found (apt-get install zsh): %v", err)
	}
	path := script(t, "zsh")
	if out, err := exec.Command(zsh, "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hosts"), []byte("test-us01 "+npubA+"\n"), 0o644)
	complete := func(words ...string) []string {
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "compadd() { [[ $1 == -- ]] && shift; print -rl -- \"$@\" }\n" +
			"_describe() { local -a c; c=(\"${(@P)${@[-1]}}\"); print -rl -- ${c%%:*} }\n" +
			"_files() { print -r -- FILES \"$@\" }\n" +
			"words=(" + strings.Join(quoted, " ") + ")\nCURRENT=${#words}\nsource " + path + "\n"
		cmd := exec.Command(zsh, "-f", "-c", prog)
		cmd.Env = append(os.Environ(), "FIPS_ETC_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", words, err, out)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"fipsctl", "-s", "/tmp/x", ""}, append(subNames(completionTree()), "help")},
		{[]string{"fipsctl", "-s", ""}, []string{"FILES"}},
		{[]string{"fipsctl", "stats", ""}, statsTargets},
		{[]string{"fipsctl", "stats", "history", "srtt_ms", "--peer", ""}, []string{"test-us01"}},
		{[]string{"fipsctl", "stats", "history", "--granularity", ""}, []string{"1s", "1m"}},
		{[]string{"fipsctl", "stats", "all-history", "-"}, []string{"--peer", "--window", "--granularity", "--plot", "-h", "--help"}},
		{[]string{"fipsctl", "connect", "a", "b", ""}, []string{"udp", "tcp", "tor", "nym", "ethernet"}},
		{[]string{"fipsctl", "keygen", "-d", ""}, []string{"FILES", "-/"}},
	} {
		if got := complete(tc.words...); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.words, got, tc.want)
		}
	}
}

// TestEveryDaemonCommandHasAFipsctlCommand: every control command a
// fips-go node answers is sent by some fipsctl invocation.
func TestEveryDaemonCommandHasAFipsctlCommand(t *testing.T) {
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Options{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	real := ctl.NewRegistry()
	n.Register(real)

	d := &daemon{}
	reg := ctl.NewRegistry()
	for _, name := range real.Commands() {
		reg.Register(name, func(_ context.Context, p json.RawMessage) (any, error) {
			d.record(name, p)
			switch name {
			case "probe_start":
				return map[string]any{"probe_id": 1, "budget_ms": 100}, nil
			case "probe_poll":
				return map[string]any{"state": "running", "report": map[string]any{}}, nil
			}
			return map[string]any{}, nil
		})
	}
	d.path = serve(t, reg)
	invocations := [][]string{{"acl", "show"}, {"connect", npubA, "192.0.2.1:2121", "udp"}, {"disconnect", npubA},
		{"bpf", "stats"}, {"probe", npubA, "--timeout", "1"}, {"stats", "list"}, {"stats", "metrics"}, {"stats", "peers"},
		{"stats", "history", "mesh_size"}, {"stats", "all-history"}, {"stats", "history-all-peers", "srtt_ms"}}
	for _, target := range showTargets {
		invocations = append(invocations, []string{"show", target})
	}
	for _, args := range invocations {
		fipsctl(t, "", append([]string{"-s", d.path}, args...)...)
	}
	seen := map[string]bool{}
	for _, r := range d.reqs {
		seen[strings.Fields(r)[0]] = true
	}
	for _, name := range real.Commands() {
		if !seen[name] {
			t.Errorf("no fipsctl command sends %s", name)
		}
	}
}

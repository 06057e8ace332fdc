package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseHelp(t *testing.T) {
	h := parseHelp(`usage: fipsctl keygen [-d DIR] [-f]

Writes a keypair.
Second line.

commands:
  show       query the daemon
  acl        show the ACL

options:
  -V	print version and exit
  -d string
    	output directory (default "/etc/fips")
  -dir string
    	output directory (long form) (default "/etc/fips")
  -install-service
    	Windows: register
  -version
    	print version and exit (long form)
  -wide
    	a long flag alone (long form)
`)
	if !reflect.DeepEqual(h.usages, []string{"fipsctl keygen [-d DIR] [-f]"}) {
		t.Errorf("usages %q", h.usages)
	}
	if !reflect.DeepEqual(h.text, []string{"Writes a keypair. Second line."}) {
		t.Errorf("text %q", h.text)
	}
	if want := []subcommand{{name: "show", summary: "query the daemon"}, {name: "acl", summary: "show the ACL"}}; !reflect.DeepEqual(h.commands, want) {
		t.Errorf("commands %+v", h.commands)
	}
	want := []flagDef{
		{names: []string{"V", "version"}, usage: "print version and exit"},
		{names: []string{"d", "dir"}, arg: "string", usage: `output directory (default "/etc/fips")`},
		{names: []string{"install-service"}, usage: "Windows: register"},
		{names: []string{"wide"}, usage: "a long flag alone"},
	}
	if !reflect.DeepEqual(h.flags, want) {
		t.Errorf("flags\n got %+v\nwant %+v", h.flags, want)
	}
}

// TestParseHandAlignedHelp: a usage written by hand, as fipstop's is.
func TestParseHandAlignedHelp(t *testing.T) {
	h := parseHelp(`usage: fipstop [-s SOCKET] [--gateway-socket PATH] [-r SECONDS] [-V]

  -s, --socket PATH        daemon control socket (default: as fipsctl)
  --gateway-socket PATH    fips-gateway control socket
  -r, --refresh SECONDS    poll interval (default 2)
  -V, --version            print the version
  --json	one JSON document

Press ? in fipstop for the keys of the current tab.
`)
	want := []flagDef{
		{names: []string{"s", "socket"}, arg: "PATH", usage: "daemon control socket (default: as fipsctl)"},
		{names: []string{"gateway-socket"}, arg: "PATH", usage: "fips-gateway control socket"},
		{names: []string{"r", "refresh"}, arg: "SECONDS", usage: "poll interval (default 2)"},
		{names: []string{"V", "version"}, usage: "print the version"},
		{names: []string{"json"}, usage: "one JSON document"},
	}
	if !reflect.DeepEqual(h.flags, want) {
		t.Errorf("flags\n got %+v\nwant %+v", h.flags, want)
	}
	if !reflect.DeepEqual(h.text, []string{"Press ? in fipstop for the keys of the current tab."}) {
		t.Errorf("text %q", h.text)
	}
}

func TestEsc(t *testing.T) {
	for in, want := range map[string]string{
		`-c FILE`:        `\-c FILE`,
		`a\b`:            `a\eb`,
		`.fips names`:    `\&.fips names`,
		`'quoted'`:       `\&'quoted'`,
		`status|…`:       `status|\[u2026]`,
		`say "hi"`:       `say \(dqhi\(dq`,
		"two\nlines":     "two lines",
		`plain words 42`: `plain words 42`,
	} {
		if got := esc(in); got != want {
			t.Errorf("esc(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSummary(t *testing.T) {
	for doc, want := range map[string]string{
		"Command fips is the FIPS mesh network daemon: it joins.\n":   "the FIPS mesh network daemon",
		"Command fipsctl controls and inspects a FIPS node: keys.\n":  "controls and inspects a FIPS node",
		"Command fipstop shows a live view. It polls the daemon.\n":   "shows a live view",
		"Command fips-gateway bridges LAN hosts to the mesh.\n\nMore": "bridges LAN hosts to the mesh",
	} {
		name := strings.Fields(doc)[1]
		if got := summary(name, doc); got != want {
			t.Errorf("summary(%q) = %q, want %q", doc, got, want)
		}
	}
}

// TestManPages generates the pages for every command under cmd/ twice,
// checks that they are identical, that each documents every flag its
// --help lists (and every subcommand), and that man(1) renders each
// without a warning.
func TestManPages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every command")
	}
	src, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names, err := mainPackages(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 2 {
		t.Fatalf("main packages under cmd/: %v, want at least fips and fipsctl", names)
	}
	date := time.Unix(1764547200, 0).UTC()
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		// No names: the generator finds the commands itself.
		if err := writeManPages(ctx, manOptions{out: d, version: "1.2.3~test", date: date, src: src,
			extra: "cmd/fips/packaging/man"}); err != nil {
			t.Fatal(err)
		}
	}
	bins := t.TempDir()
	for _, n := range names {
		a, err := os.ReadFile(filepath.Join(dirs[0], n+".1"))
		if err != nil {
			t.Fatalf("no page for %s: %v", n, err)
		}
		b, _ := os.ReadFile(filepath.Join(dirs[1], n+".1"))
		if string(a) != string(b) {
			t.Errorf("%s.1 differs between two runs", n)
		}
		page := string(a)
		for _, want := range []string{".TH " + strings.ToUpper(esc(n)) + ` 1 "2025-12-01" "fips-go 1.2.3~test"`,
			".SH NAME\n" + esc(n) + ` \- `, ".SH SYNOPSIS\n", ".SH DESCRIPTION\n", ".SH SEE ALSO\n"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s.1 lacks %q", n, want)
			}
		}
		for _, o := range names {
			if o != n && !strings.Contains(page, ".BR "+esc(o)+" (1)") {
				t.Errorf("%s.1 does not refer to %s(1)", n, o)
			}
		}

		// Every flag and subcommand the binary's help shows is on the page.
		build := exec.Command("go", "build", "-o", filepath.Join(bins, n), "./cmd/"+n)
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", n, err, out)
		}
		h, err := commandHelp(ctx, filepath.Join(bins, n), bins)
		if err != nil {
			t.Fatal(err)
		}
		checkFlags := func(where string, fl []flagDef) {
			for _, f := range fl {
				for _, fn := range f.names {
					dash := `\-\-`
					if len(fn) == 1 {
						dash = `\-`
					}
					if !strings.Contains(page, dash+esc(fn)) {
						t.Errorf("%s.1: %s flag %s missing", n, where, fn)
					}
				}
			}
		}
		checkFlags("top-level", h.flags)
		for _, c := range h.commands {
			if !strings.Contains(page, `.SS "`+esc(c.name)+`"`) {
				t.Errorf("%s.1: subcommand %s missing", n, c.name)
			}
			checkFlags(c.name, c.help.flags)
		}
		if _, err := os.Stat(filepath.Join(src, "cmd/fips/packaging/man", n+".sections")); err == nil &&
			!strings.Contains(page, "Hand-written sections of "+n+"(1)") {
			t.Errorf("%s.1 lacks its .sections file", n)
		}

		if _, err := exec.LookPath("man"); err != nil {
			t.Fatal("man is missing (apt-get install man-db): it checks the pages for groff warnings")
		}
		{
			c := exec.Command("man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", filepath.Join(dirs[0], n+".1"))
			c.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "MANWIDTH=80")
			var warn strings.Builder
			c.Stdout, c.Stderr = io.Discard, &warn
			if err := c.Run(); err != nil || strings.TrimSpace(warn.String()) != "" {
				t.Errorf("man --warnings %s.1: %v\n%s", n, err, warn.String())
			}
		}
	}
}

func TestEpochTime(t *testing.T) {
	if _, err := epochTime("12"); err == nil {
		t.Error("an epoch before 1980 was accepted")
	}
	if _, err := epochTime("x"); err == nil {
		t.Error("a non-number was accepted")
	}
	if got, err := epochTime("1764547200"); err != nil || !got.Equal(time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("epochTime = %v, %v", got, err)
	}
}

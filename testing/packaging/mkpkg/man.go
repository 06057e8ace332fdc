package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

type manOptions struct {
	out, version string
	date         time.Time
	src          string // repository root
	extra        string // NAME.sections files, relative to src
	bin          string // the commands, built for this machine; empty: build them
	names        []string
}

var errNoCommands = errors.New("no main packages under cmd/")

// writeManPages builds each command for this machine, runs it with --help
// (and, when it lists subcommands, each subcommand with --help), and
// writes NAME.1: NAME and DESCRIPTION from the package doc comment,
// SYNOPSIS, OPTIONS and COMMANDS from the help output, then the
// hand-written NAME.sections (FILES, ENVIRONMENT, …) when there is one,
// and SEE ALSO naming the other commands.
func writeManPages(ctx context.Context, o manOptions) error {
	names := o.names
	if len(names) == 0 {
		var err error
		if names, err = mainPackages(ctx, o.src); err != nil {
			return err
		}
	}
	sort.Strings(names)
	tmp, err := os.MkdirTemp("", "mkpkg-man")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if o.bin == "" {
		bin = tmp
		args := []string{"build", "-o", tmp + string(filepath.Separator)}
		for _, n := range names {
			args = append(args, "./cmd/"+n)
		}
		build := exec.CommandContext(ctx, "go", args...)
		build.Dir = o.src
		// Pages describe the commands, not a platform: build for this
		// machine even when the caller cross-compiles.
		build.Env = append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %w\n%s", err, b)
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		doc, err := packageDoc(filepath.Join(o.src, "cmd", n))
		if err != nil {
			return err
		}
		h, err := commandHelp(ctx, filepath.Join(bin, n), tmp)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		extra, err := os.ReadFile(filepath.Join(o.src, o.extra, n+".sections"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		var others []string
		for _, m := range names {
			if m != n {
				others = append(others, m)
			}
		}
		page := renderPage(n, o.version, o.date, doc, h, string(extra), others)
		if err := os.WriteFile(filepath.Join(o.out, n+".1"), []byte(page), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// mainPackages names the directories under cmd/ that hold a command.
func mainPackages(ctx context.Context, src string) ([]string, error) {
	c := exec.CommandContext(ctx, "go", "list", "-f", `{{if eq .Name "main"}}{{.Dir}}{{end}}`, "./cmd/...")
	c.Dir = src
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./cmd/...: %w", err)
	}
	var names []string
	for _, l := range strings.Fields(string(out)) {
		names = append(names, filepath.Base(l))
	}
	if len(names) == 0 {
		return nil, errNoCommands
	}
	return names, nil
}

// packageDoc is the doc comment of the (non-test) package in dir.
func packageDoc(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", err
		}
		if af.Doc != nil {
			return af.Doc.Text(), nil
		}
	}
	return "", fmt.Errorf("%s: no package doc comment (\"// Command NAME ...\"): the man page's NAME comes from it", dir)
}

type flagDef struct {
	names []string // short form first
	arg   string   // "string", "uint", …; empty for a boolean
	usage string
}

type subcommand struct {
	name, summary string
	help          *helpText
}

type helpText struct {
	usages   []string // after "usage: "
	text     []string // paragraphs
	flags    []flagDef
	commands []subcommand
}

// commandHelp runs bin --help, and bin SUB --help for each subcommand its
// help lists.
func commandHelp(ctx context.Context, bin, dir string) (*helpText, error) {
	h, err := runHelp(ctx, bin, dir)
	if err != nil {
		return nil, err
	}
	for i, c := range h.commands {
		sh, err := runHelp(ctx, bin, dir, c.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		h.commands[i].help = sh
	}
	return h, nil
}

func runHelp(ctx context.Context, bin, dir string, args ...string) (*helpText, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, append(args, "--help")...)
	c.Dir = dir
	c.Env = append(os.Environ(), "HOME="+dir, "TERM=dumb")
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s --help did not exit: %w", strings.Join(append([]string{bin}, args...), " "), ctx.Err())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) { // a non-zero exit after printing usage is fine
		return nil, err
	}
	h := parseHelp(out.String())
	if len(h.usages) == 0 && len(h.flags) == 0 {
		return nil, fmt.Errorf("--help printed neither a usage line nor flags:\n%s", out.String())
	}
	return h, nil
}

var (
	flagLine = regexp.MustCompile(`^  -([^-\s]\S*)(?: (\S+))?(?:\t(.*))?$`)
	flagCont = regexp.MustCompile(`^    \t(.*)$`)
	cmdLine  = regexp.MustCompile(`^\s+(\S+)\s+(\S.*)$`)
	cmdWord  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	// "  -s, --socket PATH   text" and "  --name ARG   text", as a
	// hand-written usage lays options out.
	gnuLine = regexp.MustCompile(`^ {1,8}(-[A-Za-z0-9](?:, --[A-Za-z0-9][A-Za-z0-9-]*)?|--[A-Za-z0-9][A-Za-z0-9-]*)(?: ([A-Z][A-Z0-9_]*|<[^>]+>))?(?:\s{2,}|\t)(\S.*)$`)
)

// parseHelp reads the shape Go's flag package and our commands print:
// "usage: ..." lines, free text, a "commands:" list of "  name  summary",
// flag.PrintDefaults blocks and hand-aligned "  -s, --socket PATH  text"
// option lines.
func parseHelp(s string) *helpText {
	h := &helpText{}
	var para []string
	flush := func() {
		if len(para) > 0 {
			h.text = append(h.text, strings.Join(para, " "))
			para = nil
		}
	}
	inCommands := false
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(l)
		low := strings.ToLower(t)
		switch {
		case t == "":
			flush()
			inCommands = false
		case strings.HasPrefix(low, "usage:") && len(t) > len("usage:"):
			flush()
			h.usages = append(h.usages, strings.TrimSpace(t[len("usage:"):]))
		case strings.HasPrefix(low, "usage of ") && strings.HasSuffix(t, ":"):
			flush()
		case low == "commands:":
			flush()
			inCommands = true
		case low == "options:" || low == "flags:":
			flush()
		case inCommands && cmdLine.MatchString(l):
			m := cmdLine.FindStringSubmatch(l)
			h.commands = append(h.commands, subcommand{name: m[1], summary: m[2]})
		case flagLine.MatchString(l):
			flush()
			m := flagLine.FindStringSubmatch(l)
			h.flags = append(h.flags, flagDef{names: []string{m[1]}, arg: m[2], usage: m[3]})
		case gnuLine.MatchString(l):
			flush()
			m := gnuLine.FindStringSubmatch(l)
			var names []string
			for _, n := range strings.Split(m[1], ", ") {
				names = append(names, strings.TrimLeft(n, "-"))
			}
			h.flags = append(h.flags, flagDef{names: names, arg: m[2], usage: strings.TrimSpace(m[3])})
		case flagCont.MatchString(l) && len(h.flags) > 0:
			f := &h.flags[len(h.flags)-1]
			f.usage = strings.TrimSpace(f.usage + " " + flagCont.FindStringSubmatch(l)[1])
		default:
			para = append(para, t)
		}
	}
	flush()
	h.flags = mergeLongForms(h.flags)
	return h
}

// mergeLongForms folds "-config ... (long form)" into the "-c" before it:
// our commands define each short flag and its long form as two flags.
func mergeLongForms(fl []flagDef) []flagDef {
	var out []flagDef
	for _, f := range fl {
		const mark = "(long form)"
		if strings.Contains(f.usage, mark) {
			merged := false
			for i := range out {
				s := out[i].names[0]
				if len(s) == 1 && len(out[i].names) == 1 && out[i].arg == f.arg &&
					strings.EqualFold(s, f.names[0][:1]) {
					out[i].names = append(out[i].names, f.names[0])
					merged = true
					break
				}
			}
			if merged {
				continue
			}
			f.usage = strings.TrimSpace(strings.Replace(f.usage, mark, "", 1))
		}
		out = append(out, f)
	}
	return out
}

func renderPage(name, version string, date time.Time, doc string, h *helpText, extra string, others []string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w(`.\" Generated by testing/packaging/mkpkg from the package doc comment and --help of cmd/%s.`, name)
	w(`.TH %s 1 "%s" "fips-go %s" "User Commands"`, strings.ToUpper(esc(name)), date.Format("2006-01-02"), esc(version))
	w(".SH NAME")
	w(`%s \- %s`, esc(name), esc(summary(name, doc)))

	w(".SH SYNOPSIS")
	for i, u := range h.usages {
		if i > 0 {
			w(".br")
		}
		writeUsage(&b, name, u)
	}
	w(".SH DESCRIPTION")
	// "Command fips is ..." reads as "fips is ..." on its own page.
	b.WriteString(strings.TrimPrefix(renderDoc(strings.TrimPrefix(doc, "Command ")), ".PP\n"))
	for _, p := range h.text {
		w(".PP")
		w("%s", esc(p))
	}
	if len(h.flags) > 0 {
		w(".SH OPTIONS")
		writeFlags(&b, h.flags)
	}
	if len(h.commands) > 0 {
		w(".SH COMMANDS")
		for _, c := range h.commands {
			w(`.SS "%s"`, esc(c.name))
			w("%s", esc(sentence(c.summary)))
			if c.help == nil {
				continue
			}
			for _, u := range c.help.usages {
				w(".PP")
				writeUsage(&b, name, u)
			}
			for _, p := range c.help.text {
				w(".PP")
				w("%s", esc(p))
			}
			writeFlags(&b, c.help.flags)
		}
	}
	if extra != "" {
		b.WriteString(strings.TrimRight(extra, "\n") + "\n")
	}
	if len(others) > 0 {
		w(".SH SEE ALSO")
		for i, o := range others {
			sep := ","
			if i == len(others)-1 {
				sep = ""
			}
			w(".BR %s (1)%s", esc(o), sep)
		}
	}
	return b.String()
}

// writeUsage sets the command words in bold and the rest in roman.
func writeUsage(b *strings.Builder, name, u string) {
	words := strings.Fields(u)
	n := 0
	for n < len(words) && (n == 0 && words[0] == name || n > 0 && cmdWord.MatchString(words[n])) {
		n++
	}
	if n == 0 {
		fmt.Fprintf(b, "%s\n", esc(u))
		return
	}
	fmt.Fprintf(b, ".B \"%s\"\n", esc(strings.Join(words[:n], " ")))
	if n < len(words) {
		// Alternatives (a|b|c) get break points after each bar: a long
		// list of them is otherwise one word troff cannot fit.
		fmt.Fprintf(b, "%s\n", strings.ReplaceAll(esc(strings.Join(words[n:], " ")), "|", `|\:`))
	}
}

func writeFlags(b *strings.Builder, fl []flagDef) {
	for _, f := range fl {
		var parts []string
		for _, n := range f.names {
			if len(n) == 1 {
				parts = append(parts, `\-`+esc(n))
			} else {
				parts = append(parts, `\-\-`+esc(n))
			}
		}
		b.WriteString(".TP\n")
		line := ".BR " + strings.Join(parts, ` ", " `)
		if f.arg != "" {
			line += ` " \fI` + esc(f.arg) + `\fR"`
		}
		if len(parts) == 1 && f.arg == "" {
			line = ".B " + parts[0]
		}
		b.WriteString(line + "\n")
		b.WriteString(esc(sentence(f.usage)) + "\n")
	}
}

// summary is the NAME line's text: the doc comment's first sentence,
// without "Command NAME" and "is", up to a colon.
func summary(name, doc string) string {
	s := strings.Join(strings.Fields(doc), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, ".")
	if i := strings.Index(s, ": "); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(s, "Command "+name+" ")
	s = strings.TrimPrefix(s, "is ")
	return s
}

// sentence capitalises s and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	first, _, _ := strings.Cut(s, " ")
	// "fips-gateway control socket" starts with a name: leave it be.
	if c := s[0]; c >= 'a' && c <= 'z' && !strings.ContainsAny(first, "-_./") {
		s = string(c-'a'+'A') + s[1:]
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, ")") {
		s += "."
	}
	return s
}

// renderDoc turns a Go doc comment into man paragraphs.
func renderDoc(doc string) string {
	var p comment.Parser
	d := p.Parse(doc)
	var b strings.Builder
	var blocks func([]comment.Block, bool)
	blocks = func(bl []comment.Block, inList bool) {
		for _, blk := range bl {
			switch x := blk.(type) {
			case *comment.Paragraph:
				if !inList {
					b.WriteString(".PP\n")
				}
				b.WriteString(escLines(texts(x.Text)) + "\n")
			case *comment.Heading:
				b.WriteString(`.SS "` + esc(texts(x.Text)) + "\"\n")
			case *comment.Code:
				b.WriteString(".PP\n.RS 4\n.nf\n" + escLines(strings.TrimRight(x.Text, "\n")) + "\n.fi\n.RE\n")
			case *comment.List:
				for i, it := range x.Items {
					if it.Number != "" {
						fmt.Fprintf(&b, ".IP %d. 4\n", i+1)
					} else {
						b.WriteString(".IP \\(bu 2\n")
					}
					blocks(it.Content, true)
				}
				b.WriteString(".PP\n")
			}
		}
	}
	blocks(d.Content, false)
	return strings.TrimSuffix(b.String(), ".PP\n")
}

func texts(ts []comment.Text) string {
	var b strings.Builder
	for _, t := range ts {
		switch x := t.(type) {
		case comment.Plain:
			b.WriteString(string(x))
		case comment.Italic:
			b.WriteString(string(x))
		case *comment.Link:
			b.WriteString(texts(x.Text))
		case *comment.DocLink:
			b.WriteString(texts(x.Text))
		}
	}
	return b.String()
}

// esc makes text safe in a roff text line or a quoted macro argument:
// backslashes and hyphens (as minus signs, what a reader types) escaped,
// non-ASCII as \[uXXXX], double quotes as \(dq.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r == '"':
			b.WriteString(`\(dq`)
		case r == '\n':
			b.WriteString(" ")
		case r > 0x7e || r < 0x20:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	t := b.String()
	if strings.HasPrefix(t, ".") || strings.HasPrefix(t, "'") {
		t = `\&` + t
	}
	return t
}

// escLines escapes each line of s and keeps the line breaks.
func escLines(s string) string {
	l := strings.Split(s, "\n")
	for i := range l {
		l[i] = esc(l[i])
	}
	return strings.Join(l, "\n")
}

// Command mkpkg is the part of `make deb`, `make tarball` and `make zip`
// that the shell does badly: `mkpkg man` writes a man page for each command
// under cmd/ from its package doc comment and what its --help prints (its
// flag definitions), and `mkpkg zip` writes a byte-reproducible ZIP archive
// of a directory. It builds and runs only the repository's own commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "mkpkg: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: mkpkg man|zip [flags]")
	}
	switch args[0] {
	case "man":
		fs := flag.NewFlagSet("mkpkg man", flag.ContinueOnError)
		fs.SetOutput(stderr)
		out := fs.String("o", "", "output directory for NAME.1")
		version := fs.String("version", "", "version shown in each page's footer")
		epoch := fs.String("epoch", "", "SOURCE_DATE_EPOCH: the page date")
		src := fs.String("src", ".", "repository root (holds cmd/)")
		extra := fs.String("extra", "cmd/fips/packaging/man", "directory of hand-written NAME.sections files")
		bin := fs.String("bin", "", "directory of this machine's builds of the commands (default: build them)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" || *version == "" {
			return errors.New("man: -o and -version are required")
		}
		date, err := epochTime(*epoch)
		if err != nil {
			return err
		}
		return writeManPages(ctx, manOptions{out: *out, version: *version, date: date, src: *src,
			extra: *extra, bin: *bin, names: fs.Args()})
	case "zip":
		fs := flag.NewFlagSet("mkpkg zip", flag.ContinueOnError)
		fs.SetOutput(stderr)
		out := fs.String("o", "", "the archive to write")
		dir := fs.String("C", "", "directory whose contents go into the archive")
		epoch := fs.String("epoch", "", "SOURCE_DATE_EPOCH: every entry's time")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" || *dir == "" {
			return errors.New("zip: -o and -C are required")
		}
		t, err := epochTime(*epoch)
		if err != nil {
			return err
		}
		return writeZip(*out, *dir, t)
	default:
		return fmt.Errorf("unknown command %q (man, zip)", args[0])
	}
}

func epochTime(s string) (time.Time, error) {
	if s == "" {
		s = os.Getenv("SOURCE_DATE_EPOCH")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 315532800 { // 1980-01-01, the earliest ZIP time
		return time.Time{}, fmt.Errorf("epoch %q: want seconds since 1970, from 1980 on", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

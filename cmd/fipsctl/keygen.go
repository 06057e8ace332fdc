package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/identity"
)

func runKeygen(e *env, args []string) error {
	fs := newFlags(e, "keygen", "[-d DIR] [-f] [-s]")
	dir := fs.String("d", config.SystemConfigDir(), "output directory for fips.key and fips.pub")
	fs.StringVar(dir, "dir", config.SystemConfigDir(), "output directory (long form)")
	force := fs.Bool("f", false, "overwrite existing key files")
	fs.BoolVar(force, "force", false, "overwrite existing key files (long form)")
	toStdout := fs.Bool("s", false, "print nsec and npub to stdout instead of writing files")
	fs.BoolVar(toStdout, "stdout", false, "print to stdout (long form)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: fmt.Sprintf("unexpected argument '%s' found", fs.Arg(0)), usage: "keygen " + fs.synopsis}
	}
	id, err := identity.Generate(nil)
	if err != nil {
		return err
	}
	if *toStdout {
		fmt.Fprintln(e.stdout, id.Secret().Nsec())
		fmt.Fprintln(e.stdout, id.Npub())
		return nil
	}
	keyPath, pubPath := identity.KeyPaths(*dir)
	// Lstat, not Stat: a dangling symlink is still something we would act on.
	if _, err := os.Lstat(keyPath); err == nil && !*force {
		return sentence(fmt.Sprintf("%v: %s\nUse --force to overwrite.", identity.ErrKeyFileExists, keyPath))
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("cannot create directory %s: %w", *dir, err)
	}
	if err := identity.WriteKeyFile(keyPath, id.Secret()); err != nil {
		return fmt.Errorf("failed to write key file: %w", err)
	}
	// The secret is on disk already: a failed fips.pub is a warning, not a
	// failed keygen.
	if err := identity.WritePubFile(pubPath, id.PublicKey()); err != nil {
		fmt.Fprintf(e.stderr, "warning: failed to write pub file: %v\n", err)
	}
	fmt.Fprintln(e.stderr, id.Npub())
	fmt.Fprintf(e.stderr, "Key files written to: %s/\n\n", *dir)
	fmt.Fprintln(e.stderr, "NOTE: Set 'node.identity.persistent: true' in fips.yaml")
	fmt.Fprintln(e.stderr, "      or these keys will be overwritten on next daemon start.")
	return nil
}

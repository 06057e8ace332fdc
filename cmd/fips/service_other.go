//go:build !windows

package main

import (
	"errors"
	"io"
)

// errNoService is what the Windows service flags say on other systems.
var errNoService = errors.New("--install-service, --uninstall-service and --service are Windows only; " +
	"on Linux use the fips.service systemd unit, on macOS the com.fips.daemon launchd job (docs/packaging.md)")

func serviceCommand(serviceFlags, string, io.Writer, io.Writer) error { return errNoService }

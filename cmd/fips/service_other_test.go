//go:build !windows

package main

import (
	"bytes"
	"strings"
	"testing"
)

// The Windows service flags parse everywhere and fail with a pointer to the
// platform's service manager, before any daemon starts.
func TestServiceFlagsElsewhere(t *testing.T) {
	for _, f := range []string{"--install-service", "--uninstall-service", "--service"} {
		var out, errb bytes.Buffer
		if code := run([]string{f}, &out, &errb); code != 1 {
			t.Errorf("fips %s exited %d, want 1", f, code)
		}
		if msg := errb.String(); !strings.Contains(msg, "Windows only") || !strings.Contains(msg, "fips.service") {
			t.Errorf("fips %s said %q", f, msg)
		}
	}
}

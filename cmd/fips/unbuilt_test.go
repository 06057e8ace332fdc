package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/native"
)

// TestWarnUnbuilt: an upstream configuration enabling the native API
// starts with one warning naming the key where the API is not built
// (Windows); elsewhere, and without it, nothing is said.
func TestWarnUnbuilt(t *testing.T) {
	cfg, _, err := config.LoadBytes("fips.yaml", []byte("node:\n  native_api:\n    enabled: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	warnUnbuilt(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	got := buf.String()
	if native.Supported && got != "" {
		t.Errorf("enabled, supported: logged %q", got)
	}
	if !native.Supported && (strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "node.native_api.enabled: the native datagram API is not supported on this platform")) {
		t.Errorf("enabled: logged %q", got)
	}
	off, _, err := config.LoadBytes("fips.yaml", []byte("node:\n  native_api:\n    enabled: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	warnUnbuilt(off, slog.New(slog.NewTextHandler(&buf, nil)))
	if buf.Len() != 0 {
		t.Errorf("disabled: logged %q", buf.String())
	}
}

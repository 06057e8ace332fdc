package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadBytes: any input either loads (and then validates and lints
// without panicking) or fails with *Errors only.
func FuzzLoadBytes(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "~", "[]", "node:\n  discovery: {ttl: 3, nostr: {enabled: true}}\n",
		"transports:\n  udp:\n    a: {}\n    b: {bind_addr: x}\n",
		"transports: {ethernet: {}}", "a: &a [*a]\nnode: *a\n", "node: {limits: {max_peers: 0x}}",
		"peers: [{npub: x, addresses: [{transport: udp/a, addr: nat}]}]",
		"gateway: {pool: p, lan_interface: l, port_forwards: [{listen_port: 1, proto: tcp, target: \"[::1]:1\"}]}",
		"node:\n  a: 1\n b: 2\n", "---\n---\n", "\t", "? [a]\n: b\n", "node: {<<: {x: 1}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := LoadBytes("fuzz.yaml", data)
		if err != nil {
			if c != nil {
				t.Fatal("config and error")
			}
			flatten(t, err)
			var e *Error
			if !errors.As(err, &e) || e.File != "fuzz.yaml" {
				t.Fatalf("untyped or unnamed error: %v", err)
			}
			return
		}
		if c == nil {
			t.Fatal("no config and no error")
		}
		if err := c.Validate(); err != nil {
			flatten(t, err)
		}
		c.Lint()
		c.EstablishedHandshakeBucket()
	})
}

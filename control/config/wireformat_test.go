package config

import (
	"errors"
	"strings"
	"testing"
)

// TestWireFormatKeys: node.wire_format and peers[].wire_format
// (fips-go additions, issue 30) and node.disable_routing (upstream
// next's): defaults, values, refusals naming the key, the profile
// derivation (leaf wins), and the lint warnings where v1 cannot run.
func TestWireFormatKeys(t *testing.T) {
	c, _ := mustLoad(t, "node: {}\n")
	if c.Node.WireFormat != "" || c.Node.DisableRouting || c.Node.Profile() != "full" {
		t.Fatalf("defaults %q %v %q", c.Node.WireFormat, c.Node.DisableRouting, c.Node.Profile())
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c, _ = mustLoad(t, `node:
  wire_format: auto
  disable_routing: true
peers:
  - npub: `+validNpub+`
    wire_format: v1
    addresses: [{transport: udp, addr: "192.0.2.1:2121"}]
`)
	if c.Node.WireFormat != WireAuto || c.Peers[0].WireFormat != WireV1 || c.Node.Profile() != "non-routing" {
		t.Fatalf("got %q %q %q", c.Node.WireFormat, c.Peers[0].WireFormat, c.Node.Profile())
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Node.LeafOnly = true
	if c.Node.Profile() != "leaf" {
		t.Errorf("leaf_only with disable_routing: %q, want leaf", c.Node.Profile())
	}
	for _, y := range []string{
		"node: {wire_format: v2}\n",
		"node: {wire_format: V1}\n",
		"peers:\n  - npub: " + validNpub + "\n    wire_format: next\n    addresses: [{transport: udp, addr: \"192.0.2.1:2121\"}]\n",
	} {
		c, _ := mustLoad(t, y)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: valid", y)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v does not wrap ErrInvalid", y, err)
		}
		errs := flatten(t, err)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "wire_format") || !strings.Contains(errs[0].Error(), "or auto") {
			t.Errorf("%s: %v", y, errs)
		}
	}
	c, _ = mustLoad(t, `node:
  wire_format: v1
transports:
  udp: {bind_addr: "0.0.0.0:2121"}
  tcp: {bind_addr: "0.0.0.0:8443"}
peers:
  - npub: `+validNpub+`
    addresses: [{transport: tcp, addr: "192.0.2.1:8443"}]
`)
	// Every transport carries v1 links now: nothing to warn about.
	if lint := warningsText(c.Lint()); strings.Contains(lint, "wire_format") {
		t.Errorf("v1 over TCP linted:\n%s", lint)
	}
	c, _ = mustLoad(t, "node: {disable_routing: true}\n")
	if lint := warningsText(c.Lint()); !strings.Contains(lint, "node.disable_routing") {
		t.Errorf("disable_routing on a v0 node not linted:\n%s", lint)
	}
}

func warningsText(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.String())
		b.WriteByte('\n')
	}
	return b.String()
}

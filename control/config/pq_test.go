package config

import (
	"strings"
	"testing"
)

// TestPQKeys: node.session.pq, node.session.pq_timeout_ms and peers[].pq
// (fips-go additions, issue 32): defaults, values, and refusals.
func TestPQKeys(t *testing.T) {
	c, _ := mustLoad(t, "node: {}\n")
	if c.Node.Session.PQ != PQOff || c.Node.Session.PQTimeoutMs != 10_000 {
		t.Fatalf("defaults %q %d", c.Node.Session.PQ, c.Node.Session.PQTimeoutMs)
	}
	c, _ = mustLoad(t, `node:
  session:
    pq: preferred
    pq_timeout_ms: 2500
peers:
  - npub: `+validNpub+`
    pq: required
    addresses: [{transport: udp, addr: "192.0.2.1:2121"}]
`)
	if c.Node.Session.PQ != PQPreferred || c.Node.Session.PQTimeoutMs != 2500 || c.Peers[0].PQ != PQRequired {
		t.Fatalf("got %q %d %q", c.Node.Session.PQ, c.Node.Session.PQTimeoutMs, c.Peers[0].PQ)
	}
	refusedPQ(t,
		"node: {session: {pq: on}}\n",
		"node: {session: {pq_timeout_ms: 5}}\n",
		"peers:\n  - npub: "+validNpub+"\n    pq: maybe\n    addresses: [{transport: udp, addr: \"192.0.2.1:2121\"}]\n",
	)
}

// TestLinkPQKeys: node.link.pq, node.link.pq_timeout_ms and
// peers[].link_pq (fips-go additions, issue 32): defaults, values, and
// refusals.
func TestLinkPQKeys(t *testing.T) {
	c, _ := mustLoad(t, "node: {}\n")
	if c.Node.Link.PQ != PQOff || c.Node.Link.PQTimeoutMs != 10_000 || c.Peers != nil {
		t.Fatalf("defaults %q %d", c.Node.Link.PQ, c.Node.Link.PQTimeoutMs)
	}
	c, _ = mustLoad(t, `node:
  link:
    pq: required
    pq_timeout_ms: 2500
peers:
  - npub: `+validNpub+`
    link_pq: preferred
    addresses: [{transport: udp, addr: "192.0.2.1:2121"}]
`)
	if c.Node.Link.PQ != PQRequired || c.Node.Link.PQTimeoutMs != 2500 || c.Peers[0].LinkPQ != PQPreferred || c.Peers[0].PQ != "" {
		t.Fatalf("got %q %d %q", c.Node.Link.PQ, c.Node.Link.PQTimeoutMs, c.Peers[0].LinkPQ)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	refusedPQ(t,
		"node: {link: {pq: on}}\n",
		"node: {link: {pq_timeout_ms: 5}}\n",
		"peers:\n  - npub: "+validNpub+"\n    link_pq: maybe\n    addresses: [{transport: udp, addr: \"192.0.2.1:2121\"}]\n",
	)
}

// refusedPQ asserts each configuration fails validation with one error,
// about a pq key.
func refusedPQ(t *testing.T, yamls ...string) {
	t.Helper()
	for _, y := range yamls {
		c, _ := mustLoad(t, y)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: valid", y)
			continue
		}
		errs := flatten(t, err)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "pq") {
			t.Errorf("%s: %v", y, errs)
		}
	}
}

package main

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/pq"
	"github.com/fips-go/fips/control/session"
)

// TestSessionConfigPQKeys: node.session.pq, pq_timeout_ms and peers[].pq
// reach the session table.
func TestSessionConfigPQKeys(t *testing.T) {
	const npub = "npub1qmc3cvfz0yu2hx96nq3gp55zdan2qclealn7xshgr448d3nh6lks7zel98"
	cfg, _, err := config.LoadBytes("fips.yaml", []byte(`node: {session: {pq: preferred, pq_timeout_ms: 1500}}
peers:
  - npub: `+npub+`
    pq: required
    addresses: [{transport: udp, addr: "192.0.2.1:2121"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := sessionConfig(cfg)
	pk, _ := identity.DecodeNpub(npub)
	if c.PQ != session.PQPreferred || c.PQTimeout != 1500*time.Millisecond || c.PQPeers == nil || (*c.PQPeers)[pk.NodeAddr()] != session.PQRequired {
		t.Fatalf("got %v %v %v", c.PQ, c.PQTimeout, c.PQPeers)
	}
	cfg, _, _ = config.LoadBytes("fips.yaml", []byte("{}"))
	if c := sessionConfig(cfg); c.PQ != session.PQOff || c.PQPeers != nil {
		t.Fatalf("defaults %v %v", c.PQ, c.PQPeers)
	}
}

// TestLinkConfigPQKeys: node.link.pq, pq_timeout_ms and peers[].link_pq
// reach the link layer, apart from the session keys.
func TestLinkConfigPQKeys(t *testing.T) {
	const npub = "npub1qmc3cvfz0yu2hx96nq3gp55zdan2qclealn7xshgr448d3nh6lks7zel98"
	cfg, _, err := config.LoadBytes("fips.yaml", []byte(`node: {link: {pq: required, pq_timeout_ms: 2500}, session: {pq: preferred}}
peers:
  - npub: `+npub+`
    link_pq: off
    addresses: [{transport: udp, addr: "192.0.2.1:2121"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := peerConfig(cfg)
	pk, _ := identity.DecodeNpub(npub)
	if c.PQ != pq.Required || c.PQTimeout != 2500*time.Millisecond || c.PQPeers == nil || len(*c.PQPeers) != 1 ||
		(*c.PQPeers)[pk.NodeAddr()] != pq.Off {
		t.Fatalf("got %v %v %v", c.PQ, c.PQTimeout, c.PQPeers)
	}
	if s := sessionConfig(cfg); s.PQ != session.PQPreferred || s.PQPeers != nil {
		t.Fatalf("session %v %v", s.PQ, s.PQPeers)
	}
	cfg, _, _ = config.LoadBytes("fips.yaml", []byte("{}"))
	if c := peerConfig(cfg); c.PQ != pq.Off || c.PQPeers != nil || c.PQTimeout != 10*time.Second {
		t.Fatalf("defaults %v %v %v", c.PQ, c.PQPeers, c.PQTimeout)
	}
}

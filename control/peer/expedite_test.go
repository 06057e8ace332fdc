package peer

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/transport"
)

// A configured peer's scheduled retry can be pulled forward to now (the
// open-discovery sweep does so when it sees the peer's advert); a peer
// with no later retry, or not configured, is left as it is.
func TestExpediteRetry(t *testing.T) {
	n := newSimNet(t, 11)
	cfg := DefaultConfig()
	cfg.RetryBase, cfg.RetryMax = time.Minute, time.Hour
	a, b := n.add(1, cfg), n.add(2, cfg)
	n.cut[[2]transport.Addr{a.addr, b.addr}] = true
	n.cut[[2]transport.Addr{b.addr, a.addr}] = true
	na := b.id.NodeAddr()
	if a.m.IsStatic(na) || a.m.ExpediteRetry(n.now, na) {
		t.Fatal("not configured yet")
	}
	a.m.AddStatic(n.now, StaticPeer{PublicKey: b.id.PublicKey(), Addresses: []Candidate{a.candidate(b)}, AutoReconnect: true})
	if !a.m.IsStatic(na) || !a.m.Connecting(na) {
		t.Fatal("dialled peer not configured and connecting")
	}
	n.advance(cfg.HandshakeTimeout+2*time.Second, time.Second)
	next := a.m.NextRetry(na)
	if a.m.Connecting(na) || !next.After(n.now) {
		t.Fatalf("no later retry after the handshake timed out: connecting %v next %v now %v", a.m.Connecting(na), next, n.now)
	}
	if !a.m.ExpediteRetry(n.now, na) || !a.m.NextRetry(na).Equal(n.now) {
		t.Errorf("retry at %v after expediting at %v", a.m.NextRetry(na), n.now)
	}
	if a.m.ExpediteRetry(n.now, na) {
		t.Error("expedited twice")
	}
	// The next tick dials it.
	a.m.Tick(n.now)
	if !a.m.Connecting(na) {
		t.Error("expedited retry not dialled on the next tick")
	}
}

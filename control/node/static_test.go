package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/udp"
)

// loopbackNode is a node with one UDP transport on 127.0.0.1.
func loopbackNode(t *testing.T, o Options) *Node {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	uo := udp.Defaults()
	uo.BindAddr = "127.0.0.1:0"
	u, err := udp.New(1, "", uo, log)
	if err != nil {
		t.Fatal(err)
	}
	if o.Identity == nil {
		if o.Identity, err = identity.Generate(nil); err != nil {
			t.Fatal(err)
		}
	}
	o.Log, o.Transports, o.TickInterval = log, []transport.Transport{u}, 10*time.Millisecond
	n, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// await polls cond until it holds or the timeout passes.
func await(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStaticPeerHostnameResolvedAtEachAttempt: a running node whose
// configured peer is a host name that does not resolve at start keeps
// retrying it (the failure shows in show_routing's retries), resolves the
// name again at every attempt, and links up once the name resolves.
func TestStaticPeerHostnameResolvedAtEachAttempt(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := peer.DefaultConfig()
	cfg.RetryBase, cfg.RetryMax = 20*time.Millisecond, 80*time.Millisecond
	b := loopbackNode(t, Options{Peer: cfg})
	var resolvable atomic.Bool
	var attempts atomic.Int32
	resolve := func(ctx context.Context, tr transport.Transport, s string) (transport.Addr, error) {
		attempts.Add(1)
		if s != "bee.test:2121" {
			return transport.Addr{}, fmt.Errorf("unexpected name %q", s)
		}
		if !resolvable.Load() {
			return transport.Addr{}, errors.New("lookup bee.test: no such host")
		}
		return tr.ResolveAddr(ctx, b.transports[1].LocalAddr())
	}
	a := loopbackNode(t, Options{Peer: cfg, Resolve: resolve, StaticPeers: []StaticPeer{{
		PublicKey: b.Identity().PublicKey(), Alias: "bee", AutoReconnect: true,
		Addresses: []PeerAddress{{Transport: "udp", Addr: "bee.test:2121", Priority: 100}},
	}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- b.Run(ctx) }()
	await(t, 5*time.Second, "b to run", func() bool { return b.State() == StateRunning })
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}()

	await(t, 10*time.Second, "three failed resolutions", func() bool { return attempts.Load() >= 3 })
	var r ctl.RetryJSON
	await(t, 5*time.Second, "the failure in show_routing.retries", func() bool {
		rs := a.showRouting().Retries
		if len(rs) != 1 || rs[0].LastError == "" {
			return false
		}
		r = rs[0]
		return true
	})
	if r.NodeAddr != b.Identity().NodeAddr().String() || r.DisplayName != "bee" || !r.AutoReconnect ||
		!strings.Contains(r.LastError, "no such host") || r.RetryCount < 1 || r.ResolvedAddr != "" {
		t.Errorf("retry entry %+v", r)
	}
	if a.Snapshot().State != StateRunning {
		t.Errorf("node state %s with an unresolvable peer", a.Snapshot().State)
	}

	resolvable.Store(true)
	await(t, 10*time.Second, "the link once the name resolves", func() bool { return len(a.Snapshot().Peers) == 1 })
	p := a.showPeers().Peers[0]
	if p.TransportAddr != b.transports[1].LocalAddr() || p.DisplayName != "bee" {
		t.Errorf("peer %s at %s, want bee at the resolved %s", p.DisplayName, p.TransportAddr, b.transports[1].LocalAddr())
	}
	if rs := a.showRouting().Retries; len(rs) != 0 {
		t.Errorf("retries left after linking: %+v", rs)
	}
}

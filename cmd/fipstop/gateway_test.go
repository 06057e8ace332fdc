package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/gateway"
)

// TestGatewayTabAgainstGatewaySocket: the Gateway tab, fed by fips-gateway's
// own control handlers on a real socket (not canned JSON), shows the pool,
// the configuration and each mapping.
func TestGatewayTabAgainstGatewaySocket(t *testing.T) {
	defer goleak.VerifyNone(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool, err := gateway.NewPool(gateway.PoolOptions{CIDR: "fd01::/112", TTLSecs: 60, GraceSecs: 60, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	mesh := netip.MustParseAddr("fd12:3456:789a::1")
	node, _ := gateway.NodeAddrFromMesh(mesh)
	if _, _, err := pool.Allocate(node, mesh, "npub1carol.fips"); err != nil {
		t.Fatal(err)
	}
	reg := ctl.NewRegistry()
	gateway.Register(reg, func() gateway.Snapshot {
		return gateway.Snapshot{Pool: pool.Status(), Mappings: pool.Mappings(time.Now()), NATMappings: 1, Uptime: 90 * time.Second,
			Config: gateway.SnapshotConfig{PoolCIDR: "fd01::/112", LANInterface: "br-lan", DNSUpstream: "[::1]:5354",
				DNSListen: "[fd02::1]:53", DNSTTL: 60, PoolGracePeriod: 60}}
	})
	sock := filepath.Join(t.TempDir(), "gateway.sock")
	srv, err := ctl.Listen(ctl.Config{Path: sock, Logger: log}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	f := &fakeDaemon{resp: baseResponses()}
	c := &client{socket: "ctl.sock", gateway: sock, timeout: 2 * time.Second,
		call: func(ctx context.Context, socket, command string, params any) (json.RawMessage, error) {
			if socket == sock {
				return ctl.Call(ctx, socket, command, params)
			}
			return f.call(ctx, socket, command, params)
		}}
	m := newModel(c, time.Second, "test")
	m.width, m.height = 200, 60
	drive(t, m, m.refetch())
	for m.tab != TabGateway {
		press(t, m, "tab")
	}
	mustShow(t, m, "fd01::/112", "total 65535", "allocated 1", "free 65534", "br-lan", "[fd02::1]:53 → [::1]:5354 ttl 60",
		"NAT Mappings (1)", "fd01::1", "npub1carol.fips", "fd12:3456:789a::1", "Allocated", "1m 30s")
}

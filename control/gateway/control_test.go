package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
)

func testSnapshot() Snapshot {
	return Snapshot{
		Pool: Status{Total: 65535, Allocated: 1, Free: 65534},
		Mappings: []MappingInfo{{VirtualIP: netip.MustParseAddr("fd01::1"), MeshAddr: netip.MustParseAddr("fd97:467a::1"),
			DNSName: "npub1test.fips", State: Active, Sessions: 3, AgeSecs: 120, LastRefSecs: 5}},
		NATMappings: 1, Uptime: 3600 * time.Second,
		Config: SnapshotConfig{PoolCIDR: "fd01::/112", LANInterface: "br-lan", DNSUpstream: "127.0.0.1:5354",
			DNSListen: "[fd02::10]:53", DNSTTL: 60, PoolGracePeriod: 60},
	}
}

// The control socket answers upstream's two commands with upstream's JSON
// (pool_refused is ours) and upstream's unknown-command error.
func TestControlSocket(t *testing.T) {
	reg := ctl.NewRegistry()
	Register(reg, testSnapshot)
	path := filepath.Join(t.TempDir(), "gateway.sock")
	srv, err := ctl.Listen(ctl.Config{Path: path, Logger: quiet()}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	raw, err := ctl.Call(ctx, path, "show_gateway", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dns_dropped":0,"dns_listen":"[fd02::10]:53","dns_ttl":60,"dns_upstream":"127.0.0.1:5354","lan_interface":"br-lan",` +
		`"nat_mappings":1,"pool_active":0,"pool_allocated":1,"pool_cidr":"fd01::/112","pool_client_refused":0,"pool_draining":0,"pool_evicted":0,"pool_free":65534,` +
		`"pool_grace_period":60,"pool_refused":0,"pool_total":65535,"uptime_secs":3600}`
	if string(raw) != want {
		t.Fatalf("show_gateway\n got %s\nwant %s", raw, want)
	}
	raw, err = ctl.Call(ctx, path, "show_mappings", nil)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"mappings":[{"age_secs":120,"dns_name":"npub1test.fips","last_ref_secs":5,"mesh_addr":"fd97:467a::1",` +
		`"node_addr":"00000000000000000000000000000000","sessions":3,"state":"Active","virtual_ip":"fd01::1"}]}`
	if string(raw) != want {
		t.Fatalf("show_mappings\n got %s\nwant %s", raw, want)
	}
	_, err = ctl.Call(ctx, path, "show_status", nil)
	var se *ctl.ServerError
	if !errors.As(err, &se) || se.Message != "unknown command: show_status" {
		t.Fatalf("unknown command: %v", err)
	}
	var empty ShowMappings
	b, _ := json.Marshal(BuildShowMappings(Snapshot{}))
	if string(b) != `{"mappings":[]}` || json.Unmarshal(b, &empty) != nil {
		t.Fatalf("empty mappings %s", b)
	}
}

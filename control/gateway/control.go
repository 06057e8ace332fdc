package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/fips-go/fips/control/ctl"
)

// SocketPath is where fips-gateway binds its control socket, upstream's
// fixed path (the gateway runs as root). Clients find it through
// config.DefaultGatewaySocketPath.
const SocketPath = "/run/fips/gateway.sock"

// SnapshotConfig is the static part of show_gateway.
type SnapshotConfig struct {
	PoolCIDR, LANInterface, DNSUpstream, DNSListen string
	DNSTTL                                         uint32
	PoolGracePeriod                                uint64
}

// Snapshot is the gateway's state as the control commands report it.
type Snapshot struct {
	Pool        Status
	Mappings    []MappingInfo
	NATMappings int
	DNSDropped  uint64 // Resolver.Dropped
	Uptime      time.Duration
	Config      SnapshotConfig
}

// ShowGateway is show_gateway's data, upstream's keys (alphabetical, as
// upstream's JSON object serialises them) plus dns_dropped, pool_refused,
// pool_evicted and pool_client_refused, ours.
type ShowGateway struct {
	DNSDropped    uint64 `json:"dns_dropped"`
	DNSListen     string `json:"dns_listen"`
	DNSTTL        uint32 `json:"dns_ttl"`
	DNSUpstream   string `json:"dns_upstream"`
	LANInterface  string `json:"lan_interface"`
	NATMappings   int    `json:"nat_mappings"`
	PoolActive    int    `json:"pool_active"`
	PoolAllocated int    `json:"pool_allocated"`
	PoolCIDR      string `json:"pool_cidr"`
	// PoolClientRefused and PoolEvicted: Status.ClientRefused, .Evicted.
	PoolClientRefused uint64 `json:"pool_client_refused"`
	PoolDraining      int    `json:"pool_draining"`
	PoolEvicted       uint64 `json:"pool_evicted"`
	PoolFree          int    `json:"pool_free"`
	PoolGracePeriod   uint64 `json:"pool_grace_period"`
	PoolRefused       uint64 `json:"pool_refused"`
	PoolTotal         int    `json:"pool_total"`
	UptimeSecs        uint64 `json:"uptime_secs"`
}

// ShowMapping is one entry of show_mappings' "mappings".
type ShowMapping struct {
	AgeSecs     uint64 `json:"age_secs"`
	DNSName     string `json:"dns_name"`
	LastRefSecs uint64 `json:"last_ref_secs"`
	MeshAddr    string `json:"mesh_addr"`
	NodeAddr    string `json:"node_addr"`
	Sessions    uint32 `json:"sessions"`
	State       string `json:"state"`
	VirtualIP   string `json:"virtual_ip"`
}

// ShowMappings is show_mappings' data.
type ShowMappings struct {
	Mappings []ShowMapping `json:"mappings"`
}

// BuildShowGateway renders a snapshot as show_gateway.
func BuildShowGateway(s Snapshot) ShowGateway {
	return ShowGateway{
		DNSDropped: s.DNSDropped, DNSListen: s.Config.DNSListen, DNSTTL: s.Config.DNSTTL, DNSUpstream: s.Config.DNSUpstream,
		LANInterface: s.Config.LANInterface, NATMappings: s.NATMappings,
		PoolActive: s.Pool.Active, PoolAllocated: s.Pool.Allocated, PoolCIDR: s.Config.PoolCIDR,
		PoolDraining: s.Pool.Draining, PoolFree: s.Pool.Free, PoolGracePeriod: s.Config.PoolGracePeriod,
		PoolRefused: s.Pool.Refused, PoolEvicted: s.Pool.Evicted, PoolClientRefused: s.Pool.ClientRefused, PoolTotal: s.Pool.Total, UptimeSecs: wholeSecs(s.Uptime),
	}
}

// BuildShowMappings renders a snapshot as show_mappings.
func BuildShowMappings(s Snapshot) ShowMappings {
	out := ShowMappings{Mappings: make([]ShowMapping, 0, len(s.Mappings))}
	for _, m := range s.Mappings {
		out.Mappings = append(out.Mappings, ShowMapping{AgeSecs: m.AgeSecs, DNSName: m.DNSName, LastRefSecs: m.LastRefSecs,
			MeshAddr: m.MeshAddr.String(), NodeAddr: m.NodeAddr.String(), Sessions: m.Sessions, State: m.State.String(),
			VirtualIP: m.VirtualIP.String()})
	}
	return out
}

// Register installs show_gateway and show_mappings, answered from a
// snapshot taken at each request. Unknown commands get the control
// server's "unknown command: NAME", as upstream.
func Register(reg *ctl.Registry, snapshot func() Snapshot) {
	reg.Register("show_gateway", func(context.Context, json.RawMessage) (any, error) {
		return BuildShowGateway(snapshot()), nil
	})
	reg.Register("show_mappings", func(context.Context, json.RawMessage) (any, error) {
		return BuildShowMappings(snapshot()), nil
	})
}

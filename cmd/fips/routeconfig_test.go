package main

import (
	"testing"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/route"
)

// TestRouteConfigRoutingKeys: node.routing.* reach the router — the
// defaults are fips-go's rules, and upstream's can be asked for one by one.
func TestRouteConfigRoutingKeys(t *testing.T) {
	for _, tc := range []struct {
		yaml     string
		nextHop  route.NextHopRule
		fullFilt bool
	}{
		{"{}", route.NextHopDistance, true},
		{"node: {routing: {next_hop: upstream}}", route.NextHopUpstream, true},
		{"node: {routing: {full_filter_lookups: upstream}}", route.NextHopDistance, false},
		{"node: {routing: {full_filter_lookups: tree, next_hop: upstream}}", route.NextHopUpstream, true},
	} {
		cfg, _, err := config.LoadBytes("fips.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		c := routeConfig(cfg)
		if c.NextHop != tc.nextHop || c.FullFilterLookups != tc.fullFilt {
			t.Errorf("%s: next hop %v, full filter lookups %v; want %v, %v", tc.yaml, c.NextHop, c.FullFilterLookups, tc.nextHop, tc.fullFilt)
		}
	}
}

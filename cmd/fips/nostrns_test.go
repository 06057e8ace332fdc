package main

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/rendezvous"
)

// The discovery namespaces follow the node's wire format: master's for
// v0 (as before), next's with next's default app for v1, both for auto;
// a configured app is kept in both. A v1 node's LAN scope is next's.
func TestNostrNamespacesFollowWireFormat(t *testing.T) {
	master := rendezvous.Namespace{Identifier: "fips-overlay-v1", App: "fips-overlay-v1"}
	next := rendezvous.Namespace{Identifier: "fips-overlay-v1-next", App: "fips-overlay-v1-next"}
	for _, tc := range []struct {
		yaml  string
		want  []rendezvous.Namespace
		scope string
	}{
		{`{}`, []rendezvous.Namespace{master}, "fips-overlay-v1"},
		{`node: {wire_format: v0}`, []rendezvous.Namespace{master}, "fips-overlay-v1"},
		{`node: {wire_format: v1}`, []rendezvous.Namespace{next}, "fips-overlay-v1-next"},
		{`node: {wire_format: auto}`, []rendezvous.Namespace{master, next}, "fips-overlay-v1"},
		{`node: {wire_format: v1, rendezvous: {nostr: {app: "fips-overlay-v1:lab"}}}`,
			[]rendezvous.Namespace{{Identifier: "fips-overlay-v1-next", App: "fips-overlay-v1:lab"}}, "lab"},
		{`node: {wire_format: auto, rendezvous: {nostr: {app: myapp}}}`,
			[]rendezvous.Namespace{{Identifier: "fips-overlay-v1", App: "myapp"}, {Identifier: "fips-overlay-v1-next", App: "myapp"}}, "myapp"},
	} {
		cfg, _, err := config.LoadBytes("fips.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if got := nostrNamespaces(cfg); !slices.Equal(got, tc.want) {
			t.Errorf("%s: namespaces %v, want %v", tc.yaml, got, tc.want)
		}
		cfg.Node.Rendezvous.LAN.Enabled = true
		if got := lanOptions(cfg, slog.New(slog.NewTextHandler(io.Discard, nil))).Scope; got != tc.scope {
			t.Errorf("%s: LAN scope %q, want %q", tc.yaml, got, tc.scope)
		}
	}
}

// next's Leaf and min_mtu follow node.leaf_only and tun.mtu only on a
// node whose wire format is v1; elsewhere leaf_only stays master's flag
// and lookups carry min_mtu 0, as master's.
func TestNextLeafAndMinMTUOnlyOnV1(t *testing.T) {
	for _, tc := range []struct {
		yaml     string
		leaf     bool
		minMTU   uint16
		maxPeers int
	}{
		{`node: {leaf_only: true}`, false, 0, 128},
		{`node: {leaf_only: true, wire_format: auto}`, false, 0, 128},
		{`node: {wire_format: v1}
tun: {mtu: 1400}`, false, 1400, 128},
		{`node: {wire_format: v1, leaf_only: true}`, true, 1280, 1},
	} {
		cfg, _, err := config.LoadBytes("fips.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		rc, pc := routeConfig(cfg), peerConfig(cfg)
		if rc.Leaf != tc.leaf || rc.LookupMinMTU != tc.minMTU || pc.MaxPeers != tc.maxPeers {
			t.Errorf("%s: leaf %v min_mtu %d max_peers %d", tc.yaml, rc.Leaf, rc.LookupMinMTU, pc.MaxPeers)
		}
	}
}

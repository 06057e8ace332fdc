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

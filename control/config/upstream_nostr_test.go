package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// upstreamNostr is what each file of testdata/upstream-nostr (upstream's
// NAT-lab configs and the rendezvous examples of its docs, see the README
// there) must load to: its node.rendezvous.nostr block as a change to the
// defaults, and the lint findings it draws (substrings, in order).
var upstreamNostr = map[string]struct {
	nostr func(*NostrConfig)
	lint  []string
}{
	"docs_how-to_enable-nostr-discovery_1.yaml": {func(n *NostrConfig) { n.Advertise = false },
		[]string{`"npub1peer..." is not a valid npub`}},
	"docs_how-to_enable-nostr-discovery_2.yaml": {func(*NostrConfig) {}, nil},
	"docs_how-to_enable-nostr-discovery_4.yaml": {func(n *NostrConfig) {
		n.DMRelays = []string{"wss://relay.damus.io", "wss://nos.lol"}
		n.StunServers = []string{"stun:stun.l.google.com:19302", "stun:stun.cloudflare.com:3478"}
	}, []string{`"npub1peer..." is not a valid npub`}},
	"docs_how-to_enable-nostr-discovery_5.yaml": {func(*NostrConfig) {}, nil},
	"docs_how-to_enable-nostr-discovery_6.yaml": {func(*NostrConfig) {}, nil},
	"docs_how-to_enable-nostr-discovery_7.yaml": {func(n *NostrConfig) {
		n.Policy, n.App = NostrPolicyOpen, "my-experiment.v1"
	}, nil},
	"docs_tutorials_advertise-your-node.yaml":     {func(*NostrConfig) {}, nil},
	"docs_tutorials_open-discovery.yaml":          {func(n *NostrConfig) { n.Policy = NostrPolicyOpen }, []string{"no transports are configured"}},
	"docs_tutorials_resolve-peers-via-nostr.yaml": {func(n *NostrConfig) { n.Advertise = false }, []string{"no transports are configured"}},
	"testing_nat_cone_node-a.yaml":                {natLab("172.31.254"), nil},
	"testing_nat_symmetric_node-a.yaml":           {natLab("172.31.254"), nil},
	"testing_nat_lan_node-a.yaml":                 {natLab("172.31.10"), nil},
}

// natLab is upstream's NAT-lab rendezvous block with the relay and STUN
// server on prefix.
func natLab(prefix string) func(*NostrConfig) {
	return func(n *NostrConfig) {
		n.App = "fips.nat.lab.v1"
		n.AdvertRelays = []string{"ws://" + prefix + ".30:7777"}
		n.DMRelays = n.AdvertRelays
		n.StunServers = []string{"stun:" + prefix + ".40:3478"}
		n.SignalTTLSecs, n.AttemptTimeoutSecs, n.ReplayWindowSecs = 30, 6, 180
		n.PunchStartDelayMs, n.PunchIntervalMs, n.PunchDurationMs = 500, 100, 2500
		n.AdvertTTLSecs, n.AdvertRefreshSecs = 60, 20
	}
}

// Every upstream Nostr config loads, validates, lints as expected, and
// says what its file says: all of them use the legacy node.discovery
// block, which is folded in with one deprecation warning.
func TestUpstreamNostrConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "upstream-nostr", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(upstreamNostr) {
		t.Fatalf("%d files, %d expectations", len(files), len(upstreamNostr))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := upstreamNostr[filepath.Base(f)]
			if !ok {
				t.Fatal("no expectation")
			}
			c, w, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(w) != 1 || w[0].Key != "node.discovery" || !strings.Contains(w[0].Message, "deprecated") {
				t.Errorf("warnings %v, want the one deprecation", w)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("validate: %v", err)
			}
			lint := c.Lint()
			if len(lint) != len(want.lint) {
				t.Errorf("lint %v, want %q", lint, want.lint)
			}
			for i := range min(len(lint), len(want.lint)) {
				if !strings.Contains(lint[i].String(), want.lint[i]) {
					t.Errorf("lint[%d] %q, want %q", i, lint[i], want.lint[i])
				}
			}
			n := defaultNostrConfig()
			n.Enabled = true
			want.nostr(&n)
			if got := c.Node.Rendezvous.Nostr; !reflect.DeepEqual(got, n) {
				t.Errorf("node.rendezvous.nostr\n got %+v\nwant %+v", got, n)
			}
		})
	}
}

package main

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/transport"
)

// upstreamNostrAct is what the daemon makes of each upstream Nostr config
// (control/config/testdata/upstream-nostr): the peers it reaches through
// adverts (aliases), the static peers it dials, what it advertises, and a
// piece of its "Nostr rendezvous configured" line.
var upstreamNostrAct = map[string]struct {
	policy     string
	app        string
	relays     []string
	nostrPeers []string
	static     []string // alias or npub: first address
	advertised []node.AdvertisedTransport
	says       string
}{
	"docs_how-to_enable-nostr-discovery_1.yaml": {policy: "configured_only", says: "publish no advert (advertise: false), reach 0 peer(s)"},
	"docs_how-to_enable-nostr-discovery_2.yaml": {policy: "configured_only",
		advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "udp", Public: true}},
		says:       "advertise udp:bound address, or the public IP STUN reports, reach 0 peer(s)"},
	"docs_how-to_enable-nostr-discovery_4.yaml": {policy: "configured_only",
		advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "udp"}}, says: "advertise udp:nat, reach 0 peer(s)"},
	"docs_how-to_enable-nostr-discovery_5.yaml": {policy: "configured_only",
		advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "tcp", Public: true, ExternalAddr: "203.0.113.45:8443"}},
		says:       "advertise tcp:203.0.113.45:8443"},
	"docs_how-to_enable-nostr-discovery_6.yaml": {policy: "configured_only",
		advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "tor", Public: true}}, says: "advertise tor:<onion>:8443"},
	"docs_how-to_enable-nostr-discovery_7.yaml": {policy: "open", app: "my-experiment.v1",
		advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "udp", Public: true}},
		says:       "reach 0 peer(s) through their adverts, and dial every valid advert it sees (policy open)"},
	"docs_tutorials_advertise-your-node.yaml": {policy: "configured_only",
		advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "udp"}}, says: "advertise udp:nat"},
	"docs_tutorials_open-discovery.yaml": {policy: "open", says: "publish no advert (no transport has advertise_on_nostr)"},
	"docs_tutorials_resolve-peers-via-nostr.yaml": {policy: "configured_only", nostrPeers: []string{"test-us01"},
		says: "publish no advert (advertise: false), reach 1 peer(s) through their adverts (policy configured_only)"},
	"testing_nat_cone_node-a.yaml": {policy: "configured_only", app: "fips.nat.lab.v1", relays: []string{"ws://172.31.254.30:7777"},
		nostrPeers: []string{"node-b"}, advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "udp"}},
		says: "advertise udp:nat, reach 1 peer(s)"},
	"testing_nat_symmetric_node-a.yaml": {policy: "configured_only", app: "fips.nat.lab.v1", relays: []string{"ws://172.31.254.30:7777"},
		nostrPeers: []string{"node-b"}, static: []string{"node-b: 172.31.254.11:8443"},
		advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "udp"}}, says: "advertise udp:nat, reach 1 peer(s)"},
	"testing_nat_lan_node-a.yaml": {policy: "configured_only", app: "fips.nat.lab.v1", relays: []string{"ws://172.31.10.30:7777"},
		nostrPeers: []string{"node-b"}, advertised: []node.AdvertisedTransport{{Transport: 1, Kind: "udp"}},
		says: "advertise udp:nat, reach 1 peer(s)"},
}

// Each upstream Nostr config is acted on: the rendezvous service gets its
// settings, its peers are reached through adverts or dialled, its
// transports advertised, and the daemon says so in one line.
func TestUpstreamNostrConfigsActedOn(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "control", "config", "testdata", "upstream-nostr", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(upstreamNostrAct) {
		t.Fatalf("%d files, %d expectations", len(files), len(upstreamNostrAct))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := upstreamNostrAct[filepath.Base(f)]
			if !ok {
				t.Fatal("no expectation")
			}
			cfg, _, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			id, err := identity.Generate(nil)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]transport.ID{}
			next := transport.ID(1)
			for _, in := range cfg.Transports.UDP.List() {
				ids["udp/"+in.Name] = next
				next++
			}
			for _, in := range cfg.Transports.TCP.List() {
				ids["tcp/"+in.Name] = next
				next++
			}
			for _, in := range cfg.Transports.Tor.List() {
				ids["tor/"+in.Name] = next
				next++
			}
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			ns := &cfg.Node.Rendezvous.Nostr

			rc := rendezvousConfig(ns, id, log)
			app := want.app
			if app == "" {
				app = "fips-overlay-v1"
			}
			relays := want.relays
			if relays == nil {
				relays = config.DefaultNostrRelays()
			}
			if rc.App != app || !slices.Equal(rc.AdvertRelays, relays) || !slices.Equal(rc.STUNServers, ns.StunServers) ||
				!slices.Equal(rc.DMRelays, ns.DMRelays) || rc.Advertise != ns.Advertise || rc.Identity != id {
				t.Errorf("service config %+v", rc)
			}
			if rc.SignalTTL != time.Duration(ns.SignalTTLSecs)*time.Second || rc.PunchStartDelay != time.Duration(ns.PunchStartDelayMs)*time.Millisecond ||
				rc.AttemptTimeout != time.Duration(ns.AttemptTimeoutSecs)*time.Second || rc.AdvertTTL != time.Duration(ns.AdvertTTLSecs)*time.Second ||
				rc.ShareLocalCandidates || rc.Failure.StreakThreshold != 5 {
				t.Errorf("service timings %+v", rc)
			}
			if app == "fips.nat.lab.v1" && (rc.SignalTTL != 30*time.Second || rc.PunchInterval != 100*time.Millisecond ||
				rc.PunchDuration != 2500*time.Millisecond || rc.ReplayWindow != 180*time.Second || rc.AdvertRefresh != 20*time.Second) {
				t.Errorf("NAT-lab timings %+v", rc)
			}

			o, err := rendezvousOptions(cfg, id, ids, log)
			if err != nil {
				t.Fatal(err)
			}
			if o.Service == nil || o.Policy != want.policy || o.OpenMaxPending != 64 || o.StartupSweepDelay != 5*time.Second ||
				o.StartupSweepMaxAge != time.Hour || o.AdvertTTL != time.Duration(ns.AdvertTTLSecs)*time.Second {
				t.Errorf("options %+v", o)
			}
			var aliases []string
			for _, p := range o.Peers {
				aliases = append(aliases, p.Alias)
			}
			if !slices.Equal(aliases, want.nostrPeers) {
				t.Errorf("peers through adverts %v, want %v", aliases, want.nostrPeers)
			}
			if !slices.Equal(o.Advertised, want.advertised) {
				t.Errorf("advertised %+v, want %+v", o.Advertised, want.advertised)
			}
			if len(o.Configured) != len(want.nostrPeers) {
				t.Errorf("configured keys %d", len(o.Configured))
			}
			var static []string
			for _, sp := range staticPeers(cfg) {
				static = append(static, sp.Alias+": "+sp.Addresses[0].Addr)
			}
			if !slices.Equal(static, want.static) {
				t.Errorf("static peers %v, want %v", static, want.static)
			}
			if !strings.Contains(logs.String(), want.says) {
				t.Errorf("log does not say %q:\n%s", want.says, logs.String())
			}
		})
	}
}

package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

// upstreamTor is transports.tor as each upstream configuration that
// uses it must load (testdata/upstream-nostr and testing/netns's
// testdata/upstream hold them verbatim or with their template filled),
// and the tor address of its peer, if any.
var upstreamTor = map[string]struct {
	tor  func(*TorConfig)
	peer string
}{
	"testdata/upstream-nostr/docs_how-to_enable-nostr-discovery_6.yaml": {func(c *TorConfig) {
		c.Mode, c.AdvertisedPort, c.AdvertiseOnNostr = "directory", 8443, true
		c.DirectoryService = &DirectoryServiceConfig{HostnameFile: "/var/lib/tor/fips/hostname", BindAddr: "127.0.0.1:8444"}
	}, ""},
	"../../testing/netns/testdata/upstream/testing_tor_directory-mode_configs_node-a.yaml": {func(c *TorConfig) {
		c.Mode = "directory"
		c.DirectoryService = &DirectoryServiceConfig{HostnameFile: DefaultTorHostnameFile, BindAddr: DefaultTorDirectoryBindAddr}
	}, ""},
	"../../testing/netns/testdata/upstream/testing_tor_socks5-outbound_configs_node-a.yaml": {func(c *TorConfig) {
		c.Socks5Addr = "tor-daemon:9050"
	}, "test-us01.fips.network:443"},
}

// The three upstream configurations with transports.tor load and
// validate with upstream's keys and defaults.
func TestUpstreamTorConfigs(t *testing.T) {
	for f, want := range upstreamTor {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, _, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			ins := c.Transports.Tor.List()
			if len(ins) != 1 || ins[0].Name != "" {
				t.Fatalf("tor instances %+v", ins)
			}
			var w TorConfig
			w.applyDefaults()
			want.tor(&w)
			if got := *ins[0].Config; !reflect.DeepEqual(got, w) {
				t.Errorf("transports.tor\n got %+v\nwant %+v", got, w)
			}
			var peer string
			for _, p := range c.Peers {
				for _, a := range p.Addresses {
					if a.Transport == "tor" {
						peer = a.Addr
					}
				}
			}
			if peer != want.peer {
				t.Errorf("tor peer address %q, want %q", peer, want.peer)
			}
		})
	}
}

package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestShippedConfig(t *testing.T) {
	c, w, err := Load(filepath.Join("testdata", "shipped.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	if lint := c.Lint(); len(lint) != 0 {
		t.Errorf("lint: %v", lint)
	}
	if !c.TUN.Enabled || c.TUN.Name != "fips0" || c.TUN.MTU != 1280 || !c.DNS.Enabled || c.DNS.Port != 5354 || c.DNS.BindAddr != "::1" {
		t.Errorf("tun/dns: %+v %+v", c.TUN, c.DNS)
	}
	if u := c.Transports.UDP.Single; u == nil || u.BindAddr != "0.0.0.0:2121" || u.EffectiveBindAddr() != "0.0.0.0:2121" {
		t.Errorf("udp: %+v", u)
	}
	if tc := c.Transports.TCP.Single; tc == nil || tc.BindAddr == nil || *tc.BindAddr != "0.0.0.0:8443" {
		t.Errorf("tcp: %+v", tc)
	}
	if c.Node.Identity.Persistent || c.Node.Identity.Nsec != nil || c.Node.Rendezvous.Nostr.Enabled {
		t.Errorf("node: %+v", c.Node.Identity)
	}
	if len(c.Peers) != 0 || c.Transports.Ethernet.Len() != 0 {
		t.Errorf("peers %v, ethernet %d", c.Peers, c.Transports.Ethernet.Len())
	}
}

func TestOpenWrtConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "openwrt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, w, err := loadGateway(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	eth := c.Transports.Ethernet
	if !eth.IsNamed() || !reflect.DeepEqual(eth.Names(), []string{"lan", "wan", "wwan"}) {
		t.Fatalf("ethernet instances: %+v", eth)
	}
	if e := eth.Named["wwan"]; e.Interface != "phy0-sta0" || !e.Announce || !e.AutoConnect || !e.AcceptConnections || !e.Listen {
		t.Errorf("wwan: %+v", e)
	}
	if g := c.Gateway; g == nil || !g.Enabled || g.Pool != "fd01::/112" || g.LANInterface != "br-lan" {
		t.Errorf("gateway: %+v", g)
	}
}

func TestFullConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, w, err := loadGateway(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	if err := c.Gateway.Validate(); err != nil {
		t.Error(err)
	}
	if c.Transports.UDP.Len() != 1 || c.Transports.TCP.Len() != 1 || c.Transports.Ethernet.Len() != 1 ||
		c.Transports.BLE.Len() != 1 || c.Transports.Nym.Len() != 1 || c.Transports.Tor.Len() != 1 {
		t.Errorf("transports: %+v", c.Transports)
	}
	if ap, ok := c.Transports.TCP.Single.ExternalAdvertAddr(); !ok || ap.String() != "198.51.100.1:8443" {
		t.Errorf("tcp external advert: %v %v", ap, ok)
	}
	if d := c.Transports.Tor.Single.Directory(); d.BindAddr != "127.0.0.1:8444" {
		t.Errorf("tor directory: %+v", d)
	}
	if s := c.Node.Rendezvous.LAN.Scope; s == nil || *s != "lab-floor-3" {
		t.Errorf("lan scope: %v", s)
	}
	p := c.Peers[0]
	if *p.Alias != "gateway" || !p.ViaNostr || len(p.Addresses) != 2 || p.Addresses[1].Addr != "nat" {
		t.Errorf("peer: %+v", p)
	}
	if pf := c.Gateway.PortForwards; len(pf) != 2 || pf[1].Proto != ProtoUDP || pf[1].Target != "[fd12:3456::10]:53" {
		t.Errorf("port forwards: %+v", pf)
	}
}

func TestNamedInstances(t *testing.T) {
	c, _ := mustLoad(t, `
transports:
  udp:
    main:
      bind_addr: "0.0.0.0:2121"
    backup:
      bind_addr: "192.168.1.100:2122"
      mtu: 1400
peers:
  - npub: `+validNpub+`
    addresses:
      - transport: udp/backup
        addr: "192.0.2.1:2122"
      - transport: udp
        addr: "192.0.2.1:2121"
`)
	u := c.Transports.UDP
	if !u.IsNamed() || u.Len() != 2 || u.Named["backup"].MTU != 1400 || u.Named["main"].MTU != 1280 {
		t.Fatalf("udp: %+v", u)
	}
	if l := u.List(); l[0].Name != "backup" || l[1].Name != "main" {
		t.Errorf("list order: %+v", l)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	spec := c.Peers[0].Addresses[0].Spec()
	if spec != (TransportSpec{Kind: "udp", Instance: "backup"}) || !spec.Matches("udp", "backup") || spec.Matches("udp", "main") || spec.Matches("udp", "") {
		t.Errorf("spec: %+v", spec)
	}
	if s := ParseTransportSpec("udp"); !s.Matches("udp", "") || !s.Matches("udp", "x") || s.Matches("tcp", "") {
		t.Errorf("unqualified: %+v", s)
	}
	for _, f := range []string{"udp/", "/aware", "/"} {
		if s := ParseTransportSpec(f); s.Kind != f || s.Instance != "" {
			t.Errorf("%q: %+v", f, s)
		}
	}
	if s := ParseTransportSpec("udp/a/b"); s.Kind != "udp" || s.Instance != "a/b" {
		t.Errorf("first separator: %+v", s)
	}
}

// TestInstanceForms covers the single/named decision.
func TestInstanceForms(t *testing.T) {
	// A map of names whose values are valid instances is the named form.
	c, _ := mustLoad(t, "transports:\n  udp:\n    mtu:\n      bind_addr: \"0.0.0.0:1\"\n")
	if !c.Transports.UDP.IsNamed() || c.Transports.UDP.Named["mtu"] == nil {
		t.Errorf("instance named like a key: %+v", c.Transports.UDP)
	}
	// An empty mapping is one instance with defaults...
	c, _ = mustLoad(t, "transports:\n  udp: {}\n")
	if c.Transports.UDP.Single == nil {
		t.Error("udp: {} is not a single instance")
	}
	// ...except where the type has a required key: then it is no instance.
	c, _ = mustLoad(t, "transports:\n  ethernet: {}\n")
	if c.Transports.Ethernet.Len() != 0 || !c.Transports.Ethernet.IsNamed() {
		t.Errorf("ethernet: {}: %+v", c.Transports.Ethernet)
	}
	// The ethernet listen key still accepts its old name.
	c, _ = mustLoad(t, "transports:\n  ethernet: {interface: eth0, discovery: false}\n")
	if c.Transports.Ethernet.Single.Listen {
		t.Error("ethernet discovery alias ignored")
	}
	// Inside transports a plain number, boolean or null is not a string,
	// as upstream reads the section through an untagged enum.
	for _, y := range []string{
		"transports:\n  ethernet: {interface: 123}\n",
		"transports:\n  udp: {bind_addr: true}\n",
		"transports:\n  ethernet:\n    lan: {interface: ~}\n",
		"transports:\n  tor: {mode: 1.5}\n",
	} {
		errs := loadErr(t, y)
		if !errors.Is(errs[0], ErrType) || !strings.Contains(errs[0].Reason, "expected a string") {
			t.Errorf("%q: %v", y, errs)
		}
	}
	c, _ = mustLoad(t, "transports:\n  ethernet: {interface: \"123\"}\n  tor: {mode: 0123, socks5_addr: 127.0.0.1:9050}\n")
	if c.Transports.Ethernet.Single.Interface != "123" || c.Transports.Tor.Single.Mode != "0123" {
		t.Errorf("strings in transports: %+v", c.Transports)
	}
	// Elsewhere any scalar is a string.
	c, _ = mustLoad(t, "node: {identity: {nsec: 123}}")
	if *c.Node.Identity.Nsec != "123" {
		t.Error("plain number as nsec")
	}
	// An empty value is neither form, as upstream.
	errs := loadErr(t, "transports:\n  udp:\n")
	if !errors.Is(errs[0], ErrType) || errs[0].Key != "transports.udp" || errs[0].Line != 2 {
		t.Errorf("empty udp: %v", errs[0])
	}
}

func TestUnknownKeysRejected(t *testing.T) {
	for _, tc := range []struct {
		yaml, key string
		line      int
	}{
		{"transports:\n  udp:\n    bind_addr: \"0.0.0.0:2121\"\n    bogus: 1\n", "transports.udp.bogus", 4},
		{"transports:\n  tcp: {bind_adr: \"0.0.0.0:1\"}\n", "transports.tcp.bind_adr", 2},
		{"transports:\n  ethernet: {interface: eth0, bogus: true}\n", "transports.ethernet.bogus", 2},
		{"transports:\n  tor: {mode: socks5, bogus: 1}\n", "transports.tor.bogus", 2},
		{"transports:\n  tor:\n    directory_service: {bogus: 1}\n", "transports.tor.directory_service.bogus", 3},
		{"transports:\n  nym: {socks: x}\n", "transports.nym.socks", 2},
		{"transports:\n  ble: {adaptor: hci0}\n", "transports.ble.adaptor", 2},
		{"transports:\n  udp:\n    main: {bind_addr: \"0.0.0.0:1\", bogus: 1}\n", "transports.udp.main.bogus", 3},
		{"peers:\n  - npub: npub1a\n    addresses: []\n    via_nostr: true\n    nickname: x\n", "peers[0].nickname", 5},
		{"peers:\n  - npub: npub1a\n    addresses:\n      - {transport: udp, addr: \"1.2.3.4:1\", seen_at_ms: 5}\n", "peers[0].addresses[0].seen_at_ms", 4},
		{"node:\n  rendezvous:\n    nostr:\n      enabled: true\n      relays: []\n", "node.rendezvous.nostr.relays", 5},
	} {
		errs := loadErr(t, tc.yaml)
		e := errs[0]
		if !errors.Is(e, ErrUnknownKey) || e.Key != tc.key || e.Line != tc.line || e.File != "test.yaml" {
			t.Errorf("%q: got %v (key %q line %d), want unknown key %s at line %d", tc.yaml, e, e.Key, e.Line, tc.key, tc.line)
		}
	}
}

func TestUnknownKeysIgnored(t *testing.T) {
	c, w := mustLoad(t, `
colour: blue
node:
  limits:
    max_peers: 5
    max_friends: 3
  identity: {persistant: true}
  rendezvous:
    lan: {enabled: true, scopes: x}
tun: {enabled: true, mtu: 1400, queues: 4}
dns: {ttl: 60, cache: true}
`)
	if c.Node.Limits.MaxPeers != 5 || c.TUN.MTU != 1400 || !c.Node.Rendezvous.LAN.Enabled || c.DNS.TTL != 60 {
		t.Errorf("known keys beside unknown ones not read: %+v", c)
	}
	var keys []string
	for _, x := range w {
		keys = append(keys, x.Key)
		if x.File != "test.yaml" || x.Line == 0 || !strings.Contains(x.String(), "unknown key ignored") {
			t.Errorf("warning %v", x)
		}
	}
	want := []string{"colour", "node.limits.max_friends", "node.identity.persistant", "node.rendezvous.lan.scopes", "tun.queues", "dns.cache"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("warned keys %v, want %v", keys, want)
	}
	if w[0].String() != "test.yaml:2: colour: unknown key ignored" {
		t.Errorf("warning text %q", w[0].String())
	}
}

func TestLegacyDiscovery(t *testing.T) {
	c, w := mustLoad(t, `
node:
  lookup:
    ttl: 10
    recent_expiry_secs: 99
  rendezvous:
    nostr:
      enabled: false
      app: new
  discovery:
    ttl: 32
    attempt_timeouts_secs: [3, 6]
    backoff_base_secs: 1
    backoff_max_secs: 8
    forward_min_interval_secs: 4
    nostr:
      enabled: true
      policy: open
    lan:
      enabled: true
      scope: lab
`)
	if len(w) != 1 || w[0].Key != "node.discovery" || w[0].Line != 10 || !strings.Contains(w[0].Message, "deprecated") {
		t.Fatalf("want exactly one deprecation warning at line 10, got %v", w)
	}
	l := c.Node.Lookup
	want := LookupConfig{TTL: 32, AttemptTimeoutsSecs: []uint64{3, 6}, RecentExpirySecs: 99, BackoffBaseSecs: 1, BackoffMaxSecs: 8, ForwardMinIntervalSecs: 4}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("lookup %+v, want %+v", l, want)
	}
	n := c.Node.Rendezvous.Nostr
	// The legacy nostr block replaces the new one whole: app is back to its
	// default.
	if !n.Enabled || n.Policy != NostrPolicyOpen || n.App != "fips-overlay-v1" {
		t.Errorf("nostr %+v", n)
	}
	if lan := c.Node.Rendezvous.LAN; !lan.Enabled || *lan.Scope != "lab" {
		t.Errorf("lan %+v", lan)
	}
	if _, ok := c.src["node.discovery"]; ok {
		t.Error("discovery recorded as a key")
	}

	// Only the keys set move; an absent section is created.
	c, w = mustLoad(t, "node:\n  discovery:\n    recent_expiry_secs: 7\n    nostr:\n")
	if len(w) != 1 || c.Node.Lookup.RecentExpirySecs != 7 || c.Node.Lookup.TTL != 64 || c.Node.Rendezvous.Nostr.App != "fips-overlay-v1" {
		t.Errorf("partial legacy block: %v %+v", w, c.Node.Lookup)
	}
	// An empty legacy block is no block: no warning.
	_, w = mustLoad(t, "node:\n  discovery:\n")
	if len(w) != 0 {
		t.Errorf("empty legacy block warned: %v", w)
	}
	// Unknown keys in it are ignored (warned), in its nostr rejected, under
	// the legacy path.
	_, w = mustLoad(t, "node:\n  discovery:\n    lan: {bogus: 1}\n")
	if len(w) != 2 || w[0].Key != "node.discovery.lan.bogus" {
		t.Errorf("unknown key in legacy lan: %v", w)
	}
	errs := loadErr(t, "node:\n  discovery:\n    nostr: {bogus: 1}\n")
	if len(errs) != 1 || errs[0].Key != "node.discovery.nostr.bogus" || !errors.Is(errs[0], ErrUnknownKey) {
		t.Errorf("unknown key in legacy nostr: %v", errs)
	}
	errs = loadErr(t, "node:\n  discovery:\n    ttl: 300\n")
	if len(errs) != 1 || errs[0].Key != "node.discovery.ttl" || errs[0].Line != 3 {
		t.Errorf("bad legacy ttl: %v", errs)
	}
}

func TestMalformedYAML(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		line int
	}{
		{"node:\n  limits:\n    max_peers: 5\n  bad: [1, 2\n", 0},
		{"node:\n  a: 1\n b: 2\n", 3},
		{"tun:\n  enabled: true\n\tmtu: 1280\n", 3},
		{"dns: {port: 5354\n", 0},
		{"a: 1\n---\nb: 2\n", 2},
		{"peers: *nope\n", 0},
	} {
		_, _, err := LoadBytes("fips.yaml", []byte(tc.yaml))
		errs := flatten(t, err)
		e := errs[0]
		if !errors.Is(err, ErrSyntax) || e.File != "fips.yaml" || e.Reason == "" {
			t.Errorf("%q: %v", tc.yaml, err)
		}
		if tc.line != 0 && e.Line != tc.line {
			t.Errorf("%q: line %d, want %d (%v)", tc.yaml, e.Line, tc.line, err)
		}
		if e.Line > 0 && !strings.HasPrefix(err.Error(), "fips.yaml:") {
			t.Errorf("%q: message %q", tc.yaml, err)
		}
	}
	// The common case, a bad indent, is reported as file:line: reason.
	_, _, err := LoadBytes("fips.yaml", []byte("node:\n  limits:\n    max_peers: 5\n   max_links: 3\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "fips.yaml:4: ") {
		t.Errorf("bad indent: %v", err)
	}
}

func TestTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml, key, msg string
		line           int
	}{
		{"node:\n  limits:\n    max_peers: lots\n", "node.limits.max_peers", `expected an unsigned 64-bit integer, got "lots"`, 3},
		{"tun:\n  mtu: 70000\n", "tun.mtu", "70000 is out of range for an unsigned 16-bit integer (0..65535)", 2},
		{"dns:\n  port: \"5354\"\n", "dns.port", `expected an unsigned 16-bit integer, got the quoted string "5354"`, 2},
		{"tun:\n  enabled: yes\n", "tun.enabled", `expected a boolean (true or false), got "yes"`, 2},
		{"node:\n  tree:\n    parent_hysteresis: high\n", "node.tree.parent_hysteresis", `expected a number, got "high"`, 3},
		{"node:\n  lookup:\n    attempt_timeouts_secs: 5\n", "node.lookup.attempt_timeouts_secs", `expected a sequence, got "5"`, 3},
		{"node:\n  lookup:\n    attempt_timeouts_secs: [1, -2]\n", "node.lookup.attempt_timeouts_secs[1]", `expected an unsigned 64-bit integer, got "-2"`, 3},
		{"node:\n  rendezvous:\n    nostr:\n      policy: everyone\n", "node.rendezvous.nostr.policy", `unknown value "everyone", expected one of: disabled, configured_only, open`, 4},
		{"node:\n  mmp: {mode: heavy}\n", "node.mmp.mode", `unknown value "heavy", expected one of: full, lightweight, minimal`, 2},
		{"node: [1]\n", "node", "expected a mapping, got a sequence", 1},
		{"peers:\n  - {}\n", "peers[0].npub", `missing required key "npub"`, 2},
		{"peers:\n  - npub: x\n    addresses: [{addr: \"1.2.3.4:5\"}]\n", "peers[0].addresses[0].transport", `missing required key "transport"`, 3},
		{"node:\n  limits: {max_peers: 1}\n  limits: {max_peers: 2}\n", "node.limits", `duplicate key "limits" (first at line 2)`, 3},
		{"node:\n  limits:\n    max_peers: 012\n", "node.limits.max_peers", `expected an unsigned 64-bit integer, got "012"`, 3},
		{"node:\n  identity:\n    persistent: nsec1secret\n", "node.identity.persistent", "expected a boolean (true or false), got a scalar", 3},
	} {
		errs := loadErr(t, tc.yaml)
		e := errs[0]
		if !errors.Is(e, ErrType) && !errors.Is(e, ErrMissingKey) && !errors.Is(e, ErrDuplicateKey) {
			t.Errorf("%q: class %v", tc.yaml, e.Err)
		}
		if e.Key != tc.key || e.Reason != tc.msg || e.Line != tc.line {
			t.Errorf("%q:\n got  %s [key %q line %d]\n want %s [key %q line %d]", tc.yaml, e.Reason, e.Key, e.Line, tc.msg, tc.key, tc.line)
		}
		if !strings.HasPrefix(e.Error(), "test.yaml:") || !strings.Contains(e.Error(), tc.key) {
			t.Errorf("message %q", e.Error())
		}
	}
	// All problems of a file are reported together.
	errs := loadErr(t, "tun: {mtu: big}\ndns: {port: small}\n")
	if len(errs) != 2 {
		t.Errorf("want 2 errors, got %v", errs)
	}
}

func TestScalarForms(t *testing.T) {
	c, _ := mustLoad(t, `
node:
  limits: {max_peers: 0x40, max_links: 0o17, max_connections: +12, max_pending_inbound: 0b101}
  tree: {parent_hysteresis: 1}
  bloom: {max_inbound_fpr: 5e-1}
  ecn: {loss_threshold: .inf, enabled: FALSE}
  identity: {nsec: "", persistent: True}
  rendezvous: {nostr: {app: ~}}
transports:
  ethernet: {interface: eth0, ethertype: 0x88b5}
`)
	l := c.Node.Limits
	if l.MaxPeers != 64 || l.MaxLinks != 15 || l.MaxConnections != 12 || l.MaxPendingInbound != 5 {
		t.Errorf("integers: %+v", l)
	}
	if c.Node.Tree.ParentHysteresis != 1 || c.Node.Bloom.MaxInboundFPR != 0.5 || c.Node.ECN.Enabled {
		t.Errorf("floats/bools")
	}
	if c.Node.Identity.Nsec == nil || *c.Node.Identity.Nsec != "" || !c.Node.Identity.Persistent {
		t.Errorf("quoted empty nsec is set, not absent: %v", c.Node.Identity.Nsec)
	}
	if c.Node.Rendezvous.Nostr.App != "~" {
		t.Errorf("a plain ~ is the string ~ for a string key, as upstream: %q", c.Node.Rendezvous.Nostr.App)
	}
	if c.Transports.Ethernet.Single.Ethertype != 0x88b5 {
		t.Error("hex ethertype")
	}
	// Null means absent for optional keys.
	c, _ = mustLoad(t, "node:\n  identity: {nsec: ~}\n  rate_limit: {established_handshake_burst: null}\n  log_level:\n  drain_timeout_secs: ~\n"+
		"tun: {mtu: ~, name: }\ndns: {port: null, ttl: ~, bind_addr: }\ntransports:\n  udp: {mtu: ~, bind_addr: ~}\n  tcp: {bind_addr: ~}\n")
	if c.Node.Identity.Nsec != nil || c.Node.RateLimit.EstablishedHandshakeBurst != nil || c.Node.DrainTimeoutSecs != 2 ||
		c.TUN.MTU != 1280 || c.TUN.Name != "fips0" || c.DNS.Port != 5354 || c.DNS.TTL != 300 || c.DNS.BindAddr != "::1" ||
		c.Transports.UDP.Single.MTU != 1280 || c.Transports.UDP.Single.BindAddr != "0.0.0.0:2121" || c.Transports.TCP.Single.BindAddr != nil {
		t.Errorf("null optional keys: %+v", c)
	}
	// ...but not for keys upstream requires a value for.
	for _, y := range []string{"node: {tick_interval_secs: ~}", "tun: {enabled: ~}", "node: {rekey: {after_secs: }}"} {
		if errs := loadErr(t, y); !errors.Is(errs[0], ErrType) {
			t.Errorf("%q: %v", y, errs)
		}
	}
	// Empty lists are empty, not the defaults.
	c, _ = mustLoad(t, "node:\n  rendezvous:\n    nostr:\n      stun_servers:\n      dm_relays: []\n")
	if n := c.Node.Rendezvous.Nostr; n.StunServers == nil || len(n.StunServers) != 0 || len(n.DMRelays) != 0 || len(n.AdvertRelays) != 3 {
		t.Errorf("lists: %+v", n)
	}
}

func TestAliasesAndAnchors(t *testing.T) {
	c, w := mustLoad(t, `
x-common: &eth {interface: eth0, listen: false, announce: true}
transports:
  ethernet:
    a: *eth
    b: {interface: eth1}
`)
	if e := c.Transports.Ethernet.Named; len(e) != 2 || e["a"].Interface != "eth0" || e["a"].Listen || !e["a"].Announce {
		t.Errorf("aliased instance: %+v", e)
	}
	if len(w) != 1 || w[0].Key != "x-common" {
		t.Errorf("warnings %v", w)
	}
	errs := loadErr(t, "a: &a [*a]\npeers: *a\n")
	if len(errs) == 0 {
		t.Fatal("recursive alias accepted")
	}
	// A billion-laughs style document is refused, not expanded.
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		b.WriteString("l" + itoa(i) + ": &l" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("node:\n  lookup:\n    attempt_timeouts_secs: *l11\n")
	if _, _, err := LoadBytes("bomb.yaml", []byte(b.String())); err == nil {
		t.Error("alias bomb accepted")
	}
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func TestGatewayParsing(t *testing.T) {
	_, _, err := loadGateway("gateway: {pool: \"fd01::/112\"}\n")
	if e := flatten(t, err); !errors.Is(e[0], ErrMissingKey) || e[0].Key != "gateway.lan_interface" {
		t.Errorf("missing lan_interface: %v", err)
	}
	_, _, err = loadGateway("gateway:\n  pool: \"fd01::/112\"\n  lan_interface: eth0\n  port_forwards:\n    - {listen_port: 80, proto: tcp, target: \"192.168.1.10:80\"}\n")
	if e := flatten(t, err); !errors.Is(e[0], ErrType) || e[0].Key != "gateway.port_forwards[0].target" || e[0].Line != 5 {
		t.Errorf("IPv4 target: %v", err)
	}
	c, w, err := loadGateway("gateway:\n  pool: \"fd01::/112\"\n  lan_interface: eth0\n  extra: 1\n  port_forwards:\n    - {listen_port: 0, proto: tcp, target: \"[fd12::1]:80\"}\n")
	if err != nil || len(w) != 1 || w[0].Key != "gateway.extra" {
		t.Fatalf("%v %v", err, w)
	}
	if err := c.Gateway.Validate(); err == nil || err.Error() != "gateway.port_forwards: port_forward listen_port must be non-zero" {
		t.Errorf("zero port: %v", err)
	}
	c, _, _ = loadGateway("gateway:\n  pool: \"fd01::/112\"\n  lan_interface: eth0\n  port_forwards:\n    - {listen_port: 80, proto: tcp, target: \"[fd12::1]:80\"}\n    - {listen_port: 80, proto: udp, target: \"[fd12::1]:80\"}\n    - {listen_port: 80, proto: tcp, target: \"[fd12::2]:80\"}\n")
	if err := c.Gateway.Validate(); err == nil || !strings.Contains(err.Error(), "duplicate port_forward (Tcp 80) — each (listen_port, proto) must be unique") {
		t.Errorf("duplicate: %v", err)
	}
	// Off Linux, upstream does not read the section at all.
	sh := newShared()
	sh.gateway = false
	f := parseFile("t.yaml", []byte("gateway: {enabled: true}\n"), sh)
	c, d := decodeRoot("t.yaml", f.root, sh, false)
	if len(d.errs) != 0 || c.Gateway != nil || len(d.warns) != 1 {
		t.Errorf("non-Linux gateway: %v %v", d.errs, d.warns)
	}
}

// writeFiles writes name→content into a temp dir and returns the paths in
// the given order.
func writeFiles(t *testing.T, files ...[2]string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f[0])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func TestSearchPathMerge(t *testing.T) {
	paths := writeFiles(t,
		[2]string{"etc/fips.yaml", `
node:
  identity: {persistent: true}
  log_level: debug
  limits: {max_peers: 50, max_links: 60}
  rendezvous:
    nostr: {enabled: true, app: sys}
tun: {enabled: true, name: fips9, mtu: 1400}
dns: {enabled: false}
transports:
  udp:
    main: {bind_addr: "0.0.0.0:2121", mtu: 1300}
    backup: {bind_addr: "0.0.0.0:2122"}
  tcp: {bind_addr: "0.0.0.0:8443", keepalive_secs: 5}
  ethernet: {interface: eth0}
peers:
  - npub: npub1sys
    addresses: [{transport: udp, addr: "192.0.2.1:2121"}]
gateway: {pool: "fd01::/112", lan_interface: eth0}
`},
		[2]string{"home/.config/fips/fips.yaml", `
node:
  limits: {max_peers: 70}
  rendezvous:
    nostr: {policy: open}
tun: {mtu: 1280}
transports:
  udp:
    main: {mtu: 1280}
  tcp: {nodelay: false}
  ethernet:
    lan: {interface: br-lan}
`},
		[2]string{"cwd/fips.yaml", `
node:
  log_level:
  limits: {max_links: 80}
dns: {port: 53}
transports:
  ethernet: {interface: eth1}
peers:
  - npub: npub1cwd
    via_nostr: true
`},
	)
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	c, loaded, w, err := LoadFiles(append([]string{missing}, paths...))
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
	if !reflect.DeepEqual(loaded, paths) {
		t.Errorf("loaded %v", loaded)
	}
	if KeyDir(loaded) != filepath.Dir(paths[2]) {
		t.Errorf("key dir %s", KeyDir(loaded))
	}
	for _, d := range []struct {
		key  string
		want any
	}{
		{"node.identity.persistent", true},
		{"node.log_level", "debug"}, // an empty value does not override
		{"node.limits.max_peers", uint(70)},
		{"node.limits.max_links", uint(80)},
		{"node.limits.max_connections", uint(256)},
		{"node.rendezvous.nostr.enabled", true},
		{"node.rendezvous.nostr.app", "sys"},
		{"node.rendezvous.nostr.policy", NostrPolicyOpen},
		{"tun.enabled", true},
		{"tun.name", "fips9"},
		{"tun.mtu", uint16(1280)},
		{"dns.enabled", false},
		{"dns.port", uint16(53)},
		{"transports.udp.main.mtu", uint16(1280)},
		{"transports.udp.main.bind_addr", "0.0.0.0:2121"},
		{"transports.udp.backup.bind_addr", "0.0.0.0:2122"},
		{"transports.tcp.bind_addr", "0.0.0.0:8443"},
		{"transports.tcp.keepalive_secs", uint64(5)},
		{"transports.tcp.nodelay", false},
		{"transports.ethernet.interface", "eth1"}, // the form changed: replaced
		{"peers[0].npub", "npub1cwd"},             // lists are replaced
		{"gateway.pool", nil},
	} {
		if d.key == "gateway.pool" {
			continue // checked below, platform dependent
		}
		if got := valueAt(t, c, d.key); !reflect.DeepEqual(got, d.want) {
			t.Errorf("%s = %#v, want %#v", d.key, got, d.want)
		}
	}
	if len(c.Peers) != 1 || c.Transports.Ethernet.Len() != 1 {
		t.Errorf("peers %d, ethernet %d", len(c.Peers), c.Transports.Ethernet.Len())
	}
	if p, ok := c.src["dns.port"]; !ok || p.file != paths[2] || p.line != 5 {
		t.Errorf("dns.port source %+v", p)
	}
	if p := c.src["node.limits.max_peers"]; p.file != paths[1] {
		t.Errorf("max_peers source %+v", p)
	}

	// Named instances merge by name.
	c, _, _, err = LoadFiles(paths[:2])
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Transports.Ethernet; !reflect.DeepEqual(e.Names(), []string{"lan"}) {
		t.Errorf("ethernet single then named: %v", e.Names())
	}

	// An error in any file fails the load and names that file.
	bad := writeFiles(t, [2]string{"a.yaml", "tun: {mtu: 1280}\n"}, [2]string{"b.yaml", "tun:\n  mtu: x\n"})
	_, _, _, err = LoadFiles(bad)
	if e := flatten(t, err); e[0].File != bad[1] || e[0].Line != 2 {
		t.Errorf("error in second file: %v", err)
	}

	// No files: the defaults, and the key directory is the first search
	// path's.
	c, loaded, _, err = LoadFiles([]string{missing})
	if err != nil || len(loaded) != 0 || c.TUN.Enabled {
		t.Errorf("no files: %v %v", loaded, err)
	}
	if KeyDir(nil) != filepath.Dir(SearchPaths()[0]) {
		t.Errorf("key dir without files: %s", KeyDir(nil))
	}
}

// TestMergeLegacyAcrossFiles: a legacy block is folded within its own file,
// so a later file's node.lookup overrides an earlier file's
// node.discovery.
func TestMergeLegacyAcrossFiles(t *testing.T) {
	paths := writeFiles(t,
		[2]string{"a.yaml", "node:\n  discovery: {ttl: 20, recent_expiry_secs: 30}\n"},
		[2]string{"b.yaml", "node:\n  lookup: {ttl: 40}\n"},
	)
	c, _, w, err := LoadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 1 || w[0].File != paths[0] {
		t.Errorf("warnings %v", w)
	}
	if c.Node.Lookup.TTL != 40 || c.Node.Lookup.RecentExpirySecs != 30 {
		t.Errorf("lookup %+v", c.Node.Lookup)
	}
}

func TestSearchPaths(t *testing.T) {
	p := SearchPaths()
	if len(p) < 3 || p[len(p)-1] != "."+string(filepath.Separator)+"fips.yaml" {
		t.Fatalf("search paths %v", p)
	}
	if want := filepath.Join(SystemConfigDir(), "fips.yaml"); LegacySystemConfigDir() == "" && p[0] != want {
		t.Errorf("first path %s, want %s", p[0], want)
	}
	if h, err := os.UserHomeDir(); err == nil && p[len(p)-2] != filepath.Join(h, ".fips.yaml") {
		t.Errorf("home path %v", p)
	}
}

func TestLoadErrors(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrRead) || !strings.HasSuffix(e.File, "nope.yaml") {
		t.Errorf("missing file: %v", err)
	}
	// A directory in the search path is a read error, not skipped.
	dir := t.TempDir()
	if _, _, _, err := LoadFiles([]string{dir}); !errors.Is(err, ErrRead) {
		t.Errorf("directory: %v", err)
	}
	// A root that is not a mapping.
	errs := loadErr(t, "just a string\n")
	if !errors.Is(errs[0], ErrType) {
		t.Errorf("scalar root: %v", errs)
	}
	// Comments only is an empty file.
	if c, _ := mustLoad(t, "# nothing\n"); c.Node.Limits.MaxPeers != 128 {
		t.Error("comment-only file")
	}
}

// TestEtcDir: hosts and ACL files are read from upstream's fixed directory
// unless FIPS_ETC_DIR moves them.
func TestEtcDir(t *testing.T) {
	t.Setenv(EtcDirEnv, "")
	want := map[string]string{"linux": "/etc/fips", "darwin": "/usr/local/etc/fips", "freebsd": "/usr/local/etc/fips", "windows": `C:\ProgramData\fips`}[runtime.GOOS]
	if want != "" && EtcDir() != want {
		t.Errorf("EtcDir() = %q, want %q", EtcDir(), want)
	}
	t.Setenv(EtcDirEnv, "/tmp/x")
	if EtcDir() != "/tmp/x" {
		t.Errorf("EtcDir() = %q with %s set", EtcDir(), EtcDirEnv)
	}
}

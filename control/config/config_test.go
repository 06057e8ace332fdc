package config

import (
	"log/slog"
	"math"
	"reflect"
	"testing"
)

// upstreamDefaults is every key's default as upstream's code sets it.
var upstreamDefaults = []struct {
	key  string
	want any
}{
	{"node.identity.nsec", nil},
	{"node.identity.persistent", false},
	{"node.leaf_only", false},
	{"node.tick_interval_secs", uint64(1)},
	{"node.base_rtt_ms", uint64(100)},
	{"node.heartbeat_interval_secs", uint64(10)},
	{"node.link_dead_timeout_secs", uint64(30)},
	{"node.drain_timeout_secs", uint64(2)},
	{"node.log_level", ""},
	{"node.limits.max_connections", uint(256)},
	{"node.limits.max_peers", uint(128)},
	{"node.limits.max_links", uint(256)},
	{"node.limits.max_pending_inbound", uint(1000)},
	{"node.rate_limit.handshake_burst", uint32(100)},
	{"node.rate_limit.handshake_rate", 10.0},
	{"node.rate_limit.handshake_timeout_secs", uint64(30)},
	{"node.rate_limit.handshake_resend_interval_ms", uint64(1000)},
	{"node.rate_limit.handshake_resend_backoff", 2.0},
	{"node.rate_limit.handshake_max_resends", uint32(5)},
	{"node.rate_limit.established_handshake_burst", nil},
	{"node.rate_limit.established_handshake_rate", nil},
	{"node.rate_limit.session_setup_burst", uint32(64)},
	{"node.rate_limit.session_setup_rate", 16.0},
	{"node.retry.max_retries", uint32(5)},
	{"node.retry.base_interval_secs", uint64(5)},
	{"node.retry.max_backoff_secs", uint64(300)},
	{"node.cache.coord_size", uint(50000)},
	{"node.cache.coord_ttl_secs", uint64(300)},
	{"node.cache.identity_size", uint(10000)},
	{"node.lookup.ttl", uint8(64)},
	{"node.lookup.attempt_timeouts_secs", []uint64{1, 2, 4, 8}},
	{"node.lookup.recent_expiry_secs", uint64(10)},
	{"node.lookup.backoff_base_secs", uint64(0)},
	{"node.lookup.backoff_max_secs", uint64(0)},
	{"node.lookup.forward_min_interval_secs", uint64(2)},
	{"node.rendezvous.nostr.enabled", false},
	{"node.rendezvous.nostr.advertise", true},
	{"node.rendezvous.nostr.advert_relays", []string{"wss://relay.damus.io", "wss://nos.lol", "wss://offchain.pub"}},
	{"node.rendezvous.nostr.dm_relays", []string{"wss://relay.damus.io", "wss://nos.lol", "wss://offchain.pub"}},
	{"node.rendezvous.nostr.stun_servers", []string{"stun:stun.l.google.com:19302", "stun:stun.cloudflare.com:3478", "stun:global.stun.twilio.com:3478"}},
	{"node.rendezvous.nostr.share_local_candidates", false},
	{"node.rendezvous.nostr.app", "fips-overlay-v1"},
	{"node.rendezvous.nostr.signal_ttl_secs", uint64(120)},
	{"node.rendezvous.nostr.policy", NostrPolicyConfiguredOnly},
	{"node.rendezvous.nostr.open_discovery_max_pending", uint(64)},
	{"node.rendezvous.nostr.max_concurrent_incoming_offers", uint(16)},
	{"node.rendezvous.nostr.max_concurrent_offers_per_npub", uint(4)},
	{"node.rendezvous.nostr.advert_cache_max_entries", uint(2048)},
	{"node.rendezvous.nostr.seen_sessions_max_entries", uint(2048)},
	{"node.rendezvous.nostr.attempt_timeout_secs", uint64(10)},
	{"node.rendezvous.nostr.replay_window_secs", uint64(300)},
	{"node.rendezvous.nostr.punch_start_delay_ms", uint64(2000)},
	{"node.rendezvous.nostr.punch_interval_ms", uint64(200)},
	{"node.rendezvous.nostr.punch_duration_ms", uint64(10000)},
	{"node.rendezvous.nostr.advert_ttl_secs", uint64(3600)},
	{"node.rendezvous.nostr.advert_refresh_secs", uint64(1800)},
	{"node.rendezvous.nostr.startup_sweep_delay_secs", uint64(5)},
	{"node.rendezvous.nostr.startup_sweep_max_age_secs", uint64(3600)},
	{"node.rendezvous.nostr.failure_streak_threshold", uint32(5)},
	{"node.rendezvous.nostr.extended_cooldown_secs", uint64(1800)},
	{"node.rendezvous.nostr.warn_log_interval_secs", uint64(300)},
	{"node.rendezvous.nostr.failure_state_max_entries", uint(4096)},
	{"node.rendezvous.nostr.protocol_mismatch_cooldown_secs", uint64(86400)},
	{"node.rendezvous.lan.enabled", false},
	{"node.rendezvous.lan.service_type", "_fips._udp.local."},
	{"node.rendezvous.lan.scope", nil},
	{"node.rendezvous.lan.dial_burst", uint32(4)},
	{"node.rendezvous.lan.dial_rate", 1.0},
	{"node.tree.announce_min_interval_ms", uint64(500)},
	{"node.tree.parent_hysteresis", 0.2},
	{"node.tree.hold_down_secs", uint64(30)},
	{"node.tree.reeval_interval_secs", uint64(60)},
	{"node.tree.flap_threshold", uint32(4)},
	{"node.tree.flap_window_secs", uint64(60)},
	{"node.tree.flap_dampening_secs", uint64(120)},
	{"node.bloom.update_debounce_ms", uint64(500)},
	{"node.bloom.max_inbound_fpr", 0.20},
	{"node.routing.next_hop", "distance"},
	{"node.routing.filter_schedule", "change"},
	{"node.routing.full_filter_lookups", "tree"},
	{"node.session.default_ttl", uint8(64)},
	{"node.session.pending_packets_per_dest", uint(16)},
	{"node.session.pending_max_destinations", uint(256)},
	{"node.session.idle_timeout_secs", uint64(90)},
	{"node.session.coords_warmup_packets", uint8(5)},
	{"node.session.coords_response_interval_ms", uint64(2000)},
	{"node.buffers.packet_channel", uint(1024)},
	{"node.buffers.tun_channel", uint(1024)},
	{"node.buffers.dns_channel", uint(64)},
	{"node.control.enabled", true},
	{"node.control.socket_path", ""},
	{"node.native_api.enabled", false},
	{"node.native_api.socket_path", ""},
	{"node.native_api.pending_per_flow", uint(16)},
	{"node.native_api.backlog", uint(16)},
	{"node.native_api.max_flows", uint(256)},
	{"node.native_api.debug_commands", false},
	{"node.mmp.mode", MMPFull},
	{"node.mmp.log_interval_secs", uint64(30)},
	{"node.mmp.owd_window_size", uint(32)},
	{"node.session_mmp.mode", MMPFull},
	{"node.session_mmp.log_interval_secs", uint64(30)},
	{"node.session_mmp.owd_window_size", uint(32)},
	{"node.ecn.enabled", true},
	{"node.ecn.loss_threshold", 0.05},
	{"node.ecn.etx_threshold", 3.0},
	{"node.rekey.enabled", true},
	{"node.rekey.after_secs", uint64(120)},
	{"node.rekey.after_messages", uint64(65536)},
	{"tun.enabled", false},
	{"tun.name", "fips0"},
	{"tun.mtu", uint16(1280)},
	{"dns.enabled", true},
	{"dns.bind_addr", "::1"},
	{"dns.port", uint16(5354)},
	{"dns.ttl", uint32(300)},
	{"gateway", nil},
	{"metrics.listen", ""},
	{"metrics.max_peer_labels", uint(64)},
	{"metrics.history_max_peers", uint(256)},
	{"dataplane.mode", "userspace"},
	{"dataplane.xdp_interfaces", []string(nil)},
	{"dataplane.afxdp", false},
}

// TestDefaults checks every default, both from Default() and from an empty
// file, and that a file naming a section without keys gets the same.
func TestDefaults(t *testing.T) {
	empty, w := mustLoad(t, "")
	if len(w) != 0 {
		t.Errorf("warnings for an empty file: %v", w)
	}
	sections, _ := mustLoad(t, "node:\n  limits:\n  rate_limit: {}\n  rendezvous:\n    nostr:\n    lan: {}\ntun:\ndns: {}\n")
	for _, c := range []struct {
		name string
		cfg  *Config
	}{{"Default", Default()}, {"empty file", empty}, {"empty sections", sections}} {
		for _, d := range upstreamDefaults {
			if got := valueAt(t, c.cfg, d.key); !reflect.DeepEqual(got, d.want) {
				t.Errorf("%s: %s = %#v, want %#v", c.name, d.key, got, d.want)
			}
		}
		if !c.cfg.Transports.Empty() || len(c.cfg.Peers) != 0 {
			t.Errorf("%s: transports or peers by default", c.name)
		}
	}
}

// TestTransportDefaults checks each transport type's instance defaults.
func TestTransportDefaults(t *testing.T) {
	c, _ := mustLoad(t, `
transports:
  udp: {}
  tcp: {}
  ethernet: {interface: eth0}
  tor: {}
  nym: {}
  ble: {}
`)
	for _, d := range []struct {
		key  string
		want any
	}{
		{"transports.udp.bind_addr", "0.0.0.0:2121"},
		{"transports.udp.mtu", uint16(1280)},
		{"transports.udp.recv_buf_size", uint(2097152)},
		{"transports.udp.send_buf_size", uint(2097152)},
		{"transports.udp.advertise_on_nostr", false},
		{"transports.udp.public", false},
		{"transports.udp.external_addr", nil},
		{"transports.udp.outbound_only", false},
		{"transports.udp.accept_connections", true},
		{"transports.tcp.bind_addr", nil},
		{"transports.tcp.mtu", uint16(1400)},
		{"transports.tcp.connect_timeout_ms", uint64(5000)},
		{"transports.tcp.nodelay", true},
		{"transports.tcp.keepalive_secs", uint64(30)},
		{"transports.tcp.recv_buf_size", uint(2097152)},
		{"transports.tcp.send_buf_size", uint(2097152)},
		{"transports.tcp.max_inbound_connections", nil},
		{"transports.tcp.advertise_on_nostr", false},
		{"transports.tcp.external_addr", nil},
		{"transports.ethernet.interface", "eth0"},
		{"transports.ethernet.ethertype", uint16(0x2121)},
		{"transports.ethernet.mtu", nil},
		{"transports.ethernet.recv_buf_size", uint(2097152)},
		{"transports.ethernet.send_buf_size", uint(2097152)},
		{"transports.ethernet.listen", true},
		{"transports.ethernet.announce", false},
		{"transports.ethernet.auto_connect", false},
		{"transports.ethernet.accept_connections", false},
		{"transports.ethernet.beacon_interval_secs", uint64(30)},
		{"transports.tor.mode", "socks5"},
		{"transports.tor.socks5_addr", "127.0.0.1:9050"},
		{"transports.tor.connect_timeout_ms", uint64(120000)},
		{"transports.tor.mtu", uint16(1400)},
		{"transports.tor.control_addr", "/run/tor/control"},
		{"transports.tor.control_auth", "cookie"},
		{"transports.tor.cookie_path", "/var/run/tor/control.authcookie"},
		{"transports.tor.max_inbound_connections", uint(64)},
		{"transports.tor.directory_service", nil},
		{"transports.tor.advertise_on_nostr", false},
		{"transports.tor.advertised_port", uint16(443)},
		{"transports.nym.socks5_addr", "127.0.0.1:1080"},
		{"transports.nym.connect_timeout_ms", uint64(300000)},
		{"transports.nym.mtu", uint16(1400)},
		{"transports.nym.startup_timeout_secs", uint64(120)},
		{"transports.ble.adapter", "hci0"},
		{"transports.ble.psm", uint16(0x0085)},
		{"transports.ble.mtu", uint16(2048)},
		{"transports.ble.max_connections", uint(7)},
		{"transports.ble.connect_timeout_ms", uint64(10000)},
		{"transports.ble.advertise", true},
		{"transports.ble.scan", true},
		{"transports.ble.auto_connect", false},
		{"transports.ble.accept_connections", true},
		{"transports.ble.probe_cooldown_secs", uint64(30)},
	} {
		if got := valueAt(t, c, d.key); !reflect.DeepEqual(got, d.want) {
			t.Errorf("%s = %#v, want %#v", d.key, got, d.want)
		}
	}
	dir := c.Transports.Tor.Single.Directory()
	if dir.HostnameFile != "/var/lib/tor/fips_onion_service/hostname" || dir.BindAddr != "127.0.0.1:8443" {
		t.Errorf("tor directory_service defaults: %+v", dir)
	}
	if got := c.Transports.Ethernet.Single.EffectiveBeaconIntervalSecs(); got != 30 {
		t.Errorf("beacon interval %d", got)
	}
}

// TestPeerDefaults checks peers[] and addresses[] defaults.
func TestPeerDefaults(t *testing.T) {
	c, _ := mustLoad(t, "peers:\n  - npub: npub1x\n    addresses:\n      - {transport: udp, addr: \"1.2.3.4:2121\"}\n")
	for _, d := range []struct {
		key  string
		want any
	}{
		{"peers[0].alias", nil},
		{"peers[0].connect_policy", ConnectAuto},
		{"peers[0].auto_reconnect", true},
		{"peers[0].via_nostr", false},
		{"peers[0].addresses[0].priority", uint8(100)},
	} {
		if got := valueAt(t, c, d.key); !reflect.DeepEqual(got, d.want) {
			t.Errorf("%s = %#v, want %#v", d.key, got, d.want)
		}
	}
}

// TestGatewayDefaults checks gateway.* defaults.
func TestGatewayDefaults(t *testing.T) {
	c, _, err := loadGateway("gateway: {pool: \"fd01::/112\", lan_interface: eth0}\n")
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gateway
	want := GatewayConfig{
		Pool: "fd01::/112", LANInterface: "eth0",
		DNS:             GatewayDNSConfig{Listen: "[::1]:5353", Upstream: "[::1]:5354", TTL: 60, MaxMappingsPerClient: 256},
		PoolGracePeriod: 60,
		Conntrack:       ConntrackConfig{TCPEstablished: 432000, UDPTimeout: 30, UDPAssured: 180, ICMPTimeout: 30},
	}
	if !reflect.DeepEqual(*g, want) {
		t.Errorf("gateway = %+v\nwant %+v", *g, want)
	}
}

// loadGateway loads with the gateway section read whatever the host OS.
func loadGateway(y string) (*Config, []Warning, error) {
	sh := newShared()
	sh.gateway = true
	f := parseFile("test.yaml", []byte(y), sh)
	if len(f.errs) > 0 {
		return nil, nil, errList(f.errs)
	}
	c, d := decodeRoot("test.yaml", f.root, sh, false)
	return c, d.warns, errList(d.errs)
}

func TestParseLogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{
		"trace": LevelTrace, "TRACE": LevelTrace, "debug": slog.LevelDebug, "Debug": slog.LevelDebug,
		"info": slog.LevelInfo, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "WARN": slog.LevelWarn,
		"warning": slog.LevelWarn, "Warning": slog.LevelWarn, "error": slog.LevelError, "ERROR": slog.LevelError,
		"": slog.LevelInfo, "verbose": slog.LevelInfo, "nonsense": slog.LevelInfo,
	} {
		if got := ParseLogLevel(in); got != want {
			t.Errorf("ParseLogLevel(%q) = %v, want %v", in, got, want)
		}
	}
	c, _ := mustLoad(t, "node: {log_level: Warning}")
	if c.Node.SlogLevel() != slog.LevelWarn {
		t.Errorf("node.log_level Warning: %v", c.Node.SlogLevel())
	}
}

// TestEstablishedBucket checks the derivation of the established-peer
// buckets from max_peers, and explicit keys overriding it.
func TestEstablishedBucket(t *testing.T) {
	c := Default()
	if b, r := c.EstablishedHandshakeBucket(); b != 128 || math.Abs(r-6.4) > 1e-9 {
		t.Errorf("default established bucket = %d, %v; want 128, 6.4", b, r)
	}
	if b, r := c.EstablishedSessionSetupBucket(); b != 128 || math.Abs(r-6.4) > 1e-9 {
		t.Errorf("default setup bucket = %d, %v; want 128, 6.4", b, r)
	}
	c, _ = mustLoad(t, "node: {limits: {max_peers: 512}}")
	if b, r := c.EstablishedHandshakeBucket(); b != 512 || math.Abs(r-25.6) > 1e-9 {
		t.Errorf("max_peers 512: %d, %v", b, r)
	}
	c, _ = mustLoad(t, "node: {limits: {max_peers: 0}}")
	if b, r := c.EstablishedHandshakeBucket(); b != 100 || r != 10 {
		t.Errorf("unlimited peers: %d, %v; want the stranger bucket 100, 10", b, r)
	}
	if b, r := c.EstablishedSessionSetupBucket(); b != 64 || r != 16 {
		t.Errorf("unlimited peers setup: %d, %v; want 64, 16", b, r)
	}
	if _, r := DeriveEstablishedBucket(1, 100000, 5, 100, 10); r != EstablishedRateFloor {
		t.Errorf("floor: %v", r)
	}
	if _, r := DeriveEstablishedBucket(128, 0, 5, 100, 10); r != 128*6 {
		t.Errorf("after_secs 0 is clamped to 1: %v", r)
	}
	c, _ = mustLoad(t, "node: {rate_limit: {established_handshake_burst: 7, established_handshake_rate: 2.5}}")
	if b, r := c.EstablishedHandshakeBucket(); b != 7 || r != 2.5 {
		t.Errorf("explicit: %d, %v", b, r)
	}
}

func TestDrainTimeout(t *testing.T) {
	c, _ := mustLoad(t, "node: {drain_timeout_secs: 0}")
	if c.Node.DrainTimeout() != 0 {
		t.Errorf("explicit zero drain: %v", c.Node.DrainTimeout())
	}
	if Default().Node.DrainTimeout().Seconds() != 2 {
		t.Errorf("default drain: %v", Default().Node.DrainTimeout())
	}
}

// A TCP instance without max_inbound_connections takes the node's
// connection budget, so raising node.limits.max_connections raises it;
// an explicit value always wins (upstream's effective_max_inbound).
func TestTCPMaxInboundFallsBackToNodeLimit(t *testing.T) {
	c, _ := mustLoad(t, `
node:
  limits: {max_connections: 1000}
transports:
  tcp:
    open: {bind_addr: "0.0.0.0:443"}
    capped: {bind_addr: "0.0.0.0:8443", max_inbound_connections: 5}
`)
	got := map[string]uint{}
	for _, inst := range c.Transports.TCP.List() {
		got[inst.Name] = inst.Config.EffectiveMaxInbound(c.Node.Limits.MaxConnections)
	}
	if got["open"] != 1000 || got["capped"] != 5 {
		t.Fatalf("effective caps %v, want open 1000 (node limit), capped 5", got)
	}
	d, _ := mustLoad(t, "transports:\n  tcp: {}\n")
	for _, inst := range d.Transports.TCP.List() {
		if n := inst.Config.EffectiveMaxInbound(d.Node.Limits.MaxConnections); n != 256 {
			t.Fatalf("default cap %d, want node.limits.max_connections' default 256", n)
		}
	}
}

// TestDataplaneECNDefault: dataplane.ecn is on unless set false.
func TestDataplaneECNDefault(t *testing.T) {
	for yaml, want := range map[string]bool{"": true, "dataplane: {ecn: true}": true, "dataplane: {ecn: false}": false} {
		c, _ := mustLoad(t, yaml)
		if got := c.Dataplane.ECNEnabled(); got != want {
			t.Errorf("%q: ECNEnabled %v, want %v", yaml, got, want)
		}
	}
}

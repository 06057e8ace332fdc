package config

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badConfigs lists testdata/bad: each file starts with "# key: KEY", the
// one key it gets wrong.
func badConfigs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("%d bad configs, want at least 100", len(files))
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(fh).ReadString('\n')
		fh.Close()
		key, ok := strings.CutPrefix(strings.TrimSpace(line), "# key: ")
		if !ok {
			t.Fatalf("%s: first line %q is not # key: KEY", f, line)
		}
		out[f] = key
	}
	return out
}

// TestBadConfigs: every file of testdata/bad is refused, at load or by
// Validate, with exactly one error, located at the key it gets wrong.
func TestBadConfigs(t *testing.T) {
	for f, key := range badConfigs(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, _, err := Load(f)
			if err == nil {
				err = c.Validate()
			}
			if err == nil {
				t.Fatal("accepted")
			}
			errs := flatten(t, err)
			if len(errs) != 1 {
				t.Fatalf("%d errors, want 1: %v", len(errs), err)
			}
			e := errs[0]
			if e.Key != key {
				t.Errorf("key %q, want %q (%v)", e.Key, key, e)
			}
			if e.Line == 0 || e.File != f {
				t.Errorf("unlocated: %v", e)
			}
			if msg := e.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, key) {
				t.Errorf("want one line naming %s: %q", key, msg)
			}
			if !errors.Is(e, ErrInvalid) && !errors.Is(e, ErrType) && !errors.Is(e, ErrUnknownKey) && !errors.Is(e, ErrDuplicateKey) {
				t.Errorf("class %v", e.Err)
			}
		})
	}
}

// TestWarnConfigs: every file of testdata/warn (first line "# warn:
// KEY") loads and validates, and Lint reports exactly one warning, at the
// key it names, saying the peer is skipped. A bad npub in peers[] used to
// be in testdata/bad; upstream skips that peer and starts, and so do we.
func TestWarnConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "warn", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("warn configs: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			key, ok := strings.CutPrefix(first, "# warn: ")
			if !ok {
				t.Fatalf("first line %q is not # warn: KEY", first)
			}
			c, ws, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(ws) != 0 {
				t.Errorf("load warnings %v", ws)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("refused: %v", err)
			}
			lint := c.Lint()
			if len(lint) != 1 || lint[0].Key != key || lint[0].File != f || lint[0].Line == 0 ||
				!strings.Contains(lint[0].Message, "this peer is skipped") {
				t.Fatalf("lint %v, want one located warning at %s saying the peer is skipped", lint, key)
			}
			if c.Peers[0].ValidNpub() || !c.Peers[1].ValidNpub() {
				t.Errorf("ValidNpub: %v %v, want false true", c.Peers[0].ValidNpub(), c.Peers[1].ValidNpub())
			}
		})
	}
}

// TestUpstreamTestingValues: the values upstream's own test harnesses
// write into fips.yaml (chaos scenario overrides, the rekey and interop
// scripts, the native-API and static-topology configs) stay in range.
func TestUpstreamTestingValues(t *testing.T) {
	c, w := mustLoad(t, `
node:
  tree: {parent_hysteresis: 0.0, reeval_interval_secs: 1, flap_threshold: 9999, hold_down_secs: 0}
  cache: {coord_ttl_secs: 10}
  ecn: {enabled: true}
  rekey: {enabled: true, after_secs: 35, after_messages: 65536}
  native_api: {enabled: true, debug_commands: true}
tun: {enabled: true, name: fips0, mtu: 1280}
dns: {enabled: true, port: 5354}
transports:
  udp: {bind_addr: "0.0.0.0:2121", mtu: 1472, recv_buf_size: 4096}
  tcp: {bind_addr: "0.0.0.0:8443"}
  tor: {socks5_addr: "tor-daemon:9050"}
peers:
  - npub: `+validNpub+`
    addresses:
      - {transport: udp, addr: "fips.v0l.io:2121"}
      - {transport: tcp, addr: "fips.v0l.io:8443"}
      - {transport: tor, addr: "test-us01.fips.network:443"}
`)
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

// TestValidateRanges: each bound is inclusive, one past it is refused with
// a message naming the key and the range.
func TestValidateRanges(t *testing.T) {
	for _, tc := range []struct {
		yaml, key, msg string
	}{
		{"node: {link_dead_timeout_secs: 86400}", "", ""},
		{"node: {link_dead_timeout_secs: 86401}", "node.link_dead_timeout_secs", "`node.link_dead_timeout_secs` is 86401, outside the allowed range 1 to 86400 seconds"},
		{"node: {heartbeat_interval_secs: 3600}", "", ""},
		{"node: {heartbeat_interval_secs: 3601}", "node.heartbeat_interval_secs", ""},
		{"node: {buffers: {packet_channel: 65536}}", "", ""},
		{"node: {buffers: {packet_channel: 65537}}", "node.buffers.packet_channel", "`node.buffers.packet_channel` is 65537, outside the allowed range 1 to 65536 packets"},
		{"node: {rekey: {after_secs: 3153600000}}", "", ""},
		{"node: {rekey: {after_secs: 3153600001}}", "node.rekey.after_secs", ""},
		{"node: {tree: {parent_hysteresis: 1.0}}", "", ""},
		{"node: {tree: {parent_hysteresis: 1.01}}", "node.tree.parent_hysteresis", "`node.tree.parent_hysteresis` is 1.01, but must be a finite number from 0 to 1"},
		{"node: {bloom: {max_inbound_fpr: 0}}", "node.bloom.max_inbound_fpr", "`node.bloom.max_inbound_fpr` is 0, but must be a finite number greater than 0 and at most 1"},
		{"node: {rate_limit: {handshake_rate: -1}}", "node.rate_limit.handshake_rate", "`node.rate_limit.handshake_rate` is -1, but must be a finite number greater than 0"},
		// 1000 ms × 2^16 is under a day, 2^17 over.
		{"node: {rate_limit: {handshake_max_resends: 16}}", "", ""},
		{"node: {rate_limit: {handshake_max_resends: 17}}", "node.rate_limit.handshake_max_resends", ""},
		{"node: {rate_limit: {handshake_resend_backoff: 1.0, handshake_max_resends: 100}}", "", ""},
		{"node: {rate_limit: {handshake_resend_backoff: 1.0, handshake_max_resends: 101}}", "node.rate_limit.handshake_max_resends", ""},
		{"dns: {bind_addr: \"127.0.0.1\"}", "", ""},
		{"metrics: {listen: \"127.0.0.1:9464\", max_peer_labels: 4096}", "", ""},
		{"metrics: {listen: \"[::1]:9464\", max_peer_labels: 0}", "", ""},
		{"metrics: {listen: \"localhost:9464\"}", "metrics.listen", "`metrics.listen` is \"localhost:9464\": want ip:port (an IPv6 address in brackets); \"localhost\" is not an IP address"},
		{"metrics: {listen: \"127.0.0.1:0\"}", "metrics.listen", "`metrics.listen` is \"127.0.0.1:0\": the port must be a number from 1 to 65535"},
		{"metrics: {listen: \"9464\"}", "metrics.listen", ""},
		{"metrics: {max_peer_labels: 4097}", "metrics.max_peer_labels", "`metrics.max_peer_labels` is 4097, outside the allowed range 0 to 4096 (0 = no per-peer series)"},
		{"metrics: {history_max_peers: 4096}", "", ""},
		{"metrics: {history_max_peers: 0}", "metrics.history_max_peers", "`metrics.history_max_peers` is 0, outside the allowed range 1 to 4096"},
		{"dns: {bind_addr: \"dns.local\"}", "dns.bind_addr", ""},
		{"dataplane: {mode: xdp, xdp_interfaces: [eth0, veth-b1]}", "", ""},
		{"dataplane: {mode: userspace}", "", ""},
		{"dataplane: {mode: xdp, afxdp: true, ecn: false}", "", ""},
		{"dataplane: {mode: xdp, afxdp: true, afxdp_transmit: xsk}", "", ""},
		{"dataplane: {afxdp_transmit: socket}", "", ""},
		{"dataplane: {mode: xdp, xdp_attach: generic}", "", ""},
		{"dataplane: {xdp_attach: native}", "", ""},
		{"dataplane: {xdp_attach: driver}", "dataplane.xdp_attach", "`dataplane.xdp_attach` is \"driver\", but must be auto, native or generic"},
		{"dataplane: {afxdp_transmit: ring}", "dataplane.afxdp_transmit", "`dataplane.afxdp_transmit` is \"ring\", but must be socket or xsk"},
		{"dataplane: {afxdp: true, afxdp_busy_poll_us: 50}", "", ""},
		{"dataplane: {afxdp_busy_poll_us: 1001}", "dataplane.afxdp_busy_poll_us", "`dataplane.afxdp_busy_poll_us` is 1001, but must be from 0 to 1000"},
		{"node: {routing: {next_hop: upstream, filter_schedule: tick}}", "", ""},
		{"node: {routing: {next_hop: distance, filter_schedule: change}}", "", ""},
		{"node: {routing: {next_hop: shortest}}", "node.routing.next_hop", "`node.routing.next_hop` is \"shortest\", but must be distance or upstream"},
		{"node: {routing: {full_filter_lookups: upstream}}", "", ""},
		{"node: {routing: {full_filter_lookups: all}}", "node.routing.full_filter_lookups", "`node.routing.full_filter_lookups` is \"all\", but must be tree or upstream"},
		{"node: {routing: {filter_schedule: now}}", "node.routing.filter_schedule", "`node.routing.filter_schedule` is \"now\", but must be change or tick"},
		{"node: {routing: {next_hop: \"\"}}", "node.routing.next_hop", ""},
		{"dataplane: {mode: kernel}", "dataplane.mode", "`dataplane.mode` is \"kernel\", but must be auto, xdp or userspace"},
		{"dataplane: {xdp_interfaces: [\"a/b\"]}", "dataplane.xdp_interfaces", "`dataplane.xdp_interfaces` has \"a/b\", but each entry must be an interface name of 1 to 15 characters without '/', ':' or whitespace"},
		{"dataplane: {xdp_interfaces: [eth0, eth0]}", "dataplane.xdp_interfaces", "`dataplane.xdp_interfaces` names \"eth0\" twice"},
		{"dataplane: {xdp_interfaces: [abcdefghijklmnop]}", "dataplane.xdp_interfaces", ""},
		{"transports: {udp: {bind_addr: \"[::]:0\"}}", "", ""},
		{"transports: {udp: {outbound_only: true, bind_addr: \"unused\"}}", "", ""},
		{"transports: {udp: {external_addr: \"198.51.100.7\"}}", "", ""},
		{"peers: [{npub: " + validNpub + ", addresses: [{transport: udp, addr: nat}]}]", "", ""},
		{"peers: [{npub: " + validNpub + ", addresses: [{transport: ethernet, addr: \"eth0/aa:bb:cc:dd:ee:ff\"}]}]", "", ""},
		// Upstream's own rule is reported once, not again as a range.
		{"node: {rendezvous: {nostr: {signal_ttl_secs: 18446744073709551615}}}", "node.rendezvous.nostr.signal_ttl_secs", ""},
	} {
		c, _ := mustLoad(t, tc.yaml)
		err := c.Validate()
		if tc.key == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.yaml, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", tc.yaml)
			continue
		}
		errs := flatten(t, err)
		if len(errs) != 1 || errs[0].Key != tc.key {
			t.Errorf("%s: want one error on %s, got %v", tc.yaml, tc.key, err)
			continue
		}
		if tc.msg != "" && errs[0].Reason != tc.msg {
			t.Errorf("%s:\n got  %s\n want %s", tc.yaml, errs[0].Reason, tc.msg)
		}
	}
}

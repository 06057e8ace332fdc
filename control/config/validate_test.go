package config

import (
	"errors"
	"strings"
	"testing"
)

// validNpub is a real npub (upstream's test-us01 node).
const validNpub = "npub1qmc3cvfz0yu2hx96nq3gp55zdan2qclealn7xshgr448d3nh6lks7zel98"

// validateOne loads y, which must load, and returns its single validation
// error.
func validateOne(t *testing.T, y string) *Error {
	t.Helper()
	c, _ := mustLoad(t, y)
	err := c.Validate()
	if err == nil {
		t.Fatalf("validated:\n%s", y)
	}
	errs := flatten(t, err)
	if len(errs) != 1 {
		t.Fatalf("want one error, got %d: %v", len(errs), err)
	}
	if !errors.Is(errs[0], ErrInvalid) {
		t.Errorf("class %v", errs[0].Err)
	}
	return errs[0]
}

func check(t *testing.T, e *Error, key, msg string) {
	t.Helper()
	if e.Key != key {
		t.Errorf("key %q, want %q", e.Key, key)
	}
	if e.Reason != msg {
		t.Errorf("message\n got  %s\n want %s", e.Reason, msg)
	}
}

func TestValidateAdvertiseWithoutNostr(t *testing.T) {
	for _, y := range []string{
		"transports:\n  udp: {advertise_on_nostr: true}\n",
		"transports:\n  tcp: {bind_addr: \"0.0.0.0:1\", advertise_on_nostr: true}\n",
		"transports:\n  tor: {advertise_on_nostr: true}\n",
		"transports:\n  udp:\n    a: {}\n    b: {advertise_on_nostr: true}\n",
	} {
		e := validateOne(t, y)
		if e.Reason != "at least one transport has `advertise_on_nostr = true`, but `node.rendezvous.nostr.enabled` is false" {
			t.Errorf("%q: %v", y, e)
		}
		if e.Line != 2 && e.Line != 4 {
			t.Errorf("%q: line %d", y, e.Line)
		}
	}
	// Outbound-only UDP is never advertised.
	c, _ := mustLoad(t, "transports:\n  udp: {advertise_on_nostr: true, outbound_only: true}\n")
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidateViaNostrWithoutNostr(t *testing.T) {
	e := validateOne(t, "peers:\n  - {npub: "+validNpub+", via_nostr: true}\n")
	check(t, e, "peers[0].via_nostr", "at least one peer has `via_nostr = true`, but `node.rendezvous.nostr.enabled` is false")
}

func TestValidatePeerWithoutAddresses(t *testing.T) {
	e := validateOne(t, "peers:\n  - {npub: "+validNpub+"}\n")
	check(t, e, "peers[0]", "peers[0] ("+validNpub+"): must specify at least one address, or set `via_nostr = true` to resolve endpoints from the Nostr advert")
	if e.Line != 2 || e.Error() != "test.yaml:2: "+e.Reason {
		t.Errorf("location: %q", e.Error())
	}
}

func TestValidateNATAdvertNeedsRelaysAndStun(t *testing.T) {
	base := "node:\n  rendezvous:\n    nostr:\n      enabled: true\n%s\ntransports:\n  udp: {advertise_on_nostr: true}\n"
	e := validateOne(t, strings.Replace(base, "%s", "      dm_relays: []", 1))
	check(t, e, "node.rendezvous.nostr.dm_relays", "NAT UDP advert publishing requires `node.rendezvous.nostr.dm_relays` to be non-empty")
	e = validateOne(t, strings.Replace(base, "%s", "      stun_servers: []", 1))
	check(t, e, "node.rendezvous.nostr.stun_servers", "NAT UDP advert publishing requires `node.rendezvous.nostr.stun_servers` to be non-empty")
	// A public UDP advert needs neither.
	c, _ := mustLoad(t, "node:\n  rendezvous:\n    nostr: {enabled: true, dm_relays: [], stun_servers: []}\ntransports:\n  udp: {advertise_on_nostr: true, public: true}\n")
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidateNativeAPI(t *testing.T) {
	e := validateOne(t, "node: {native_api: {backlog: 0}}")
	check(t, e, "node.native_api.backlog", "node.native_api.backlog is 0 but must be at least 1: a listener with no backlog admits no flow, so every arrival would be dropped")
	e = validateOne(t, "node: {native_api: {pending_per_flow: 0}}")
	check(t, e, "node.native_api.pending_per_flow", "node.native_api.pending_per_flow is 0 but must be at least 1: a flow that can hold nothing loses its peer's opening datagram between the arrival being announced and the client taking the flow")
	e = validateOne(t, "node: {native_api: {pending_per_flow: 65}}")
	check(t, e, "node.native_api.pending_per_flow", "node.native_api.pending_per_flow is 65 but must not exceed 64: the whole batch is written onto a socket pair the client cannot read yet, and a larger one would not fit the send buffer")
	c, _ := mustLoad(t, "node: {native_api: {pending_per_flow: 64, backlog: 1}}")
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidateLoopbackUDPBind(t *testing.T) {
	peer := "peers:\n  - npub: " + validNpub + "\n    addresses: [{transport: udp, addr: \"192.0.2.1:2121\"}]\n"
	e := validateOne(t, "transports:\n  udp: {bind_addr: \"127.0.0.1:2121\"}\n"+peer)
	check(t, e, "transports.udp.bind_addr", "transports.udp[(unnamed)].bind_addr is loopback (127.0.0.1:2121) but at least one peer has a non-loopback UDP address; fips cannot reach external peers from a loopback-bound socket. Use bind_addr: \"0.0.0.0:2121\" (with kernel-firewall hardening if exposure is a concern), or set outbound_only: true.")
	e = validateOne(t, "transports:\n  udp:\n    lo: {bind_addr: \"[::1]:2121\"}\n"+peer)
	check(t, e, "transports.udp.lo.bind_addr", "transports.udp[lo].bind_addr is loopback ([::1]:2121) but at least one peer has a non-loopback UDP address; fips cannot reach external peers from a loopback-bound socket. Use bind_addr: \"0.0.0.0:2121\" (with kernel-firewall hardening if exposure is a concern), or set outbound_only: true.")
	for _, ok := range []string{
		"transports:\n  udp: {bind_addr: \"127.0.0.1:2121\", outbound_only: true}\n" + peer,
		"transports:\n  udp: {bind_addr: \"127.0.0.1:2121\"}\npeers:\n  - npub: " + validNpub + "\n    addresses: [{transport: udp, addr: \"localhost:2121\"}]\n",
		"transports:\n  udp: {bind_addr: \"0.0.0.0:2121\"}\n" + peer,
	} {
		c, _ := mustLoad(t, ok)
		if err := c.Validate(); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:1": true, "127.1.2.3:9": true, "[::1]:2121": true, "::1:2121": true, "localhost:1": true,
		"0:0:0:0:0:0:0:1:5": true, "[::2]:1": false, "10.0.0.1:1": false, "nat": false, "example.com:1": false,
	} {
		if isLoopbackAddr(addr) != want {
			t.Errorf("isLoopbackAddr(%q) != %v", addr, want)
		}
	}
}

func TestValidateQualifiedTransport(t *testing.T) {
	e := validateOne(t, "transports:\n  tcp: {}\npeers:\n  - npub: "+validNpub+"\n    addresses: [{transport: tcp/main, addr: \"192.0.2.1:443\"}]\n")
	check(t, e, "peers[0].addresses[0].transport", "peer `"+validNpub+"` has address `192.0.2.1:443` on transport `tcp/main`, but only `udp` resolves an instance name; for any other type the dialer would have to pick an arbitrary instance, which is the wrong-lane dial the syntax exists to prevent. Drop the `/main` qualifier to match any instance of `tcp`.")
	e = validateOne(t, "transports:\n  udp:\n    main: {}\n    aware: {}\npeers:\n  - npub: "+validNpub+"\n    addresses: [{transport: udp/wifi, addr: \"192.0.2.1:2121\"}]\n")
	check(t, e, "peers[0].addresses[0].transport", "peer `"+validNpub+"` has address `192.0.2.1:2121` on transport `udp/wifi`, but no udp transport is configured under the instance name `wifi`; a qualified name is never substituted, so this address would be skipped at every dial and the peer reached only over its other addresses, if it has any. configured udp instances are: aware, main.")
	e = validateOne(t, "transports:\n  udp: {}\npeers:\n  - npub: "+validNpub+"\n    addresses: [{transport: udp/main, addr: \"192.0.2.1:2121\"}]\n")
	check(t, e, "peers[0].addresses[0].transport", "peer `"+validNpub+"` has address `192.0.2.1:2121` on transport `udp/main`, but no udp transport is configured under the instance name `main`; a qualified name is never substituted, so this address would be skipped at every dial and the peer reached only over its other addresses, if it has any. no named udp instances are configured (the udp transport is a single unnamed instance).")
}

func TestValidateRekey(t *testing.T) {
	e := validateOne(t, "node: {rekey: {after_messages: 0}}")
	check(t, e, "node.rekey.after_messages", "`node.rekey.after_messages` must be at least 1; 0 fires the message-count trigger on every poll instead of disabling it. Use a very large value to effectively disable the message-count trigger.")
	e = validateOne(t, "node: {rekey: {after_secs: 15, enabled: false}}")
	check(t, e, "node.rekey.after_secs", "`node.rekey.after_secs` is 15, but must be greater than the per-session rekey jitter of 15s; each session offsets the interval by a random value in [-15, +15] seconds, so a smaller interval saturates to zero and rekeys on sight for roughly half of sessions. Use a very large value to effectively disable the timer trigger.")
	c, _ := mustLoad(t, "node: {rekey: {after_secs: 16, after_messages: 1}}")
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidateRateLimits(t *testing.T) {
	e := validateOne(t, "node: {rate_limit: {established_handshake_burst: 0}}")
	check(t, e, "node.rate_limit.established_handshake_burst", "`node.rate_limit.established_handshake_burst` is 0, which refuses every rekey and restart msg1 from an established peer rather than disabling the limit. Omit the key to derive it from `node.limits.max_peers`, or set a positive burst.")
	for in, shown := range map[string]string{"0": "0", "-1.5": "-1.5", ".inf": "inf", ".nan": "NaN", "-.inf": "-inf"} {
		e = validateOne(t, "node: {rate_limit: {established_handshake_rate: "+in+"}}")
		check(t, e, "node.rate_limit.established_handshake_rate", "`node.rate_limit.established_handshake_rate` is "+shown+", but must be a finite value greater than 0; a non-positive or non-finite refill rate never replenishes the established-link bucket, so rekey msg1 stops being admitted once the initial burst is spent. Omit the key to derive it from `node.limits.max_peers` and `node.rekey.after_secs`.")
	}
	e = validateOne(t, "node: {rate_limit: {session_setup_burst: 0}}")
	check(t, e, "node.rate_limit.session_setup_burst", "`node.rate_limit.session_setup_burst` is 0, which refuses every inbound SessionSetup rather than disabling the limit. Set a positive burst; a very large value effectively disables it.")
	e = validateOne(t, "node: {rate_limit: {session_setup_rate: 0.0}}")
	check(t, e, "node.rate_limit.session_setup_rate", "`node.rate_limit.session_setup_rate` is 0, but must be a finite value greater than 0; a non-positive or non-finite refill rate never replenishes a link's setup bucket, so that link stops establishing sessions once its initial burst is spent.")
}

func TestValidateNostrFreshness(t *testing.T) {
	e := validateOne(t, "node: {rendezvous: {nostr: {signal_ttl_secs: 180}}}")
	check(t, e, "node.rendezvous.nostr.signal_ttl_secs", "`node.rendezvous.nostr.signal_ttl_secs` is 180, which with 60s of clock-skew grace on each side makes a traversal signal acceptable over a 300s window, but `node.rendezvous.nostr.replay_window_secs` is 300. The freshness window must be strictly narrower than the replay window, or a session id evicted from the replay cache is still fresh enough to be accepted a second time. Raise `replay_window_secs` above 300, or lower `signal_ttl_secs`.")
	e = validateOne(t, "node: {rendezvous: {nostr: {signal_ttl_secs: 18446744073709551615}}}")
	if !strings.Contains(e.Reason, "window of 18446744073709551615s") && !strings.Contains(e.Reason, "over a 18446744073709551615s window") {
		t.Errorf("saturating window: %s", e.Reason)
	}
	c, _ := mustLoad(t, "node: {rendezvous: {nostr: {signal_ttl_secs: 179}}}")
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidateOffersPerNpub(t *testing.T) {
	e := validateOne(t, "node: {rendezvous: {nostr: {max_concurrent_offers_per_npub: 0}}}")
	check(t, e, "node.rendezvous.nostr.max_concurrent_offers_per_npub", "`node.rendezvous.nostr.max_concurrent_offers_per_npub` is 0, which refuses every inbound traversal offer rather than disabling the per-sender limit. Omit the key for the default, or set a positive allowance; `max_concurrent_incoming_offers` remains the outer bound.")
	e = validateOne(t, "node: {rendezvous: {nostr: {max_concurrent_offers_per_npub: 2305843009213693952}}}")
	check(t, e, "node.rendezvous.nostr.max_concurrent_offers_per_npub", "`node.rendezvous.nostr.max_concurrent_offers_per_npub` is 2305843009213693952, which exceeds the maximum 2305843009213693951 permits a semaphore can hold. Use a value at or below `max_concurrent_incoming_offers`, which is the outer bound anything larger is inert against.")
}

func TestValidateNsec(t *testing.T) {
	e := validateOne(t, "node: {identity: {nsec: \"nsec1notakeyatall\"}}")
	if e.Key != "node.identity.nsec" || strings.Contains(e.Error(), "notakey") {
		t.Errorf("bad nsec: %v", e)
	}
	c, _ := mustLoad(t, "node: {identity: {nsec: abababababababababababababababababababababababababababababababab}}")
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

// TestValidateReportsAll: every failing rule is reported, in upstream's
// order.
func TestValidateReportsAll(t *testing.T) {
	c, _ := mustLoad(t, "node:\n  rekey: {after_messages: 0, after_secs: 1}\n  native_api: {backlog: 0}\npeers:\n  - {npub: "+validNpub+"}\n")
	errs := flatten(t, c.Validate())
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.Key)
	}
	want := "peers[0] node.native_api.backlog node.rekey.after_messages node.rekey.after_secs"
	if strings.Join(keys, " ") != want {
		t.Errorf("keys %v, want %s", keys, want)
	}
	if Default().Validate() != nil {
		t.Error("defaults do not validate")
	}
}

func TestLint(t *testing.T) {
	c, _ := mustLoad(t, `
node: {log_level: loud}
tun: {enabled: true, mtu: 1200}
dns: {ttl: 301}
transports:
  udp: {bind_addr: "nowhere"}
  ethernet: {interface: eth0, beacon_interval_secs: 5}
  tor: {mode: bridge}
peers:
  - npub: npub1bad
    addresses: [{transport: carrier-pigeon, addr: x}]
    connect_policy: manual
  - npub: `+validNpub+`
    addresses: [{transport: udp, addr: "192.0.2.1:1"}]
  - npub: `+validNpub+`
    addresses: [{transport: udp, addr: "192.0.2.1:1"}]
`)
	var keys []string
	for _, w := range c.Lint() {
		keys = append(keys, w.Key)
		if w.Line == 0 || w.File != "test.yaml" {
			t.Errorf("unlocated warning %v", w)
		}
	}
	// tun.mtu below 1280, an unparsable bind_addr and an unknown transport
	// type are validation errors (TestValidateRanges). A bad npub is a
	// warning (the peer is skipped, as upstream skips it), and a skipped
	// peer gets no further warnings.
	want := "node.log_level dns.ttl transports.ethernet.beacon_interval_secs transports.tor.mode peers[0].npub peers[2].npub"
	if strings.Join(keys, " ") != want {
		t.Errorf("lint keys\n got  %s\n want %s", strings.Join(keys, " "), want)
	}
	if w := Default().Lint(); len(w) != 1 || w[0].Key != "transports" {
		t.Errorf("defaults lint: %v", w)
	}
}

// Relay URLs and STUN servers that can never work, and via_nostr peers a
// disabled policy never dials, are warnings (upstream accepts them).
func TestLintRendezvous(t *testing.T) {
	c, _ := mustLoad(t, `
node:
  rendezvous:
    nostr:
      enabled: true
      policy: disabled
      advert_relays: ["wss://relay.example", "relay.example"]
      dm_relays: ["https://relay.example"]
      stun_servers: ["stun:stun.example:3478", "stun.example"]
transports:
  udp: {bind_addr: "0.0.0.0:2121"}
peers:
  - npub: `+validNpub+`
    via_nostr: true
`)
	var keys []string
	for _, w := range c.Lint() {
		keys = append(keys, w.Key)
	}
	want := "node.rendezvous.nostr.advert_relays[1] node.rendezvous.nostr.dm_relays[0] node.rendezvous.nostr.stun_servers[1] peers[0].via_nostr"
	if strings.Join(keys, " ") != want {
		t.Errorf("warnings %v, want %s", keys, want)
	}
}

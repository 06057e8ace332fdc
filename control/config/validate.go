package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/fips-go/fips/control/identity"
)

// FreshnessSkewToleranceSecs is the clock-skew grace upstream allows on
// each side of a Nostr traversal signal's lifetime.
const FreshnessSkewToleranceSecs = 60

// MaxSemaphorePermits is the largest per-npub offer allowance upstream
// accepts (tokio's semaphore limit, usize::MAX >> 3).
const MaxSemaphorePermits = math.MaxUint >> 3

// Validate applies upstream's startup checks (Config::validate), with its
// messages, and reports every failing one rather than the first: the result
// is nil or one or more *Error wrapping ErrInvalid, joined. It also refuses
// an unusable node.identity.nsec, on which upstream fails just after its
// own validation.
func (c *Config) Validate() error {
	var errs []error
	add := func(e *Error) { errs = append(errs, e) }
	nostr := &c.Node.Rendezvous.Nostr

	advertKey := ""
	for _, in := range c.Transports.UDP.List() {
		if in.Config.Advertises() && advertKey == "" {
			advertKey = instanceKey("udp", in.Name) + ".advertise_on_nostr"
		}
	}
	for _, in := range c.Transports.TCP.List() {
		if in.Config.AdvertiseOnNostr && advertKey == "" {
			advertKey = instanceKey("tcp", in.Name) + ".advertise_on_nostr"
		}
	}
	for _, in := range c.Transports.Tor.List() {
		if in.Config.AdvertiseOnNostr && advertKey == "" {
			advertKey = instanceKey("tor", in.Name) + ".advertise_on_nostr"
		}
	}
	if advertKey != "" && !nostr.Enabled {
		add(c.invalid(advertKey, "at least one transport has `advertise_on_nostr = true`, but `node.rendezvous.nostr.enabled` is false"))
	}

	for i, p := range c.Peers {
		if p.ViaNostr && !nostr.Enabled {
			add(c.invalid(fmt.Sprintf("peers[%d].via_nostr", i), "at least one peer has `via_nostr = true`, but `node.rendezvous.nostr.enabled` is false"))
			break
		}
	}

	switch c.Node.WireFormat {
	case "", WireV0, WireV1, WireAuto:
	default:
		add(c.invalid("node.wire_format", "node.wire_format is %s, but must be v0 (upstream master's v0.2 links), v1 (upstream next's) or auto (both, chosen per link)", strconv.Quote(c.Node.WireFormat)))
	}
	for i, p := range c.Peers {
		switch p.WireFormat {
		case "", WireV0, WireV1, WireAuto:
		default:
			add(c.invalid(fmt.Sprintf("peers[%d].wire_format", i), "peers[%d].wire_format is %s, but must be v0, v1 or auto", i, strconv.Quote(p.WireFormat)))
		}
	}

	for i, p := range c.Peers {
		switch p.PQ {
		case "", PQOff, PQPreferred, PQRequired:
		default:
			add(c.invalid(fmt.Sprintf("peers[%d].pq", i), "peers[%d].pq is %s, but must be off, preferred or required", i, strconv.Quote(p.PQ)))
		}
		switch p.LinkPQ {
		case "", PQOff, PQPreferred, PQRequired:
		default:
			add(c.invalid(fmt.Sprintf("peers[%d].link_pq", i), "peers[%d].link_pq is %s, but must be off, preferred or required", i, strconv.Quote(p.LinkPQ)))
		}
		if len(p.Addresses) == 0 && !p.ViaNostr {
			add(c.invalid(fmt.Sprintf("peers[%d]", i), "peers[%d] (%s): must specify at least one address, or set `via_nostr = true` to resolve endpoints from the Nostr advert", i, p.Npub))
		}
	}

	if nostr.Enabled {
		natAdvert := false
		for _, in := range c.Transports.UDP.List() {
			natAdvert = natAdvert || (in.Config.Advertises() && !in.Config.Public)
		}
		if natAdvert && len(nostr.DMRelays) == 0 {
			add(c.invalid("node.rendezvous.nostr.dm_relays", "NAT UDP advert publishing requires `node.rendezvous.nostr.dm_relays` to be non-empty"))
		}
		if natAdvert && len(nostr.StunServers) == 0 {
			add(c.invalid("node.rendezvous.nostr.stun_servers", "NAT UDP advert publishing requires `node.rendezvous.nostr.stun_servers` to be non-empty"))
		}
	}

	native := &c.Node.NativeAPI
	if native.Backlog < 1 {
		add(c.invalid("node.native_api.backlog", "node.native_api.backlog is 0 but must be at least 1: a listener with no backlog admits no flow, so every arrival would be dropped"))
	}
	if native.PendingPerFlow < 1 {
		add(c.invalid("node.native_api.pending_per_flow", "node.native_api.pending_per_flow is 0 but must be at least 1: a flow that can hold nothing loses its peer's opening datagram between the arrival being announced and the client taking the flow"))
	}
	if native.PendingPerFlow > MaxPendingPerFlow {
		add(c.invalid("node.native_api.pending_per_flow", "node.native_api.pending_per_flow is %d but must not exceed %d: the whole batch is written onto a socket pair the client cannot read yet, and a larger one would not fit the send buffer", native.PendingPerFlow, MaxPendingPerFlow))
	}

	// Upstream compares the address's transport field to "udp" exactly, so
	// a qualified "udp/name" address does not count here.
	externalUDPPeer := false
	for _, p := range c.Peers {
		for _, a := range p.Addresses {
			externalUDPPeer = externalUDPPeer || (a.Transport == "udp" && !isLoopbackAddr(a.Addr))
		}
	}
	for _, in := range c.Transports.UDP.List() {
		if in.Config.OutboundOnly || !isLoopbackAddr(in.Config.EffectiveBindAddr()) || !externalUDPPeer {
			continue
		}
		label := in.Name
		if label == "" {
			label = "(unnamed)"
		}
		add(c.invalid(instanceKey("udp", in.Name)+".bind_addr", "transports.udp[%s].bind_addr is loopback (%s) but at least one peer has a non-loopback UDP address; fips cannot reach external peers from a loopback-bound socket. Use bind_addr: \"0.0.0.0:2121\" (with kernel-firewall hardening if exposure is a concern), or set outbound_only: true.", label, in.Config.EffectiveBindAddr()))
	}

	for i, p := range c.Peers {
		for j, a := range p.Addresses {
			spec := a.Spec()
			if spec.Instance == "" {
				continue
			}
			key := fmt.Sprintf("peers[%d].addresses[%d].transport", i, j)
			if spec.Kind != "udp" {
				add(c.invalid(key, "peer `%s` has address `%s` on transport `%s`, but only `udp` resolves an instance name; for any other type the dialer would have to pick an arbitrary instance, which is the wrong-lane dial the syntax exists to prevent. Drop the `/%s` qualifier to match any instance of `%s`.", p.Npub, a.Addr, a.Transport, spec.Instance, spec.Kind))
				continue
			}
			names := c.Transports.UDP.Names()
			if c.Transports.UDP.Named[spec.Instance] != nil {
				continue
			}
			known := "no named udp instances are configured (the udp transport is a single unnamed instance)"
			if len(names) > 0 {
				known = "configured udp instances are: " + strings.Join(names, ", ")
			}
			add(c.invalid(key, "peer `%s` has address `%s` on transport `%s`, but no udp transport is configured under the instance name `%s`; a qualified name is never substituted, so this address would be skipped at every dial and the peer reached only over its other addresses, if it has any. %s.", p.Npub, a.Addr, a.Transport, spec.Instance, known))
		}
	}

	rekey := &c.Node.Rekey
	if rekey.AfterMessages == 0 {
		add(c.invalid("node.rekey.after_messages", "`node.rekey.after_messages` must be at least 1; 0 fires the message-count trigger on every poll instead of disabling it. Use a very large value to effectively disable the message-count trigger."))
	}
	if rekey.AfterSecs <= RekeyJitterSecs {
		j := RekeyJitterSecs
		add(c.invalid("node.rekey.after_secs", "`node.rekey.after_secs` is %d, but must be greater than the per-session rekey jitter of %ds; each session offsets the interval by a random value in [-%d, +%d] seconds, so a smaller interval saturates to zero and rekeys on sight for roughly half of sessions. Use a very large value to effectively disable the timer trigger.", rekey.AfterSecs, j, j, j))
	}

	rl := &c.Node.RateLimit
	if rl.EstablishedHandshakeBurst != nil && *rl.EstablishedHandshakeBurst == 0 {
		add(c.invalid("node.rate_limit.established_handshake_burst", "`node.rate_limit.established_handshake_burst` is 0, which refuses every rekey and restart msg1 from an established peer rather than disabling the limit. Omit the key to derive it from `node.limits.max_peers`, or set a positive burst."))
	}
	if r := rl.EstablishedHandshakeRate; r != nil && !positiveFinite(*r) {
		add(c.invalid("node.rate_limit.established_handshake_rate", "`node.rate_limit.established_handshake_rate` is %s, but must be a finite value greater than 0; a non-positive or non-finite refill rate never replenishes the established-link bucket, so rekey msg1 stops being admitted once the initial burst is spent. Omit the key to derive it from `node.limits.max_peers` and `node.rekey.after_secs`.", rustFloat(*r)))
	}
	if rl.SessionSetupBurst == 0 {
		add(c.invalid("node.rate_limit.session_setup_burst", "`node.rate_limit.session_setup_burst` is 0, which refuses every inbound SessionSetup rather than disabling the limit. Set a positive burst; a very large value effectively disables it."))
	}
	if !positiveFinite(rl.SessionSetupRate) {
		add(c.invalid("node.rate_limit.session_setup_rate", "`node.rate_limit.session_setup_rate` is %s, but must be a finite value greater than 0; a non-positive or non-finite refill rate never replenishes a link's setup bucket, so that link stops establishing sessions once its initial burst is spent.", rustFloat(rl.SessionSetupRate)))
	}

	skew := uint64(FreshnessSkewToleranceSecs)
	window := nostr.SignalTTLSecs + 2*skew
	if window < nostr.SignalTTLSecs {
		window = math.MaxUint64 // saturating, as upstream
	}
	if window >= nostr.ReplayWindowSecs {
		add(c.invalid("node.rendezvous.nostr.signal_ttl_secs", "`node.rendezvous.nostr.signal_ttl_secs` is %d, which with %ds of clock-skew grace on each side makes a traversal signal acceptable over a %ds window, but `node.rendezvous.nostr.replay_window_secs` is %d. The freshness window must be strictly narrower than the replay window, or a session id evicted from the replay cache is still fresh enough to be accepted a second time. Raise `replay_window_secs` above %d, or lower `signal_ttl_secs`.", nostr.SignalTTLSecs, skew, window, nostr.ReplayWindowSecs, window))
	}
	if nostr.MaxConcurrentOffersPerNpub == 0 {
		add(c.invalid("node.rendezvous.nostr.max_concurrent_offers_per_npub", "`node.rendezvous.nostr.max_concurrent_offers_per_npub` is 0, which refuses every inbound traversal offer rather than disabling the per-sender limit. Omit the key for the default, or set a positive allowance; `max_concurrent_incoming_offers` remains the outer bound."))
	}
	if nostr.MaxConcurrentOffersPerNpub > MaxSemaphorePermits {
		add(c.invalid("node.rendezvous.nostr.max_concurrent_offers_per_npub", "`node.rendezvous.nostr.max_concurrent_offers_per_npub` is %d, which exceeds the maximum %d permits a semaphore can hold. Use a value at or below `max_concurrent_incoming_offers`, which is the outer bound anything larger is inert against.", nostr.MaxConcurrentOffersPerNpub, uint(MaxSemaphorePermits)))
	}

	// One error per key: a range check on a key upstream's own rules have
	// already refused would only repeat it.
	reported := make(map[string]bool, len(errs))
	for _, e := range errs {
		reported[e.(*Error).Key] = true
	}
	for _, e := range c.checkRanges() {
		if !reported[e.Key] {
			errs = append(errs, e)
		}
	}

	// fips-go addition: upstream refuses to start right after validation
	// when the explicit key does not parse; say so here, without echoing it.
	if nsec := c.Node.Identity.Nsec; nsec != nil {
		if _, err := identity.ParseSecretKey(*nsec); err != nil {
			// Only the error class: the detail could quote the key.
			if u := errors.Unwrap(err); u != nil {
				err = u
			}
			add(c.invalid("node.identity.nsec", "node.identity.nsec is not a usable secret key (want nsec1… bech32 or 64 hex characters): %v", err))
		}
	}
	return errList(errs)
}

// Lint reports what upstream accepts but is probably a mistake: settings
// upstream ignores or clamps, values that stop one part of the node from
// working, and a node that has nothing to start. None of it stops a start
// that upstream would allow. At most maxWarnings are returned, then one
// counting the rest.
func (c *Config) Lint() []Warning {
	var ws []Warning
	w := func(key, format string, args ...any) { ws = append(ws, c.warn(key, format, args...)) }

	if c.Transports.Empty() {
		w("transports", "no transports are configured; the node will refuse to start (no operational transports)")
	}
	if c.Node.LogLevel != "" {
		switch strings.ToLower(c.Node.LogLevel) {
		case "trace", "debug", "info", "warn", "warning", "error":
		default:
			w("node.log_level", "unrecognised log level %q; info is used", c.Node.LogLevel)
		}
	}
	switch strings.ToLower(c.Node.LogFormat) {
	case "", "text", "full", "json":
	default:
		w("node.log_format", "unrecognised log format %q; text is used", c.Node.LogFormat)
	}
	ws = append(ws, c.lintWireFormat()...)
	if c.DNS.Enabled && uint64(c.DNS.TTL) > c.Node.Cache.CoordTTLSecs {
		w("dns.ttl", "%d exceeds node.cache.coord_ttl_secs (%d); resolved names may outlive the cached coordinates", c.DNS.TTL, c.Node.Cache.CoordTTLSecs)
	}
	for _, in := range c.Transports.Ethernet.List() {
		key := instanceKey("ethernet", in.Name)
		if in.Config.Interface == "" {
			w(key+".interface", "empty interface name; this transport will fail to start")
		}
		if in.Config.BeaconIntervalSecs < MinBeaconIntervalSecs {
			w(key+".beacon_interval_secs", "%d is below the minimum; %d is used", in.Config.BeaconIntervalSecs, MinBeaconIntervalSecs)
		}
	}
	for _, in := range c.Transports.Tor.List() {
		key := instanceKey("tor", in.Name)
		switch in.Config.Mode {
		case "socks5", "control_port", "directory":
		default:
			w(key+".mode", "unsupported Tor mode %q (expected socks5, control_port or directory); this transport will fail to start", in.Config.Mode)
		}
		if in.Config.DirectoryService != nil && in.Config.Mode == "socks5" {
			w(key+".directory_service", "directory_service requires mode directory; this transport will fail to start")
		}
	}
	seen := make(map[string]int)
	for i, p := range c.Peers {
		key := fmt.Sprintf("peers[%d]", i)
		if !p.ValidNpub() {
			w(key+".npub", "%s is not a valid npub (npub1… bech32 of a 32-byte key); this peer is skipped", strconv.Quote(p.Npub))
			continue
		}
		if j, dup := seen[p.Npub]; dup {
			w(key+".npub", "same npub as peers[%d]; only one of them is used", j)
		} else {
			seen[p.Npub] = i
		}
		if p.ConnectPolicy != ConnectAuto {
			w(key+".connect_policy", "%s is accepted but not implemented; this peer is never dialled on its own", p.ConnectPolicy)
		}
	}
	if ns := &c.Node.Rendezvous.Nostr; ns.Enabled {
		for _, l := range []struct {
			key  string
			urls []string
		}{{"node.rendezvous.nostr.advert_relays", ns.AdvertRelays}, {"node.rendezvous.nostr.dm_relays", ns.DMRelays}} {
			for i, u := range l.urls {
				if !strings.HasPrefix(u, "ws://") && !strings.HasPrefix(u, "wss://") {
					w(fmt.Sprintf("%s[%d]", l.key, i), "%s is not a ws:// or wss:// relay URL; that relay will never connect", strconv.Quote(u))
				}
			}
		}
		for i, s := range ns.StunServers {
			hp := strings.TrimPrefix(strings.TrimSpace(s), "stun:")
			if _, port, err := net.SplitHostPort(hp); err != nil || port == "" || port == "0" {
				w(fmt.Sprintf("node.rendezvous.nostr.stun_servers[%d]", i), "%s is not stun:host:port (or host:port); that server is never asked", strconv.Quote(s))
			}
		}
		if ns.Policy == NostrPolicyDisabled {
			for i, p := range c.Peers {
				if p.ViaNostr && len(p.Addresses) == 0 {
					w(fmt.Sprintf("peers[%d].via_nostr", i), "policy is disabled, so advert endpoints are never used: this peer, with no address of its own, is never dialled")
				}
			}
		}
	}
	if c.Gateway != nil {
		if _, ok := c.src["gateway.conntrack"]; ok {
			w("gateway.conntrack", "parsed but never applied (as upstream)")
		}
	}
	if len(ws) > maxWarnings {
		more := len(ws) - maxWarnings
		ws = append(ws[:maxWarnings], Warning{File: ws[maxWarnings].File,
			Message: fmt.Sprintf("%d more warnings not shown (at most %d are reported)", more, maxWarnings)})
	}
	return ws
}

// instanceKey is the key path of a transport instance.
func instanceKey(kind, name string) string {
	if name == "" {
		return "transports." + kind
	}
	return "transports." + kind + "." + name
}

func positiveFinite(f float64) bool { return f > 0 && !math.IsInf(f, 0) }

// rustFloat formats a float as Rust's Display does.
func rustFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// isLoopbackAddr is upstream's textual loopback test for host:port: a
// bracketed [::1], or a host (before the last ':') of localhost, ::1,
// 0:0:0:0:0:0:0:1 or 127.*. Hostnames count as non-loopback.
func isLoopbackAddr(addr string) bool {
	if rest, ok := strings.CutPrefix(addr, "["); ok {
		if end := strings.IndexByte(rest, ']'); end >= 0 {
			return rest[:end] == "::1"
		}
	}
	host := addr
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		host = addr[:i]
	}
	return host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" || strings.HasPrefix(host, "127.")
}

// lintWireFormat warns where a wire-format setting does nothing:
// node.disable_routing only changes what v1 links declare. (Every
// transport carries both formats: UDP datagrams by their version nibble,
// TCP/Tor streams and Ethernet frames packet by packet.)
func (c *Config) lintWireFormat() []Warning {
	var ws []Warning
	v1 := func(f string) bool { return f == WireV1 || f == WireAuto }
	node := c.Node.WireFormat
	if c.Node.DisableRouting && !v1(node) {
		ws = append(ws, c.warn("node.disable_routing", "only declared on v1 (upstream next) links, and node.wire_format is v0"))
	}
	return ws
}

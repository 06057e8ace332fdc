package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// fips-go addition: upstream accepts any value its Rust type can hold, and
// some of those wrap around or exhaust memory once used (a timeout of 10^10
// seconds overflows a duration and fires at once; a 4-billion-slot channel
// is allocated up front). checkRanges refuses them with one error per key,
// naming the key and the allowed range. The bounds are generous: several
// orders of magnitude around upstream's defaults, chosen so that no value
// in range can overflow where it is used.

// Range bounds shared by several keys.
const (
	hourSecs = 3600
	daySecs  = 24 * hourSecs
	weekSecs = 7 * daySecs
	yearSecs = 365 * daySecs
	// MaxRekeyAfterSecs is node.rekey.after_secs's ceiling: 100 years, which
	// leaves room for the jitter and any sum of timers in a time.Duration.
	// A value near it effectively disables the timer trigger.
	MaxRekeyAfterSecs = 100 * yearSecs
	// MaxSlots bounds the node-wide connection, peer and link limits.
	MaxSlots = 1 << 20
	// MaxCacheEntries bounds the coordinate and identity caches.
	MaxCacheEntries = 10_000_000
	// MaxChannel bounds node.buffers.*: channels are allocated up front.
	MaxChannel = 1 << 16
	// MaxSocketBuffer bounds transports' recv_buf_size and send_buf_size.
	MaxSocketBuffer = 256 << 20
	// MinSocketBuffer is the smallest socket buffer a transport accepts.
	MinSocketBuffer = 1024
	// MinTransportMTU is the smallest transport MTU (the IPv4 minimum
	// datagram size every host must accept).
	MinTransportMTU = 576
	// MaxHandshakeResendWaitMs bounds the longest wait between two
	// handshake resends, handshake_resend_interval_ms ×
	// handshake_resend_backoff^handshake_max_resends: one day.
	MaxHandshakeResendWaitMs = daySecs * 1000
)

// rangeChecker collects out-of-range errors.
type rangeChecker struct {
	c    *Config
	errs []*Error
}

// uint checks lo <= v <= hi.
func (r *rangeChecker) uint(key string, v, lo, hi uint64, unit string) {
	if v >= lo && v <= hi {
		return
	}
	r.errs = append(r.errs, r.c.invalid(key, "`%s` is %d, outside the allowed range %s", key, v, rangeText(lo, hi, unit)))
}

// float checks that v is finite and within [lo, hi], or (lo, hi] when
// loOpen.
func (r *rangeChecker) float(key string, v, lo, hi float64, loOpen bool) {
	ok := !math.IsNaN(v) && !math.IsInf(v, 0) && v <= hi && (v > lo || (!loOpen && v == lo))
	if ok {
		return
	}
	var want string
	switch {
	case loOpen && hi == math.MaxFloat64:
		want = "a finite number greater than " + rustFloat(lo)
	case loOpen:
		want = fmt.Sprintf("a finite number greater than %s and at most %s", rustFloat(lo), rustFloat(hi))
	default:
		want = fmt.Sprintf("a finite number from %s to %s", rustFloat(lo), rustFloat(hi))
	}
	r.errs = append(r.errs, r.c.invalid(key, "`%s` is %s, but must be %s", key, rustFloat(v), want))
}

// hostPort checks a host:port whose port is 1..65535; the host may be a
// name unless ipOnly. portZero admits port 0 (a bind address).
func (r *rangeChecker) hostPort(key, v string, ipOnly, portZero bool) {
	if why := hostPortProblem(v, ipOnly, portZero); why != "" {
		r.errs = append(r.errs, r.c.invalid(key, "`%s` is %s: %s", key, strconv.Quote(v), why))
	}
}

func hostPortProblem(v string, ipOnly, portZero bool) string {
	wantForm := "want host:port (an IPv6 host in brackets)"
	lowPort := 1
	if ipOnly {
		wantForm = "want ip:port (an IPv6 address in brackets)"
	}
	if portZero {
		lowPort = 0
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		return wantForm
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || int(p) < lowPort || strings.HasPrefix(port, "+") {
		return fmt.Sprintf("the port must be a number from %d to 65535", lowPort)
	}
	if ipOnly {
		if _, err := netip.ParseAddr(host); err != nil {
			return wantForm + "; " + strconv.Quote(host) + " is not an IP address"
		}
	}
	return ""
}

func rangeText(lo, hi uint64, unit string) string {
	s := fmt.Sprintf("%d to %d", lo, hi)
	if unit != "" {
		s += " " + unit
	}
	return s
}

// checkRanges applies the range checks to every numeric key and every
// address.
func (c *Config) checkRanges() []*Error {
	r := &rangeChecker{c: c}
	n := &c.Node
	const (
		s  = "seconds"
		ms = "milliseconds"
	)

	r.uint("node.tick_interval_secs", n.TickIntervalSecs, 1, 60, s)
	r.uint("node.base_rtt_ms", n.BaseRTTMs, 1, 60_000, ms)
	r.uint("node.heartbeat_interval_secs", n.HeartbeatIntervalSecs, 1, hourSecs, s)
	r.uint("node.link_dead_timeout_secs", n.LinkDeadTimeoutSecs, 1, daySecs, s)
	r.uint("node.drain_timeout_secs", n.DrainTimeoutSecs, 0, 600, s)

	l := &n.Limits
	r.uint("node.limits.max_connections", uint64(l.MaxConnections), 1, MaxSlots, "")
	r.uint("node.limits.max_peers", uint64(l.MaxPeers), 0, MaxSlots, "(0 = unlimited)")
	r.uint("node.limits.max_links", uint64(l.MaxLinks), 1, MaxSlots, "")
	r.uint("node.limits.max_pending_inbound", uint64(l.MaxPendingInbound), 1, MaxSlots, "")

	rl := &n.RateLimit
	r.uint("node.rate_limit.handshake_burst", uint64(rl.HandshakeBurst), 1, math.MaxUint32, "")
	r.float("node.rate_limit.handshake_rate", rl.HandshakeRate, 0, math.MaxFloat64, true)
	r.uint("node.rate_limit.handshake_timeout_secs", rl.HandshakeTimeoutSecs, 1, daySecs, s)
	r.uint("node.rate_limit.handshake_resend_interval_ms", rl.HandshakeResendIntervalMs, 1, 600_000, ms)
	r.float("node.rate_limit.handshake_resend_backoff", rl.HandshakeResendBackoff, 1, 16, false)
	c.checkResends(r)
	// established_handshake_* and session_setup_* have upstream's own
	// checks in Validate; their types bound them from above.

	r.uint("node.retry.max_retries", uint64(n.Retry.MaxRetries), 0, 10_000, "")
	r.uint("node.retry.base_interval_secs", n.Retry.BaseIntervalSecs, 1, daySecs, s)
	r.uint("node.retry.max_backoff_secs", n.Retry.MaxBackoffSecs, 1, weekSecs, s)

	r.uint("node.cache.coord_size", uint64(n.Cache.CoordSize), 1, MaxCacheEntries, "")
	r.uint("node.cache.coord_ttl_secs", n.Cache.CoordTTLSecs, 1, weekSecs, s)
	r.uint("node.cache.identity_size", uint64(n.Cache.IdentitySize), 1, MaxCacheEntries, "")

	lk := &n.Lookup
	r.uint("node.lookup.ttl", uint64(lk.TTL), 1, math.MaxUint8, "")
	if k := len(lk.AttemptTimeoutsSecs); k < 1 || k > 32 {
		r.errs = append(r.errs, c.invalid("node.lookup.attempt_timeouts_secs", "`node.lookup.attempt_timeouts_secs` has %d entries, outside the allowed range 1 to 32 (one lookup attempt per entry)", k))
	}
	for i, v := range lk.AttemptTimeoutsSecs {
		r.uint(fmt.Sprintf("node.lookup.attempt_timeouts_secs[%d]", i), v, 1, hourSecs, s)
	}
	r.uint("node.lookup.recent_expiry_secs", lk.RecentExpirySecs, 0, daySecs, s)
	r.uint("node.lookup.backoff_base_secs", lk.BackoffBaseSecs, 0, daySecs, s)
	r.uint("node.lookup.backoff_max_secs", lk.BackoffMaxSecs, 0, daySecs, s)
	r.uint("node.lookup.forward_min_interval_secs", lk.ForwardMinIntervalSecs, 0, hourSecs, s)

	ns := &n.Rendezvous.Nostr
	const nk = "node.rendezvous.nostr."
	r.uint(nk+"signal_ttl_secs", ns.SignalTTLSecs, 1, daySecs, s)
	r.uint(nk+"open_discovery_max_pending", uint64(ns.OpenDiscoveryMaxPending), 0, MaxSlots, "")
	r.uint(nk+"max_concurrent_incoming_offers", uint64(ns.MaxConcurrentIncomingOffers), 1, MaxSlots, "")
	r.uint(nk+"advert_cache_max_entries", uint64(ns.AdvertCacheMaxEntries), 1, MaxSlots, "")
	r.uint(nk+"seen_sessions_max_entries", uint64(ns.SeenSessionsMaxEntries), 1, MaxSlots, "")
	r.uint(nk+"failure_state_max_entries", uint64(ns.FailureStateMaxEntries), 1, MaxSlots, "")
	r.uint(nk+"attempt_timeout_secs", ns.AttemptTimeoutSecs, 1, hourSecs, s)
	r.uint(nk+"replay_window_secs", ns.ReplayWindowSecs, 1, yearSecs, s)
	r.uint(nk+"punch_start_delay_ms", ns.PunchStartDelayMs, 0, 600_000, ms)
	r.uint(nk+"punch_interval_ms", ns.PunchIntervalMs, 1, 60_000, ms)
	r.uint(nk+"punch_duration_ms", ns.PunchDurationMs, 1, 600_000, ms)
	r.uint(nk+"advert_ttl_secs", ns.AdvertTTLSecs, 1, weekSecs, s)
	r.uint(nk+"advert_refresh_secs", ns.AdvertRefreshSecs, 1, weekSecs, s)
	r.uint(nk+"startup_sweep_delay_secs", ns.StartupSweepDelaySecs, 0, daySecs, s)
	r.uint(nk+"startup_sweep_max_age_secs", ns.StartupSweepMaxAgeSecs, 0, weekSecs, s)
	r.uint(nk+"failure_streak_threshold", uint64(ns.FailureStreakThreshold), 1, math.MaxUint32, "")
	r.uint(nk+"extended_cooldown_secs", ns.ExtendedCooldownSecs, 0, yearSecs, s)
	r.uint(nk+"warn_log_interval_secs", ns.WarnLogIntervalSecs, 1, daySecs, s)
	r.uint(nk+"protocol_mismatch_cooldown_secs", ns.ProtocolMismatchCooldownSecs, 0, yearSecs, s)

	tr := &n.Tree
	r.uint("node.tree.announce_min_interval_ms", tr.AnnounceMinIntervalMs, 0, 60_000, ms)
	r.float("node.tree.parent_hysteresis", tr.ParentHysteresis, 0, 1, false)
	r.uint("node.tree.hold_down_secs", tr.HoldDownSecs, 0, daySecs, s)
	r.uint("node.tree.reeval_interval_secs", tr.ReevalIntervalSecs, 1, daySecs, s)
	r.uint("node.tree.flap_threshold", uint64(tr.FlapThreshold), 1, math.MaxUint32, "")
	r.uint("node.tree.flap_window_secs", tr.FlapWindowSecs, 1, daySecs, s)
	r.uint("node.tree.flap_dampening_secs", tr.FlapDampeningSecs, 0, yearSecs, s)

	r.uint("node.bloom.update_debounce_ms", n.Bloom.UpdateDebounceMs, 0, 60_000, ms)
	r.float("node.bloom.max_inbound_fpr", n.Bloom.MaxInboundFPR, 0, 1, true)
	r.routing(&n.Routing)

	se := &n.Session
	r.uint("node.session.default_ttl", uint64(se.DefaultTTL), 1, math.MaxUint8, "")
	r.uint("node.session.pending_packets_per_dest", uint64(se.PendingPacketsPerDest), 1, MaxChannel, "")
	r.uint("node.session.pending_max_destinations", uint64(se.PendingMaxDestinations), 1, MaxChannel, "")
	r.uint("node.session.idle_timeout_secs", se.IdleTimeoutSecs, 1, yearSecs, s)
	r.uint("node.session.coords_response_interval_ms", se.CoordsResponseIntervalMs, 0, hourSecs*1000, ms)
	r.uint("node.session.max_sessions", uint64(se.MaxSessions), 16, 1<<20, "sessions")
	r.uint("node.session.pq_timeout_ms", se.PQTimeoutMs, 100, 600_000, ms)
	switch se.PQ {
	case PQOff, PQPreferred, PQRequired:
	default:
		r.errs = append(r.errs, r.c.invalid("node.session.pq", "`node.session.pq` is %s, but must be off, preferred or required", strconv.Quote(se.PQ)))
	}
	r.uint("node.link.pq_timeout_ms", n.Link.PQTimeoutMs, 100, 600_000, ms)
	switch n.Link.PQ {
	case PQOff, PQPreferred, PQRequired:
	default:
		r.errs = append(r.errs, r.c.invalid("node.link.pq", "`node.link.pq` is %s, but must be off, preferred or required", strconv.Quote(n.Link.PQ)))
	}
	r.uint("node.rendezvous.lan.dial_burst", uint64(n.Rendezvous.LAN.DialBurst), 1, 1024, "")
	r.float("node.rendezvous.lan.dial_rate", n.Rendezvous.LAN.DialRate, 0, 1000, true)

	r.uint("node.buffers.packet_channel", uint64(n.Buffers.PacketChannel), 1, MaxChannel, "packets")
	r.uint("node.buffers.tun_channel", uint64(n.Buffers.TUNChannel), 1, MaxChannel, "packets")
	r.uint("node.buffers.dns_channel", uint64(n.Buffers.DNSChannel), 1, MaxChannel, "packets")

	// native_api.pending_per_flow and the lower bound of backlog are
	// upstream's checks, in Validate.
	if n.NativeAPI.Backlog >= 1 {
		r.uint("node.native_api.backlog", uint64(n.NativeAPI.Backlog), 1, 4096, "")
	}
	r.uint("node.native_api.max_flows", uint64(n.NativeAPI.MaxFlows), 1, MaxChannel, "")
	r.uint("node.native_api.max_flows_per_client", uint64(n.NativeAPI.MaxFlowsPerClient), 0, MaxChannel, "")

	for _, m := range []struct {
		key string
		cfg *MMPConfig
	}{{"node.mmp", &n.MMP}, {"node.session_mmp", &n.SessionMMP}} {
		r.uint(m.key+".log_interval_secs", m.cfg.LogIntervalSecs, 1, daySecs, s)
		r.uint(m.key+".owd_window_size", uint64(m.cfg.OWDWindowSize), 2, 4096, "samples")
	}

	r.float("node.ecn.loss_threshold", n.ECN.LossThreshold, 0, 1, false)
	r.float("node.ecn.etx_threshold", n.ECN.ETXThreshold, 1, 1000, false)

	if n.Rekey.AfterSecs > RekeyJitterSecs { // the lower bound is upstream's check
		r.uint("node.rekey.after_secs", n.Rekey.AfterSecs, RekeyJitterSecs+1, MaxRekeyAfterSecs, "seconds (100 years; a large value effectively disables the timer)")
	}

	r.uint("tun.mtu", uint64(c.TUN.MTU), 1280, math.MaxUint16, "bytes (IPv6 needs at least 1280)")
	if _, err := netip.ParseAddr(c.DNS.BindAddr); err != nil {
		r.errs = append(r.errs, c.invalid("dns.bind_addr", "`dns.bind_addr` is %s, but must be an IP address (no port; the port is dns.port)", strconv.Quote(c.DNS.BindAddr)))
	}
	r.uint("dns.port", uint64(c.DNS.Port), 1, math.MaxUint16, "")
	r.uint("dns.ttl", uint64(c.DNS.TTL), 0, weekSecs, s)

	if c.Metrics.Listen != "" {
		r.hostPort("metrics.listen", c.Metrics.Listen, true, false)
	}
	r.uint("metrics.max_peer_labels", uint64(c.Metrics.MaxPeerLabels), 0, MaxPeerLabelsLimit, "(0 = no per-peer series)")
	r.uint("metrics.history_max_peers", uint64(c.Metrics.HistoryMaxPeers), 1, HistoryMaxPeersLimit, "")
	r.dataplane(&c.Dataplane)

	c.checkTransportRanges(r)
	c.checkPeers(r)
	return r.errs
}

// checkResends bounds the longest wait between handshake resends, which
// grows as interval × backoff^resends and would overflow a duration.
func (c *Config) checkResends(r *rangeChecker) {
	rl := &c.Node.RateLimit
	iv, b := float64(rl.HandshakeResendIntervalMs), rl.HandshakeResendBackoff
	if iv < 1 || math.IsNaN(b) || b < 1 || b > 16 {
		return // reported on their own keys
	}
	most := uint64(100)
	if b > 1 {
		most = min(most, uint64(math.Floor(math.Log(MaxHandshakeResendWaitMs/iv)/math.Log(b)+1e-9)))
	}
	if iv > MaxHandshakeResendWaitMs {
		most = 0
	}
	r.uint("node.rate_limit.handshake_max_resends", uint64(rl.HandshakeMaxResends), 0, most,
		fmt.Sprintf("(with handshake_resend_interval_ms %d and handshake_resend_backoff %s; the last resend may wait at most one day)", rl.HandshakeResendIntervalMs, rustFloat(b)))
}

func (c *Config) checkTransportRanges(r *rangeChecker) {
	const (
		s  = "seconds"
		ms = "milliseconds"
		by = "bytes"
	)
	bufs := func(key string, recv, send uint) {
		r.uint(key+".recv_buf_size", uint64(recv), MinSocketBuffer, MaxSocketBuffer, by)
		r.uint(key+".send_buf_size", uint64(send), MinSocketBuffer, MaxSocketBuffer, by)
	}
	external := func(key string, v *string) {
		if v == nil {
			return
		}
		if _, err := netip.ParseAddrPort(*v); err == nil {
			return
		}
		if ip, err := netip.ParseAddr(*v); err == nil && ip.Zone() == "" {
			return
		}
		r.errs = append(r.errs, c.invalid(key, "`%s` is %s, but must be an IP address or ip:port", key, strconv.Quote(*v)))
	}
	for _, in := range c.Transports.UDP.List() {
		key, u := instanceKey("udp", in.Name), in.Config
		if !u.OutboundOnly {
			r.hostPort(key+".bind_addr", u.BindAddr, true, true)
		}
		r.uint(key+".mtu", uint64(u.MTU), MinTransportMTU, 65507, by)
		bufs(key, u.RecvBufSize, u.SendBufSize)
		external(key+".external_addr", u.ExternalAddr)
	}
	for _, in := range c.Transports.TCP.List() {
		key, t := instanceKey("tcp", in.Name), in.Config
		if t.BindAddr != nil {
			r.hostPort(key+".bind_addr", *t.BindAddr, true, true)
		}
		r.uint(key+".mtu", uint64(t.MTU), MinTransportMTU, math.MaxUint16, by)
		r.uint(key+".connect_timeout_ms", t.ConnectTimeoutMs, 1, 600_000, ms)
		r.uint(key+".keepalive_secs", t.KeepaliveSecs, 0, daySecs, "seconds (0 = off)")
		bufs(key, t.RecvBufSize, t.SendBufSize)
		if m := t.MaxInboundConnections; m != nil {
			r.uint(key+".max_inbound_connections", uint64(*m), 1, MaxSlots, "")
		}
		external(key+".external_addr", t.ExternalAddr)
	}
	for _, in := range c.Transports.Ethernet.List() {
		key, e := instanceKey("ethernet", in.Name), in.Config
		r.uint(key+".ethertype", uint64(e.Ethertype), 0x0600, math.MaxUint16, "(an EtherType is at least 0x0600)")
		if e.MTU != nil {
			r.uint(key+".mtu", uint64(*e.MTU), MinTransportMTU, math.MaxUint16, by)
		}
		bufs(key, e.RecvBufSize, e.SendBufSize)
		r.uint(key+".beacon_interval_secs", e.BeaconIntervalSecs, 0, daySecs, "seconds (below 10 means 10)")
	}
	for _, in := range c.Transports.Tor.List() {
		key, t := instanceKey("tor", in.Name), in.Config
		r.hostPort(key+".socks5_addr", t.Socks5Addr, false, false)
		r.uint(key+".connect_timeout_ms", t.ConnectTimeoutMs, 1, hourSecs*1000, ms)
		r.uint(key+".mtu", uint64(t.MTU), MinTransportMTU, math.MaxUint16, by)
		r.uint(key+".max_inbound_connections", uint64(t.MaxInboundConnections), 1, MaxSlots, "")
		r.uint(key+".advertised_port", uint64(t.AdvertisedPort), 1, math.MaxUint16, "")
	}
	for _, in := range c.Transports.Nym.List() {
		key, y := instanceKey("nym", in.Name), in.Config
		r.hostPort(key+".socks5_addr", y.Socks5Addr, false, false)
		r.uint(key+".connect_timeout_ms", y.ConnectTimeoutMs, 1, hourSecs*1000, ms)
		r.uint(key+".mtu", uint64(y.MTU), MinTransportMTU, math.MaxUint16, by)
		r.uint(key+".startup_timeout_secs", y.StartupTimeoutSecs, 1, hourSecs, s)
	}
	for _, in := range c.Transports.BLE.List() {
		key, b := instanceKey("ble", in.Name), in.Config
		r.uint(key+".psm", uint64(b.PSM), 1, math.MaxUint16, "")
		r.uint(key+".mtu", uint64(b.MTU), 23, math.MaxUint16, by)
		r.uint(key+".max_connections", uint64(b.MaxConnections), 1, 255, "")
		r.uint(key+".connect_timeout_ms", b.ConnectTimeoutMs, 1, 600_000, ms)
		r.uint(key+".probe_cooldown_secs", b.ProbeCooldownSecs, 0, daySecs, s)
	}
}

// knownTransportKinds lists the transport types a peer address may name.
func knownTransportKinds() []string { return []string{"udp", "tcp", "ethernet", "tor", "nym", "ble"} }

func isKnownTransportKind(k string) bool { return slices.Contains(knownTransportKinds(), k) }

// checkPeers refuses an unknown transport type and a malformed host:port
// address. An unusable npub is not refused: upstream skips that peer and
// starts, and so does fips-go, with a warning (Lint).
func (c *Config) checkPeers(r *rangeChecker) {
	for i, p := range c.Peers {
		key := fmt.Sprintf("peers[%d]", i)
		for j, a := range p.Addresses {
			akey := fmt.Sprintf("%s.addresses[%d]", key, j)
			kind := a.Spec().Kind
			if !isKnownTransportKind(kind) {
				r.errs = append(r.errs, c.invalid(akey+".transport", "`%s.transport` is %s, but must be one of %s (optionally udp/NAME)", akey, strconv.Quote(a.Transport), strings.Join(knownTransportKinds(), ", ")))
				continue
			}
			switch {
			case kind == "udp" && a.Addr == "nat":
			case kind == "udp" || kind == "tcp" || kind == "tor" || kind == "nym":
				r.hostPort(akey+".addr", a.Addr, false, false)
			}
		}
	}
}

// routing checks node.routing.next_hop, filter_schedule and
// full_filter_lookups.
func (r *rangeChecker) routing(rt *RoutingConfig) {
	switch rt.NextHop {
	case NextHopDistance, NextHopUpstream:
	default:
		r.errs = append(r.errs, r.c.invalid("node.routing.next_hop", "`node.routing.next_hop` is %s, but must be distance or upstream", strconv.Quote(rt.NextHop)))
	}
	switch rt.FilterSchedule {
	case FilterScheduleChange, FilterScheduleTick:
	default:
		r.errs = append(r.errs, r.c.invalid("node.routing.filter_schedule", "`node.routing.filter_schedule` is %s, but must be change or tick", strconv.Quote(rt.FilterSchedule)))
	}
	switch rt.FullFilterLookups {
	case FullFilterLookupsTree, FullFilterLookupsUpstream:
	default:
		r.errs = append(r.errs, r.c.invalid("node.routing.full_filter_lookups", "`node.routing.full_filter_lookups` is %s, but must be tree or upstream", strconv.Quote(rt.FullFilterLookups)))
	}
}

// dataplane checks dataplane.mode and dataplane.xdp_interfaces.
func (r *rangeChecker) dataplane(d *DataplaneConfig) {
	switch d.Mode {
	case DataplaneAuto, DataplaneXDP, DataplaneUserspace:
	default:
		r.errs = append(r.errs, r.c.invalid("dataplane.mode", "`dataplane.mode` is %s, but must be auto, xdp or userspace", strconv.Quote(d.Mode)))
	}
	if t := d.AFXDPTransmit; t != "" && t != AFXDPTransmitSocket && t != AFXDPTransmitXSK {
		r.errs = append(r.errs, r.c.invalid("dataplane.afxdp_transmit", "`dataplane.afxdp_transmit` is %s, but must be socket or xsk", strconv.Quote(t)))
	}
	if us := d.AFXDPBusyPollUS; us > MaxAFXDPBusyPollUS {
		r.errs = append(r.errs, r.c.invalid("dataplane.afxdp_busy_poll_us", "`dataplane.afxdp_busy_poll_us` is %d, but must be from 0 to %d", us, MaxAFXDPBusyPollUS))
	}
	switch d.XDPAttach {
	case "", "auto", "native", "generic":
	default:
		r.errs = append(r.errs, r.c.invalid("dataplane.xdp_attach", "`dataplane.xdp_attach` is %s, but must be auto, native or generic", strconv.Quote(d.XDPAttach)))
	}
	if d.Workers < 0 || d.Workers > MaxWorkers {
		r.errs = append(r.errs, r.c.invalid("dataplane.workers", "`dataplane.workers` is %d, but must be 0 (one per core) to %d", d.Workers, MaxWorkers))
	}
	if len(d.XDPInterfaces) > MaxXDPInterfaces {
		r.errs = append(r.errs, r.c.invalid("dataplane.xdp_interfaces", "`dataplane.xdp_interfaces` names %d interfaces, at most %d", len(d.XDPInterfaces), MaxXDPInterfaces))
		return
	}
	seen := map[string]bool{}
	for _, name := range d.XDPInterfaces {
		// IFNAMSIZ is 16 with the NUL: names are 1 to 15 bytes, no '/',
		// no whitespace.
		if seen[name] {
			r.errs = append(r.errs, r.c.invalid("dataplane.xdp_interfaces", "`dataplane.xdp_interfaces` names %s twice", strconv.Quote(name)))
			return
		}
		// IFNAMSIZ is 16 with the NUL: names are 1 to 15 bytes.
		if name == "" || len(name) > 15 || strings.ContainsAny(name, "/ \t\n:") {
			r.errs = append(r.errs, r.c.invalid("dataplane.xdp_interfaces", "`dataplane.xdp_interfaces` has %s, but each entry must be an interface name of 1 to 15 characters without '/', ':' or whitespace", strconv.Quote(name)))
			return
		}
		seen[name] = true
	}
}

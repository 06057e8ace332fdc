package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/rendezvous"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
)

// RendezvousOptions wire Nostr discovery into the node (nil Service: off).
type RendezvousOptions struct {
	Service *rendezvous.Service
	// Policy is node.rendezvous.nostr.policy: "disabled" never uses
	// advert endpoints, "configured_only" only for Peers, "open" also
	// dials every valid cached advert.
	Policy string
	// Peers are the configured via_nostr peers (and peers with a udp
	// "nat" address): reached through their adverts.
	Peers []NostrPeer
	// Advertised are the transports whose endpoints go in our advert.
	Advertised []AdvertisedTransport
	// Adopt wraps a punched socket as a UDP transport with the given id
	// (cmd builds it from the operator's UDP settings).
	Adopt func(id transport.ID, conn *net.UDPConn) (transport.Transport, error)
	// OpenMaxPending is open_discovery_max_pending: at most this many
	// open-discovery retries are queued (in flight or waiting) at once.
	OpenMaxPending int
	// Configured are every configured peer's keys (connect policy
	// aside): open discovery leaves them to their own retries.
	Configured []identity.PublicKey
	// StartupSweepDelay and StartupSweepMaxAge are
	// startup_sweep_delay_secs and startup_sweep_max_age_secs: under
	// policy open, one sweep that long after start skips adverts older
	// than the bound.
	StartupSweepDelay  time.Duration
	StartupSweepMaxAge time.Duration
	// AdvertTTL is advert_ttl_secs: an open-discovery retry is dropped
	// after twice this (0: an hour).
	AdvertTTL time.Duration
	// AdvertRefresh is advert_refresh_secs (the STUN public-address
	// cache lifetime too).
	AdvertRefresh time.Duration
}

// NostrPeer is a configured peer found through its advert.
type NostrPeer struct {
	PublicKey     identity.PublicKey
	Alias         string
	AutoReconnect bool
}

// AdvertisedTransport is one transport with advertise_on_nostr.
type AdvertisedTransport struct {
	Transport    transport.ID
	Kind         string // udp, tcp, tor
	Public       bool   // udp: false advertises "nat"
	ExternalAddr string // "" or a bare IP or host:port
}

// RendezvousView is the rendezvous part of a snapshot: show_rendezvous'
// data, and what show_peers reads of Nostr failures.
type RendezvousView struct {
	ctl.RendezvousView
	// failures is every linked peer's failure state, by npub, for
	// show_peers' nostr_traversal (upstream reads it for every peer, not
	// only those with a traversal entry: an open-discovery retry is gone
	// once it links).
	failures map[string]rendezvous.PeerFailure
}

// Failure is the Nostr failure state show_peers reports for npub.
func (v *RendezvousView) Failure(npub string) rendezvous.PeerFailure {
	if v == nil {
		return rendezvous.PeerFailure{}
	}
	return v.failures[npub]
}

type nostrPeerState struct {
	cfg      NostrPeer
	inFlight bool
	cancel   context.CancelFunc // ends the attempt in flight
	next     time.Time
	attempts uint64
	outcome  string
	reason   string
	lastAt   time.Time
	failures int
	open     bool      // from open discovery, not configuration
	expires  time.Time // open: the retry is dropped after this
	// directTried: the last attempt dialled the advert's direct
	// endpoints; if the peer is still not linked the next one traverses
	// (when the advert offers udp:nat too).
	directTried bool
}

type rendezvousState struct {
	opts  RendezvousOptions
	svc   *rendezvous.Service
	peers map[identity.NodeAddr]*nostrPeerState
	// bootstrap are adopted punch transports, by id, with their peer and
	// when they were adopted (unused ones are closed after a grace).
	bootstrap  map[transport.ID]bootstrapTransport
	nextID     transport.ID
	tctx       context.Context
	startup    rendezvous.StartupSweep
	configured map[identity.NodeAddr]identity.PublicKey // open discovery's "configured" set
	// publicIP is what STUN last said our public address is, for public
	// transports bound to a wildcard without external_addr; stunDue is
	// when to ask again, stunBusy while a lookup runs.
	publicIP netip.Addr
	stunDue  time.Time
	stunBusy bool
	// onions is the onion address last published for each advertised
	// Tor transport: its service comes up (or changes) after start, and
	// the advert follows.
	onions map[transport.ID]string
	// adoptRefused counts punched paths refused at MaxBootstrapTransports.
	adoptRefused uint64
}

// Public-address lookup cache lifetimes (upstream's): a success lasts
// max(advert_refresh_secs, 60 s), a failure 60 s.
const stunFailureTTL = 60 * time.Second

type bootstrapTransport struct {
	peer    identity.NodeAddr
	npub    string
	adopted time.Time
}

// bootstrapGrace is how long an adopted transport may wait for its link.
const bootstrapGrace = 35 * time.Second

// MaxBootstrapTransports bounds the punched sockets adopted at once: each
// completed punch (which any key can make, answering its own offers) would
// otherwise hold a socket for bootstrapGrace.
const MaxBootstrapTransports = 64

func (n *Node) initRendezvous(tctx context.Context) {
	o := n.opts.Rendezvous
	if o.Service == nil {
		return
	}
	rs := &rendezvousState{opts: o, svc: o.Service, peers: map[identity.NodeAddr]*nostrPeerState{},
		bootstrap: map[transport.ID]bootstrapTransport{}, tctx: tctx}
	for _, id := range n.order {
		rs.nextID = max(rs.nextID, id)
	}
	rs.nextID++
	for _, p := range o.Peers {
		rs.peers[p.PublicKey.NodeAddr()] = &nostrPeerState{cfg: p}
	}
	rs.configured = map[identity.NodeAddr]identity.PublicKey{}
	for _, pk := range o.Configured {
		rs.configured[pk.NodeAddr()] = pk
	}
	rs.startup = rendezvous.StartupSweep{Started: time.Now(), Delay: o.StartupSweepDelay, MaxAge: o.StartupSweepMaxAge}
	// The configured peers' adverts and offers are the ones the node
	// needs: no stranger's can evict or outrank them.
	wanted := slices.Clone(o.Configured)
	for _, p := range o.Peers {
		wanted = append(wanted, p.PublicKey)
	}
	rs.svc.SetWanted(wanted)
	n.rdv = rs
	n.rdvPublishEndpoints()
	rs.svc.Start(n.runCtx)
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		for {
			select {
			case <-n.runCtx.Done():
				return
			case est := <-rs.svc.Established():
				if _, err := n.Do(n.runCtx, func(now time.Time) any { n.adoptTraversal(now, est); return nil }); err != nil {
					est.Conn.Close()
				}
			}
		}
	}()
	policy := o.Policy
	if policy == "" {
		policy = "configured_only"
	}
	// Upstream's line; the fields are ours.
	logging.WithTarget(n.log, "fips::node::lifecycle").Info("Nostr overlay discovery enabled", "npub", n.id.Npub(),
		"policy", policy, "via_nostr_peers", len(o.Peers), "advertised_transports", len(o.Advertised))
}

// rdvPublishEndpoints builds our advert body from the transports.
func (n *Node) rdvPublishEndpoints() {
	rs := n.rdv
	var eps []rendezvous.Endpoint
	for _, a := range rs.opts.Advertised {
		t := n.transports[a.Transport]
		if t == nil || t.State() != transport.StateUp {
			continue
		}
		switch {
		case a.Kind == "udp" && !a.Public:
			eps = append(eps, rendezvous.Endpoint{Transport: rendezvous.EndpointUDP, Addr: "nat"})
		case a.Kind == rendezvous.EndpointTor:
			// Upstream: the onion with advertised_port, once the service is up.
			svc, ok := t.(onionService)
			if !ok {
				continue
			}
			onion := svc.OnionAddress()
			if rs.onions == nil {
				rs.onions = map[transport.ID]string{}
			}
			rs.onions[a.Transport] = onion
			if onion != "" {
				eps = append(eps, rendezvous.Endpoint{Transport: rendezvous.EndpointTor,
					Addr: net.JoinHostPort(onion, strconv.Itoa(int(svc.AdvertisedPort())))})
			}
		default:
			addr, ok := advertAddr(a.ExternalAddr, t.LocalAddr())
			if !ok && a.Kind == "udp" && a.ExternalAddr == "" && rs.publicIP.IsValid() {
				// A wildcard bind: the STUN-seen address with the bound
				// port (the STUN port is discarded, as upstream: 1:1 NAT).
				if lap, err := netip.ParseAddrPort(t.LocalAddr()); err == nil {
					addr, ok = netip.AddrPortFrom(rs.publicIP, lap.Port()).String(), true
				}
			}
			if !ok && a.Kind == "udp" && a.ExternalAddr == "" && !rs.publicIP.IsValid() {
				continue // the STUN lookup will republish
			}
			if !ok {
				n.log.Warn("advertise_on_nostr: no public address to advertise (set external_addr)", "transport", describe(t))
				continue
			}
			eps = append(eps, rendezvous.Endpoint{Transport: a.Kind, Addr: addr})
		}
	}
	rs.svc.SetEndpoints(eps)
}

// onionService is a transport running an onion service (Tor).
type onionService interface {
	OnionAddress() string
	AdvertisedPort() uint16
}

// rdvOnionChanged reports an advertised Tor transport whose onion
// address is not the one last published.
func (n *Node) rdvOnionChanged() bool {
	for _, a := range n.rdv.opts.Advertised {
		if a.Kind != rendezvous.EndpointTor {
			continue
		}
		if svc, ok := n.transports[a.Transport].(onionService); ok && svc.OnionAddress() != n.rdv.onions[a.Transport] {
			return true
		}
	}
	return false
}

// advertAddr is upstream's choice: external_addr (a bare IP takes the
// bound port), else a non-wildcard bound address.
func advertAddr(external, local string) (string, bool) {
	lap, lerr := netip.ParseAddrPort(local)
	if external != "" {
		if ip, err := netip.ParseAddr(external); err == nil {
			if lerr != nil {
				return "", false
			}
			return netip.AddrPortFrom(ip, lap.Port()).String(), true
		}
		return external, true
	}
	if lerr != nil || lap.Addr().IsUnspecified() {
		return "", false
	}
	return local, true
}

// rdvTick runs on the node tick: capacity, configured Nostr peers due for
// an attempt, open discovery, and unused bootstrap transports.
func (n *Node) rdvTick(now time.Time) {
	rs := n.rdv
	if rs == nil {
		return
	}
	max := n.opts.Peer.MaxPeers
	rs.svc.SetAcceptingPeers(max == 0 || n.peers.PeerCount() < max)
	if n.rdvOnionChanged() {
		n.rdvPublishEndpoints()
	}
	if rs.opts.Policy == "open" {
		// Upstream's order: the one-shot startup sweep, then the per-tick
		// one; both only queue, and the loop below dials what is due.
		if maxAge, due := rs.startup.Due(now); due {
			n.rdvOpenSweep(now, &maxAge)
		}
		n.rdvOpenSweep(now, nil)
	}
	if rs.opts.Policy != "disabled" {
		for na, ps := range rs.peers {
			if ps.open && !ps.inFlight && (n.peers.Peer(na) != nil || now.After(ps.expires)) {
				if n.peers.Peer(na) != nil {
					// Linked: its advert outlasts strangers' in the cache.
					rs.svc.MarkProven(ps.cfg.PublicKey)
				}
				delete(rs.peers, na) // satisfied or expired
				continue
			}
			if ps.inFlight && n.peers.Peer(na) != nil {
				ps.cancel() // linked another way (its own offer, crossing ours)
			}
			if ps.inFlight || n.peers.Peer(na) != nil || now.Before(ps.next) {
				continue
			}
			if ps.attempts > 0 && !ps.cfg.AutoReconnect && ps.outcome == "success" {
				continue
			}
			n.rdvAttempt(now, na, ps)
		}
	}
	n.rdvPublicIP(now)
	for id, bt := range rs.bootstrap {
		if p := n.peers.Peer(bt.peer); p != nil && p.Transport == id {
			continue
		}
		if now.Sub(bt.adopted) < bootstrapGrace {
			continue
		}
		n.removeBootstrap(id, "no link on it")
	}
}

// rdvOpenSweep is one open-discovery sweep (maxAge set: the startup
// one): candidates from the advert cache are queued as open retries, due
// now, as rendezvous.PlanOpenSweep decides.
func (n *Node) rdvOpenSweep(now time.Time, maxAge *uint64) {
	rs := n.rdv
	openPending := 0
	for _, ps := range rs.peers {
		if ps.open {
			openPending++
		}
	}
	slots := func(limit, used int) int {
		if limit <= 0 {
			return -1
		}
		return max(limit-used, 0)
	}
	budget := rendezvous.OpenSweepBudget(rs.opts.OpenMaxPending, openPending,
		slots(n.opts.Peer.MaxConnections, n.peers.ConnectionCount()), slots(n.opts.Peer.MaxPeers, n.peers.PeerCount()))
	nowMs := uint64(now.UnixMilli())
	connected := func(na identity.NodeAddr) bool { return n.peers.Peer(na) != nil }
	view := rendezvous.SweepView{
		Configured: func(pk identity.PublicKey) bool {
			na := pk.NodeAddr()
			if _, ok := rs.configured[na]; ok || n.peers.IsStatic(na) {
				return true
			}
			ps := rs.peers[na]
			return ps != nil && !ps.open
		},
		Connected: connected,
		Pending:   func(na identity.NodeAddr) bool { return rs.peers[na] != nil },
		InCooldown: func(npub string) bool {
			_, cool := rs.svc.Failures().InCooldown(npub, nowMs)
			return cool
		},
		Connecting: n.peers.Connecting,
		Expedite: func(pk identity.PublicKey) {
			na := pk.NodeAddr()
			if connected(na) || n.peers.Connecting(na) {
				return
			}
			if ps := rs.peers[na]; ps != nil && !ps.open && !ps.inFlight && ps.next.After(now) {
				ps.next = now
			}
			n.peers.ExpediteRetry(now, na)
		},
	}
	picks, tally := rendezvous.PlanOpenSweep(nowMs, maxAge, n.id.PublicKey().Hex(), rs.svc.OpenCandidates(rendezvous.OpenSweepPull), budget, view)
	ttl := rs.opts.AdvertTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	for _, p := range picks {
		rs.peers[p.PublicKey.NodeAddr()] = &nostrPeerState{cfg: NostrPeer{PublicKey: p.PublicKey, AutoReconnect: true}, open: true,
			next: now, expires: now.Add(rendezvous.OpenRetryLifetimeMultiplier * ttl)}
	}
	switch {
	case tally.BudgetZero:
		n.log.Debug("open-discovery sweep: enqueue budget is 0, skipping", "caller", tally.Caller())
	case tally.ShouldLog():
		n.log.Info("open-discovery sweep complete", tally.LogArgs()...)
	}
}

// rdvAttempt starts one discovery attempt off the loop: the advert's
// direct endpoints are dialled; a udp:nat advert is traversed.
func (n *Node) rdvAttempt(now time.Time, na identity.NodeAddr, ps *nostrPeerState) {
	rs := n.rdv
	ps.inFlight = true
	ps.attempts++
	pk := ps.cfg.PublicKey
	ctx, cancel := context.WithCancel(n.runCtx)
	ps.cancel = cancel
	preferNAT := ps.directTried
	ps.directTried = false
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		defer cancel()
		adv, err := rs.svc.FetchAdvert(ctx, pk)
		var est rendezvous.Established
		var direct []rendezvous.Endpoint
		start := time.Now()
		if err == nil {
			for _, e := range adv.Endpoints {
				if !e.IsNAT() && (e.Transport == rendezvous.EndpointUDP || e.Transport == rendezvous.EndpointTCP ||
					e.Transport == rendezvous.EndpointTor) {
					direct = append(direct, e)
				}
			}
			if adv.HasNAT() && (len(direct) == 0 || preferNAT) {
				direct = nil
				logging.WithTarget(n.log, "fips::nostr::driver").Info("Started Nostr UDP NAT traversal attempt", "npub", pk.Npub())
				est, err = rs.svc.Connect(ctx, pk)
			}
		}
		took := time.Since(start)
		if _, derr := n.Do(n.runCtx, func(now time.Time) any {
			n.rdvDone(now, na, ps, est, direct, err, took)
			return nil
		}); derr != nil && est.Conn != nil {
			est.Conn.Close()
		}
	}()
}

func (n *Node) rdvDone(now time.Time, na identity.NodeAddr, ps *nostrPeerState, est rendezvous.Established,
	direct []rendezvous.Endpoint, err error, took time.Duration) {
	rs := n.rdv
	ps.inFlight, ps.cancel = false, nil
	ps.lastAt = now
	npub := ps.cfg.PublicKey.Npub()
	if err == nil && len(direct) > 0 {
		ps.outcome, ps.reason = "success", "direct endpoints from advert"
		ps.directTried = true
		n.rdvDialDirect(now, ps.cfg.PublicKey, direct)
		ps.next = now.Add(n.opts.Peer.RetryBase)
		return
	}
	if err == nil {
		ps.outcome, ps.reason, ps.failures = "success", "", 0
		n.log.Info("Nostr traversal succeeded", "peer", npub, "alias", ps.cfg.Alias, "session", est.SessionID,
			"remote", est.Remote.String(), "took", took.Round(time.Millisecond))
		n.adoptTraversal(now, est)
		ps.next = now.Add(n.opts.Peer.RetryBase)
		return
	}
	if n.peers.Peer(na) != nil {
		ps.outcome, ps.reason = "success", "linked while the attempt was in flight"
		n.log.Debug("Nostr traversal attempt ended: peer already linked", "peer", npub, "reason", err.Error())
		return
	}
	var d rendezvous.FailureDecision
	if !errors.Is(err, rendezvous.ErrCooldown) && !errors.Is(err, rendezvous.ErrBusy) && !errors.Is(err, context.Canceled) {
		d = rs.svc.RecordFailure(npub)
	} else if until, cool := rs.svc.Failures().InCooldown(npub, uint64(now.UnixMilli())); cool {
		d.CooldownUntilMs = until
	}
	ps.outcome, ps.reason = "failure", err.Error()
	ps.failures++
	delay := retryDelay(n.opts.Peer, ps.failures)
	if d.CooldownUntilMs != 0 {
		if until := time.UnixMilli(int64(d.CooldownUntilMs)); until.After(now.Add(delay)) {
			delay = until.Sub(now)
		}
	}
	if d.CrossedThreshold {
		n.rdvRefetch(ps)
	}
	ps.next = now.Add(delay) // an open retry stays queued until it links or expires
	args := []any{"peer", npub, "alias", ps.cfg.Alias, "reason", err.Error(), "consecutive_failures", d.ConsecutiveFailures,
		"took", took.Round(time.Millisecond), "next_attempt_in", delay.Round(time.Second)}
	if d.CooldownUntilMs != 0 {
		args = append(args, "cooldown_until", time.UnixMilli(int64(d.CooldownUntilMs)).UTC().Format(time.RFC3339))
	}
	switch {
	case errors.Is(err, rendezvous.ErrCooldown), errors.Is(err, rendezvous.ErrBusy), errors.Is(err, context.Canceled):
		n.log.Debug("Nostr traversal not attempted", args...)
	case d.ShouldWarn || d.CrossedThreshold:
		n.log.Warn("Nostr traversal failed", args...)
	default:
		n.log.Debug("Nostr traversal failed", args...)
	}
}

func retryDelay(c peer.Config, failures int) time.Duration {
	base, limit := c.RetryBase, c.RetryMax
	if base <= 0 {
		base = 5 * time.Second
	}
	if limit <= 0 {
		limit = 300 * time.Second
	}
	d := base
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// rdvDialDirect dials an advert's direct endpoints on the first matching
// configured transport.
func (n *Node) rdvDialDirect(now time.Time, pk identity.PublicKey, eps []rendezvous.Endpoint) {
	for _, e := range eps {
		t, err := n.transportFor(e.Transport)
		if err != nil {
			continue
		}
		var to transport.Addr
		if e.Transport == rendezvous.EndpointTor {
			// Tor resolves names itself: the transport maps the onion
			// to an address of its own, with no lookup.
			a, err := t.ResolveAddr(n.runCtx, e.Addr)
			if err != nil {
				n.log.Debug("advertised Tor endpoint refused", "peer", pk.Npub(), "addr", e.Addr, "error", err)
				continue
			}
			to = a
		} else {
			ap, err := netip.ParseAddrPort(e.Addr)
			if err != nil {
				continue // a host name: resolved only for configured peers
			}
			to = transport.AddrFromIP(ap)
		}
		if err := n.peers.Dial(now, pk, peer.Candidate{Transport: t.ID(), Addr: to}); err == nil {
			n.log.Info("dialling peer at its advertised endpoint", "peer", pk.Npub(), "transport", e.Transport, "addr", e.Addr)
			return
		}
	}
}

// adoptTraversal makes a punched socket a UDP transport and starts the
// link handshake to the peer over it (upstream's
// adopt_established_traversal). Both sides do this; crossed msg1s
// resolve as any crossed handshake does.
func (n *Node) adoptTraversal(now time.Time, est rendezvous.Established) {
	rs := n.rdv
	na := est.Peer.NodeAddr()
	if n.peers.Peer(na) != nil {
		est.Conn.Close()
		n.log.Debug("traversal path not needed: peer already linked", "peer", est.Peer.Npub())
		return
	}
	if max := n.opts.Peer.MaxPeers; max > 0 && n.peers.PeerCount() >= max {
		est.Conn.Close()
		return
	}
	if rs.opts.Adopt == nil {
		est.Conn.Close()
		return
	}
	if len(rs.bootstrap) >= MaxBootstrapTransports {
		est.Conn.Close()
		rs.adoptRefused++
		n.log.Warn("traversal path refused: too many traversal transports waiting for their links", "peer", est.Peer.Npub(),
			"limit", MaxBootstrapTransports)
		return
	}
	id := rs.nextID
	rs.nextID++
	lc := logging.WithTarget(n.log, "fips::node::lifecycle")
	t, err := rs.opts.Adopt(id, est.Conn)
	if err != nil {
		est.Conn.Close()
		lc.Warn("Failed to adopt NAT traversal", "peer_npub", est.Peer.Npub(), "error", err)
		return
	}
	if err := t.Start(rs.tctx, n.deliver); err != nil {
		t.Close()
		lc.Warn("Failed to adopt NAT traversal", "peer_npub", est.Peer.Npub(), "error", err)
		return
	}
	n.transports[id] = t
	n.order = append(n.order, id)
	n.addQueue(t)
	rs.bootstrap[id] = bootstrapTransport{peer: na, npub: est.Peer.Npub(), adopted: now}
	lc.Info("Adopted NAT traversal socket", "peer_npub", est.Peer.Npub(), "transport_id", uint32(id),
		"local_addr", t.LocalAddr(), "remote", est.Remote.String(), "initiator", est.Initiator)
	if err := n.peers.Dial(now, est.Peer, peer.Candidate{Transport: id, Addr: transport.AddrFromIP(est.Remote)}); err != nil {
		n.log.Warn("link handshake over the traversal path failed to start", "peer", est.Peer.Npub(), "error", err)
		n.removeBootstrap(id, err.Error())
	}
}

// removeBootstrap closes an adopted transport nothing uses.
func (n *Node) removeBootstrap(id transport.ID, why string) {
	rs := n.rdv
	t := n.transports[id]
	delete(rs.bootstrap, id)
	if t == nil {
		return
	}
	n.removeQueue(id)
	delete(n.transports, id)
	for i, o := range n.order {
		if o == id {
			n.order = append(n.order[:i], n.order[i+1:]...)
			break
		}
	}
	if err := t.Close(); err != nil {
		n.log.Debug("closing traversal transport", "error", err)
	}
	n.log.Info("traversal transport closed", "transport_id", uint32(id), "reason", why)
}

// isBootstrap reports an adopted traversal transport: never chosen for
// other dials.
func (n *Node) isBootstrap(id transport.ID) bool {
	if n.rdv == nil {
		return false
	}
	_, ok := n.rdv.bootstrap[id]
	return ok
}

// rdvView is the rendezvous part of the snapshot (on the loop).
func (n *Node) rdvView(now time.Time) *RendezvousView {
	rs := n.rdv
	if rs == nil {
		return nil
	}
	v := &RendezvousView{RendezvousView: ctl.RendezvousView{Enabled: true, Npub: n.id.Npub(), Policy: rs.opts.Policy,
		Stats: ctl.RendezvousStats(rs.svc.Stats()), Peers: []ctl.TraversalView{}, Adopted: map[string]string{}, AdoptRefused: rs.adoptRefused}}
	nowMs := uint64(now.UnixMilli())
	for _, na := range sortedAddrs(rs.peers) {
		ps := rs.peers[na]
		npub := ps.cfg.PublicKey.Npub()
		tv := ctl.TraversalView{Npub: npub, Alias: ps.cfg.Alias, Attempts: ps.attempts, LastOutcome: ps.outcome, LastReason: ps.reason,
			LastAtMs: msSince(ps.lastAt)}
		f, _ := rs.svc.Failures().Get(npub, nowMs)
		tv.NostrPeerFailure = ctl.NostrPeerFailure(f)
		switch {
		case rs.opts.Policy == "disabled":
			tv.State = "disabled"
		case n.peers.Peer(na) != nil:
			tv.State = "linked"
		case ps.inFlight:
			tv.State = "in_flight"
		case tv.CooldownUntilMs != 0:
			tv.State = "cooldown"
		default:
			tv.State = "idle"
			tv.NextAtMs = msSince(ps.next)
		}
		v.Peers = append(v.Peers, tv)
	}
	for id, bt := range rs.bootstrap {
		v.Adopted[fmt.Sprint(uint32(id))] = bt.npub
	}
	v.failures = map[string]rendezvous.PeerFailure{}
	n.peers.Peers(func(p *peer.Peer) {
		npub := p.PublicKey.Npub()
		if f, ok := rs.svc.Failures().Get(npub, nowMs); ok {
			v.failures[npub] = f
		}
	})
	return v
}

// needsPublicIP reports a public UDP transport bound to a wildcard
// address with no external_addr: its advert needs STUN.
func (n *Node) needsPublicIP() bool {
	for _, a := range n.rdv.opts.Advertised {
		t := n.transports[a.Transport]
		if a.Kind != "udp" || !a.Public || a.ExternalAddr != "" || t == nil {
			continue
		}
		if lap, err := netip.ParseAddrPort(t.LocalAddr()); err == nil && lap.Addr().IsUnspecified() {
			return true
		}
	}
	return false
}

// rdvPublicIP refreshes the STUN-seen public address when it is due.
func (n *Node) rdvPublicIP(now time.Time) {
	rs := n.rdv
	if rs.stunBusy || now.Before(rs.stunDue) || !n.needsPublicIP() {
		return
	}
	rs.stunBusy = true
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		ip, err := rs.svc.PublicIP(n.runCtx)
		_, _ = n.Do(n.runCtx, func(now time.Time) any {
			rs.stunBusy = false
			if err != nil {
				rs.stunDue = now.Add(stunFailureTTL)
				n.log.Warn("advertise_on_nostr: STUN found no public address for the public UDP transport; not advertised (set external_addr)", "error", err)
				return nil
			}
			rs.stunDue = now.Add(max(n.opts.Rendezvous.AdvertRefresh, 60*time.Second))
			if ip != rs.publicIP {
				n.log.Info("public address from STUN", "ip", ip.String())
			}
			rs.publicIP = ip
			n.rdvPublishEndpoints()
			return nil
		})
	}()
}

// rdvRefetch re-reads a peer's advert once its streak crosses the
// threshold: gone or newer lifts the cooldown (upstream's stale check).
func (n *Node) rdvRefetch(ps *nostrPeerState) {
	rs := n.rdv
	pk := ps.cfg.PublicKey
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		out := rs.svc.RefetchAdvert(n.runCtx, pk)
		n.log.Debug("stale-advert check after the failure threshold", "peer", pk.Npub(), "outcome", out)
		if out == rendezvous.RefetchEvicted || out == rendezvous.RefetchRefreshed {
			_, _ = n.Do(n.runCtx, func(now time.Time) any {
				ps.next, ps.failures = now, 0
				return nil
			})
		}
	}()
}

// rdvProtocolMismatch: a frame of another FMP version on a traversal
// transport means the peer runs an incompatible FIPS; traversal to it
// stops for protocol_mismatch_cooldown_secs (upstream's
// record_protocol_mismatch), with one WARN per cooldown.
func (n *Node) rdvProtocolMismatch(now time.Time, id transport.ID, peerVersion uint8) {
	bt, ok := n.rdv.bootstrap[id]
	if !ok {
		return
	}
	f := n.rdv.svc.Failures()
	if f.RecordProtocolMismatch(bt.npub, uint64(now.UnixMilli())) {
		logging.WithTarget(n.log, "fips::node::dataplane::rx_loop").Warn("Nostr-discovered peer speaks a different FMP version; suppressing retraversal",
			"peer_npub", bt.npub, "transport_id", uint32(id), "peer_version", peerVersion, "our_version", wire.FMPVersion,
			"cooldown_secs", f.MismatchCooldownSecs())
	}
}

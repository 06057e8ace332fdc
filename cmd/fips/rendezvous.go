package main

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/rendezvous"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/udp"
)

// isNATAddress is a peer address that asks for Nostr traversal.
func isNATAddress(a config.PeerAddress) bool {
	return strings.HasPrefix(a.Transport, "udp") && strings.EqualFold(strings.TrimSpace(a.Addr), "nat")
}

// nostrPeers are the configured peers reached through their adverts:
// via_nostr, or with a udp "nat" address.
func nostrPeers(cfg *config.Config) []node.NostrPeer {
	var out []node.NostrPeer
	for _, p := range cfg.Peers {
		nat := false
		for _, a := range p.Addresses {
			nat = nat || isNATAddress(a)
		}
		if !p.IsAutoConnect() || !(p.ViaNostr || nat) {
			continue
		}
		pk, err := identity.DecodeNpub(p.Npub)
		if err != nil {
			continue
		}
		np := node.NostrPeer{PublicKey: pk, AutoReconnect: p.AutoReconnect}
		if p.Alias != nil {
			np.Alias = *p.Alias
		}
		out = append(out, np)
	}
	return out
}

// rendezvousConfig is the rendezvous service's configuration from
// node.rendezvous.nostr.
func rendezvousConfig(ns *config.NostrConfig, id *identity.Identity, log *slog.Logger) rendezvous.Config {
	secs := func(v uint64) time.Duration { return time.Duration(v) * time.Second }
	msd := func(v uint64) time.Duration { return time.Duration(v) * time.Millisecond }
	return rendezvous.Config{
		Identity: id, Advertise: ns.Advertise, AdvertRelays: ns.AdvertRelays, DMRelays: ns.DMRelays,
		STUNServers: ns.StunServers, ShareLocalCandidates: ns.ShareLocalCandidates, App: ns.App,
		SignalTTL: secs(ns.SignalTTLSecs), ReplayWindow: secs(ns.ReplayWindowSecs), AttemptTimeout: secs(ns.AttemptTimeoutSecs),
		PunchStartDelay: msd(ns.PunchStartDelayMs), PunchInterval: msd(ns.PunchIntervalMs), PunchDuration: msd(ns.PunchDurationMs),
		AdvertTTL: secs(ns.AdvertTTLSecs), AdvertRefresh: secs(ns.AdvertRefreshSecs),
		MaxIncomingOffers: int(ns.MaxConcurrentIncomingOffers), MaxOffersPerNpub: int(ns.MaxConcurrentOffersPerNpub),
		AdvertCacheMax: int(ns.AdvertCacheMaxEntries), SeenSessionsMax: int(ns.SeenSessionsMaxEntries),
		Failure: rendezvous.FailurePolicy{StreakThreshold: ns.FailureStreakThreshold, CooldownMs: ns.ExtendedCooldownSecs * 1000,
			WarnIntervalMs: ns.WarnLogIntervalSecs * 1000, MaxEntries: int(ns.FailureStateMaxEntries),
			MismatchCooldownMs: ns.ProtocolMismatchCooldownSecs * 1000},
		Log: log,
	}
}

// rendezvousOptions builds Nostr discovery from node.rendezvous.nostr and
// logs, once, what the node will do with it.
func rendezvousOptions(cfg *config.Config, id *identity.Identity, ids map[string]transport.ID, log *slog.Logger) (node.RendezvousOptions, error) {
	ns := &cfg.Node.Rendezvous.Nostr
	peers := nostrPeers(cfg)
	if !ns.Enabled {
		return node.RendezvousOptions{}, nil
	}
	secs := func(v uint64) time.Duration { return time.Duration(v) * time.Second }
	rc := rendezvousConfig(ns, id, log)
	rc.Namespaces = nostrNamespaces(cfg)
	svc, err := rendezvous.New(rc)
	if err != nil {
		return node.RendezvousOptions{}, fmt.Errorf("node.rendezvous.nostr: %w", err)
	}
	var adv []node.AdvertisedTransport
	var advDesc []string
	for _, in := range cfg.Transports.UDP.List() {
		if !in.Config.Advertises() {
			continue
		}
		ext := ""
		if in.Config.ExternalAddr != nil {
			ext = *in.Config.ExternalAddr
		}
		adv = append(adv, node.AdvertisedTransport{Transport: ids["udp/"+in.Name], Kind: "udp", Public: in.Config.Public, ExternalAddr: ext})
		if in.Config.Public {
			advDesc = append(advDesc, "udp:"+orDefault(ext, "bound address, or the public IP STUN reports"))
		} else {
			advDesc = append(advDesc, "udp:nat")
		}
	}
	for _, in := range cfg.Transports.TCP.List() {
		if !in.Config.AdvertiseOnNostr {
			continue
		}
		ext := ""
		if in.Config.ExternalAddr != nil {
			ext = *in.Config.ExternalAddr
		}
		adv = append(adv, node.AdvertisedTransport{Transport: ids["tcp/"+in.Name], Kind: "tcp", Public: true, ExternalAddr: ext})
		advDesc = append(advDesc, "tcp:"+orDefault(ext, "bound address"))
	}
	for _, in := range cfg.Transports.Tor.List() {
		if !in.Config.AdvertiseOnNostr {
			continue
		}
		adv = append(adv, node.AdvertisedTransport{Transport: ids["tor/"+in.Name], Kind: "tor", Public: true})
		advDesc = append(advDesc, fmt.Sprintf("tor:<onion>:%d", in.Config.AdvertisedPort))
	}
	names := make([]string, 0, len(peers))
	for _, p := range peers {
		names = append(names, orDefault(p.Alias, p.PublicKey.Npub()))
	}
	what := "publish no advert (no transport has advertise_on_nostr)"
	if !ns.Advertise {
		what = "publish no advert (advertise: false)"
	} else if len(adv) > 0 {
		what = "advertise " + strings.Join(advDesc, ", ")
	}
	log.Info("Nostr rendezvous configured: the node will "+what+
		fmt.Sprintf(", reach %d peer(s) through their adverts", len(peers))+policyText(string(ns.Policy)),
		"policy", string(ns.Policy), "peers", strings.Join(names, ","), "advert_relays", strings.Join(ns.AdvertRelays, ","),
		"dm_relays", strings.Join(ns.DMRelays, ","), "stun_servers", strings.Join(ns.StunServers, ","))

	natUDP := adoptUDPConfig(cfg)
	return node.RendezvousOptions{Service: svc, Policy: string(ns.Policy), Peers: peers, Advertised: adv,
		OpenMaxPending: int(ns.OpenDiscoveryMaxPending), AdvertRefresh: secs(ns.AdvertRefreshSecs),
		Configured: configuredKeys(cfg), StartupSweepDelay: secs(ns.StartupSweepDelaySecs),
		StartupSweepMaxAge: secs(ns.StartupSweepMaxAgeSecs), AdvertTTL: secs(ns.AdvertTTLSecs),
		Adopt: func(tid transport.ID, conn *net.UDPConn) (transport.Transport, error) {
			return udp.Adopt(tid, rendezvous.TransportNameNAT, conn, natUDP, log)
		}}, nil
}

// configuredKeys are every configured peer's keys, whatever its connect
// policy (upstream's configured-npub set for open discovery).
func configuredKeys(cfg *config.Config) []identity.PublicKey {
	var out []identity.PublicKey
	for _, p := range cfg.Peers {
		if pk, err := identity.DecodeNpub(p.Npub); err == nil {
			out = append(out, pk)
		}
	}
	return out
}

func policyText(p string) string {
	switch p {
	case "disabled":
		return " — policy disabled: advert endpoints are never dialled"
	case "open":
		return ", and dial every valid advert it sees (policy open)"
	}
	return " (policy configured_only)"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// adoptUDPConfig is upstream's choice of settings for an adopted punch
// socket: the UDP instance named "nostr-nat", else the unnamed one, else
// defaults; bind and external address never apply.
func adoptUDPConfig(cfg *config.Config) udp.Options {
	o := udp.Defaults()
	var c *config.UDPConfig
	if nc := cfg.Transports.UDP.Named[rendezvous.TransportNameNAT]; nc != nil {
		c = nc
	} else if cfg.Transports.UDP.Single != nil {
		c = cfg.Transports.UDP.Single
	}
	if c != nil {
		o.MTU, o.RecvBufSize, o.SendBufSize, o.AcceptConnections = int(c.MTU), int(c.RecvBufSize), int(c.SendBufSize), c.AcceptConnections
	}
	return o
}

// nostrNamespaces are the discovery overlays for the node's wire format:
// master's (fips-overlay-v1) for v0, next's (fips-overlay-v1-next) for
// v1, both for auto, so each branch's nodes find the node under their own
// namespace. The app in the protocol tag is node.rendezvous.nostr.app;
// left at master's default, next's namespace takes next's default
// (its app is fips-overlay-v1-next).
func nostrNamespaces(cfg *config.Config) []rendezvous.Namespace {
	app := cfg.Node.Rendezvous.Nostr.App
	master := rendezvous.Namespace{Identifier: rendezvous.AdvertIdentifier, App: app}
	next := rendezvous.Namespace{Identifier: rendezvous.AdvertIdentifierNext, App: nextApp(app)}
	switch cfg.Node.WireFormat {
	case config.WireV1:
		return []rendezvous.Namespace{next}
	case config.WireAuto:
		return []rendezvous.Namespace{master, next}
	}
	return []rendezvous.Namespace{master}
}

// nextApp is the app a next namespace uses for the configured one.
func nextApp(app string) string {
	if app == "" || app == rendezvous.AdvertIdentifier {
		return rendezvous.AdvertIdentifierNext
	}
	return app
}

// lanOptions is node.rendezvous.lan, with upstream's scope rule:
// lan.scope when set, else the Nostr app without a "fips-overlay-v1:"
// prefix (so the default app gives the scope "fips-overlay-v1").
func lanOptions(cfg *config.Config, log *slog.Logger) node.LANOptions {
	l := &cfg.Node.Rendezvous.LAN
	if !l.Enabled {
		return node.LANOptions{}
	}
	scope := ""
	if l.Scope != nil {
		scope = strings.TrimSpace(*l.Scope)
	}
	if scope == "" {
		app := cfg.Node.Rendezvous.Nostr.App
		if cfg.Node.WireFormat == config.WireV1 {
			app = nextApp(app) // next's default app is its scope
		}
		scope = strings.TrimSpace(strings.TrimPrefix(app, rendezvous.AdvertIdentifier+":"))
	}
	log.Info("LAN rendezvous configured: the node will announce itself on mDNS and dial the FIPS nodes it finds there",
		"service_type", l.ServiceType, "scope", scope)
	return node.LANOptions{Enabled: true, ServiceType: l.ServiceType, Scope: scope, DialBurst: int(l.DialBurst), DialRate: l.DialRate}
}

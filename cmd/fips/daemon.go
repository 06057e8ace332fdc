package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/ctl"
	fipsdns "github.com/fips-go/fips/control/dns"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/metrics"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/native"
	"github.com/fips-go/fips/control/node"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/pq"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/tree"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane/ethernet"
	"github.com/fips-go/fips/dataplane/udp"
	"github.com/fips-go/fips/fallback/tcp"
	"github.com/fips-go/fips/fallback/tor"
)

func runDaemon(ctx context.Context, cfgPath string, stderr io.Writer) error {
	level := new(slog.LevelVar)
	log, lh := newLogger(stderr, level, os.Getenv)

	cfg, loaded, warns, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	configureLogger(log, lh, level, cfg, os.Getenv)
	for _, w := range warns {
		log.Warn(w.Message, "file", w.File, "line", w.Line, "key", w.Key)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	// Refuse, before anything starts, a control socket path held by
	// something that is not a socket: it is never removed.
	if cfg.Node.Control.Enabled {
		if err := ctl.CheckSocketPath(cfg.Node.Control.Path()); err != nil {
			return err
		}
	}
	// Refused before anything is logged: the one line names what is missing.
	if err := onlyUnimplemented(cfg); err != nil {
		return err
	}
	// Upstream's startup lines, once the checks that refuse with one
	// line on stderr have passed.
	log.Info(fmt.Sprintf("FIPS %s starting", Version))
	if len(loaded) == 0 {
		log.Info("No config files found, using defaults")
	}
	for _, p := range loaded {
		log.Info("Loaded config file", "path", p)
	}
	noConfig := len(loaded) == 0
	if noConfig {
		// Upstream refuses to start without transports; we start on a
		// default UDP transport with an ephemeral identity, and say so.
		log.Warn("no configuration file found: starting with an ephemeral identity on UDP 0.0.0.0:2121",
			"searched", config.SearchPaths())
		cfg.Transports.UDP.Single = &config.UDPConfig{BindAddr: config.DefaultUDPBindAddr, MTU: config.DefaultUDPMTU,
			RecvBufSize: config.DefaultSocketBufferSize, SendBufSize: config.DefaultSocketBufferSize, AcceptConnections: true}
	} else {
		// Settings upstream accepts that probably do not do what was
		// meant, and peers skipped for an unusable npub.
		for _, w := range cfg.Lint() {
			log.Warn(w.Message, "file", w.File, "line", w.Line, "key", w.Key)
		}
	}

	id, source, keyPath, err := resolveIdentity(cfg, loaded, noConfig, log)
	if err != nil {
		return err
	}
	logIdentitySource(log, source, keyPath)

	transports, ids, err := buildTransports(cfg, id.PublicKey(), log)
	if err != nil {
		return err
	}
	if len(transports) == 0 {
		return errors.New("no operational transports: configure transports.udp, transports.tcp or (on Linux) transports.ethernet")
	}
	warnUnbuilt(cfg, log)
	statics := staticPeers(cfg)
	rdv, err := rendezvousOptions(cfg, id, ids, log)
	if err != nil {
		return err
	}
	// Names resolve through the hosts file first, then peers' aliases: for
	// the ACL files and the .fips DNS responder alike.
	// hosts and the ACL files live in upstream's fixed directory, not next
	// to the configuration; only the key file does (resolveIdentity).
	etc := config.EtcDir()
	hosts := fipsdns.OpenHostsFile(filepath.Join(etc, "hosts"), log)
	aliased := append([]node.StaticPeer(nil), statics...)
	for _, np := range rdv.Peers {
		aliased = append(aliased, node.StaticPeer{PublicKey: np.PublicKey, Alias: np.Alias})
	}
	peerAliases := aliasResolver(aliased)
	names := func(name string) (identity.PublicKey, bool) {
		if pk, ok := hosts.Lookup(name); ok {
			return pk, true
		}
		return peerAliases(name)
	}
	acl := &peer.ACL{AllowFile: filepath.Join(etc, "peers.allow"), DenyFile: filepath.Join(etc, "peers.deny"),
		Aliases: names}
	acl.Reload(log)

	ecnLoss, ecnETX := cfg.Node.ECN.LossThreshold, cfg.Node.ECN.ETXThreshold
	if !cfg.Node.ECN.Enabled {
		ecnLoss, ecnETX = math.Inf(1), math.Inf(1) // never congested
	}
	controlPath := ""
	if cfg.Node.Control.Enabled {
		controlPath = cfg.Node.Control.Path()
	}
	n, err := node.New(node.Options{
		Identity: id, IdentitySource: source, Persistent: source != identity.SourceEphemeral,
		Peer: peerConfig(cfg), Transports: transports, StaticPeers: statics, ACL: acl,
		TickInterval: time.Duration(cfg.Node.TickIntervalSecs) * time.Second,
		QueueSize:    int(cfg.Node.Buffers.PacketChannel), DrainTimeout: cfg.Node.DrainTimeout(),
		Version: Version, ControlSocket: controlPath, LeafOnly: cfg.Node.LeafOnly, Log: log,
		ECNLoss: ecnLoss, ECNETX: ecnETX,
		Tree: tree.Config(cfg.Node.Tree), Bloom: bloom.Config{UpdateDebounce: ms(cfg.Node.Bloom.UpdateDebounceMs),
			MaxInboundFPR: cfg.Node.Bloom.MaxInboundFPR, SendOnChange: cfg.Node.Routing.FilterSchedule == config.FilterScheduleChange,
			PassOnFull: cfg.Node.Routing.FullFilterLookups != config.FullFilterLookupsUpstream},
		Route: routeConfig(cfg), Session: sessionConfig(cfg), SessionMMP: mmpConfig(cfg.Node.SessionMMP),
		IdentityCacheSize: int(cfg.Node.Cache.IdentitySize),
		TUN:               node.TUNOptions{Enabled: cfg.TUN.Enabled, Name: cfg.TUN.Name, MTU: int(cfg.TUN.MTU)},
		NativeAPI:         nativeAPIOptions(cfg.Node.NativeAPI),
		HostName:          hosts.NameOf,
		StatsHistoryPeers: int(cfg.Metrics.HistoryMaxPeers),
		Dataplane: node.DataplaneOptions{Mode: cfg.Dataplane.Mode, Interfaces: cfg.Dataplane.XDPInterfaces, NoEngine: !cfg.Dataplane.EngineEnabled(),
			NoECN: !cfg.Dataplane.ECNEnabled(), AFXDP: cfg.Dataplane.AFXDP,
			XSKTransmit:    cfg.Dataplane.AFXDPTransmit == config.AFXDPTransmitXSK,
			AFXDPBusyPoll:  time.Duration(cfg.Dataplane.AFXDPBusyPollUS) * time.Microsecond,
			AcceptNext:     speaksNext(cfg),
			XDPAttach:      cfg.Dataplane.XDPAttach,
			HandshakeBurst: cfg.Node.RateLimit.HandshakeBurst, HandshakeRate: cfg.Node.RateLimit.HandshakeRate},
		Rendezvous: rdv,
		LAN:        lanOptions(cfg, log),
	})
	if err != nil {
		return err
	}
	// Upstream's "Node created:" block.
	log.Info("Node created:")
	log.Info("      npub: " + id.Npub())
	log.Info("   node_addr: " + id.NodeAddr().String())
	log.Info("   address: " + id.IPv6().String())
	log.Info("     state: " + string(n.State()))
	log.Info(fmt.Sprintf(" leaf_only: %t", cfg.Node.LeafOnly))

	var srv *ctl.Server
	if controlPath != "" {
		reg := ctl.NewRegistry()
		n.Register(reg)
		srv, err = ctl.Listen(ctl.Config{Path: controlPath, Logger: log}, reg)
		if errors.Is(err, ctl.ErrNotSocket) {
			return err // replaced since the check above; still never removed
		}
		if err != nil {
			// The mesh still works without the socket; upstream treats it the
			// same way, with this line (path is ours).
			logging.WithTarget(log, "fips::node::dataplane::rx_loop").Warn("Failed to bind control socket", "error", err, "path", controlPath)
			srv = nil
		}
	}
	var dnsSrv *fipsdns.Server
	if cfg.DNS.Enabled {
		res := &fipsdns.Resolver{Hosts: hosts, Alias: peerAliases, Prime: n.LearnIdentity, TTL: cfg.DNS.TTL}
		addr := net.JoinHostPort(cfg.DNS.BindAddr, strconv.Itoa(int(cfg.DNS.Port)))
		dnsSrv, err = fipsdns.Listen(ctx, addr, res, log)
		// Upstream's lines (its node lifecycle starts the responder).
		// mesh_ifindex is not given: here the responder starts before the
		// adapter and learns its index once it is up (the reload tick).
		lc := logging.WithTarget(log, "fips::node::lifecycle")
		if err != nil {
			// Names stop resolving; the mesh itself is unaffected.
			lc.Warn("Failed to start DNS responder", "bind", addr, "error", err)
			dnsSrv = nil
		} else {
			lc.Info("DNS responder started for .fips domain (auto-reload enabled)", "bind", dnsSrv.Addr().String(),
				"hosts", hostCount(hosts.Hosts(), aliased))
			defer dnsSrv.Close()
		}
	}
	// The hosts file reloads when it changes, as upstream's tick does. The
	// same tick hands fips0's index to the DNS responder once the adapter
	// is up: queries arriving over the mesh are dropped, as upstream does.
	rctx, stopReload := context.WithCancel(ctx)
	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		tunIgnored := false
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				hosts.Reload()
				if dnsSrv != nil && !tunIgnored {
					if idx := n.TUNIndex(); idx != 0 {
						dnsSrv.IgnoreIfIndex(idx)
						tunIgnored = true
					}
				}
			}
		}
	}()
	defer func() {
		stopReload()
		<-reloadDone
	}()

	// The Prometheus endpoint (metrics.listen) reads the published
	// snapshot; like DNS, a bind failure leaves the mesh running.
	var msrv *metrics.Server
	if cfg.Metrics.Listen != "" {
		var stopMetrics func()
		msrv, stopMetrics = startMetrics(ctx, cfg, n, log)
		defer stopMetrics()
	}
	// show_status' local_limits: what the control socket and the metrics
	// endpoint refused at their bounds.
	n.SetLocalLimits(func(l *ctl.LocalLimits) {
		if srv != nil {
			l.ControlConnectionsRefused, l.ControlConnectionsEvicted, l.ControlRequestsBusy = srv.Refused(), srv.Evicted(), srv.Busy()
		}
		if msrv != nil {
			l.MetricsConnectionsRefused = msrv.Refused()
		}
	})

	srvDone := make(chan error, 1)
	srvCtx, stopSrv := context.WithCancel(context.Background())
	if srv != nil {
		go func() { srvDone <- srv.Serve(srvCtx) }()
	} else {
		srvDone <- nil
	}
	runErr := n.Run(ctx)
	stopSrv()
	if err := <-srvDone; err != nil && !errors.Is(err, ctl.ErrServerClosed) && !errors.Is(err, context.Canceled) {
		log.Warn("control socket", "error", err)
	}
	if runErr == nil {
		log.Info("FIPS shutdown complete")
	}
	return runErr
}

// startMetrics serves /metrics on metrics.listen until the returned stop
// is called (or ctx ends); stop waits for the server to shut down. The
// server is nil when the endpoint could not start.
func startMetrics(ctx context.Context, cfg *config.Config, n *node.Node, log *slog.Logger) (*metrics.Server, func()) {
	reg, _, err := metrics.NewRegistry(n, metrics.Options{MaxPeerLabels: int(cfg.Metrics.MaxPeerLabels),
		Info: metrics.Info{Version: Version, Npub: n.Identity().Npub(), NodeAddr: n.Identity().NodeAddr().String()}})
	if err != nil {
		log.Error("metrics endpoint unavailable", "error", err)
		return nil, func() {}
	}
	srv, err := metrics.Listen(cfg.Metrics.Listen, metrics.Handler(reg, log), log)
	if err != nil {
		log.Error("metrics endpoint unavailable", "addr", cfg.Metrics.Listen, "error", err)
		return nil, func() {}
	}
	log.Info("metrics endpoint listening", "addr", srv.Addr().String(), "path", "/metrics")
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(mctx); err != nil {
			log.Warn("metrics endpoint", "error", err)
		}
	}()
	return srv, func() {
		cancel()
		<-done
	}
}

func loadConfig(path string) (*config.Config, []string, []config.Warning, error) {
	if path != "" {
		cfg, warns, err := config.Load(path)
		if err != nil {
			return nil, nil, warns, err
		}
		return cfg, []string{path}, warns, nil
	}
	return config.LoadSearchPaths()
}

// resolveIdentity applies node.identity; the key file read or written is
// returned for the log line. Upstream logs resolution's warnings under
// fips::config (its config module resolves the identity).
func resolveIdentity(cfg *config.Config, loaded []string, noConfig bool, log *slog.Logger) (*identity.Identity, identity.Source, string, error) {
	if noConfig {
		id, err := identity.Generate(nil)
		return id, identity.SourceEphemeral, "", err
	}
	r, err := identity.Resolve(identity.ResolveOptions{
		Nsec: cfg.Node.Identity.NsecValue(), Persistent: cfg.Node.Identity.Persistent,
		KeyDir: config.KeyDir(loaded), LegacyKeyDir: config.LegacySystemConfigDir(),
		Log: logging.WithTarget(log, "fips::config"),
	})
	if err != nil {
		return nil, "", "", err
	}
	return r.Identity, r.Source, r.KeyPath, nil
}

// logIdentitySource is upstream's line saying where the identity came
// from; the npub and addresses follow in the "Node created:" block.
func logIdentitySource(log *slog.Logger, source identity.Source, keyPath string) {
	switch source {
	case identity.SourceConfig:
		log.Info("Using identity from configuration")
	case identity.SourceKeyFile:
		log.Info("Loaded persistent identity from key file", "path", keyPath)
	case identity.SourceGenerated:
		log.Info("Generated persistent identity, saved to key file", "path", keyPath)
	default:
		log.Info("Using ephemeral identity (new keypair each start)")
	}
}

func peerConfig(cfg *config.Config) peer.Config {
	c := peer.DefaultConfig()
	n := cfg.Node
	c.HeartbeatInterval = secs(n.HeartbeatIntervalSecs)
	c.LinkDeadTimeout = secs(n.LinkDeadTimeoutSecs)
	rl := n.RateLimit
	c.HandshakeTimeout = secs(rl.HandshakeTimeoutSecs)
	c.HandshakeResendInterval = time.Duration(rl.HandshakeResendIntervalMs) * time.Millisecond
	c.HandshakeResendBackoff = rl.HandshakeResendBackoff
	c.HandshakeMaxResends = int(rl.HandshakeMaxResends)
	c.HandshakeBurst, c.HandshakeRate = float64(rl.HandshakeBurst), rl.HandshakeRate
	eb, er := cfg.EstablishedHandshakeBucket()
	c.EstablishedBurst, c.EstablishedRate = float64(eb), er
	c.MaxConnections = int(n.Limits.MaxConnections)
	c.MaxPeers = int(n.Limits.MaxPeers)
	if n.LeafOnly && n.WireFormat == config.WireV1 {
		c.MaxPeers = 1 // next's Leaf holds one peer
	}
	c.MaxPendingInbound = int(n.Limits.MaxPendingInbound)
	c.RetryBase, c.RetryMax = secs(n.Retry.BaseIntervalSecs), secs(n.Retry.MaxBackoffSecs)
	c.RetryMaxRetries = int(n.Retry.MaxRetries)
	c.RekeyEnabled = n.Rekey.Enabled
	c.RekeyAfter = secs(n.Rekey.AfterSecs)
	c.RekeyAfterMessages = n.Rekey.AfterMessages
	c.MMP = mmpConfig(n.MMP)
	c.WireFormat, _ = peer.ParseWireFormat(n.WireFormat) // validated
	c.Profile = nodeProfile(n)
	// Validate accepted the spellings, so a parse error cannot happen here.
	c.PQ, _ = pq.ParseMode(n.Link.PQ)
	c.PQTimeout = ms(n.Link.PQTimeoutMs)
	if peers := pqPeerModes(cfg, func(p config.PeerConfig) string { return p.LinkPQ }); peers != nil {
		lp := peer.PQPeerModes(peers)
		c.PQPeers = &lp
	}
	return c
}

// pqPeerModes are the peers' own post-quantum policies (which, say of
// peers[].pq and peers[].link_pq); nil when no peer sets one.
func pqPeerModes(cfg *config.Config, which func(config.PeerConfig) string) map[identity.NodeAddr]pq.Mode {
	var out map[identity.NodeAddr]pq.Mode
	for _, p := range cfg.Peers {
		pk, err := identity.DecodeNpub(p.Npub)
		if err != nil || which(p) == "" {
			continue
		}
		if out == nil {
			out = map[identity.NodeAddr]pq.Mode{}
		}
		out[pk.NodeAddr()], _ = pq.ParseMode(which(p))
	}
	return out
}

// nodeProfile is the profile v1 links declare (node.leaf_only → Leaf,
// node.disable_routing → NonRouting, else Full).
func nodeProfile(n config.NodeConfig) wire.NodeProfile {
	switch n.Profile() {
	case "leaf":
		return wire.ProfileLeaf
	case "non-routing":
		return wire.ProfileNonRouting
	}
	return wire.ProfileFull
}

func ms(v uint64) time.Duration   { return time.Duration(v) * time.Millisecond }
func secs(v uint64) time.Duration { return time.Duration(v) * time.Second }

func mmpConfig(m config.MMPConfig) mmp.Config {
	c := mmp.DefaultConfig()
	if mode, err := mmp.ParseMode(string(m.Mode)); err == nil {
		c.Mode = mode
	}
	c.LogInterval = secs(m.LogIntervalSecs)
	c.OWDWindowSize = int(m.OWDWindowSize)
	return c
}

func routeConfig(cfg *config.Config) route.Config {
	c := route.DefaultConfig()
	n := cfg.Node
	c.CoordCacheSize, c.CoordCacheTTL = int(n.Cache.CoordSize), secs(n.Cache.CoordTTLSecs)
	c.NextHop = route.NextHopDistance
	if n.Routing.NextHop == config.NextHopUpstream {
		c.NextHop = route.NextHopUpstream
	}
	c.FullFilterLookups = n.Routing.FullFilterLookups != config.FullFilterLookupsUpstream
	c.SessionTTL = n.Session.DefaultTTL
	c.LookupTTL = n.Lookup.TTL
	c.LookupAttemptTimeouts = nil
	for _, s := range n.Lookup.AttemptTimeoutsSecs {
		c.LookupAttemptTimeouts = append(c.LookupAttemptTimeouts, secs(s))
	}
	c.LookupRecentExpiry = secs(n.Lookup.RecentExpirySecs)
	c.LookupForwardInterval = secs(n.Lookup.ForwardMinIntervalSecs)
	c.LookupBackoffBase, c.LookupBackoffMax = secs(n.Lookup.BackoffBaseSecs), secs(n.Lookup.BackoffMaxSecs)
	if n.WireFormat == config.WireV1 {
		// upstream next's own behaviour (docs/next.md §8, §9): lookups ask
		// for the TUN MTU, and a Leaf transits none (nor joins the tree).
		c.LookupMinMTU = cfg.TUN.MTU
		c.Leaf = n.LeafOnly
	}
	return c
}

func sessionConfig(cfg *config.Config) session.Config {
	c := session.DefaultConfig()
	n := cfg.Node
	c.IdleTimeout = secs(n.Session.IdleTimeoutSecs)
	c.CoordsWarmupPackets = n.Session.CoordsWarmupPackets
	c.CoordsResponseInterval = ms(n.Session.CoordsResponseIntervalMs)
	c.PendingPerDest, c.PendingMaxDests = int(n.Session.PendingPacketsPerDest), int(n.Session.PendingMaxDestinations)
	c.MaxSessions = int(n.Session.MaxSessions)
	c.SetupBurst, c.SetupRate = int(n.RateLimit.SessionSetupBurst), n.RateLimit.SessionSetupRate
	eb, er := cfg.EstablishedSessionSetupBucket()
	c.EstablishedSetupBurst, c.EstablishedSetupRate = int(eb), er
	c.HandshakeResendInterval = ms(n.RateLimit.HandshakeResendIntervalMs)
	c.HandshakeResendBackoff = n.RateLimit.HandshakeResendBackoff
	c.HandshakeMaxResends = int(n.RateLimit.HandshakeMaxResends)
	c.HandshakeTimeout = secs(n.RateLimit.HandshakeTimeoutSecs)
	c.RekeyEnabled, c.RekeyAfter, c.RekeyMessages = n.Rekey.Enabled, secs(n.Rekey.AfterSecs), n.Rekey.AfterMessages
	// Validate accepted the spellings, so a parse error cannot happen here.
	c.PQ, _ = session.ParsePQMode(n.Session.PQ)
	c.PQTimeout = ms(n.Session.PQTimeoutMs)
	if peers := pqPeerModes(cfg, func(p config.PeerConfig) string { return p.PQ }); peers != nil {
		sp := session.PQPeerModes(peers)
		c.PQPeers = &sp
	}
	// A node that speaks upstream next's links runs sessions of both
	// patterns (XK with master nodes, XX with next ones, decided per
	// session: docs/next.md §15.4); one that speaks master's only keeps
	// XK, byte for byte as before.
	if speaksNext(cfg) {
		c.Patterns = &session.Patterns{Default: session.PatternAuto}
	}
	return c
}

// speaksNext reports whether the node takes links in upstream next's
// format: node.wire_format or some peer's is v1 or auto. Such a node's
// XDP program, TCP/Tor streams and Ethernet transports also take next's
// packets (each judged by its own version), and its sessions run both
// patterns.
func speaksNext(cfg *config.Config) bool {
	if f := cfg.Node.WireFormat; f == config.WireV1 || f == config.WireAuto {
		return true
	}
	for _, p := range cfg.Peers {
		if p.WireFormat == config.WireV1 || p.WireFormat == config.WireAuto {
			return true
		}
	}
	return false
}

// buildTransports makes the configured transports; ids maps
// "udp/<name>", "tcp/<name>" and "ethernet/<name>" ("" for the unnamed
// instance) to their ids. key is what Ethernet beacons announce.
func buildTransports(cfg *config.Config, key identity.PublicKey, log *slog.Logger) ([]transport.Transport, map[string]transport.ID, error) {
	var out []transport.Transport
	ids := map[string]transport.ID{}
	next := transport.ID(1)
	for _, inst := range cfg.Transports.UDP.List() {
		c := inst.Config
		t, err := udp.New(next, inst.Name, udp.Options{
			BindAddr: c.BindAddr, MTU: int(c.MTU), RecvBufSize: int(c.RecvBufSize), SendBufSize: int(c.SendBufSize),
			OutboundOnly: c.OutboundOnly, AcceptConnections: c.AcceptConnections,
			Workers: cfg.Dataplane.WorkerCount(runtime.NumCPU()),
		}, log)
		if err != nil {
			return nil, nil, fmt.Errorf("transports.udp%s: %w", instSuffix(inst.Name), err)
		}
		out = append(out, t)
		ids["udp/"+inst.Name] = next
		next++
	}
	for _, inst := range cfg.Transports.TCP.List() {
		c := inst.Config
		bind := ""
		if c.BindAddr != nil {
			bind = *c.BindAddr
		}
		t, err := tcp.New(next, inst.Name, tcp.Options{
			BindAddr: bind, MTU: int(c.MTU), ConnectTimeout: time.Duration(c.ConnectTimeoutMs) * time.Millisecond,
			NoDelay: c.NoDelay, KeepaliveSecs: int(c.KeepaliveSecs), RecvBufSize: int(c.RecvBufSize),
			SendBufSize: int(c.SendBufSize), MaxInboundConnections: int(c.EffectiveMaxInbound(cfg.Node.Limits.MaxConnections)),
			Next: speaksNext(cfg),
		}, log)
		if err != nil {
			return nil, nil, fmt.Errorf("transports.tcp%s: %w", instSuffix(inst.Name), err)
		}
		out = append(out, t)
		ids["tcp/"+inst.Name] = next
		next++
	}
	for _, inst := range cfg.Transports.Tor.List() {
		o := torOptions(*inst.Config)
		o.Next = speaksNext(cfg)
		t, err := tor.New(next, inst.Name, o, log)
		if err != nil {
			return nil, nil, fmt.Errorf("transports.tor%s: %w", instSuffix(inst.Name), err)
		}
		out = append(out, t)
		ids["tor/"+inst.Name] = next
		next++
	}
	for _, inst := range cfg.Transports.Ethernet.List() {
		if !ethernet.Supported {
			break // unimplementedTransports names them
		}
		o := ethernetOptions(*inst.Config, key)
		o.Next = speaksNext(cfg)
		o.Beacons = beaconFormats(cfg.Node.WireFormat)
		t, err := ethernet.New(next, inst.Name, o, log)
		if err != nil {
			return nil, nil, fmt.Errorf("transports.ethernet%s: %w", instSuffix(inst.Name), err)
		}
		out = append(out, t)
		ids["ethernet/"+inst.Name] = next
		next++
	}
	for _, u := range unimplementedTransports(cfg) {
		log.Warn("transport type not supported by this build yet; skipping", "type", u.typ, "instances", u.n)
	}
	return out, ids, nil
}

// beaconFormats is which Ethernet beacons a node of wire format f
// announces: master's keyed ones for v0 (byte for byte as before),
// next's keyless ones for v1, both for auto, so neighbours of either line
// find it. A peer's override does not change them: a neighbour found by
// its beacon is an unconfigured peer, which the node's own format rules.
func beaconFormats(f string) ethernet.BeaconFormats {
	switch f {
	case config.WireV1:
		return ethernet.BeaconsNext
	case config.WireAuto:
		return ethernet.BeaconsBoth
	}
	return ethernet.BeaconsMaster
}

// torOptions maps transports.tor.* (already range-checked) onto the
// transport's options.
func torOptions(c config.TorConfig) tor.Options {
	d := c.Directory()
	return tor.Options{Mode: c.Mode, Socks5Addr: c.Socks5Addr, ConnectTimeout: ms(c.ConnectTimeoutMs), MTU: int(c.MTU),
		ControlAddr: c.ControlAddr, ControlAuth: c.ControlAuth, CookiePath: c.CookiePath,
		MaxInboundConnections: int(min(c.MaxInboundConnections, math.MaxInt32)),
		HostnameFile:          d.HostnameFile, BindAddr: d.BindAddr, DirectoryService: c.DirectoryService != nil,
		AdvertisedPort: c.AdvertisedPort}
}

// ethernetOptions maps transports.ethernet.* (already range-checked)
// onto the transport's options.
func ethernetOptions(c config.EthernetConfig, key identity.PublicKey) ethernet.Options {
	o := ethernet.Options{Interface: c.Interface, EtherType: c.Ethertype,
		RecvBufSize: int(min(c.RecvBufSize, math.MaxInt32)), SendBufSize: int(min(c.SendBufSize, math.MaxInt32)),
		Listen: c.Listen, Announce: c.Announce, AutoConnect: c.AutoConnect, AcceptConnections: c.AcceptConnections,
		BeaconInterval: time.Duration(c.EffectiveBeaconIntervalSecs()) * time.Second, Key: &key}
	if c.MTU != nil {
		o.MTU = int(*c.MTU)
	}
	return o
}

type unimplemented struct {
	typ string
	n   int
}

// unimplementedTransports are the configured transport types fips-go
// does not run yet, in a fixed order.
func unimplementedTransports(cfg *config.Config) []unimplemented {
	var out []unimplemented
	eth := 0
	if !ethernet.Supported {
		eth = cfg.Transports.Ethernet.Len()
	}
	for _, u := range []unimplemented{{"ethernet", eth},
		{"nym", cfg.Transports.Nym.Len()}, {"ble", cfg.Transports.BLE.Len()}} {
		if u.n > 0 {
			out = append(out, u)
		}
	}
	return out
}

// onlyUnimplemented is the one-line refusal for a configuration whose
// every transport is of a type fips-go does not run yet; nil otherwise.
func onlyUnimplemented(cfg *config.Config) error {
	if cfg.Transports.UDP.Len() > 0 || cfg.Transports.TCP.Len() > 0 || cfg.Transports.Tor.Len() > 0 || (ethernet.Supported && cfg.Transports.Ethernet.Len() > 0) {
		return nil
	}
	us := unimplementedTransports(cfg)
	if len(us) == 0 {
		return nil
	}
	names := make([]string, len(us))
	for i, u := range us {
		names[i] = "transports." + u.typ
	}
	verb := "is"
	if len(names) > 1 {
		verb = "are"
	}
	return fmt.Errorf("no operational transports: %s %s not implemented in fips-go yet (udp, tcp and tor are, and ethernet on Linux)",
		strings.Join(names, ", "), verb)
}

func instSuffix(name string) string {
	if name == "" {
		return ""
	}
	return "." + name
}

func staticPeers(cfg *config.Config) []node.StaticPeer {
	var out []node.StaticPeer
	for _, p := range cfg.Peers {
		if !p.IsAutoConnect() {
			continue
		}
		pk, err := identity.DecodeNpub(p.Npub)
		if err != nil {
			// Skipped, as upstream does; Lint has said so with the
			// file and line.
			continue
		}
		sp := node.StaticPeer{PublicKey: pk, AutoReconnect: p.AutoReconnect}
		sp.WireFormat, _ = peer.ParseWireFormat(p.WireFormat) // validated
		if p.Alias != nil {
			sp.Alias = *p.Alias
		}
		for _, a := range p.Addresses {
			if isNATAddress(a) {
				continue // reached through Nostr traversal (nostrPeers)
			}
			sp.Addresses = append(sp.Addresses, node.PeerAddress{Transport: a.Transport, Addr: a.Addr, Priority: int(a.Priority)})
		}
		if len(sp.Addresses) == 0 && (p.ViaNostr || len(p.Addresses) > 0) {
			continue // only an advert can say where it is
		}
		out = append(out, sp)
	}
	return out
}

// hostCount is how many names resolve: the hosts file's and the peers'
// aliases it does not override (upstream's merged host map).
func hostCount(h fipsdns.Hosts, statics []node.StaticPeer) int {
	names := map[string]struct{}{}
	for _, s := range statics {
		if _, inFile := h.Lookup(s.Alias); s.Alias != "" && !inFile {
			names[strings.ToLower(s.Alias)] = struct{}{}
		}
	}
	return h.Len() + len(names)
}

func aliasResolver(statics []node.StaticPeer) func(string) (identity.PublicKey, bool) {
	m := map[string]identity.PublicKey{}
	for _, s := range statics {
		if s.Alias != "" {
			m[s.Alias] = s.PublicKey
		}
	}
	return func(name string) (identity.PublicKey, bool) {
		pk, ok := m[name]
		return pk, ok
	}
}

// nativeAPIOptions is node.native_api for the node.
func nativeAPIOptions(c config.NativeAPIConfig) node.NativeAPIOptions {
	return node.NativeAPIOptions{Enabled: c.Enabled, Path: c.Path(), Debug: c.DebugCommands,
		Limits: native.Limits{PerFlow: int(c.PendingPerFlow), Backlog: int(c.Backlog), MaxFlows: int(c.MaxFlows),
			PerClient: int(c.MaxFlowsPerClient)}}
}

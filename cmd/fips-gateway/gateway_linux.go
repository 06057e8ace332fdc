package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/gateway"
	"github.com/fips-go/fips/control/logging"
)

// Upstream's timings.
const (
	probeAttempts   = 5
	probeTimeout    = time.Second
	probeRetryDelay = time.Second
	tickInterval    = 10 * time.Second
	eventQueue      = 64
)

// errExit is returned once the reason has been logged.
var errExit = errors.New("fips-gateway failed")

func fail(log *slog.Logger, msg string, args ...any) error {
	log.Error(msg, args...)
	return errExit
}

func loadConfig(path string, log *slog.Logger) (*config.Config, error) {
	if path != "" {
		cfg, warns, err := config.Load(path)
		if err != nil {
			return nil, fail(log, fmt.Sprintf("Failed to load config from %s: %v", path, err))
		}
		logWarnings(log, warns)
		log.Info("Loaded config file", "path", path)
		return cfg, nil
	}
	cfg, loaded, warns, err := config.LoadSearchPaths()
	if err != nil {
		return nil, fail(log, fmt.Sprintf("Failed to load config: %v", err))
	}
	logWarnings(log, warns)
	if len(loaded) == 0 {
		log.Warn("No config files found, using defaults")
	}
	for _, p := range loaded {
		log.Info("Loaded config file", "path", p)
	}
	return cfg, nil
}

func logWarnings(log *slog.Logger, warns []config.Warning) {
	for _, w := range warns {
		log.Warn(w.Message, "file", w.File, "line", w.Line, "key", w.Key)
	}
}

// runGateway is upstream's main: prerequisites, then the pool, NAT, pool
// route, DNS listener, control socket and the 10 s pool tick, until a
// signal; then everything it installed is removed.
func runGateway(ctx context.Context, o options, log *slog.Logger, sigs <-chan os.Signal) error {
	log.Info(fmt.Sprintf("fips-gateway %s starting", Version))
	cfg, err := loadConfig(o.config, log)
	if err != nil {
		return err
	}
	gw := cfg.Gateway
	switch {
	case gw == nil:
		return fail(log, "No gateway section in configuration")
	case !gw.Enabled:
		return fail(log, "Gateway section exists but is not enabled (gateway.enabled = false)")
	}
	if err := gw.Validate(); err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			return fail(log, "Invalid gateway.port_forwards: "+ce.Reason)
		}
		return fail(log, fmt.Sprintf("Invalid gateway.port_forwards: %v", err))
	}
	forwards, err := gateway.ForwardsFromConfig(gw.PortForwards)
	if err != nil {
		return fail(log, fmt.Sprintf("Invalid gateway.port_forwards: %v", err))
	}
	log.Info("Gateway config loaded", "pool", gw.Pool, "lan_interface", gw.LANInterface, "port_forwards", len(gw.PortForwards))

	// Prerequisites.
	if err := gateway.CheckIPv6Forwarding(); err != nil {
		if errors.Is(err, gateway.ErrForwardingDisabled) {
			return fail(log, "IPv6 forwarding is disabled. Enable with: sysctl -w net.ipv6.conf.all.forwarding=1")
		}
		return fail(log, "Could not check IPv6 forwarding state", "error", err)
	}
	if _, err := gateway.InterfaceIndex("fips0"); err != nil {
		return fail(log, "fips0 interface not found — is the FIPS daemon running?", "error", err)
	}
	if _, err := gateway.InterfaceIndex(gw.LANInterface); err != nil {
		return fail(log, "LAN interface not found", "error", err, "interface", gw.LANInterface)
	}
	if err := probeUpstream(ctx, gw.DNS.Upstream, log, sigs); err != nil {
		return err
	}

	// Components.
	pool, err := gateway.NewPool(gateway.PoolOptions{CIDR: gw.Pool, TTLSecs: uint64(gw.DNS.TTL), MaxPerClient: int(gw.DNS.MaxMappingsPerClient),
		GraceSecs: gw.PoolGracePeriod, Log: log})
	if err != nil {
		return fail(log, "Failed to create virtual IP pool", "error", err)
	}
	nat, err := gateway.NewNAT(gw.LANInterface, log)
	if err != nil {
		return fail(log, "Failed to create nftables table — do you have CAP_NET_ADMIN?", "error", err)
	}
	if err := nat.SetPortForwards(forwards); err != nil {
		_ = nat.Cleanup()
		return fail(log, "Failed to install port-forward rules", "error", err)
	}
	netSetup := gateway.NewNetSetup(gw.LANInterface, gw.Pool, log)
	if err := netSetup.AddPoolRoute(); err != nil {
		_ = nat.Cleanup()
		return fail(log, "Failed to add pool route", "error", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	events := make(chan applyEvent, eventQueue)
	var poolMu sync.Mutex
	var natCount atomic.Int64
	start := time.Now()

	// DNS listener. Its answer waits until the new mapping's rules are in,
	// so a client that connects at once does not reach the pool's local
	// route before the DNAT (ours: upstream answers first).
	res := &gateway.Resolver{TTL: gw.DNS.TTL, Log: logging.WithTarget(log, "fips::gateway::dns")}
	res.Alloc = func(client netip.Addr, node gateway.NodeAddr, mesh netip.Addr, name string) (netip.Addr, bool, error) {
		poolMu.Lock()
		vip, isNew, removed, err := pool.AllocateFor(client, node, mesh, name)
		poolMu.Unlock()
		// Mappings evicted for room lose their rules before the new one's
		// go in (the event queue is ordered).
		for _, ev := range removed {
			select {
			case events <- applyEvent{ev: ev}:
			case <-ctx.Done():
			}
		}
		return vip, isNew, err
	}
	res.Created = func(ctx context.Context, ev gateway.Event) {
		done := make(chan struct{})
		select {
		case events <- applyEvent{ev, done}:
		case <-ctx.Done():
			log.Warn("Failed to send pool event", "error", ctx.Err())
			return
		}
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		up, err := netip.ParseAddrPort(gw.DNS.Upstream)
		if err == nil {
			res.Upstream = up
			err = res.ListenAndServe(ctx, gw.DNS.Listen)
		}
		if err != nil {
			log.Error("DNS resolver error", "error", err)
		}
	}()

	snapshot := func() gateway.Snapshot {
		poolMu.Lock()
		defer poolMu.Unlock()
		return gateway.Snapshot{Pool: pool.Status(), Mappings: pool.Mappings(time.Now()),
			NATMappings: int(natCount.Load()), DNSDropped: res.Dropped(), Uptime: time.Since(start),
			Config: gateway.SnapshotConfig{PoolCIDR: gw.Pool, LANInterface: gw.LANInterface,
				DNSUpstream: gw.DNS.Upstream, DNSListen: gw.DNS.Listen, DNSTTL: gw.DNS.TTL,
				PoolGracePeriod: gw.PoolGracePeriod}}
	}
	sockPath := o.socket
	if sockPath == "" {
		sockPath = gateway.SocketPath
	}
	reg := ctl.NewRegistry()
	gateway.Register(reg, snapshot)
	srv, err := ctl.Listen(ctl.Config{Path: sockPath, Logger: slog.New(renameHandler{log.Handler()})}, reg)
	if err != nil {
		log.Warn("Failed to bind gateway control socket — continuing without it", "error", err)
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ctx); err != nil && !errors.Is(err, ctl.ErrServerClosed) && ctx.Err() == nil {
				log.Warn("Gateway control socket accept failed", "error", err)
			}
		}()
	}

	// Pool tick.
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tickInterval)
		defer t.Stop()
		for {
			poolMu.Lock()
			evs := pool.Tick(time.Now(), gateway.ProcConntrack{})
			poolMu.Unlock()
			for _, ev := range evs {
				select {
				case events <- applyEvent{ev: ev}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()

	log.Info("fips-gateway running")
loop:
	for {
		select {
		case ae := <-events:
			apply(ae.ev, nat, netSetup, log)
			natCount.Store(int64(nat.MappingCount()))
			if ae.done != nil {
				close(ae.done)
			}
		case s := <-sigs:
			if s == syscall.SIGTERM {
				log.Info("Received SIGTERM, shutting down")
			} else {
				log.Info("Received SIGINT, shutting down")
			}
			break loop
		}
	}

	log.Info("fips-gateway shutting down")
	cancel()
	wg.Wait()
	if srv != nil {
		_ = srv.Close()
	}
	poolMu.Lock()
	st := pool.Status()
	poolMu.Unlock()
	log.Info("Final pool status", "total", st.Total, "allocated", st.Allocated, "active", st.Active,
		"draining", st.Draining, "free", st.Free)
	netSetup.Cleanup()
	if err := nat.Cleanup(); err != nil {
		log.Warn("Failed to clean up nftables table", "error", err)
	}
	log.Info("fips-gateway shutdown complete")
	return nil
}

type applyEvent struct {
	ev   gateway.Event
	done chan struct{}
}

func apply(ev gateway.Event, nat *gateway.NAT, ns *gateway.NetSetup, log *slog.Logger) {
	switch ev.Kind {
	case gateway.MappingCreated:
		if err := nat.AddMapping(ev.VirtualIP, ev.MeshAddr); err != nil {
			log.Error("Failed to add NAT rules", "error", err, "virtual_ip", ev.VirtualIP)
		}
		if err := ns.AddProxyNDP(ev.VirtualIP); err != nil {
			log.Error("Failed to add proxy NDP", "error", err, "virtual_ip", ev.VirtualIP)
		}
	case gateway.MappingRemoved:
		if err := nat.RemoveMapping(ev.VirtualIP); err != nil {
			log.Warn("Failed to remove NAT rules", "error", err, "virtual_ip", ev.VirtualIP)
		}
		ns.RemoveProxyNDP(ev.VirtualIP)
	}
}

// probeUpstream is upstream's readiness check: a "test.fips" AAAA query to
// gateway.dns.upstream, any answer within a second proving the daemon's
// responder is up, five attempts a second apart.
func probeUpstream(ctx context.Context, upstream string, log *slog.Logger, sigs <-chan os.Signal) error {
	log.Info("Checking DNS upstream reachability", "upstream", upstream)
	addr, err := net.ResolveUDPAddr("udp", upstream)
	if err != nil {
		return fail(log, "Invalid DNS upstream address", "upstream", upstream, "error", err)
	}
	network := "udp6"
	if addr.IP.To4() != nil {
		network = "udp4"
	}
	conn, err := net.ListenUDP(network, nil)
	if err != nil {
		return fail(log, "Failed to bind UDP socket for DNS check", "error", err)
	}
	defer conn.Close()
	query := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
		4, 't', 'e', 's', 't', 4, 'f', 'i', 'p', 's', 0, 0, 28, 0, 1}
	buf := make([]byte, 512)
	var last string
	for attempt := 1; attempt <= probeAttempts; attempt++ {
		if _, err := conn.WriteToUDP(query, addr); err != nil {
			last = "send_to failed: " + err.Error()
		} else {
			_ = conn.SetReadDeadline(time.Now().Add(probeTimeout))
			_, _, err := conn.ReadFromUDP(buf)
			if err == nil {
				log.Info("DNS upstream is reachable", "upstream", upstream, "attempt", attempt)
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				last = fmt.Sprintf("no response within %ds", int(probeTimeout/time.Second))
			} else {
				last = "recv_from failed: " + err.Error()
			}
		}
		if attempt < probeAttempts {
			log.Info("DNS upstream probe attempt failed; retrying", "upstream", upstream, "attempt", attempt, "last", debugSome(last))
			select {
			case <-time.After(probeRetryDelay):
			case <-ctx.Done():
				return errExit
			case <-sigs:
				return errExit
			}
		}
	}
	return fail(log, "DNS upstream did not become reachable after exhausting retries — is the FIPS daemon running?",
		"upstream", upstream, "attempts", probeAttempts, "last", debugSome(last))
}

// debugSome is how upstream's log shows its Option<String> (Rust Debug).
func debugSome(s string) string { return fmt.Sprintf("Some(%q)", s) }

// Package lan is LAN rendezvous over mDNS/DNS-SD (upstream's
// node.rendezvous.lan): the node registers _fips._udp.local. with TXT
// npub=<npub>, v=1 and an optional scope=, and browses for the same
// service. A discovered peer is only a routing hint: the link handshake
// authenticates it, so a spoofed npub fails there.
//
// It uses hashicorp/mdns (queries are one-shot, so it browses by asking
// again every interval). It owns its mDNS sockets and nothing else.
package lan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/mdns"

	"github.com/fips-go/fips/control/identity"
)

// DefaultServiceType is node.rendezvous.lan.service_type's default.
const DefaultServiceType = "_fips._udp.local."

// Browse timing: one query each interval, answers awaited for queryWait.
const (
	DefaultInterval = 5 * time.Second
	queryWait       = time.Second
	maxEntries      = 64 // answers taken from one query
	// maxPerHost is how many peers one answering host (by advertised
	// address) may hand over per query: a host with 64 fresh npubs must
	// not crowd the other hosts' answers out of the node's queue.
	maxPerHost = 4
)

// ErrConfig is an unusable LAN rendezvous setting.
var ErrConfig = errors.New("lan rendezvous")

// Config configures LAN rendezvous.
type Config struct {
	Identity    *identity.Identity
	ServiceType string // "_fips._udp.local."
	Scope       string // "" accepts every scope and advertises none
	Port        uint16 // the UDP transport's port peers dial
	Interval    time.Duration
	Log         *slog.Logger
}

// Discovered is one peer seen on the LAN.
type Discovered struct {
	PublicKey identity.PublicKey
	Addr      netip.AddrPort
	Scope     string
}

// Stats counts what browsing saw.
type Stats struct {
	Queries    uint64 `json:"queries"`
	Answers    uint64 `json:"answers"`
	Discovered uint64 `json:"discovered"`
	Ignored    uint64 `json:"ignored"`
	Dropped    uint64 `json:"dropped"`     // events the node had no room for
	HostCapped uint64 `json:"host_capped"` // peers past maxPerHost from one host in one query
	// DialLimited is filled in by the node: discovered peers nobody
	// configured that it did not dial, past the LAN dial rate.
	DialLimited uint64 `json:"dial_limited"`
}

// LAN is a running registration and browser.
type LAN struct {
	cfg                                            Config
	log                                            *slog.Logger
	service                                        string
	domain                                         string
	server                                         *mdns.Server
	events                                         chan Discovered
	cancel                                         context.CancelFunc
	wg                                             sync.WaitGroup
	queries, answers, discovered, ignored, dropped atomic.Uint64
	hostCapped                                     atomic.Uint64
}

// SplitServiceType turns "_fips._udp.local." into ("_fips._udp", "local.").
func SplitServiceType(st string) (service, domain string, err error) {
	st = strings.TrimSuffix(strings.TrimSpace(st), ".")
	parts := strings.Split(st, ".")
	if len(parts) < 3 || !strings.HasPrefix(parts[0], "_") || (parts[1] != "_udp" && parts[1] != "_tcp") {
		return "", "", fmt.Errorf("%w: service_type %q is not _name._udp.<domain>", ErrConfig, st)
	}
	return parts[0] + "." + parts[1], strings.Join(parts[2:], ".") + ".", nil
}

// InstanceName is upstream's instance: "fips-" and the npub's first 16
// characters (which include "npub1").
func InstanceName(npub string) string {
	if len(npub) > 16 {
		npub = npub[:16]
	}
	return "fips-" + npub
}

// slogWriter turns hashicorp/mdns's log.Logger lines into debug records.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Start registers the service and starts browsing until ctx ends or Close.
func Start(ctx context.Context, cfg Config) (*LAN, error) {
	if cfg.Identity == nil {
		return nil, fmt.Errorf("%w: no identity", ErrConfig)
	}
	if cfg.Port == 0 {
		return nil, fmt.Errorf("%w: no UDP port to advertise", ErrConfig)
	}
	if cfg.ServiceType == "" {
		cfg.ServiceType = DefaultServiceType
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	service, domain, err := SplitServiceType(cfg.ServiceType)
	if err != nil {
		return nil, err
	}
	l := &LAN{cfg: cfg, log: cfg.Log.With("component", "lan"), service: service, domain: domain,
		events: make(chan Discovered, 64)}
	npub := cfg.Identity.Npub()
	txt := []string{"npub=" + npub, "v=1"}
	if cfg.Scope != "" {
		txt = append(txt, "scope="+cfg.Scope)
	}
	inst := InstanceName(npub)
	ips := localIPs()
	zone, err := mdns.NewMDNSService(inst, service, domain, inst+"."+domain, int(cfg.Port), ips, txt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	lg := log.New(slogWriter{l.log}, "", 0)
	l.server, err = mdns.NewServer(&mdns.Config{Zone: zone, Logger: lg})
	if err != nil {
		return nil, fmt.Errorf("%w: mDNS responder: %w", ErrConfig, err)
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.browse(ctx, lg)
	}()
	l.log.Info("LAN rendezvous (mDNS) started", "service", cfg.ServiceType, "instance", inst, "port", cfg.Port,
		"scope", cfg.Scope, "addresses", len(ips))
	return l, nil
}

// localIPs are the addresses registered: every address of an up,
// non-loopback interface (upstream's enable_addr_auto), else 127.0.0.1.
// Upstream registers 127.0.0.1 as well; hashicorp/mdns's browser keeps one
// IPv4 address per answer, so it would be a coin toss whether a peer
// dials the LAN address or its own loopback.
func localIPs() []net.IP {
	var ips []net.IP
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
				ips = append(ips, n.IP)
			}
		}
	}
	if len(ips) == 0 {
		ips = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	return ips
}

// Events delivers discovered peers.
func (l *LAN) Events() <-chan Discovered { return l.events }

// Stats reads the counters.
func (l *LAN) Stats() Stats {
	return Stats{Queries: l.queries.Load(), Answers: l.answers.Load(), Discovered: l.discovered.Load(),
		Ignored: l.ignored.Load(), Dropped: l.dropped.Load(), HostCapped: l.hostCapped.Load()}
}

// Close stops browsing and the responder.
func (l *LAN) Close() {
	l.cancel()
	l.wg.Wait()
	_ = l.server.Shutdown()
}

func (l *LAN) browse(ctx context.Context, lg *log.Logger) {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	for {
		l.query(ctx, lg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// query asks over IPv4 and over IPv6 separately: hashicorp/mdns gives up
// on the whole query when either family cannot send (a host without an
// IPv6 multicast route), and one family must not blind the other.
func (l *LAN) query(ctx context.Context, lg *log.Logger) {
	for _, v6 := range []bool{false, true} {
		entries := make(chan *mdns.ServiceEntry, maxEntries)
		l.queries.Add(1)
		err := mdns.QueryContext(ctx, &mdns.QueryParam{Service: l.service, Domain: l.domain, Timeout: queryWait,
			Entries: entries, Logger: lg, DisableIPv4: v6, DisableIPv6: !v6})
		close(entries)
		if err != nil && ctx.Err() == nil {
			l.log.Debug("mDNS query failed", "ipv6", v6, "error", err)
		}
		perHost := map[netip.Addr]int{}
		for e := range entries {
			l.answers.Add(1)
			for _, d := range l.accept(e) {
				if !l.hostRoom(perHost, d) {
					continue
				}
				select {
				case l.events <- d:
					l.discovered.Add(1)
				default:
					l.dropped.Add(1)
				}
			}
		}
	}
}

// hostRoom takes d unless its host already handed over maxPerHost peers
// in this query (perHost), which it counts as host_capped.
func (l *LAN) hostRoom(perHost map[netip.Addr]int, d Discovered) bool {
	h := d.Addr.Addr()
	if perHost[h] >= maxPerHost {
		l.hostCapped.Add(1)
		return false
	}
	perHost[h]++
	return true
}

// accept applies upstream's browse filters to one resolved service: it
// needs an npub that is not ours, a matching scope when we have one, a
// port, and addresses (link-local IPv6 only with its zone).
func (l *LAN) accept(e *mdns.ServiceEntry) []Discovered {
	return Accept(e.InfoFields, e.Port, e.AddrV4, e.AddrV6IPAddr, l.cfg.Identity.Npub(), l.cfg.Scope, func() { l.ignored.Add(1) })
}

// Accept is the filter, separate for tests.
func Accept(txt []string, port int, v4 net.IP, v6 *net.IPAddr, ownNpub, ownScope string, ignored func()) []Discovered {
	var npub, scope string
	for _, f := range txt {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "npub":
			npub = v
		case "scope":
			scope = v
		}
	}
	pk, err := identity.DecodeNpub(npub)
	if err != nil || npub == ownNpub || (ownScope != "" && scope != ownScope) || port <= 0 || port > 65535 {
		ignored()
		return nil
	}
	var out []Discovered
	if a, ok := netip.AddrFromSlice(v4); ok && v4 != nil {
		out = append(out, Discovered{PublicKey: pk, Addr: netip.AddrPortFrom(a.Unmap(), uint16(port)), Scope: scope})
	}
	if v6 != nil {
		if a, ok := netip.AddrFromSlice(v6.IP); ok && (!a.IsLinkLocalUnicast() || v6.Zone != "") {
			out = append(out, Discovered{PublicKey: pk, Addr: netip.AddrPortFrom(a.WithZone(v6.Zone), uint16(port)), Scope: scope})
		}
	}
	if len(out) == 0 {
		ignored()
	}
	return out
}

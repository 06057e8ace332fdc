// Package tor is the Tor transport: FMP streams, framed as the TCP
// transport frames them (it runs on fallback/tcp), carried through Tor.
//
// Outbound streams go through Tor's SOCKS5 port (socks5_addr) in every
// mode, each destination isolated on circuits of its own. Inbound streams
// arrive from an onion service, which Tor forwards to a local listener:
//
//   - socks5: outbound only.
//   - directory: Tor runs the service from torrc (HiddenServiceDir and
//     HiddenServicePort 127.0.0.1:<bind_addr>); we listen on bind_addr
//     and read the address from the service's hostname file.
//   - control_port: we listen on an ephemeral loopback port (or, ours,
//     on directory_service.bind_addr when it is set: for a Tor in another
//     namespace or host) and create the service over the control port
//     (ADD_ONION), re-creating it with the same key whenever the control
//     connection is lost.
//
// The transport's addresses are IP addresses: an onion (or any host
// name Tor is to resolve) is given one from SyntheticPrefix by
// ResolveAddr, which the dialler maps back to the name.
package tor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/fallback/tcp"
)

// Modes (transports.tor.mode).
const (
	ModeSOCKS5      = "socks5"
	ModeControlPort = "control_port"
	ModeDirectory   = "directory"
)

// Defaults (upstream's).
const (
	DefaultConnectTimeout = 120 * time.Second
	DefaultMTU            = 1400
	DefaultMaxInbound     = 64
	DefaultAdvertisedPort = 443
)

// SyntheticPrefix holds the addresses ResolveAddr gives host names:
// RFC 6666's discard-only prefix, which no real peer has.
var syntheticPrefix = netip.MustParsePrefix("100::/64")

// SyntheticPrefix is the prefix of the addresses that stand for host names.
func SyntheticPrefix() netip.Prefix { return syntheticPrefix }

// maxNames bounds the host names one transport maps.
const maxNames = 1 << 16

// Options configure one Tor transport instance.
type Options struct {
	Mode           string
	Socks5Addr     string
	ConnectTimeout time.Duration
	MTU            int
	// ControlAddr, ControlAuth, CookiePath: control_port mode.
	ControlAddr, ControlAuth, CookiePath string
	MaxInboundConnections                int
	// HostnameFile and BindAddr: directory mode (BindAddr also in
	// control_port mode when DirectoryService is set).
	HostnameFile, BindAddr string
	// DirectoryService: directory_service was configured (refused
	// outside directory mode, as upstream).
	DirectoryService bool
	// AdvertisedPort is the onion's virtual port: published in adverts,
	// and the port ADD_ONION opens in control_port mode.
	AdvertisedPort uint16
	// RetryMin and RetryMax bound the backoff between attempts to bring
	// the onion service up (0: 1 s and 60 s).
	RetryMin, RetryMax time.Duration
	// Next also frames upstream next's version-1 packets on the streams
	// (tcp.Options.Next).
	Next bool
}

// Validate reports the first problem with o.
func (o Options) Validate() error {
	switch o.Mode {
	case ModeSOCKS5:
		if o.DirectoryService {
			return errors.New("tor: directory_service requires mode directory, not socks5")
		}
	case ModeControlPort:
		if _, err := ParseAuth(o.ControlAuth, o.CookiePath); err != nil {
			return fmt.Errorf("tor: %w", err)
		}
		if !isUnixPath(o.ControlAddr) {
			if err := checkHostPort(o.ControlAddr); err != nil {
				return fmt.Errorf("tor: control_addr %q: %w", o.ControlAddr, err)
			}
		}
		if _, err := netip.ParseAddrPort(o.BindAddr); o.DirectoryService && err != nil {
			return fmt.Errorf("tor: directory_service.bind_addr %q: %w", o.BindAddr, err)
		}
	case ModeDirectory:
		if _, err := netip.ParseAddrPort(o.BindAddr); err != nil {
			return fmt.Errorf("tor: directory_service.bind_addr %q: %w", o.BindAddr, err)
		}
		if o.HostnameFile == "" {
			return errors.New("tor: directory_service.hostname_file is empty")
		}
	default:
		return fmt.Errorf("tor: unsupported mode %q (expected socks5, control_port or directory)", o.Mode)
	}
	if err := checkHostPort(o.Socks5Addr); err != nil {
		return fmt.Errorf("tor: socks5_addr %q: %w", o.Socks5Addr, err)
	}
	if o.AdvertisedPort == 0 {
		return errors.New("tor: advertised_port must be 1 to 65535")
	}
	return nil
}

func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || host == "" {
		return errors.New("want host:port with a port of 1 to 65535")
	}
	return nil
}

// Transport is a Tor transport instance: a stream transport that dials
// through SOCKS5, plus the onion service. It implements
// transport.Transport.
type Transport struct {
	*tcp.Transport
	opts    Options
	invalid error // from Options.Validate: Start fails with it
	log     *slog.Logger

	mu     sync.Mutex
	names  map[netip.AddrPort]socksTarget // synthetic address → name
	byName map[string]netip.AddrPort
	next   uint64
	onion  string // our service's address once known
	// lastWarn suppresses repeats of one dial failure.
	lastWarn     string
	lastWarnAt   time.Time
	serviceErr   string // the last onion-service failure logged
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	closeControl func()
}

var _ transport.Transport = (*Transport)(nil)

// New returns a transport in StateConfigured. Options that Validate
// refuses (an unknown mode, directory_service in socks5 mode, …) make
// Start fail, as upstream's transport fails to start with them, so the
// node runs degraded on its other transports; New itself fails only
// where the stream transport cannot be built.
func New(id transport.ID, name string, opts Options, log *slog.Logger) (*Transport, error) {
	invalid := opts.Validate()
	if opts.RetryMin <= 0 {
		opts.RetryMin = time.Second
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(60*time.Second, opts.RetryMin)
	}
	t := &Transport{opts: opts, invalid: invalid, log: transport.Logger(log, "tor", id, name),
		names: map[netip.AddrPort]socksTarget{}, byName: map[string]netip.AddrPort{}}
	to := tcp.Defaults()
	to.Kind = "tor"
	to.MTU = opts.MTU
	to.ConnectTimeout = opts.ConnectTimeout
	to.MaxInboundConnections = opts.MaxInboundConnections
	// Every inbound stream comes from Tor on loopback: one source.
	to.MaxInboundPerSource = max(opts.MaxInboundConnections, 1)
	to.Dial = t.dial
	to.Next = opts.Next
	switch opts.Mode {
	case ModeDirectory:
		to.BindAddr = opts.BindAddr
	case ModeControlPort:
		to.BindAddr = "127.0.0.1:0"
		if opts.DirectoryService {
			to.BindAddr = opts.BindAddr
		}
	}
	if invalid != nil {
		to.BindAddr = ""
	}
	inner, err := tcp.New(id, name, to, log)
	if err != nil {
		return nil, fmt.Errorf("tor: %w", err)
	}
	t.Transport = inner
	return t, nil
}

// Mode is the configured mode.
func (t *Transport) Mode() string { return t.opts.Mode }

// AdvertisedPort is the onion's virtual port.
func (t *Transport) AdvertisedPort() uint16 { return t.opts.AdvertisedPort }

// OnionAddress is our onion service's address ("….onion"), "" until it
// is up (and always in socks5 mode).
func (t *Transport) OnionAddress() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.onion
}

// Start starts the stream transport (and its listener, in the onion
// modes), then brings the onion service up in the background, retrying
// with backoff: Tor not running yet disturbs nothing but the service.
func (t *Transport) Start(ctx context.Context, deliver transport.Deliver) error {
	if t.invalid != nil {
		return t.invalid
	}
	if err := t.Transport.Start(ctx, deliver); err != nil {
		return fmt.Errorf("tor: %w", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	t.mu.Lock()
	t.cancel = func() { stop(); cancel() }
	t.mu.Unlock()
	t.log.Info("Tor transport started", "mode", t.opts.Mode, "socks5_addr", t.opts.Socks5Addr,
		"local_addr", t.LocalAddr(), "mtu", t.opts.MTU)
	if t.opts.Mode == ModeSOCKS5 {
		return nil
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.runService(sctx)
	}()
	return nil
}

// Close stops the onion service and the stream transport.
func (t *Transport) Close() error {
	t.mu.Lock()
	cancel, cc := t.cancel, t.closeControl
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if cc != nil {
		cc()
	}
	t.wg.Wait()
	return t.Transport.Close()
}

// runService keeps the onion service up until ctx ends.
func (t *Transport) runService(ctx context.Context) {
	delay := t.opts.RetryMin
	key := "NEW:ED25519-V3"
	for ctx.Err() == nil {
		var err error
		switch t.opts.Mode {
		case ModeDirectory:
			err = t.readHostname()
			if err == nil {
				return // Tor runs the service; nothing more to keep up
			}
		case ModeControlPort:
			var up bool
			key, up, err = t.controlSession(ctx, key)
			if up {
				delay = t.opts.RetryMin // it worked until the connection went
			}
		}
		if ctx.Err() != nil {
			return
		}
		t.serviceFailed(err, delay)
		tm := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			tm.Stop()
			return
		case <-tm.C:
		}
		delay = min(delay*2, t.opts.RetryMax)
	}
}

// serviceFailed logs an onion-service failure: a warning when it differs
// from the last one, debug when it repeats.
func (t *Transport) serviceFailed(err error, retry time.Duration) {
	if err == nil {
		return
	}
	t.mu.Lock()
	repeat := t.serviceErr == err.Error()
	t.serviceErr = err.Error()
	t.mu.Unlock()
	lvl := slog.LevelWarn
	if repeat {
		lvl = slog.LevelDebug
	}
	t.log.Log(context.Background(), lvl, "Tor onion service not up; retrying", "mode", t.opts.Mode,
		"error", err.Error(), "retry_in", retry.String())
}

// readHostname reads the directory-mode service's address.
func (t *Transport) readHostname() error {
	b, err := os.ReadFile(t.opts.HostnameFile)
	if err != nil {
		return fmt.Errorf("read onion hostname (is HiddenServiceDir in torrc, and has Tor started?): %w", err)
	}
	onion, _, err := ParseOnion(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("hostname file %s: %w", t.opts.HostnameFile, err)
	}
	t.serviceUp(onion)
	return nil
}

func (t *Transport) serviceUp(onion string) {
	t.mu.Lock()
	t.onion, t.serviceErr = onion, ""
	t.mu.Unlock()
	t.log.Info("Tor onion service up", "mode", t.opts.Mode, "onion_address", onion,
		"advertised_port", t.opts.AdvertisedPort, "local_addr", t.LocalAddr())
}

// controlSession connects, authenticates and adds the service, then
// holds the connection (the service lives as long as it) until it fails
// or ctx ends. It returns the key to re-create the service with, and
// whether the service was up.
func (t *Transport) controlSession(ctx context.Context, key string) (string, bool, error) {
	auth, err := ParseAuth(t.opts.ControlAuth, t.opts.CookiePath)
	if err != nil {
		return key, false, err
	}
	dctx, cancel := context.WithTimeout(ctx, controlTimeout)
	cc, err := dialControl(dctx, t.opts.ControlAddr)
	cancel()
	if err != nil {
		return key, false, err
	}
	t.mu.Lock()
	t.closeControl = func() { cc.Close() }
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.closeControl = nil
		t.onion = ""
		t.mu.Unlock()
		cc.Close()
	}()
	stop := context.AfterFunc(ctx, func() { cc.Close() })
	defer stop()
	if err := cc.authenticate(auth); err != nil {
		return key, false, err
	}
	onion, newKey, err := cc.addOnion(key, t.opts.AdvertisedPort, t.LocalAddr())
	if err != nil {
		return key, false, fmt.Errorf("ADD_ONION: %w", err)
	}
	t.serviceUp(onion)
	// Nothing more is asked; a read returns when Tor closes the
	// connection (or ctx closes it), and the service goes with it.
	for {
		if _, err := ReadReply(cc.r); err != nil {
			if ctx.Err() == nil {
				t.log.Warn("Tor control connection lost; the onion service is down until it is re-created", "error", err.Error())
			}
			return newKey, true, fmt.Errorf("control connection lost: %w", err)
		}
	}
}

// ResolveAddr turns "host:port" into an address: an IP address is itself
// (Tor connects to it through an exit); an onion, or another fully
// qualified host name, is given an address from SyntheticPrefix that the
// dialler maps back to it. Nothing is looked up: Tor resolves names.
func (t *Transport) ResolveAddr(_ context.Context, s string) (transport.Addr, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return transport.Addr{}, fmt.Errorf("tor: resolve %q: %w: %w", s, transport.ErrInvalidAddress, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return transport.Addr{}, fmt.Errorf("tor: resolve %q: %w: want a port of 1 to 65535", s, transport.ErrInvalidAddress)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if syntheticPrefix.Contains(ip) {
			return transport.Addr{}, fmt.Errorf("tor: resolve %q: %w: %s is reserved for host names", s, transport.ErrInvalidAddress, syntheticPrefix)
		}
		return transport.AddrFromIP(netip.AddrPortFrom(ip.Unmap(), uint16(port))), nil
	}
	name, err := checkHost(host)
	if err != nil {
		return transport.Addr{}, fmt.Errorf("tor: resolve %q: %w: %w", s, transport.ErrInvalidAddress, err)
	}
	target := socksTarget{Host: name, Port: uint16(port)}
	key := target.String()
	t.mu.Lock()
	defer t.mu.Unlock()
	if ap, ok := t.byName[key]; ok {
		return transport.AddrFromIP(ap), nil
	}
	if len(t.byName) >= maxNames {
		return transport.Addr{}, fmt.Errorf("tor: resolve %q: %d host names mapped already", s, maxNames)
	}
	t.next++
	b := syntheticPrefix.Addr().As16()
	for i := range 8 {
		b[15-i] = byte(t.next >> (8 * i))
	}
	ap := netip.AddrPortFrom(netip.AddrFrom16(b), uint16(port))
	t.byName[key], t.names[ap] = ap, target
	t.log.Debug("Tor host name mapped", "host", key, "addr", ap.String())
	return transport.AddrFromIP(ap), nil
}

// HostName is the "host:port" a synthetic address stands for, or "".
func (t *Transport) HostName(a transport.Addr) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tg, ok := t.names[a.IP]; ok {
		return tg.String()
	}
	return ""
}

// checkHost validates a host name Tor is to resolve: a valid v3 onion,
// or a fully qualified DNS name (upstream asks for a dot).
func checkHost(host string) (string, error) {
	if IsOnion(host) {
		onion, _, err := ParseOnion(host)
		return onion, err
	}
	if len(host) > maxHostLen || !strings.Contains(host, ".") {
		return "", fmt.Errorf("host name %q must be fully qualified (contain a dot) and at most %d bytes", host, maxHostLen)
	}
	for _, c := range []byte(host) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", fmt.Errorf("host name %q holds %q", host, c)
		}
	}
	return strings.ToLower(host), nil
}

// dial opens a stream to ap through the SOCKS5 proxy.
func (t *Transport) dial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	t.mu.Lock()
	target, named := t.names[ap]
	t.mu.Unlock()
	if !named {
		if syntheticPrefix.Contains(ap.Addr()) {
			return nil, fmt.Errorf("tor: dial %s: %w: no host name maps to it", ap, transport.ErrInvalidAddress)
		}
		target = socksTarget{IP: ap.Addr(), Port: ap.Port()}
	}
	start := time.Now()
	// The password is the destination: Tor isolates streams by
	// credentials, so each peer gets circuits of its own (as upstream).
	nc, err := socksDial(ctx, t.opts.Socks5Addr, target, "fips", target.String())
	if err != nil {
		t.dialFailed(target, err)
		return nil, err
	}
	t.log.Info("Tor circuit established via SOCKS5", "remote", target.String(), "addr", ap.String(),
		"took", time.Since(start).Round(time.Millisecond).String())
	return nc, nil
}

// dialFailed logs one line per failed dial, a warning unless the same
// failure was logged in the last minute.
func (t *Transport) dialFailed(target socksTarget, err error) {
	msg := err.Error()
	t.mu.Lock()
	repeat := msg == t.lastWarn && time.Since(t.lastWarnAt) < time.Minute
	if !repeat {
		t.lastWarn, t.lastWarnAt = msg, time.Now()
	}
	t.mu.Unlock()
	lvl := slog.LevelWarn
	if repeat {
		lvl = slog.LevelDebug
	}
	t.log.Log(context.Background(), lvl, "Tor SOCKS5 connection failed", "remote", target.String(), "error", msg)
}

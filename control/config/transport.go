package config

import (
	"net/netip"
	"sort"
)

// TransportsConfig is transports.*. Each type holds either one unnamed
// instance (its keys directly under the type) or a map of named instances.
type TransportsConfig struct {
	UDP      Instances[UDPConfig]      `yaml:"udp"`
	Ethernet Instances[EthernetConfig] `yaml:"ethernet"`
	TCP      Instances[TCPConfig]      `yaml:"tcp"`
	Tor      Instances[TorConfig]      `yaml:"tor"`
	Nym      Instances[NymConfig]      `yaml:"nym"`
	BLE      Instances[BLEConfig]      `yaml:"ble"`
}

// Empty reports whether no transport instance is configured at all.
func (t *TransportsConfig) Empty() bool {
	return t.UDP.Len()+t.Ethernet.Len()+t.TCP.Len()+t.Tor.Len()+t.Nym.Len()+t.BLE.Len() == 0
}

// Instances is one transport type's section: a single unnamed instance, or
// named instances, or nothing. Upstream decides which by trying the single
// form first (whose unknown keys are an error) and falling back to a map.
type Instances[T any] struct {
	// Single is the unnamed instance; nil unless the section is in single
	// form.
	Single *T
	// Named holds named instances; nil or empty in single form.
	Named map[string]*T
}

// Instance is one configured transport instance.
type Instance[T any] struct {
	Name   string // "" for the unnamed single instance
	Config *T
}

// Len is the number of instances.
func (in *Instances[T]) Len() int {
	if in.Single != nil {
		return 1
	}
	return len(in.Named)
}

// IsNamed reports whether the section is in named-instance form.
func (in *Instances[T]) IsNamed() bool { return in.Single == nil && in.Named != nil }

// List returns every instance, named ones sorted by name.
func (in *Instances[T]) List() []Instance[T] {
	if in.Single != nil {
		return []Instance[T]{{Config: in.Single}}
	}
	out := make([]Instance[T], 0, len(in.Named))
	for _, name := range in.Names() {
		out = append(out, Instance[T]{Name: name, Config: in.Named[name]})
	}
	return out
}

// Names returns the sorted instance names (none in single form).
func (in *Instances[T]) Names() []string {
	names := make([]string, 0, len(in.Named))
	for name := range in.Named {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Upstream transport defaults.
const (
	DefaultUDPBindAddr      = "0.0.0.0:2121"
	DefaultUDPMTU           = 1280
	DefaultSocketBufferSize = 2 * 1024 * 1024

	DefaultEthertype          = 0x2121
	DefaultBeaconIntervalSecs = 30
	MinBeaconIntervalSecs     = 10

	DefaultTCPMTU              = 1400
	DefaultTCPConnectTimeoutMs = 5000
	DefaultTCPKeepaliveSecs    = 30

	DefaultTorSocks5Addr         = "127.0.0.1:9050"
	DefaultTorControlAddr        = "/run/tor/control"
	DefaultTorControlAuth        = "cookie"
	DefaultTorCookiePath         = "/var/run/tor/control.authcookie"
	DefaultTorConnectTimeoutMs   = 120000
	DefaultTorMTU                = 1400
	DefaultTorMaxInbound         = 64
	DefaultTorHostnameFile       = "/var/lib/tor/fips_onion_service/hostname"
	DefaultTorDirectoryBindAddr  = "127.0.0.1:8443"
	DefaultTorAdvertisedPort     = 443
	DefaultNymSocks5Addr         = "127.0.0.1:1080"
	DefaultNymConnectTimeoutMs   = 300000
	DefaultNymMTU                = 1400
	DefaultNymStartupTimeoutSecs = 120

	DefaultBLEAdapter           = "hci0"
	DefaultBLEPSM               = 0x0085
	DefaultBLEMTU               = 2048
	DefaultBLEMaxConnections    = 7
	DefaultBLEConnectTimeoutMs  = 10000
	DefaultBLEProbeCooldownSecs = 30
)

// UDPConfig is one transports.udp instance.
type UDPConfig struct {
	BindAddr         string `yaml:"bind_addr" fips:"optional"`
	MTU              uint16 `yaml:"mtu" fips:"optional"`
	RecvBufSize      uint   `yaml:"recv_buf_size" fips:"optional"`
	SendBufSize      uint   `yaml:"send_buf_size" fips:"optional"`
	AdvertiseOnNostr bool   `yaml:"advertise_on_nostr" fips:"optional"`
	Public           bool   `yaml:"public" fips:"optional"` // false: advertised as udp:nat
	// ExternalAddr is the address to advertise when public; nil when absent.
	ExternalAddr      *string `yaml:"external_addr"`
	OutboundOnly      bool    `yaml:"outbound_only" fips:"optional"`
	AcceptConnections bool    `yaml:"accept_connections" fips:"optional"`
}

func (*UDPConfig) denyUnknownKeys() {}

func (c *UDPConfig) applyDefaults() {
	*c = UDPConfig{
		BindAddr:          DefaultUDPBindAddr,
		MTU:               DefaultUDPMTU,
		RecvBufSize:       DefaultSocketBufferSize,
		SendBufSize:       DefaultSocketBufferSize,
		AcceptConnections: true,
	}
}

// EffectiveBindAddr is what the socket binds: 0.0.0.0:0 when outbound-only,
// BindAddr otherwise.
func (c *UDPConfig) EffectiveBindAddr() string {
	if c.OutboundOnly {
		return "0.0.0.0:0"
	}
	return c.BindAddr
}

// Advertises reports whether the instance is advertised on Nostr
// (never when outbound-only).
func (c *UDPConfig) Advertises() bool { return c.AdvertiseOnNostr && !c.OutboundOnly }

// ExternalAdvertAddr is external_addr resolved against the bind port (a bare
// IP gets the bind port appended); ok is false when unset or unparsable.
func (c *UDPConfig) ExternalAdvertAddr() (netip.AddrPort, bool) {
	if c.ExternalAddr == nil {
		return netip.AddrPort{}, false
	}
	return externalAdvertAddr(*c.ExternalAddr, c.EffectiveBindAddr())
}

// EthernetConfig is one transports.ethernet instance.
type EthernetConfig struct {
	Interface string `yaml:"interface" fips:"required"`
	Ethertype uint16 `yaml:"ethertype" fips:"optional"`
	// MTU is nil when absent: the interface MTU minus 3 is used.
	MTU         *uint16 `yaml:"mtu"`
	RecvBufSize uint    `yaml:"recv_buf_size" fips:"optional"`
	SendBufSize uint    `yaml:"send_buf_size" fips:"optional"`
	// Listen also accepts its old name, discovery.
	Listen            bool `yaml:"listen" fips:"alias=discovery,optional"`
	Announce          bool `yaml:"announce" fips:"optional"`
	AutoConnect       bool `yaml:"auto_connect" fips:"optional"`
	AcceptConnections bool `yaml:"accept_connections" fips:"optional"`
	// BeaconIntervalSecs as written; see EffectiveBeaconIntervalSecs.
	BeaconIntervalSecs uint64 `yaml:"beacon_interval_secs" fips:"optional"`
}

func (*EthernetConfig) denyUnknownKeys() {}

func (c *EthernetConfig) applyDefaults() {
	*c = EthernetConfig{
		Ethertype:          DefaultEthertype,
		RecvBufSize:        DefaultSocketBufferSize,
		SendBufSize:        DefaultSocketBufferSize,
		Listen:             true,
		BeaconIntervalSecs: DefaultBeaconIntervalSecs,
	}
}

// EffectiveBeaconIntervalSecs is the beacon interval clamped to the
// 10-second minimum, as upstream applies it.
func (c *EthernetConfig) EffectiveBeaconIntervalSecs() uint64 {
	return max(c.BeaconIntervalSecs, MinBeaconIntervalSecs)
}

// TCPConfig is one transports.tcp instance.
type TCPConfig struct {
	// BindAddr is nil when absent: the instance is outbound-only.
	BindAddr         *string `yaml:"bind_addr"`
	MTU              uint16  `yaml:"mtu" fips:"optional"`
	ConnectTimeoutMs uint64  `yaml:"connect_timeout_ms" fips:"optional"`
	NoDelay          bool    `yaml:"nodelay" fips:"optional"`
	KeepaliveSecs    uint64  `yaml:"keepalive_secs" fips:"optional"` // 0 = off
	RecvBufSize      uint    `yaml:"recv_buf_size" fips:"optional"`
	SendBufSize      uint    `yaml:"send_buf_size" fips:"optional"`
	// MaxInboundConnections is nil when absent: see EffectiveMaxInbound.
	MaxInboundConnections *uint   `yaml:"max_inbound_connections"`
	AdvertiseOnNostr      bool    `yaml:"advertise_on_nostr" fips:"optional"`
	ExternalAddr          *string `yaml:"external_addr"`
}

func (*TCPConfig) denyUnknownKeys() {}

// EffectiveMaxInbound is the instance's cap on accepted connections, as
// upstream resolves it: max_inbound_connections when set, else the
// node-wide node.limits.max_connections (nodeMax), so raising the node's
// budget raises the TCP accept ceiling too.
func (c *TCPConfig) EffectiveMaxInbound(nodeMax uint) uint {
	if c.MaxInboundConnections != nil {
		return *c.MaxInboundConnections
	}
	return nodeMax
}

func (c *TCPConfig) applyDefaults() {
	*c = TCPConfig{
		MTU:              DefaultTCPMTU,
		ConnectTimeoutMs: DefaultTCPConnectTimeoutMs,
		NoDelay:          true,
		KeepaliveSecs:    DefaultTCPKeepaliveSecs,
		RecvBufSize:      DefaultSocketBufferSize,
		SendBufSize:      DefaultSocketBufferSize,
	}
}

// ExternalAdvertAddr is external_addr resolved against the bind port; ok is
// false when either is unset or unparsable.
func (c *TCPConfig) ExternalAdvertAddr() (netip.AddrPort, bool) {
	if c.ExternalAddr == nil || c.BindAddr == nil {
		return netip.AddrPort{}, false
	}
	return externalAdvertAddr(*c.ExternalAddr, *c.BindAddr)
}

// externalAdvertAddr accepts a full ip:port, or a bare IP that takes the
// port of bind.
func externalAdvertAddr(raw, bind string) (netip.AddrPort, bool) {
	b, err := netip.ParseAddrPort(bind)
	if err != nil {
		return netip.AddrPort{}, false
	}
	if ap, err := netip.ParseAddrPort(raw); err == nil {
		return ap, true
	}
	if ip, err := netip.ParseAddr(raw); err == nil && ip.Zone() == "" {
		return netip.AddrPortFrom(ip, b.Port()), true
	}
	return netip.AddrPort{}, false
}

// TorConfig is one transports.tor instance.
type TorConfig struct {
	Mode             string `yaml:"mode" fips:"optional"` // socks5 | control_port | directory
	Socks5Addr       string `yaml:"socks5_addr" fips:"optional"`
	ConnectTimeoutMs uint64 `yaml:"connect_timeout_ms" fips:"optional"`
	MTU              uint16 `yaml:"mtu" fips:"optional"`
	ControlAddr      string `yaml:"control_addr" fips:"optional"`
	// ControlAuth is "cookie", "cookie:/path" or "password:<secret>".
	ControlAuth           string `yaml:"control_auth" fips:"optional"`
	CookiePath            string `yaml:"cookie_path" fips:"optional"`
	MaxInboundConnections uint   `yaml:"max_inbound_connections" fips:"optional"`
	// DirectoryService is nil when absent; its presence outside directory
	// mode makes the transport refuse to start.
	DirectoryService *DirectoryServiceConfig `yaml:"directory_service"`
	AdvertiseOnNostr bool                    `yaml:"advertise_on_nostr" fips:"optional"`
	AdvertisedPort   uint16                  `yaml:"advertised_port" fips:"optional"`
}

func (*TorConfig) denyUnknownKeys() {}

func (c *TorConfig) applyDefaults() {
	*c = TorConfig{
		Mode:                  "socks5",
		Socks5Addr:            DefaultTorSocks5Addr,
		ConnectTimeoutMs:      DefaultTorConnectTimeoutMs,
		MTU:                   DefaultTorMTU,
		ControlAddr:           DefaultTorControlAddr,
		ControlAuth:           DefaultTorControlAuth,
		CookiePath:            DefaultTorCookiePath,
		MaxInboundConnections: DefaultTorMaxInbound,
		AdvertisedPort:        DefaultTorAdvertisedPort,
	}
}

// Directory is DirectoryService, or its defaults when absent.
func (c *TorConfig) Directory() DirectoryServiceConfig {
	if c.DirectoryService != nil {
		return *c.DirectoryService
	}
	var d DirectoryServiceConfig
	d.applyDefaults()
	return d
}

// DirectoryServiceConfig is transports.tor.directory_service.*.
type DirectoryServiceConfig struct {
	HostnameFile string `yaml:"hostname_file" fips:"optional"`
	BindAddr     string `yaml:"bind_addr" fips:"optional"`
}

func (*DirectoryServiceConfig) denyUnknownKeys() {}

func (c *DirectoryServiceConfig) applyDefaults() {
	*c = DirectoryServiceConfig{HostnameFile: DefaultTorHostnameFile, BindAddr: DefaultTorDirectoryBindAddr}
}

// NymConfig is one transports.nym instance (outbound only).
type NymConfig struct {
	Socks5Addr         string `yaml:"socks5_addr" fips:"optional"`
	ConnectTimeoutMs   uint64 `yaml:"connect_timeout_ms" fips:"optional"`
	MTU                uint16 `yaml:"mtu" fips:"optional"`
	StartupTimeoutSecs uint64 `yaml:"startup_timeout_secs" fips:"optional"`
}

func (*NymConfig) denyUnknownKeys() {}

func (c *NymConfig) applyDefaults() {
	*c = NymConfig{
		Socks5Addr:         DefaultNymSocks5Addr,
		ConnectTimeoutMs:   DefaultNymConnectTimeoutMs,
		MTU:                DefaultNymMTU,
		StartupTimeoutSecs: DefaultNymStartupTimeoutSecs,
	}
}

// BLEConfig is one transports.ble instance.
type BLEConfig struct {
	Adapter           string `yaml:"adapter" fips:"optional"`
	PSM               uint16 `yaml:"psm" fips:"optional"`
	MTU               uint16 `yaml:"mtu" fips:"optional"`
	MaxConnections    uint   `yaml:"max_connections" fips:"optional"`
	ConnectTimeoutMs  uint64 `yaml:"connect_timeout_ms" fips:"optional"`
	Advertise         bool   `yaml:"advertise" fips:"optional"`
	Scan              bool   `yaml:"scan" fips:"optional"`
	AutoConnect       bool   `yaml:"auto_connect" fips:"optional"`
	AcceptConnections bool   `yaml:"accept_connections" fips:"optional"`
	ProbeCooldownSecs uint64 `yaml:"probe_cooldown_secs" fips:"optional"`
}

func (*BLEConfig) denyUnknownKeys() {}

func (c *BLEConfig) applyDefaults() {
	*c = BLEConfig{
		Adapter:           DefaultBLEAdapter,
		PSM:               DefaultBLEPSM,
		MTU:               DefaultBLEMTU,
		MaxConnections:    DefaultBLEMaxConnections,
		ConnectTimeoutMs:  DefaultBLEConnectTimeoutMs,
		Advertise:         true,
		Scan:              true,
		AcceptConnections: true,
		ProbeCooldownSecs: DefaultBLEProbeCooldownSecs,
	}
}

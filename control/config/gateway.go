package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Gateway defaults.
const (
	DefaultGatewayDNSListen   = "[::1]:5353"
	DefaultGatewayDNSUpstream = "[::1]:5354"
	DefaultGatewayDNSTTL      = 60
	DefaultPoolGracePeriod    = 60
	// DefaultMaxMappingsPerClient is gateway.dns.max_mappings_per_client's.
	DefaultMaxMappingsPerClient = 256
	DefaultCTTCPEstablished     = 432000
	DefaultCTUDPTimeout         = 30
	DefaultCTUDPAssured         = 180
	DefaultCTICMPTimeout        = 30
)

// GatewayConfig is gateway.* (read by fips-gateway). Unknown keys are
// ignored, as upstream.
type GatewayConfig struct {
	Enabled         bool             `yaml:"enabled"`
	Pool            string           `yaml:"pool" fips:"required"` // CIDR, e.g. fd01::/112
	LANInterface    string           `yaml:"lan_interface" fips:"required"`
	DNS             GatewayDNSConfig `yaml:"dns"`
	PoolGracePeriod uint64           `yaml:"pool_grace_period" fips:"optional"`
	// Conntrack is parsed but, upstream, never applied.
	Conntrack    ConntrackConfig `yaml:"conntrack"`
	PortForwards []PortForward   `yaml:"port_forwards"`
}

func (g *GatewayConfig) applyDefaults() {
	*g = GatewayConfig{
		DNS: GatewayDNSConfig{Listen: DefaultGatewayDNSListen, Upstream: DefaultGatewayDNSUpstream, TTL: DefaultGatewayDNSTTL,
			MaxMappingsPerClient: DefaultMaxMappingsPerClient},
		PoolGracePeriod: DefaultPoolGracePeriod,
		Conntrack: ConntrackConfig{
			TCPEstablished: DefaultCTTCPEstablished,
			UDPTimeout:     DefaultCTUDPTimeout,
			UDPAssured:     DefaultCTUDPAssured,
			ICMPTimeout:    DefaultCTICMPTimeout,
		},
	}
}

// GatewayDNSConfig is gateway.dns.*.
type GatewayDNSConfig struct {
	Listen   string `yaml:"listen" fips:"optional"`
	Upstream string `yaml:"upstream" fips:"optional"` // must match the daemon's dns bind
	TTL      uint32 `yaml:"ttl" fips:"optional"`
	// MaxMappingsPerClient bounds the pool addresses one LAN client's
	// queries may hold (fips-go's; upstream has no bound).
	MaxMappingsPerClient uint32 `yaml:"max_mappings_per_client" fips:"optional"`
}

// ConntrackConfig is gateway.conntrack.* (seconds).
type ConntrackConfig struct {
	TCPEstablished uint64 `yaml:"tcp_established" fips:"optional"`
	UDPTimeout     uint64 `yaml:"udp_timeout" fips:"optional"`
	UDPAssured     uint64 `yaml:"udp_assured" fips:"optional"`
	ICMPTimeout    uint64 `yaml:"icmp_timeout" fips:"optional"`
}

// Proto is gateway.port_forwards[].proto.
type Proto string

// Port-forward protocols.
const (
	ProtoTCP Proto = "tcp"
	ProtoUDP Proto = "udp"
)

func (Proto) enumValues() []string { return []string{"tcp", "udp"} }

// PortForward is one gateway.port_forwards[] rule: fips0:ListenPort/Proto
// → Target.
type PortForward struct {
	ListenPort uint16       `yaml:"listen_port" fips:"required"`
	Proto      Proto        `yaml:"proto" fips:"required"`
	Target     SocketAddrV6 `yaml:"target" fips:"required"`
}

// SocketAddrV6 is an IPv6 "[addr]:port" (numeric scope id allowed); IPv4
// is refused when the file is read, as upstream.
type SocketAddrV6 string

func (SocketAddrV6) checkScalar(s string) error {
	_, err := ParseSocketAddrV6(s)
	return err
}

// AddrPort parses the address.
func (s SocketAddrV6) AddrPort() (netip.AddrPort, error) { return ParseSocketAddrV6(string(s)) }

// ParseSocketAddrV6 parses "[v6addr]:port" or "[v6addr%N]:port".
func ParseSocketAddrV6(s string) (netip.AddrPort, error) {
	if !strings.HasPrefix(s, "[") {
		return netip.AddrPort{}, errors.New("invalid IPv6 socket address syntax (want [addr]:port)")
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || !ap.Addr().Is6() {
		return netip.AddrPort{}, errors.New("invalid IPv6 socket address syntax (want [addr]:port)")
	}
	if z := ap.Addr().Zone(); z != "" {
		if _, err := strconv.ParseUint(z, 10, 32); err != nil {
			return netip.AddrPort{}, errors.New("invalid IPv6 socket address syntax (scope id must be numeric)")
		}
	}
	return ap, nil
}

// Validate applies fips-gateway's port-forward rules (non-zero listen
// port, unique (listen_port, proto)) with upstream's messages. The daemon
// does not call it; fips-gateway does.
func (g *GatewayConfig) Validate() error {
	seen := make(map[PortForward]bool)
	for _, pf := range g.PortForwards {
		if pf.ListenPort == 0 {
			return &Error{Key: "gateway.port_forwards", Reason: "port_forward listen_port must be non-zero", Err: ErrInvalid}
		}
		k := PortForward{ListenPort: pf.ListenPort, Proto: pf.Proto}
		if seen[k] {
			name := "Tcp"
			if pf.Proto == ProtoUDP {
				name = "Udp"
			}
			return &Error{Key: "gateway.port_forwards", Err: ErrInvalid,
				Reason: fmt.Sprintf("duplicate port_forward (%s %d) — each (listen_port, proto) must be unique", name, pf.ListenPort)}
		}
		seen[k] = true
	}
	return nil
}

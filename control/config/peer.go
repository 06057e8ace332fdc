package config

import (
	"strings"

	"github.com/fips-go/fips/control/identity"
)

// ConnectPolicy is peers[].connect_policy. Upstream parses all three but
// acts only on auto_connect.
type ConnectPolicy string

// Connect policies.
const (
	ConnectAuto     ConnectPolicy = "auto_connect"
	ConnectOnDemand ConnectPolicy = "on_demand"
	ConnectManual   ConnectPolicy = "manual"
)

func (ConnectPolicy) enumValues() []string { return []string{"auto_connect", "on_demand", "manual"} }

// PeerConfig is one peers[] entry. Unknown keys are an error.
type PeerConfig struct {
	Npub string `yaml:"npub" fips:"required"`
	// Alias is the display name and .fips hostname; nil when absent.
	Alias         *string       `yaml:"alias"`
	Addresses     []PeerAddress `yaml:"addresses"`
	ConnectPolicy ConnectPolicy `yaml:"connect_policy"`
	AutoReconnect bool          `yaml:"auto_reconnect"`
	// ViaNostr appends advert-derived endpoints after the static ones.
	ViaNostr bool `yaml:"via_nostr"`
	// PQ (fips-go addition) overrides node.session.pq for sessions with
	// this peer: off, preferred or required; "" inherits.
	PQ string `yaml:"pq"`
	// LinkPQ (fips-go addition) overrides node.link.pq for the link to
	// this peer: off, preferred or required; "" inherits.
	LinkPQ string `yaml:"link_pq"`
	// WireFormat (fips-go addition) overrides node.wire_format for links
	// with this peer: v0, v1 or auto; "" inherits.
	WireFormat string `yaml:"wire_format"`
}

func (*PeerConfig) denyUnknownKeys() {}

func (p *PeerConfig) applyDefaults() {
	*p = PeerConfig{ConnectPolicy: ConnectAuto, AutoReconnect: true}
}

// IsAutoConnect reports whether the peer is dialled at startup.
func (p *PeerConfig) IsAutoConnect() bool { return p.ConnectPolicy == ConnectAuto }

// ValidNpub reports whether Npub decodes to a key. A peer whose npub does
// not is skipped (with a warning from Lint), as upstream skips it.
func (p *PeerConfig) ValidNpub() bool {
	_, err := identity.DecodeNpub(p.Npub)
	return err == nil
}

// DefaultAddressPriority is peers[].addresses[].priority's default.
const DefaultAddressPriority = 100

// PeerAddress is one peers[].addresses[] entry. Unknown keys are an error.
type PeerAddress struct {
	// Transport is a type (udp, tcp, ethernet, tor, nym, ble), optionally
	// qualified with an instance name: "udp/main".
	Transport string `yaml:"transport" fips:"required"`
	// Addr is transport specific: host:port, "nat" (UDP via Nostr
	// traversal), iface/mac, hci0/mac, xxx.onion:port.
	Addr     string `yaml:"addr" fips:"required"`
	Priority uint8  `yaml:"priority"` // lower is preferred
}

func (*PeerAddress) denyUnknownKeys() {}

func (a *PeerAddress) applyDefaults() { *a = PeerAddress{Priority: DefaultAddressPriority} }

// Spec splits Transport into type and instance name.
func (a *PeerAddress) Spec() TransportSpec { return ParseTransportSpec(a.Transport) }

// TransportSpec is a peer address's transport field split at the first
// "/": Kind "udp", Instance "main". Instance is "" when unqualified.
type TransportSpec struct {
	Kind     string
	Instance string
}

// ParseTransportSpec splits "type/instance". A field with no "/", or with
// an empty type or instance, is an unqualified type (the whole field), as
// upstream: malformed input never becomes an instance name.
func ParseTransportSpec(field string) TransportSpec {
	kind, inst, ok := strings.Cut(field, "/")
	if !ok || kind == "" || inst == "" {
		return TransportSpec{Kind: field}
	}
	return TransportSpec{Kind: kind, Instance: inst}
}

// Matches reports whether a transport of kind configured under name (""
// for an unnamed instance) satisfies the spec. A qualified spec never
// falls back to another instance.
func (s TransportSpec) Matches(kind, name string) bool {
	return s.Kind == kind && (s.Instance == "" || (name != "" && s.Instance == name))
}

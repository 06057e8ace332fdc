package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/logging"
)

// Names of what NAT installs, upstream's.
const (
	TableName         = "fips_gateway"
	PreroutingChain   = "prerouting"
	PostroutingChain  = "postrouting"
	meshInterfaceName = "fips0"
)

// ErrRuleNotFound is returned by RemoveMapping for an address with no
// rules.
var ErrRuleNotFound = errors.New("rule not found for virtual IP")

// Forward is one inbound port forward: fips0:ListenPort/Proto → Target.
type Forward struct {
	ListenPort uint16
	Proto      config.Proto
	Target     netip.AddrPort
}

// ForwardsFromConfig converts gateway.port_forwards (already validated).
func ForwardsFromConfig(pfs []config.PortForward) ([]Forward, error) {
	out := make([]Forward, 0, len(pfs))
	for _, pf := range pfs {
		ap, err := pf.Target.AddrPort()
		if err != nil {
			return nil, fmt.Errorf("gateway.port_forwards target %q: %w", pf.Target, err)
		}
		out = append(out, Forward{ListenPort: pf.ListenPort, Proto: pf.Proto, Target: ap})
	}
	return out, nil
}

// NAT owns the inet fips_gateway table. Every change rebuilds the whole
// table in one netlink batch (add, delete, add again with its chains and
// rules), so the table is never seen half-built and a table left by a
// crashed run is replaced, not added to.
type NAT struct {
	conn     *nftables.Conn
	lan      string
	mappings map[netip.Addr]netip.Addr // virtual → mesh
	forwards []Forward
	log      *slog.Logger
}

// NewNAT creates the table with its two NAT chains and the fips0
// masquerade rule.
func NewNAT(lanInterface string, log *slog.Logger) (*NAT, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("nftables error: %w", err)
	}
	n := &NAT{conn: c, lan: lanInterface, mappings: make(map[netip.Addr]netip.Addr),
		log: logging.WithTarget(log, "fips::gateway::nat")}
	if err := n.rebuild(); err != nil {
		return nil, err
	}
	n.log.Info("Created nftables table '" + TableName + "' with NAT chains and fips0 masquerade")
	return n, nil
}

// SetPortForwards installs the inbound port forwards.
func (n *NAT) SetPortForwards(f []Forward) error {
	n.forwards = slices.Clone(f)
	if err := n.rebuild(); err != nil {
		return err
	}
	n.log.Info("Applied inbound port forwards", "count", len(n.forwards))
	return nil
}

// AddMapping installs DNAT virtual → mesh and SNAT mesh → virtual.
func (n *NAT) AddMapping(virtualIP, meshAddr netip.Addr) error {
	n.mappings[virtualIP] = meshAddr
	if err := n.rebuild(); err != nil {
		return err
	}
	n.log.Debug("Added DNAT/SNAT rules", "virtual_ip", virtualIP, "mesh_addr", meshAddr)
	return nil
}

// RemoveMapping removes a virtual address's rules.
func (n *NAT) RemoveMapping(virtualIP netip.Addr) error {
	if _, ok := n.mappings[virtualIP]; !ok {
		return fmt.Errorf("%w %s", ErrRuleNotFound, virtualIP)
	}
	delete(n.mappings, virtualIP)
	if err := n.rebuild(); err != nil {
		return err
	}
	n.log.Debug("Removed DNAT/SNAT rules", "virtual_ip", virtualIP)
	return nil
}

// MappingCount is how many virtual addresses have rules.
func (n *NAT) MappingCount() int { return len(n.mappings) }

// Cleanup deletes the table and closes the netlink connection.
func (n *NAT) Cleanup() error {
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: TableName}
	n.conn.AddTable(t) // so the delete cannot fail on a table already gone
	n.conn.DelTable(t)
	err := n.conn.Flush()
	_ = n.conn.CloseLasting()
	if err != nil {
		return fmt.Errorf("nftables error: %w", err)
	}
	n.log.Info("Deleted nftables table '" + TableName + "'")
	return nil
}

func (n *NAT) rebuild() error {
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: TableName}
	n.conn.AddTable(t)
	n.conn.DelTable(t)
	n.conn.AddTable(t)
	pre := n.conn.AddChain(&nftables.Chain{Name: PreroutingChain, Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
	post := n.conn.AddChain(&nftables.Chain{Name: PostroutingChain, Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	rs := buildRules(n.lan, n.mappings, n.forwards)
	for _, e := range rs.pre {
		n.conn.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: e})
	}
	for _, e := range rs.post {
		n.conn.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: e})
	}
	if err := n.conn.Flush(); err != nil {
		return fmt.Errorf("nftables error: %w", err)
	}
	return nil
}

type ruleSet struct{ pre, post [][]expr.Any }

// buildRules is upstream's rule set, in its order:
//
//	postrouting: oifname "fips0" masquerade
//	per mapping:  prerouting  ip6 daddr VIP dnat to MESH
//	              postrouting ip6 saddr MESH snat to VIP
//	per forward:  prerouting  iifname "fips0" meta l4proto P th dport LP dnat to [T]:TP
//	any forward:  postrouting iifname "fips0" oifname LAN masquerade
func buildRules(lan string, mappings map[netip.Addr]netip.Addr, forwards []Forward) ruleSet {
	var rs ruleSet
	rs.post = append(rs.post, cat(metaCmp(expr.MetaKeyOIFNAME, ifname(meshInterfaceName)), []expr.Any{&expr.Masq{}}))
	vips := make([]netip.Addr, 0, len(mappings))
	for v := range mappings {
		vips = append(vips, v)
	}
	slices.SortFunc(vips, netip.Addr.Compare)
	for _, v := range vips {
		m := mappings[v]
		rs.pre = append(rs.pre, nat6(expr.NATTypeDestNAT, 24, v, m))
		rs.post = append(rs.post, nat6(expr.NATTypeSourceNAT, 8, m, v))
	}
	for _, f := range forwards {
		proto := byte(unix.IPPROTO_TCP)
		if f.Proto == config.ProtoUDP {
			proto = unix.IPPROTO_UDP
		}
		lp := binary.BigEndian.AppendUint16(nil, f.ListenPort)
		tp := binary.BigEndian.AppendUint16(nil, f.Target.Port())
		ta := f.Target.Addr().WithZone("").As16()
		rs.pre = append(rs.pre, cat(
			metaCmp(expr.MetaKeyIIFNAME, ifname(meshInterfaceName)),
			metaCmp(expr.MetaKeyNFPROTO, []byte{unix.NFPROTO_IPV6}),
			metaCmp(expr.MetaKeyL4PROTO, []byte{proto}), []expr.Any{
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: lp},
				&expr.Immediate{Register: 1, Data: ta[:]},
				&expr.Immediate{Register: 2, Data: tp},
				&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV6, RegAddrMin: 1, RegProtoMin: 2},
			}))
	}
	if len(forwards) > 0 {
		rs.post = append(rs.post, cat(
			metaCmp(expr.MetaKeyIIFNAME, ifname(meshInterfaceName)),
			metaCmp(expr.MetaKeyOIFNAME, ifname(lan)),
			metaCmp(expr.MetaKeyNFPROTO, []byte{unix.NFPROTO_IPV6}),
			[]expr.Any{&expr.Masq{}}))
	}
	return rs
}

// nat6 is "meta nfproto ipv6, ip6 {saddr|daddr} == match, {s|d}nat to to".
func nat6(t expr.NATType, offset uint32, match, to netip.Addr) []expr.Any {
	m, a := match.As16(), to.As16()
	return cat(metaCmp(expr.MetaKeyNFPROTO, []byte{unix.NFPROTO_IPV6}), []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 16},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: m[:]},
		&expr.Immediate{Register: 1, Data: a[:]},
		&expr.NAT{Type: t, Family: unix.NFPROTO_IPV6, RegAddrMin: 1},
	})
}

// metaCmp is "meta KEY == data".
func metaCmp(k expr.MetaKey, data []byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: k, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data}}
}

func cat(parts ...[]expr.Any) []expr.Any { return slices.Concat(parts...) }

// ifname is an interface name as nftables compares it: NUL-terminated.
func ifname(s string) []byte { return append([]byte(s), 0) }

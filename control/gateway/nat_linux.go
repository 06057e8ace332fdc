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

// Names of the maps the mapping rules look addresses up in (fips-go's:
// upstream installs a DNAT and an SNAT rule per mapping).
const (
	DNATMap = "dnat_map" // virtual → mesh
	SNATMap = "snat_map" // mesh → virtual
)

// NAT owns the inet fips_gateway table. Building it (at start and for
// port forwards) replaces the whole table in one netlink batch (add,
// delete, add again with its chains, maps and rules), so the table is
// never seen half-built and a table left by a crashed run is replaced,
// not added to. A mapping is one element in each of two maps, added or
// deleted on its own: the cost of a mapping does not grow with the
// number installed, and a packet's lookup is a hash lookup, not a walk
// down a chain of one rule per mapping.
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
	if old, ok := n.mappings[virtualIP]; ok {
		if old == meshAddr {
			return nil
		}
		if err := n.RemoveMapping(virtualIP); err != nil {
			return err
		}
	}
	dn, sn := n.maps()
	_ = n.conn.SetAddElements(dn, []nftables.SetElement{element(virtualIP, meshAddr)})
	_ = n.conn.SetAddElements(sn, []nftables.SetElement{element(meshAddr, virtualIP)})
	if err := n.conn.Flush(); err != nil {
		return fmt.Errorf("nftables error: %w", err)
	}
	n.mappings[virtualIP] = meshAddr
	n.log.Debug("Added DNAT/SNAT rules", "virtual_ip", virtualIP, "mesh_addr", meshAddr)
	return nil
}

// RemoveMapping removes a virtual address's rules.
func (n *NAT) RemoveMapping(virtualIP netip.Addr) error {
	meshAddr, ok := n.mappings[virtualIP]
	if !ok {
		return fmt.Errorf("%w %s", ErrRuleNotFound, virtualIP)
	}
	dn, sn := n.maps()
	_ = n.conn.SetDeleteElements(dn, []nftables.SetElement{{Key: as16(virtualIP)}})
	_ = n.conn.SetDeleteElements(sn, []nftables.SetElement{{Key: as16(meshAddr)}})
	if err := n.conn.Flush(); err != nil {
		return fmt.Errorf("nftables error: %w", err)
	}
	delete(n.mappings, virtualIP)
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

// maps are the two mapping maps, as set operations name them.
func (n *NAT) maps() (dnat, snat *nftables.Set) {
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: TableName}
	return &nftables.Set{Table: t, Name: DNATMap, IsMap: true, KeyType: nftables.TypeIP6Addr, DataType: nftables.TypeIP6Addr},
		&nftables.Set{Table: t, Name: SNATMap, IsMap: true, KeyType: nftables.TypeIP6Addr, DataType: nftables.TypeIP6Addr}
}

func as16(a netip.Addr) []byte { b := a.As16(); return b[:] }

func element(key, val netip.Addr) nftables.SetElement {
	return nftables.SetElement{Key: as16(key), Val: as16(val)}
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
	dn, sn := n.maps()
	var de, se []nftables.SetElement
	for v, m := range n.mappings {
		de, se = append(de, element(v, m)), append(se, element(m, v))
	}
	if err := n.conn.AddSet(dn, de); err != nil {
		return fmt.Errorf("nftables error: %w", err)
	}
	if err := n.conn.AddSet(sn, se); err != nil {
		return fmt.Errorf("nftables error: %w", err)
	}
	rs := buildRules(n.lan, dn, sn, n.forwards)
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

// buildRules is upstream's rule set, in its order, with the mappings'
// rules folded into one map lookup each:
//
//	postrouting: oifname "fips0" masquerade
//	mappings:     prerouting  dnat ip6 to ip6 daddr map @dnat_map
//	              postrouting snat ip6 to ip6 saddr map @snat_map
//	per forward:  prerouting  iifname "fips0" meta l4proto P th dport LP dnat to [T]:TP
//	any forward:  postrouting iifname "fips0" oifname LAN masquerade
func buildRules(lan string, dnat, snat *nftables.Set, forwards []Forward) ruleSet {
	var rs ruleSet
	rs.post = append(rs.post, cat(metaCmp(expr.MetaKeyOIFNAME, ifname(meshInterfaceName)), []expr.Any{&expr.Masq{}}))
	rs.pre = append(rs.pre, natMap6(expr.NATTypeDestNAT, 24, dnat))
	rs.post = append(rs.post, natMap6(expr.NATTypeSourceNAT, 8, snat))
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

// natMap6 is "meta nfproto ipv6, {s|d}nat ip6 to ip6 {saddr|daddr} map
// @m": an address not in the map does not match.
func natMap6(t expr.NATType, offset uint32, m *nftables.Set) []expr.Any {
	return cat(metaCmp(expr.MetaKeyNFPROTO, []byte{unix.NFPROTO_IPV6}), []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 16},
		&expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true, SetName: m.Name, SetID: m.ID},
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

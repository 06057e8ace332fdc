package gateway

import (
	"bufio"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/fips-go/fips/control/config"
)

// The rule set is upstream's, the mappings' rules folded into two map
// lookups: fips0 masquerade first, the DNAT and SNAT map rules, a DNAT
// per forward and the LAN masquerade once there is any forward.
func TestBuildRules(t *testing.T) {
	n := &NAT{}
	dn, sn := n.maps()
	rs := buildRules("lan0", dn, sn, nil)
	if len(rs.pre) != 1 || len(rs.post) != 2 {
		t.Fatalf("empty gateway: %d pre, %d post, want 1 and 2", len(rs.pre), len(rs.post))
	}
	if _, ok := rs.post[0][2].(*expr.Masq); !ok || string(rs.post[0][1].(*expr.Cmp).Data) != "fips0\x00" {
		t.Fatalf("masquerade rule %v", rs.post[0])
	}
	fw := []Forward{{ListenPort: 18080, Proto: config.ProtoTCP, Target: netip.MustParseAddrPort("[fd02::20]:8080")},
		{ListenPort: 18081, Proto: config.ProtoUDP, Target: netip.MustParseAddrPort("[fd02::20]:8081")}}
	rs = buildRules("lan0", dn, sn, fw)
	if len(rs.pre) != 3 || len(rs.post) != 3 {
		t.Fatalf("%d pre, %d post, want 3 and 3", len(rs.pre), len(rs.post))
	}
	dnat := rs.pre[0]
	if p := dnat[2].(*expr.Payload); p.Offset != 24 || p.Len != 16 || p.Base != expr.PayloadBaseNetworkHeader {
		t.Fatalf("DNAT matches %+v, want ip6 daddr", p)
	}
	if l := dnat[3].(*expr.Lookup); l.SetName != DNATMap || !l.IsDestRegSet || l.DestRegister != 1 {
		t.Fatalf("DNAT lookup %+v", l)
	}
	if n := dnat[4].(*expr.NAT); n.Type != expr.NATTypeDestNAT || n.Family != unix.NFPROTO_IPV6 {
		t.Fatalf("DNAT %+v", n)
	}
	snat := rs.post[1]
	if p := snat[2].(*expr.Payload); p.Offset != 8 {
		t.Fatalf("SNAT matches offset %d, want ip6 saddr", p.Offset)
	}
	if l := snat[3].(*expr.Lookup); l.SetName != SNATMap {
		t.Fatalf("SNAT lookup %+v", l)
	}
	if n := snat[4].(*expr.NAT); n.Type != expr.NATTypeSourceNAT {
		t.Fatalf("SNAT %+v", n)
	}
	udp := rs.pre[2]
	if c := udp[5].(*expr.Cmp); c.Data[0] != unix.IPPROTO_UDP {
		t.Fatalf("forward proto %v", c.Data)
	}
	if c := udp[7].(*expr.Cmp); c.Data[0] != 18081>>8 || c.Data[1] != 18081&0xff {
		t.Fatalf("forward dport %v", c.Data)
	}
	if im := udp[9].(*expr.Immediate); im.Data[0] != 8081>>8 || im.Data[1] != 8081&0xff {
		t.Fatalf("forward target port %v", im.Data)
	}
	if n := udp[10].(*expr.NAT); n.RegProtoMin != 2 || n.RegAddrMin != 1 {
		t.Fatalf("forward NAT %+v", n)
	}
	lm := rs.post[2]
	if string(lm[3].(*expr.Cmp).Data) != "lan0\x00" {
		t.Fatalf("LAN masquerade oifname %q", lm[3].(*expr.Cmp).Data)
	}
}

func TestConntrackCount(t *testing.T) {
	// The kernel's format: IPv6 addresses uncompressed.
	table := `ipv6     10 tcp      6 431999 ESTABLISHED src=fd02:0000:0000:0000:0000:0000:0000:0020 dst=fd01:0000:0000:0000:0000:0000:0000:0001 sport=5 dport=80 src=fd12:0000:0000:0000:0000:0000:0000:0001 dst=fd00:0000:0000:0000:0000:0000:0000:0009 sport=80 dport=5 [ASSURED] mark=0 zone=0 use=2
ipv6     10 udp      17 29 src=fd02:0000:0000:0000:0000:0000:0000:0020 dst=fd01:0000:0000:0000:0000:0000:0000:0010 sport=5 dport=53 src=fd12:0000:0000:0000:0000:0000:0000:0002 dst=fd00:0000:0000:0000:0000:0000:0000:0009 sport=53 dport=5 mark=0 zone=0 use=2
ipv6     10 icmpv6   58 29 src=fd02:0000:0000:0000:0000:0000:0000:0020 dst=fd01:0000:0000:0000:0000:0000:0000:0001 type=128 code=0 id=7 src=fd12:0000:0000:0000:0000:0000:0000:0001 dst=fd00:0000:0000:0000:0000:0000:0000:0009 type=129 code=0 id=7 mark=0 zone=0 use=2
ipv4     2 udp      17 29 src=10.0.0.1 dst=10.0.0.2 sport=5 dport=53 src=10.0.0.2 dst=10.0.0.1 sport=53 dport=5 mark=0 zone=0 use=2
garbage dst= dst=zz
`
	n, err := countDst(bufio.NewScanner(strings.NewReader(table)), netip.MustParseAddr("fd01::1"))
	if err != nil || n != 2 {
		t.Fatalf("count %d %v, want 2 (fd01::10 is not fd01::1)", n, err)
	}
}

// FuzzConntrackCount: any table text counts at most one session per line
// and never panics.
func FuzzConntrackCount(f *testing.F) {
	f.Add("ipv6 10 tcp 6 1 ESTABLISHED src=fd02:0000:0000:0000:0000:0000:0000:0020 dst=fd01:0000:0000:0000:0000:0000:0000:0001\n")
	f.Add("dst=\ndst=fd01::1 dst=fd01::1\n")
	vip := netip.MustParseAddr("fd01::1")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := countDst(bufio.NewScanner(strings.NewReader(s)), vip)
		if err == nil && int(n) > strings.Count(s, "\n")+1 {
			t.Fatalf("%d sessions from %d lines", n, strings.Count(s, "\n")+1)
		}
	})
}

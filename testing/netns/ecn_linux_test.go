//go:build linux

package netns

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// tcPackets is the tc programs' counter for direction/reason on n.
func (v bpfView) tcPackets(dir, reason string) uint64 {
	for _, c := range v.TCCounters {
		if c.Direction == dir && c.Reason == reason {
			return c.Packets
		}
	}
	return 0
}

// nftCounters reads the packet counters of the commented rules in
// table/chain of node's namespace (nft -j), by comment.
func nftCounters(t *testing.T, m *Mesh, node, family, table, chain string) map[string]uint64 {
	t.Helper()
	out, err := m.Exec(node, "nft", "-j", "list", "chain", family, table, chain)
	if err != nil {
		t.Fatalf("nft list chain on %s: %v\n%s", node, err, out)
	}
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Comment string           `json:"comment"`
				Expr    []map[string]any `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("nft -j: %v\n%s", err, out)
	}
	got := map[string]uint64{}
	for _, e := range doc.Nftables {
		if e.Rule == nil || e.Rule.Comment == "" {
			continue
		}
		for _, x := range e.Rule.Expr {
			if c, ok := x["counter"].(map[string]any); ok {
				p, _ := c["packets"].(float64)
				got[e.Rule.Comment] = uint64(p)
			}
		}
	}
	return got
}

// linkCE is the ecn_ce_count in n's show_mmp for the peer peer: the CE
// count peer last reported on n's frames.
func linkCE(t *testing.T, n, peer *Node) (uint64, bool) {
	t.Helper()
	var v struct {
		Peers []struct {
			Peer      string `json:"peer"`
			LinkLayer struct {
				ECNCECount uint64 `json:"ecn_ce_count"`
			} `json:"link_layer"`
		} `json:"peers"`
	}
	if err := n.Call("show_mmp", nil, &v); err != nil {
		t.Fatal(err)
	}
	for _, p := range v.Peers {
		if p.Peer == peer.NodeAddr() {
			return p.LinkLayer.ECNCECount, true
		}
	}
	return 0, false
}

// TestTCECN: with the tc programs attached beside XDP on the chain
// A—B—C, A's outgoing FIPS datagrams carry ECT(0) on the wire (counted
// by nft on B, not by our programs); then, with A's output marking its
// FIPS datagrams CE before tc (a congested queue), A's egress program
// keeps the CE, B's ingress program counts it, B's socket reads it and
// handles the frames as FMP CE: B's receiver reports tell A about them
// (A's ecn_ce_count for B), and B relays CE on to C (B's ecn_ce_count
// for C), while the pings keep passing (the header was not touched).
func TestTCECN(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab := m.Link(a, b)
	m.Link(b, c)
	for _, n := range []*Node{a, b, c} {
		n.ExtraConfig = "dataplane: { mode: xdp }\n"
	}
	port := m.opts.Port
	if port == 0 {
		port = 2121
	}
	match := fmt.Sprintf("ip saddr %s ip daddr %s udp dport %d", ab.AddrA, ab.AddrB, port)
	for _, rule := range []string{
		"add table inet fipsecn",
		"add chain inet fipsecn in { type filter hook input priority 0; }",
		"add rule inet fipsecn in " + match + " ip ecn not-ect counter comment \"not-ect\"",
		"add rule inet fipsecn in " + match + " ip ecn ect0 counter comment \"ect0\"",
		"add rule inet fipsecn in " + match + " ip ecn ect1 counter comment \"ect1\"",
		"add rule inet fipsecn in " + match + " ip ecn ce counter comment \"ce\"",
	} {
		if out, err := m.Exec("b", append([]string{"nft"}, strings.Fields(rule)...)...); err != nil {
			t.Fatalf("nft %s: %v\n%s", rule, err, out)
		}
	}
	m.Start()
	m.WaitConverged(30 * time.Second)

	for _, n := range []*Node{a, b, c} {
		dp := dataplaneOf(t, n)
		if !dp.TC.Attached || len(dp.TC.Interfaces) == 0 {
			t.Fatalf("%s: tc programs not attached: %+v\n%s", n.Name, dp.TC, tail(n.Logs(), 20))
		}
		for _, i := range dp.TC.Interfaces {
			if i.AttachMode != "tcx" || i.EgressID == 0 || i.IngressID == 0 {
				t.Errorf("%s: tc on %+v, want tcx with program ids", n.Name, i)
			}
		}
	}
	t.Logf("a: %s", dataplaneOf(t, a).TC.Reason)

	addr := resolve(t, m, a, c)
	waitReply(t, m, a, addr, 20*time.Second)
	ping := func(count int) {
		t.Helper()
		out, err := m.Exec("a", "ping", "-6", "-c", fmt.Sprint(count), "-i", "0.1", "-W", "2", addr)
		if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d received", count)) {
			t.Fatalf("ping6 A→C: %v\n%s", err, out)
		}
	}
	ping(10)
	wire := nftCounters(t, m, "b", "inet", "fipsecn", "in")
	sa, sb := bpfStats(t, m, a), bpfStats(t, m, b)
	t.Logf("on the wire A→B (nft on b): %v; a egress marked %d, kept %d; b ingress ect %d, not_ect %d, ce %d",
		wire, sa.tcPackets("egress", "marked"), sa.tcPackets("egress", "ecn_kept"),
		sb.tcPackets("ingress", "ect"), sb.tcPackets("ingress", "not_ect"), sb.tcPackets("ingress", "ce"))
	if wire["ect0"] < 10 || wire["not-ect"] != 0 || wire["ect1"] != 0 || wire["ce"] != 0 {
		t.Errorf("FIPS datagrams A→B on the wire: %v, want all ECT(0)", wire)
	}
	// The programs count skbs: a GSO or GRO aggregate is one, so their
	// counts need not equal the wire's datagrams.
	if sa.tcPackets("egress", "marked") == 0 || sb.tcPackets("ingress", "ect") == 0 || sb.tcPackets("ingress", "not_ect") != 0 {
		t.Errorf("tc counters: a marked %d, b ingress ect %d; the wire saw %d ECT(0)",
			sa.tcPackets("egress", "marked"), sb.tcPackets("ingress", "ect"), wire["ect0"])
	}
	if n := dataplaneOf(t, b).OuterCE; n != 0 {
		t.Errorf("b counted %d outer-CE frames before any CE", n)
	}
	ceAB0, _ := linkCE(t, a, b)
	ceBC0, _ := linkCE(t, b, c)

	// Congestion on A's side: its output marks FIPS datagrams to B CE.
	for _, rule := range []string{
		"add table ip fipsce",
		"add chain ip fipsce out { type filter hook output priority 0; }",
		fmt.Sprintf("add rule ip fipsce out ip daddr %s udp sport %d ip ecn set ce counter", ab.AddrB, port),
	} {
		if out, err := m.Exec("a", append([]string{"nft"}, strings.Fields(rule)...)...); err != nil {
			t.Fatalf("nft %s: %v\n%s", rule, err, out)
		}
	}
	ping(20)
	wire1 := nftCounters(t, m, "b", "inet", "fipsecn", "in")
	sa1, sb1 := bpfStats(t, m, a), bpfStats(t, m, b)
	outer := dataplaneOf(t, b).OuterCE
	t.Logf("with CE: wire %v; a egress kept %d; b ingress ce %d; b outer_ce_frames %d",
		wire1, sa1.tcPackets("egress", "ecn_kept")-sa.tcPackets("egress", "ecn_kept"),
		sb1.tcPackets("ingress", "ce")-sb.tcPackets("ingress", "ce"), outer)
	ceOnWire := wire1["ce"] - wire["ce"]
	if ceOnWire < 20 {
		t.Fatalf("only %d CE datagrams reached b", ceOnWire)
	}
	if d := sa1.tcPackets("egress", "ecn_kept") - sa.tcPackets("egress", "ecn_kept"); d == 0 || d > ceOnWire {
		t.Errorf("a's egress program kept %d CE datagrams, the wire saw %d", d, ceOnWire)
	}
	if d := sb1.tcPackets("ingress", "ce") - sb.tcPackets("ingress", "ce"); d == 0 || d > ceOnWire {
		t.Errorf("b's ingress program counted %d CE, the wire saw %d", d, ceOnWire)
	}
	if outer < 20 {
		t.Errorf("b handled %d frames as outer CE, want ≥ 20 (the pings)", outer)
	}
	// B's receiver reports carry the CE count to A; B's relayed frames
	// carry FMP CE to C, whose reports tell B.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ceAB, okAB := linkCE(t, a, b)
		ceBC, okBC := linkCE(t, b, c)
		if okAB && okBC && ceAB > ceAB0 && ceBC > ceBC0 {
			t.Logf("ecn_ce_count: a's for b %d → %d, b's for c %d → %d", ceAB0, ceAB, ceBC0, ceBC)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ecn_ce_count did not rise: a's for b %d → %d, b's for c %d → %d", ceAB0, ceAB, ceBC0, ceBC)
		}
		ping(2)
	}
	table, err := m.Fipsctl("b", "bpf", "stats")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fipsctl bpf stats on b:\n%s", table)
}

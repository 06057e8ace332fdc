//go:build linux

package netns

import (
	"fmt"
	"regexp"
	"testing"
	"time"
)

var ptbMTU1023 = regexp.MustCompile(`(?i)packet too big.*mtu[:=] ?1023`)

// TestEthernetPacketTooBig: a line a–b–c over Ethernet only, the b–c
// instances configured with mtu 1100 (the veths' 1500 leaves a–b at
// 1497). c's mesh IPv6 MTU is 1100 − 77 = 1023, so `ping -s 1100 -M do`
// from c gets Packet Too Big with mtu 1023 at once; a's own is 1420, and
// its path to c shrinks to 1023 across the small hop: a's oversize pings
// to c end in Packet Too Big with mtu 1023, and pings that fit get
// through both ways.
func TestEthernetPacketTooBig(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	ab, bc := m.Link(a, b), m.Link(b, c)
	inst := func(name, iface, extra string) string {
		return fmt.Sprintf("    %s: { interface: %s, accept_connections: true%s }\n", name, iface, extra)
	}
	startConfigured(t, a, "  ethernet:\n"+inst("ab", ab.IfA, ""), peerEntry(b, "ethernet", ab.IfA+"/"+LinkMAC(ab.Index, true))+"\n")
	startConfigured(t, b, "  ethernet:\n"+inst("ab", ab.IfB, "")+inst("bc", bc.IfA, ", mtu: 1100"),
		peerEntry(a, "ethernet", ab.IfB+"/"+LinkMAC(ab.Index, false))+peerEntry(c, "ethernet", bc.IfA+"/"+LinkMAC(bc.Index, true))+"\n")
	startConfigured(t, c, "  ethernet:\n"+inst("bc", bc.IfB, ", mtu: 1100"), peerEntry(b, "ethernet", bc.IfB+"/"+LinkMAC(bc.Index, false))+"\n")
	m.WaitConverged(30 * time.Second)

	var ts struct {
		Transports []struct {
			Name string `json:"name"`
			MTU  int    `json:"mtu"`
		} `json:"transports"`
	}
	if err := b.Call("show_transports", nil, &ts); err != nil {
		t.Fatal(err)
	}
	mtus := map[string]int{}
	for _, tr := range ts.Transports {
		mtus[tr.Name] = tr.MTU
	}
	if mtus["ab"] != 1497 || mtus["bc"] != 1100 {
		t.Fatalf("b's transport MTUs %v, want ab 1497 and bc 1100", mtus)
	}

	cAddr, aAddr := resolve(t, m, a, c), resolve(t, m, c, a)
	waitReply(t, m, a, cAddr, 20*time.Second)
	waitReply(t, m, c, aAddr, 20*time.Second)

	// c: its only transport's MTU bounds the mesh MTU; 1100 + 48 bytes of
	// headers is over 1023.
	out, _ := m.Exec("c", "ping", "-6", "-c", "2", "-s", "1100", "-M", "do", "-W", "2", aAddr)
	if !ptbMTU1023.Match(out) {
		t.Errorf("c: no Packet Too Big with mtu 1023:\n%s", out)
	}

	// a: 1200 + 48 fits a's own 1420 but not the b–c hop; the path MTU
	// a learns for c shrinks to that hop's, and then a's kernel is told
	// 1023.
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, _ := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.3", "-s", "1200", "-M", "do", "-W", "1", cAddr)
		if ptbMTU1023.Match(out) {
			t.Logf("a → c, ping -s 1200 -M do:\n%s", firstLines(string(out), 4))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a: no Packet Too Big with mtu 1023 for c after 20 s:\n%s\nB:\n%s", out, tail(b.Logs(), 30))
		}
	}
	// What fits the path's MTU (900 + 48 ≤ 1023) gets through both ways.
	for _, e := range [][2]*Node{{a, c}, {c, a}} {
		if n := pingCount(t, m, e[0], e[1].IPv6(), 5, "-s", "900", "-M", "do"); n < 4 {
			t.Errorf("%s → %s, 948-byte packets: %d of 5 answered", e[0].Name, e[1].Name, n)
		}
	}
}

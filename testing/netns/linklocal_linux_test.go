//go:build linux

package netns

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLinkLocalPeers is issue 24's item 5: nodes whose veths carry
// nothing but the IPv6 link-local addresses the kernel gives them. A is
// configured with B as a static peer at [fe80::…%<A's veth>]:port, B with
// no peers, so B learns A's address from A's packets alone: the link
// comes up only if received datagrams keep their sin6_scope_id and sends
// set it. Then sessions and ping6 by .fips name, both ways. Over UDP (the
// batched recvmmsg/sendmmsg path every Linux node runs) and over TCP; and
// over UDP with a third node C, also configured with B at its link-local
// address, and B the relay between A and C in dataplane mode xdp with
// AF_XDP sockets: what B forwards arrives on them and leaves from their
// TX rings, to link-local destinations.
func TestLinkLocalPeers(t *testing.T) {
	for _, c := range []struct {
		name, tr string
		relay    bool
	}{
		{"udp", "udp", false},
		{"udp-afxdp-relay", "udp", true},
		{"tcp", "tcp", false},
	} {
		t.Run(c.name, func(t *testing.T) { linkLocalPeers(t, c.tr, c.relay) })
	}
}

// llLink is a veth link with nothing but its link-local addresses.
type llLink struct {
	*Link
	llA, llB   string // the ends' link-local addresses
	idxA, idxB int    // the ends' interface indexes
}

func linkLocalPeers(t *testing.T, tr string, relay bool) {
	const port = 2121
	m := New(t, Options{IPv6: true})
	a, b := m.AddNode("a"), m.AddNode("b")
	var c *Node
	if relay {
		c = m.AddNode("c")
	}
	// Each node gets a second link with an fe80::/64 route (a spare veth
	// pair, up), so an address without its interface is ambiguous, as on
	// any host with a LAN and a Wi-Fi; b's comes before its links, so the
	// two ends' indexes differ and each side must use its own.
	spare := func(n *Node) {
		x0, x1 := m.Prefix+"x0", m.Prefix+"x1"
		for _, args := range [][]string{
			{"link", "add", x0, "type", "veth", "peer", "name", x1},
			{"link", "set", x0, "up"},
			{"link", "set", x1, "up"},
		} {
			if out, err := ipCmd(append([]string{"-n", n.NS}, args...)...); err != nil {
				t.Fatalf("%s: spare veth: ip %s: %v\n%s", n.Name, strings.Join(args, " "), err, out)
			}
		}
	}
	spare(b)
	ab := linkLocalOnly(t, m, a, b)
	spare(a)
	// B's static address, as each spoke's operator writes it: by the
	// name of the spoke's interface.
	peers := map[*Node]string{
		a: fmt.Sprintf("peers:\n  - npub: %q\n    addresses:\n      - { transport: %s, addr: \"[%s%%%s]:%d\" }\n", b.Npub(), tr, ab.llB, ab.IfA, port),
		b: "peers: []\n",
	}
	// Each side's link is to the other's link-local address on its own
	// veth, shown as upstream shows a scoped address: the interface index.
	// The spoke that dialled in is at its own port (TCP: an ephemeral one).
	want := map[[2]*Node]string{
		{a, b}: fmt.Sprintf("[%s%%%d]:%d", ab.llB, ab.idxA, port),
		{b, a}: fmt.Sprintf("[%s%%%d]:", ab.llA, ab.idxB),
	}
	pings := [][2]*Node{{a, b}, {b, a}}
	if relay {
		cb := linkLocalOnly(t, m, c, b)
		peers[c] = fmt.Sprintf("peers:\n  - npub: %q\n    addresses:\n      - { transport: %s, addr: \"[%s%%%s]:%d\" }\n", b.Npub(), tr, cb.llB, cb.IfA, port)
		peers[b] += "dataplane: { mode: xdp, afxdp: true, afxdp_transmit: xsk }\n"
		want[[2]*Node{c, b}] = fmt.Sprintf("[%s%%%d]:%d", cb.llB, cb.idxA, port)
		want[[2]*Node{b, c}] = fmt.Sprintf("[%s%%%d]:", cb.llA, cb.idxB)
		pings = [][2]*Node{{a, c}, {c, a}}
	}
	for k := range want {
		if tr == "udp" && strings.HasSuffix(want[k], ":") {
			want[k] += fmt.Sprint(port)
		}
	}
	nodes := m.Nodes()
	for _, n := range nodes {
		cfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: %q }
  log_level: debug
transports:
  %s: { bind_addr: "[::]:%d" }
tun: { enabled: true, name: fips0, mtu: 1280 }
dns: { enabled: true, bind_addr: "::1", port: 5354 }
%s`, n.ID.Secret().Hex(), n.Socket, tr, port, peers[n])
		if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}

	linked := func() (bool, string) {
		var got strings.Builder
		ok := true
		for _, n := range nodes {
			var v peersView
			err := n.Call("show_peers", nil, &v)
			fmt.Fprintf(&got, "%s: %v %s\n", n.Name, err, v.raw())
			for k, addr := range want {
				ok = ok && err == nil && (k[0] != n || v.has(k[1], addr))
			}
		}
		return ok, got.String()
	}
	start := time.Now()
	for deadline := start.Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ok, got := linked()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, n := range nodes {
				fmt.Fprintf(&logs, "--- %s ---\n%s", n.Name, tail(n.Logs(), 40))
			}
			t.Fatalf("no links over link-local addresses after 30 s; want %v, show_peers:\n%s%s", want, got, logs.String())
		}
	}
	t.Logf("linked after %v, converged (tree and filters) after %v", time.Since(start).Round(time.Millisecond),
		m.WaitConvergedSince(start, 30*time.Second).Round(time.Millisecond))
	var links struct {
		Links []struct {
			RemoteAddr string `json:"remote_addr"`
		} `json:"links"`
	}
	if err := a.Call("show_links", nil, &links); err != nil || len(links.Links) != 1 || links.Links[0].RemoteAddr != want[[2]*Node{a, b}] {
		t.Errorf("a's show_links: %v %+v, want one link to %s", err, links.Links, want[[2]*Node{a, b}])
	}

	// Sessions both ways, each started from its own side, by name.
	for _, p := range pings {
		waitReply(t, m, p[0], p[1].Npub()+".fips", 20*time.Second)
	}
	for _, p := range pings {
		out, err := m.Exec(p[0].Name, "ping", "-6", "-c", "5", "-i", "0.2", "-W", "2", p[1].Npub()+".fips")
		if err != nil || !strings.Contains(string(out), " 5 received") || !strings.Contains(string(out), p[1].IPv6()) {
			t.Fatalf("ping -6 %s.fips from %s: %v\n%s", p[1].Name, p[0].Name, err, out)
		}
	}
	// Nothing was sent with a scope the kernel refused, and no peer
	// "roamed" to its own address without the interface.
	for _, n := range nodes {
		if logs := n.Logs(); strings.Contains(logs, "invalid argument") || strings.Contains(logs, "peer roamed") {
			t.Errorf("%s: a send refused or a peer roamed:\n%s", n.Name, tail(logs, 40))
		}
	}
	if ok, got := linked(); !ok {
		t.Errorf("links after the pings: want %v, show_peers:\n%s", want, got)
	}
	if relay {
		st := bpfStats(t, m, b)
		var rx uint64
		for _, x := range st.XSKs {
			rx += x.Received
		}
		tx := st.XSKTx
		if rx == 0 || tx.Frames == 0 {
			t.Errorf("b's AF_XDP sockets received %d frames and sent %+v:\n%s", rx, tx, tail(b.Logs(), 30))
		}
		t.Logf("b: %d frames received on its AF_XDP sockets; %d sealed into their TX rings, %d sent through the UDP socket (no route)", rx, tx.Frames, tx.FallbackNoRoute)
	}
}

// linkLocalOnly links x and y with a veth that keeps only its link-local
// addresses (the link's IPv4 /30 is removed).
func linkLocalOnly(t *testing.T, m *Mesh, x, y *Node) llLink {
	t.Helper()
	l := llLink{Link: m.Link(x, y)}
	for _, e := range []struct {
		n         *Node
		dev, addr string
	}{{x, l.IfA, l.AddrA}, {y, l.IfB, l.AddrB}} {
		if out, err := ipCmd("-n", e.n.NS, "addr", "del", e.addr+"/30", "dev", e.dev); err != nil {
			t.Fatalf("%s: %v\n%s", e.n.Name, err, out)
		}
	}
	l.llA, l.idxA = linkLocal(t, x, l.IfA)
	l.llB, l.idxB = linkLocal(t, y, l.IfB)
	t.Logf("%s: %s%%%s (index %d), %s: %s%%%s (index %d)", x.Name, l.llA, l.IfA, l.idxA, y.Name, l.llB, l.IfB, l.idxB)
	return l
}

// peersView is show_peers, as far as this test reads it.
type peersView struct {
	Peers []struct {
		Npub          string `json:"npub"`
		TransportAddr string `json:"transport_addr"`
	} `json:"peers"`
}

// has reports whether n is a peer at an address starting with addr.
func (v peersView) has(n *Node, addr string) bool {
	for _, p := range v.Peers {
		if p.Npub == n.Npub() {
			return strings.HasPrefix(p.TransportAddr, addr)
		}
	}
	return false
}

func (v peersView) raw() string {
	b, _ := json.Marshal(v)
	return string(b)
}

// linkLocal waits for dev's link-local address in n to finish duplicate
// address detection (polling: DAD takes about a second) and returns it
// and dev's index. It fails if dev has any other address.
func linkLocal(t *testing.T, n *Node, dev string) (string, int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, err := ipCmd("-n", n.NS, "-j", "addr", "show", "dev", dev)
		if err != nil {
			t.Fatalf("%s: ip addr show %s: %v\n%s", n.Name, dev, err, out)
		}
		var ifs []struct {
			Ifindex  int `json:"ifindex"`
			AddrInfo []struct {
				Family    string `json:"family"`
				Local     string `json:"local"`
				Scope     string `json:"scope"`
				Tentative bool   `json:"tentative"`
				DADFailed bool   `json:"dadfailed"`
			} `json:"addr_info"`
		}
		if err := json.Unmarshal(out, &ifs); err != nil || len(ifs) != 1 {
			t.Fatalf("%s: ip -j addr show %s: %v\n%s", n.Name, dev, err, out)
		}
		var ll string
		ready := true
		for _, ai := range ifs[0].AddrInfo {
			if ai.Family != "inet6" || ai.Scope != "link" || !strings.HasPrefix(ai.Local, "fe80:") {
				t.Fatalf("%s: %s has %s %s (scope %s): the underlay must be link-local only", n.Name, dev, ai.Family, ai.Local, ai.Scope)
			}
			if ai.DADFailed {
				t.Fatalf("%s: %s failed duplicate address detection\n%s", n.Name, ai.Local, out)
			}
			ll, ready = ai.Local, ready && !ai.Tentative
		}
		if ll != "" && ready {
			return ll, ifs[0].Ifindex
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no usable link-local address on %s after 15 s\n%s", n.Name, dev, out)
		}
	}
}

//go:build linux

package netns

import (
	"strings"
	"testing"
	"time"
)

// linkPQOf is whether n's link to peer is post-quantum as show_peers and
// show_links say it, and n's link-layer pq_upgrades.
func linkPQOf(t *testing.T, n, peer *Node) (peers, links bool, upgrades uint64) {
	t.Helper()
	var sp struct {
		Peers []struct {
			NodeAddr    string `json:"node_addr"`
			LinkID      uint64 `json:"link_id"`
			PostQuantum bool   `json:"post_quantum"`
		} `json:"peers"`
	}
	if err := n.Call("show_peers", nil, &sp); err != nil {
		t.Fatal(err)
	}
	var link uint64
	for _, p := range sp.Peers {
		if p.NodeAddr == peer.NodeAddr() {
			peers, link = p.PostQuantum, p.LinkID
		}
	}
	var sl struct {
		Links []struct {
			LinkID      uint64 `json:"link_id"`
			PostQuantum *bool  `json:"post_quantum"`
		} `json:"links"`
	}
	if err := n.Call("show_links", nil, &sl); err != nil {
		t.Fatal(err)
	}
	for _, l := range sl.Links {
		if l.LinkID == link && l.PostQuantum != nil {
			links = *l.PostQuantum
		}
	}
	up, _ := linkPQCounters(t, n)
	return peers, links, up
}

// linkPQCounters are n's link-layer pq_upgrades and pq_fallbacks.
func linkPQCounters(t *testing.T, n *Node) (upgrades, fallbacks uint64) {
	t.Helper()
	var st struct {
		LinkLayer struct {
			PQUpgrades  uint64 `json:"pq_upgrades"`
			PQFallbacks uint64 `json:"pq_fallbacks"`
		} `json:"link_layer"`
	}
	if err := n.Call("show_status", nil, &st); err != nil {
		t.Fatal(err)
	}
	return st.LinkLayer.PQUpgrades, st.LinkLayer.PQFallbacks
}

// TestPQLinks: two daemons with node.link.pq required upgrade their link
// to ML-KEM-768 keys, ping6 each other by name over it, and say so in
// show_peers and show_links; against a classic daemon a required one
// tears the link down with one WARN line.
func TestPQLinks(t *testing.T) {
	t.Run("required both ends", func(t *testing.T) {
		m := New(t, Options{IPv6: true})
		a, b := m.AddNode("a"), m.AddNode("b")
		m.Link(a, b)
		a.NodeConfig = "  link: { pq: required, pq_timeout_ms: 3000 }\n"
		b.NodeConfig = a.NodeConfig
		m.Start()
		m.WaitConverged(30 * time.Second)
		addr := resolve(t, m, a, b)
		waitReply(t, m, a, addr, 20*time.Second)
		out, err := m.Exec("a", "ping", "-6", "-c", "10", "-i", "0.2", "-W", "2", b.Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "10 received") {
			t.Fatalf("ping6 by name: %v\n%s\n%s", err, out, a.Logs())
		}
		for _, e := range []struct{ n, peer *Node }{{a, b}, {b, a}} {
			peers, links, up := linkPQOf(t, e.n, e.peer)
			if !peers || !links || up == 0 {
				t.Errorf("%s: link to %s post_quantum: show_peers %v, show_links %v; pq_upgrades %d",
					e.n.Name, e.peer.Name, peers, links, up)
			}
			if n := strings.Count(e.n.Logs(), "Link upgraded to post-quantum keys (ML-KEM-768)"); n == 0 {
				t.Errorf("%s: no upgrade logged", e.n.Name)
			}
		}
	})
	t.Run("preferred falls back to a classic peer", func(t *testing.T) {
		m := New(t, Options{IPv6: true})
		a, b := m.AddNode("a"), m.AddNode("b")
		m.Link(a, b)
		a.NodeConfig = "  link: { pq: preferred, pq_timeout_ms: 1000 }\n"
		m.Start()
		m.WaitConverged(30 * time.Second)
		var fallbacks uint64
		for end := time.Now().Add(15 * time.Second); fallbacks == 0 && time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			_, fallbacks = linkPQCounters(t, a)
		}
		if fallbacks != 1 {
			t.Fatalf("a: link pq_fallbacks %d\n%s", fallbacks, tail(a.Logs(), 40))
		}
		out, err := m.Exec("a", "ping", "-6", "-c", "5", "-i", "0.2", "-W", "2", b.Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "5 received") {
			t.Fatalf("ping6 over the classical link: %v\n%s", err, out)
		}
		if peers, links, _ := linkPQOf(t, a, b); peers || links {
			t.Errorf("a shows a post-quantum link to a classic peer: show_peers %v, show_links %v", peers, links)
		}
		if n := strings.Count(a.Logs(), "Link stays classical: the peer did not upgrade to post-quantum keys"); n != 1 {
			t.Errorf("the fallback logged %d times, want once", n)
		}
	})
	t.Run("required refuses a classic peer", func(t *testing.T) {
		m := New(t, Options{IPv6: true})
		a, b := m.AddNode("a"), m.AddNode("b")
		m.Link(a, b)
		a.NodeConfig = "  link: { pq: required, pq_timeout_ms: 1000 }\n"
		m.Start()
		const line = "Link torn down: pq is required and the peer did not upgrade to post-quantum keys"
		end := time.Now().Add(20 * time.Second)
		for !strings.Contains(a.Logs(), line) && time.Now().Before(end) {
			time.Sleep(200 * time.Millisecond)
		}
		if !strings.Contains(a.Logs(), line) {
			t.Fatalf("a never refused the classic link:\n%s", tail(a.Logs(), 40))
		}
		for _, l := range strings.Split(a.Logs(), "\n") {
			if strings.Contains(l, line) {
				t.Logf("a: %s", l)
				break
			}
		}
		if peers, _, _ := linkPQOf(t, b, a); peers {
			t.Error("the classic node shows a post-quantum link")
		}
	})
}

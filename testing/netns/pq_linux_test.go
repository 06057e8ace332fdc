//go:build linux

package netns

import (
	"strings"
	"testing"
	"time"
)

// pqOf is what n says of its session with peer and of the session
// layer's post-quantum counters.
func pqOf(t *testing.T, n, peer *Node) (post bool, found bool, upgrades, fallbacks, refused uint64) {
	t.Helper()
	var s struct {
		Sessions []struct {
			RemoteAddr  string `json:"remote_addr"`
			PostQuantum *bool  `json:"post_quantum"`
		} `json:"sessions"`
	}
	if err := n.Call("show_sessions", nil, &s); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Sessions {
		if e.RemoteAddr == peer.NodeAddr() {
			found = true
			post = e.PostQuantum != nil && *e.PostQuantum
		}
	}
	var st struct {
		SessionLayer struct {
			PQUpgrades  uint64 `json:"pq_upgrades"`
			PQFallbacks uint64 `json:"pq_fallbacks"`
			PQRefused   uint64 `json:"pq_refused"`
		} `json:"session_layer"`
	}
	if err := n.Call("show_status", nil, &st); err != nil {
		t.Fatal(err)
	}
	return post, found, st.SessionLayer.PQUpgrades, st.SessionLayer.PQFallbacks, st.SessionLayer.PQRefused
}

// pqChain is A—B—C with the given node.session.pq at A and C; B, the
// relay, never has the option (a classic relay: fips-go's default, which
// handles the upgrade's messages as upstream does, as opaque session
// datagrams).
func pqChain(t *testing.T, pqA, pqC string) (m *Mesh, a, b, c *Node) {
	t.Helper()
	m = New(t, Options{IPv6: true})
	a, b, c = m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	if pqA != "" {
		a.NodeConfig = "  session: { pq: " + pqA + ", pq_timeout_ms: 3000 }\n"
	}
	if pqC != "" {
		c.NodeConfig = "  session: { pq: " + pqC + ", pq_timeout_ms: 3000 }\n"
	}
	m.Start()
	m.WaitConverged(30 * time.Second)
	return m, a, b, c
}

// TestPQSessionsThroughClassicRelay is issue 32's acceptance on real
// daemons: A and C with pq required carry ping6 by name and iperf3 over
// post-quantum sessions through B, which has no idea; with C classic, A
// preferred falls back and keeps the traffic, A required refuses with one
// line.
func TestPQSessionsThroughClassicRelay(t *testing.T) {
	t.Run("required both ends", func(t *testing.T) {
		m, a, _, c := pqChain(t, "required", "required")
		addr := resolve(t, m, a, c)
		waitReply(t, m, a, addr, 20*time.Second)
		out, err := m.Exec("a", "ping", "-6", "-c", "10", "-i", "0.2", "-W", "2", c.Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "10 received") {
			t.Fatalf("ping6 by name: %v\n%s\n%s", err, out, a.Logs())
		}
		defer IperfServer(t, m, c)()
		bps := iperf(t, m, "a", addr, 3)
		t.Logf("iperf3 A→C over a post-quantum session: %.0f Mbit/s", bps/1e6)
		if bps <= 0 {
			t.Fatal("iperf3 moved nothing")
		}
		for _, e := range []struct{ n, peer *Node }{{a, c}, {c, a}} {
			post, found, up, _, _ := pqOf(t, e.n, e.peer)
			if !found || !post || up == 0 {
				t.Errorf("%s: session with %s found %v, post_quantum %v, pq_upgrades %d", e.n.Name, e.peer.Name, found, post, up)
			}
		}
		if !strings.Contains(a.Logs()+c.Logs(), "Session upgraded to post-quantum keys (ML-KEM-768)") {
			t.Error("no upgrade logged")
		}
	})
	t.Run("preferred falls back to a classic peer", func(t *testing.T) {
		m, a, _, c := pqChain(t, "preferred", "")
		addr := resolve(t, m, a, c)
		waitReply(t, m, a, addr, 20*time.Second)
		var fallbacks uint64
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			if _, _, _, fallbacks, _ = pqOf(t, a, c); fallbacks > 0 {
				break
			}
		}
		post, found, _, _, _ := pqOf(t, a, c)
		if fallbacks == 0 || !found || post {
			t.Fatalf("a: pq_fallbacks %d, session found %v, post_quantum %v\n%s", fallbacks, found, post, a.Logs())
		}
		out, err := m.Exec("a", "ping", "-6", "-c", "5", "-i", "0.2", "-W", "2", c.Npub()+".fips")
		if err != nil || !strings.Contains(string(out), "5 received") {
			t.Fatalf("ping6 after the fallback: %v\n%s", err, out)
		}
		if n := strings.Count(a.Logs(), "Session stays classical: the peer did not upgrade to post-quantum keys"); n != 1 {
			t.Errorf("the fallback logged %d times, want once", n)
		}
	})
	t.Run("required refuses a classic peer", func(t *testing.T) {
		m, a, _, c := pqChain(t, "required", "")
		addr := resolve(t, m, a, c)
		// Echo requests start a session; nothing classical is delivered,
		// and the session is torn down when the upgrade times out.
		out, err := m.Exec("a", "ping", "-6", "-c", "8", "-i", "0.5", "-W", "1", addr)
		if err == nil || strings.Contains(string(out), " 0% packet loss") {
			t.Errorf("ping6 to a classic peer under pq required got through:\n%s", out)
		}
		var refused uint64
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			if _, _, _, _, refused = pqOf(t, a, c); refused > 0 {
				break
			}
		}
		const line = "Session torn down: pq is required and the peer did not upgrade to post-quantum keys"
		if refused == 0 || !strings.Contains(a.Logs(), line) {
			t.Fatalf("a: pq_refused %d, log:\n%s", refused, a.Logs())
		}
		for _, l := range strings.Split(a.Logs(), "\n") {
			if strings.Contains(l, line) {
				t.Logf("a: %s", l)
				break
			}
		}
	})
}

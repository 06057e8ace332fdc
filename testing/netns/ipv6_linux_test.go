//go:build linux

package netns

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestIPv6ChainNamesAndPing is issue 6's first scenario: a chain A—B—C
// with no A—C link, each daemon with its TUN fips0 and .fips DNS: inside
// A, `dig @::1 -p 5354 <npub of C>.fips AAAA` answers C's address, and
// `ping -6` to it by that answer gets 20 of 20 replies through B.
func TestIPv6ChainNamesAndPing(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	m.Start()
	took := m.WaitConverged(30 * time.Second)
	t.Logf("converged in %v", took.Round(time.Millisecond))

	out, err := m.Exec("a", "dig", "@::1", "-p", "5354", c.Npub()+".fips", "AAAA", "+short", "+time=2", "+tries=3")
	answer := strings.TrimSpace(string(out))
	if err != nil || answer != c.IPv6() {
		t.Fatalf("dig in a: %v %q, want %s\n%s", err, answer, c.IPv6(), m.Node("a").Logs())
	}
	t.Logf("dig %s.fips AAAA -> %s", c.Npub()[:16], answer)

	out, err = m.Exec("a", "ping", "-6", "-c", "20", "-i", "0.2", "-W", "2", answer)
	t.Logf("ping:\n%s", out)
	if err != nil || !strings.Contains(string(out), "20 received") {
		t.Fatalf("ping -6 %s from a: %v\nA:\n%s\nC:\n%s", answer, err, m.Node("a").Logs(), m.Node("c").Logs())
	}
	if rtt := regexp.MustCompile(`rtt min/avg/max/mdev = (\S+)`).FindStringSubmatch(string(out)); rtt != nil {
		t.Logf("ping RTT min/avg/max/mdev %s ms", rtt[1])
	}
	_ = b
}

// TestIPv6ChainTCPAndPacketTooBig: over the same kind of chain, iperf3
// TCP from A to C for 5 s, an HTTP fetch from a server bound on C's fips0
// address, and a don't-fragment ping that fits fips0's 1280-byte MTU but
// not the mesh's IPv6 MTU (1280 − 77 = 1203) answered by Packet Too Big
// with 1203. (A 1400-byte ping never reaches the adapter: the kernel
// refuses it locally against fips0's own MTU.)
func TestIPv6ChainTCPAndPacketTooBig(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b, c := m.AddNode("a"), m.AddNode("b"), m.AddNode("c")
	m.Link(a, b)
	m.Link(b, c)
	m.Start()
	m.WaitConverged(30 * time.Second)
	out, err := m.Exec("a", "dig", "@::1", "-p", "5354", c.Npub()+".fips", "AAAA", "+short", "+time=2", "+tries=3")
	addr := strings.TrimSpace(string(out))
	if err != nil || addr != c.IPv6() {
		t.Fatalf("dig: %v %q", err, addr)
	}

	// Packet Too Big: 1200 + 48 bytes of headers exceed the 1203-byte
	// IPv6 MTU; the kernel then remembers 1203 for this destination.
	out, _ = m.Exec("a", "ping", "-6", "-c", "2", "-s", "1200", "-M", "do", "-W", "2", addr)
	if !regexp.MustCompile(`(?i)(packet too big|message too long).*mtu[:=] ?1203`).Match(out) {
		t.Errorf("no Packet Too Big with mtu 1203:\n%s", out)
	}
	t.Logf("ping -s 1200 -M do:\n%s", firstLines(string(out), 4))

	// iperf3 server on C's mesh address, client in A for 5 s.
	defer m.Background("c", "iperf3", "-s", "-1", "-B", addr)()
	if !m.WaitListening("c", 5201, 10*time.Second) {
		t.Fatal("iperf3 server not listening")
	}
	res, err := m.Exec("a", "iperf3", "-c", addr, "-t", "5", "-J")
	if err != nil {
		t.Fatalf("iperf3: %v\n%s", err, res)
	}
	if bps := regexp.MustCompile(`"sum_received":\s*\{[^}]*"bits_per_second":\s*([0-9.e+]+)`).FindSubmatch(res); bps != nil {
		t.Logf("iperf3 TCP A→C over the mesh: %s bit/s received", bps[1])
	} else {
		t.Errorf("iperf3 output has no receive rate:\n%s", firstLines(string(res), 20))
	}

	// HTTP from A to a server bound on C's fips0 address.
	defer m.Background("c", "python3", "-m", "http.server", "8080", "--bind", addr, "--directory", t.TempDir())()
	if !m.WaitListening("c", 8080, 10*time.Second) {
		t.Fatal("HTTP server not listening")
	}
	out, err = m.Exec("a", "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "http://["+addr+"]:8080/")
	if err != nil || strings.TrimSpace(string(out)) != "200" {
		t.Fatalf("curl: %v %s", err, out)
	}
	_ = b
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

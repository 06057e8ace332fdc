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

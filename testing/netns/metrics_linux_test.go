//go:build linux

package netns

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fips-go/fips/control/metrics"
	"github.com/fips-go/fips/testing/daemons"
)

const metricsAddr = "127.0.0.1:9464"

// scrape is one /metrics answer: the text and its parsed families.
type scrape struct {
	text []byte
	fams map[string]*dto.MetricFamily
}

func scrapeNode(t *testing.T, m *Mesh, n *Node) scrape {
	t.Helper()
	out, err := m.Exec(n.Name, "curl", "-sf", "--max-time", "5", "http://"+metricsAddr+"/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v\n%s\n%s", n.Name, err, out, n.Logs())
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("parse %s's /metrics: %v", n.Name, err)
	}
	return scrape{text: out, fams: fams}
}

// get is the value of name's sample whose labels include want; ok false
// when there is none.
func (s scrape) get(name string, want map[string]string) (float64, bool) {
	return metrics.Sample(s.fams, name, want)
}

func (s scrape) must(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := s.get(name, want)
	if !ok {
		t.Fatalf("no sample %s%v in:\n%s", name, want, grepLines(s.text, name))
	}
	return v
}

func grepLines(text []byte, sub string) string {
	var b strings.Builder
	for _, l := range strings.Split(string(text), "\n") {
		if strings.Contains(l, sub) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// promtoolCheck lints an exposition; without promtool (Debian package
// prometheus) the test fails, it does not skip.
func promtoolCheck(t *testing.T, name string, text []byte) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (apt-get install prometheus): %v", err)
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics on %s's /metrics: %v\n%s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestMetricsEndpointWithPeersAndSessions is issue 15's acceptance for
// /metrics: a chain A—B—C of real daemons with the IPv6 adapter and
// metrics.listen set. With peers linked and a session A→C up, every
// node's exposition passes promtool check metrics; then A pings C N
// times and a second scrape shows A's adapter sent exactly N packets into
// the session, C's delivered exactly N, B forwarded both directions, and
// A's per-peer byte counter towards B grew by at least what was sent.
func TestMetricsEndpointWithPeersAndSessions(t *testing.T) {
	m, a, b, c, took := ipv6Chain(t, Options{ExtraConfig: fmt.Sprintf("metrics:\n  listen: %q\n  max_peer_labels: 8\n", metricsAddr)})
	t.Logf("converged in %v", took.Round(time.Millisecond))
	addr := resolve(t, m, a, c)
	// Warm the session (lookup, handshake) before the counted traffic.
	waitReply(t, m, a, addr, 20*time.Second)
	if out, err := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", addr); err != nil {
		t.Fatalf("warm-up ping: %v\n%s", err, out)
	}
	if _, ok := daemons.WaitFor(10*time.Second, func() bool {
		v, _ := scrapeNode(t, m, a).get("fips_sessions", nil)
		w, _ := scrapeNode(t, m, c).get("fips_sessions", nil)
		return v >= 1 && w >= 1
	}); !ok {
		t.Fatalf("no session in fips_sessions\n%s", a.Logs())
	}

	before := map[string]scrape{}
	for _, n := range []*Node{a, b, c} {
		s := scrapeNode(t, m, n)
		before[n.Name] = s
		out := promtoolCheck(t, n.Name, s.text)
		t.Logf("%s: %d lines, peers %v, sessions %v; promtool check metrics: ok %s", n.Name, bytes.Count(s.text, []byte("\n")),
			s.must(t, "fips_peers", nil), s.must(t, "fips_sessions", nil), out)
	}
	if v := before["b"].must(t, "fips_peers", nil); v != 2 {
		t.Errorf("b has %v peers, want 2", v)
	}
	if _, ok := before["a"].get("fips_peer_info", map[string]string{"peer": b.NodeAddr()}); !ok {
		t.Errorf("a has no fips_peer_info for b")
	}

	const count, size = 20, 400
	out, err := m.Exec("a", "ping", "-6", "-c", fmt.Sprint(count), "-s", fmt.Sprint(size), "-i", "0.05", "-W", "2", addr)
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d received", count)) {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	delta := func(n *Node, s scrape, name string, labels map[string]string) float64 {
		return s.must(t, name, labels) - before[n.Name].must(t, name, labels)
	}
	// The snapshot the endpoint reads is republished within ~100 ms.
	var after map[string]scrape
	if _, ok := daemons.WaitFor(5*time.Second, func() bool {
		after = map[string]scrape{"a": scrapeNode(t, m, a), "b": scrapeNode(t, m, b), "c": scrapeNode(t, m, c)}
		return delta(a, after["a"], "fips_ipv6_received_total", nil) >= count &&
			delta(c, after["c"], "fips_ipv6_received_total", nil) >= count
	}); !ok {
		t.Logf("a:\n%s", grepLines(after["a"].text, "fips_ipv6"))
	}
	peerB := map[string]string{"peer": b.NodeAddr()}
	checks := []struct {
		what      string
		got, want float64
		exact     bool
	}{
		{"a fips_ipv6_sent_total", delta(a, after["a"], "fips_ipv6_sent_total", nil), count, true},
		{"a fips_ipv6_received_total", delta(a, after["a"], "fips_ipv6_received_total", nil), count, true},
		{"c fips_ipv6_received_total", delta(c, after["c"], "fips_ipv6_received_total", nil), count, true},
		// C's kernel answers the echo requests, and may add a packet of
		// its own into the mesh in the same seconds (seen once in CI: 21):
		// checked as at least the replies, and in the loop below at most
		// two more.
		{"c fips_ipv6_sent_total", delta(c, after["c"], "fips_ipv6_sent_total", nil), count, false},
		{"c fips_forwarding_delivered_packets_total", delta(c, after["c"], "fips_forwarding_delivered_packets_total", nil), count, false},
		{"b fips_forwarding_forwarded_packets_total", delta(b, after["b"], "fips_forwarding_forwarded_packets_total", nil), 2 * count, false},
		{"a fips_peer_sent_bytes_total{peer=b}", delta(a, after["a"], "fips_peer_sent_bytes_total", peerB), count * (size + 48), false},
		{"a fips_peer_sent_packets_total{peer=b}", delta(a, after["a"], "fips_peer_sent_packets_total", peerB), count, false},
		{"a fips_transport_sent_bytes_total{udp}", delta(a, after["a"], "fips_transport_sent_bytes_total", map[string]string{"type": "udp"}), count * (size + 48), false},
	}
	if got := delta(c, after["c"], "fips_ipv6_sent_total", nil); got > count+2 {
		t.Errorf("c fips_ipv6_sent_total moved by %v for %d echo replies", got, count)
	}
	for _, ck := range checks {
		t.Logf("%s moved by %v (sent %d echo requests of %d bytes)", ck.what, ck.got, count, size)
		if ck.exact && ck.got != ck.want || !ck.exact && ck.got < ck.want {
			op := "at least"
			if ck.exact {
				op = "exactly"
			}
			t.Errorf("%s moved by %v, want %s %v", ck.what, ck.got, op, ck.want)
		}
	}
	if v, ok := after["a"].get("fips_peer_srtt_seconds", peerB); !ok || v <= 0 || v > 1 {
		t.Errorf("a's srtt to b: %v %v", v, ok)
	}

	// Every metric the shipped dashboard queries is one these running
	// nodes export.
	root, err := daemons.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dash, err := os.ReadFile(filepath.Join(root, "docs", "grafana", "fips-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range regexp.MustCompile(`\b(?:fips|go|process)_[A-Za-z0-9_]+\b`).FindAllString(string(dash), -1) {
		names[n] = true
	}
	for n := range names {
		if after["a"].fams[n] == nil && after["b"].fams[n] == nil && after["c"].fams[n] == nil {
			t.Errorf("the dashboard queries %s, which no running node exports", n)
		}
	}
	t.Logf("all %d metric names the dashboard queries are exported by the running nodes", len(names))
}

//go:build linux

package netns

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// What unmodified applications do across a mesh with the IPv6 adapter
// on (Options.IPv6): resolve a .fips name, ping, iperf3, HTTP. Each
// fails tb when it does not work.

// helper marks the caller as a helper when tb is a *testing.T.
func helper(tb TB) {
	if h, ok := tb.(interface{ Helper() }); ok {
		h.Helper()
	}
}

// WaitReply pings addr from node until the first echo reply comes back
// (one request every 0.2 s, for at most timeout) and returns how long that
// took: the first packet to a node with no session waits for a lookup and
// a session handshake, whose lost attempts are retried after 1 s and more,
// so a test that counts replies warms the path with this first. It fails
// with every node's log tail when no reply comes.
func WaitReply(tb TB, m *Mesh, from *Node, addr string, timeout time.Duration) time.Duration {
	helper(tb)
	took, out, err := FirstReply(m, from, addr, timeout)
	if err != nil {
		var logs strings.Builder
		for _, n := range m.Nodes() {
			fmt.Fprintf(&logs, "--- %s ---\n%s", n.Name, tail(n.Logs(), 40))
		}
		tb.Fatalf("%v\n%s", err, logs.String())
	}
	tb.Logf("first echo reply %s → %s after %v", from.Name, addr, took.Round(time.Millisecond))
	if took > time.Second {
		tb.Logf("%s", out)
	}
	return took
}

// FirstReply is one `ping -c 1 -w timeout` of addr from node (a request
// every 0.2 s until the first reply): how long it took and ping's output;
// an error when no reply came — also when ping gave up early on an ICMP
// error such as Destination Unreachable.
func FirstReply(m *Mesh, from *Node, addr string, timeout time.Duration) (time.Duration, []byte, error) {
	start := time.Now()
	secs := fmt.Sprint(max(1, int(timeout.Round(time.Second)/time.Second)))
	out, err := m.Exec(from.Name, "ping", "-6", "-c", "1", "-i", "0.2", "-W", "1", "-w", secs, addr)
	took := time.Since(start)
	// Requests sent while the session was being set up wait in its
	// queue and are answered together: "N received" with N ≥ 1 (ping
	// exits 0 only with a reply).
	if r := regexp.MustCompile(` (\d+) received`).FindSubmatch(out); err != nil || r == nil || string(r[1]) == "0" {
		return took, out, fmt.Errorf("no echo reply from %s to %s within %v: %v\n%s", addr, from.Name, timeout, err, out)
	}
	return took, out, nil
}

// Resolve asks from's .fips DNS responder for to's address, as an
// application would (teaching from to's key), and fails unless it answers
// to's address.
func Resolve(tb TB, m *Mesh, from, to *Node) string {
	helper(tb)
	out, err := m.Exec(from.Name, "dig", "@::1", "-p", "5354", to.Npub()+".fips", "AAAA", "+short", "+time=2", "+tries=3")
	answer := strings.TrimSpace(string(out))
	if err != nil || answer != to.IPv6() {
		tb.Fatalf("dig in %s: %v %q, want %s\n%s", from.Name, err, answer, to.IPv6(), from.Logs())
	}
	return answer
}

var iperfRate = regexp.MustCompile(`"sum_received":\s*\{[^}]*"bits_per_second":\s*([0-9.e+]+)`)

// Iperf runs iperf3 TCP from a to addr for secs (a server must listen
// there) and returns the received bit rate.
func Iperf(tb TB, m *Mesh, from, addr string, secs int) float64 {
	helper(tb)
	res, err := m.Exec(from, "iperf3", "-c", addr, "-t", strconv.Itoa(secs), "-J")
	if err != nil {
		tb.Fatalf("iperf3: %v\n%s", err, firstLines(string(res), 30))
	}
	mm := iperfRate.FindSubmatch(res)
	if mm == nil {
		tb.Fatalf("iperf3 output has no receive rate:\n%s", firstLines(string(res), 30))
	}
	bps, err := strconv.ParseFloat(string(mm[1]), 64)
	if err != nil {
		tb.Fatalf("iperf3 rate %q: %v", mm[1], err)
	}
	return bps
}

// IperfServer starts an iperf3 server bound to to's mesh address and
// waits until it listens; the returned function stops it.
func IperfServer(tb TB, m *Mesh, to *Node) (stop func()) {
	helper(tb)
	stop = m.Background(to.Name, "iperf3", "-s", "-B", to.IPv6())
	if !m.WaitListening(to.Name, 5201, 10*time.Second) {
		stop()
		tb.Fatalf("iperf3 server in %s not listening", to.Name)
	}
	return stop
}

// FetchHTTP serves an empty directory over HTTP on to's mesh address,
// port 8080, and fetches it from from by to's .fips name with curl; it
// fails unless the answer is 200.
func FetchHTTP(tb TB, m *Mesh, from, to *Node) {
	helper(tb)
	dir, err := os.MkdirTemp(m.Dir, "www-")
	if err != nil {
		tb.Fatalf("netns: %v", err)
	}
	defer m.Background(to.Name, "python3", "-m", "http.server", "8080", "--bind", to.IPv6(), "--directory", dir)()
	if !m.WaitListening(to.Name, 8080, 10*time.Second) {
		tb.Fatalf("HTTP server not listening")
	}
	out, err := m.Exec(from.Name, "curl", "-sS", "-6", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "http://"+to.Npub()+".fips:8080/")
	if err != nil || strings.TrimSpace(string(out)) != "200" {
		tb.Fatalf("curl: %v %s", err, out)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// SessionStart is n's show_sessions session_start_ms for its session
// with peer (a rekey's cutover restarts it), 0 without one.
func SessionStart(tb TB, n, peer *Node) int64 {
	helper(tb)
	var s struct {
		Sessions []struct {
			RemoteAddr     string `json:"remote_addr"`
			SessionStartMs *int64 `json:"session_start_ms"`
		} `json:"sessions"`
	}
	if err := n.Call("show_sessions", nil, &s); err != nil {
		tb.Fatalf("show_sessions on %s: %v", n.Name, err)
	}
	for _, e := range s.Sessions {
		if e.RemoteAddr == peer.NodeAddr() && e.SessionStartMs != nil {
			return *e.SessionStartMs
		}
	}
	return 0
}

// Tail is the last lines of s.
func Tail(s string, lines int) string { return tail(s, lines) }

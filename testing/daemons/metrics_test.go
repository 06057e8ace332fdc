//go:build unix

package daemons

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMetricsEndpointFollowsTheDaemon: with metrics.listen set, a running
// daemon answers GET /metrics; on SIGTERM it exits 0 and the port is
// released with it. Without the key nothing listens.
func TestMetricsEndpointFollowsTheDaemon(t *testing.T) {
	pa, pb, mp := FreePort(t), FreePort(t), FreePort(t)
	maddr := fmt.Sprintf("127.0.0.1:%d", mp)
	a := New(t, bins, "a", pairConfig(skA, "udp", pa, pb, npubB)+fmt.Sprintf("metrics:\n  listen: %q\n", maddr))
	a.Start()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var body string
	if _, ok := WaitFor(5*time.Second, func() bool {
		resp, err := client.Get("http://" + maddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		// The endpoint is up before the node has started; wait for the
		// snapshot it publishes once running.
		return resp.StatusCode == 200 && strings.Contains(body, "fips_node_state{state=\"running\"} 1")
	}); !ok {
		t.Fatalf("no /metrics on %s\n%s", maddr, a.Logs())
	}
	if !strings.Contains(body, `fips_node_info{node_addr="`) || !strings.Contains(body, "fips_node_state{state=\"running\"} 1") {
		t.Errorf("exposition lacks the node's identity or state:\n%.600s", body)
	}
	if !strings.Contains(a.Logs(), "metrics endpoint listening") {
		t.Errorf("no startup log line\n%s", a.Logs())
	}
	if code := a.Stop(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, a.Logs())
	}
	l, err := net.Listen("tcp", maddr)
	if err != nil {
		t.Fatalf("metrics port still held after the daemon exited: %v", err)
	}
	l.Close()

	// Off by default.
	b := New(t, bins, "b", pairConfig(skB, "udp", pb, pa, npubA))
	b.Start()
	defer b.Stop()
	if _, ok := WaitFor(5*time.Second, func() bool {
		var st status
		return b.Call("show_status", nil, &st) == nil && st.State == "running"
	}); !ok {
		t.Fatalf("b not running\n%s", b.Logs())
	}
	if strings.Contains(b.Logs(), "metrics endpoint") {
		t.Errorf("metrics endpoint started without metrics.listen\n%s", b.Logs())
	}
}

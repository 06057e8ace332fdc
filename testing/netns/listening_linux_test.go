//go:build linux

package netns

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type listeningJSON struct {
	Fips0Addr      string `json:"fips0_addr"`
	FirewallActive bool   `json:"firewall_active"`
	Sockets        []struct {
		Proto        string  `json:"proto"`
		LocalAddr    string  `json:"local_addr"`
		Port         uint16  `json:"port"`
		PID          *int    `json:"pid"`
		Process      *string `json:"process"`
		WildcardBind bool    `json:"wildcard_bind"`
		Filter       string  `json:"filter"`
	} `json:"sockets"`
}

// TestShowListeningSockets: in a node's namespace, an HTTP server on
// [::]:8088 is listed by `fipsctl show listening-sockets` as tcp 8088,
// process python3 with its pid, wildcard bind, and no firewall; the
// daemon's own DNS responder on ::1 and UDP transport on 0.0.0.0 are not
// (fips0 cannot reach them). Once table inet fips is loaded with a rule
// accepting tcp 8088, the firewall is active and the row says accept,
// while an unlisted port falls to the baseline's drop.
func TestShowListeningSockets(t *testing.T) {
	m := New(t, Options{IPv6: true})
	a, b := m.AddNode("a"), m.AddNode("b")
	m.Link(a, b)
	m.Start()
	m.WaitConverged(30 * time.Second)
	http := m.Spawn("a", "python3", "-m", "http.server", "--bind", "::", "8088")
	if !m.WaitListening("a", 8088, 10*time.Second) {
		t.Fatal("http.server not listening")
	}
	udp := m.Spawn("a", "python3", "-c", "import socket,time\ns=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)\ns.bind(('::',8089))\ntime.sleep(60)")
	defer udp.Stop()

	show := func() listeningJSON {
		t.Helper()
		out, err := m.Fipsctl("a", "show", "listening-sockets")
		if err != nil {
			t.Fatalf("fipsctl show listening-sockets: %v\n%s", err, out)
		}
		var r listeningJSON
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return r
	}
	var r listeningJSON
	find := func(proto string, port uint16) int {
		for i, s := range r.Sockets {
			if s.Proto == proto && s.Port == port {
				return i
			}
		}
		return -1
	}
	deadline := time.Now().Add(5 * time.Second)
	for r = show(); find("udp", 8089) < 0 && time.Now().Before(deadline); r = show() {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("show_listening_sockets: %+v", r)
	if r.Fips0Addr != a.IPv6() || r.FirewallActive {
		t.Errorf("fips0_addr %s (want %s), firewall_active %v", r.Fips0Addr, a.IPv6(), r.FirewallActive)
	}
	i := find("tcp", 8088)
	if i < 0 {
		t.Fatalf("tcp 8088 not listed: %+v", r.Sockets)
	}
	s := r.Sockets[i]
	if s.PID == nil || *s.PID != http.Pid() || s.Process == nil || *s.Process != "python3" || !s.WildcardBind ||
		s.LocalAddr != "::" || s.Filter != "no_firewall" {
		t.Errorf("tcp 8088 row: pid %v (want %d) process %v wildcard %v addr %s filter %s", deref(s.PID), http.Pid(),
			s.Process, s.WildcardBind, s.LocalAddr, s.Filter)
	}
	if find("udp", 8089) < 0 {
		t.Errorf("udp 8089 not listed")
	}
	for _, port := range []uint16{5354, 2121} {
		if find("udp", port) >= 0 {
			t.Errorf("udp %d listed; it is not reachable from fips0", port)
		}
	}

	rules := filepath.Join(t.TempDir(), "fips.nft")
	os.WriteFile(rules, []byte(`table inet fips {
    chain inbound {
        type filter hook input priority 0; policy accept;
        iifname != "fips0" return
        ct state established,related accept
        tcp dport 8088 accept
        counter drop
    }
}
`), 0o644)
	if out, err := m.Exec("a", "nft", "-f", rules); err != nil {
		t.Fatalf("nft -f: %v\n%s", err, out)
	}
	r = show()
	if !r.FirewallActive {
		t.Fatal("firewall_active false with table inet fips loaded")
	}
	if i := find("tcp", 8088); i < 0 || r.Sockets[i].Filter != "accept" {
		t.Errorf("tcp 8088 with an accept rule: %+v", r.Sockets)
	}
	if i := find("udp", 8089); i < 0 || r.Sockets[i].Filter != "drop" {
		t.Errorf("udp 8089 without a rule: %+v", r.Sockets)
	}
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

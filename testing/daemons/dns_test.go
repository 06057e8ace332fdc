//go:build unix

package daemons

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/miekg/dns"
)

// TestDNSResponder: the daemon answers .fips names on its DNS port —
// npub labels, hosts-file names — primes its identity cache with what it
// answered, and refuses other names.
func TestDNSResponder(t *testing.T) {
	pa, dnsPort := FreePort(t), FreePort(t)
	cfg := fmt.Sprintf(`node:
  identity: { nsec: %q }
  control: { socket_path: "{{DIR}}/control.sock" }
dns: { enabled: true, bind_addr: "127.0.0.1", port: %d, ttl: 120 }
transports:
  udp: { bind_addr: "127.0.0.1:%d" }
`, skA, dnsPort, pa)
	a := New(t, bins, "a", cfg)
	if err := os.WriteFile(filepath.Join(a.Dir, "hosts"), []byte("# test hosts\nbee "+npubB+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.Start()
	stranger, _ := identity.Generate(nil)
	server := fmt.Sprintf("127.0.0.1:%d", dnsPort)
	query := func(name string, qtype uint16) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		c := &dns.Client{Timeout: time.Second}
		r, _, err := c.Exchange(m, server)
		return r, err
	}
	if _, ok := WaitFor(10*time.Second, func() bool { _, err := query(npubB+".fips", dns.TypeAAAA); return err == nil }); !ok {
		t.Fatalf("no DNS responder on %s\n%s", server, a.Logs())
	}
	pkB, _ := identity.DecodeNpub(npubB)
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		want  string // AAAA answer, "" for none
	}{
		{npubB + ".fips", dns.TypeAAAA, dns.RcodeSuccess, pkB.NodeAddr().IPv6().String()},
		{"bee.fips", dns.TypeAAAA, dns.RcodeSuccess, pkB.NodeAddr().IPv6().String()},
		{"BEE.FIPS", dns.TypeAAAA, dns.RcodeSuccess, pkB.NodeAddr().IPv6().String()},
		{stranger.Npub() + ".fips", dns.TypeAAAA, dns.RcodeSuccess, stranger.IPv6().String()},
		{"bee.fips", dns.TypeA, dns.RcodeSuccess, ""},
		{"nosuch.fips", dns.TypeAAAA, dns.RcodeNameError, ""},
		{"example.com", dns.TypeAAAA, dns.RcodeNameError, ""},
	} {
		r, err := query(tc.name, tc.qtype)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := ""
		for _, rr := range r.Answer {
			if aaaa, ok := rr.(*dns.AAAA); ok {
				got = aaaa.AAAA.String()
				if aaaa.Hdr.Ttl != 120 {
					t.Errorf("%s: TTL %d, want 120", tc.name, aaaa.Hdr.Ttl)
				}
			}
		}
		if r.Rcode != tc.rcode || got != tc.want {
			t.Errorf("%s %s: rcode %s answer %q, want %s %q", tc.name, dns.TypeToString[tc.qtype],
				dns.RcodeToString[r.Rcode], got, dns.RcodeToString[tc.rcode], tc.want)
		}
	}
	// Answers primed the identity cache.
	var ic struct {
		Entries []struct {
			Npub string `json:"npub"`
		} `json:"entries"`
	}
	if _, ok := WaitFor(5*time.Second, func() bool {
		if a.Call("show_identity_cache", nil, &ic) != nil {
			return false
		}
		for _, e := range ic.Entries {
			if e.Npub == stranger.Npub() {
				return true
			}
		}
		return false
	}); !ok {
		t.Errorf("identity cache not primed by the DNS answer: %+v", ic)
	}
}

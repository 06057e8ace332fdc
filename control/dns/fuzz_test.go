package dns

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func FuzzParseHosts(f *testing.F) {
	f.Add("gw npub1qqqq\n# c\n\nx y z\n")
	f.Add("a\tb\r\n-x npub1\n")
	f.Fuzz(func(t *testing.T, s string) {
		h, _ := ParseHosts(strings.NewReader(s), func(int, string, error) {})
		for name := range h.byName {
			if ValidateHostname(name) != nil || name != strings.ToLower(name) {
				t.Fatalf("bad name stored: %q", name)
			}
		}
	})
}

func FuzzAnswer(f *testing.F) {
	m := new(dns.Msg)
	m.SetQuestion("gw.fips.", dns.TypeAAAA)
	b, _ := m.Pack()
	f.Add(b)
	m.SetQuestion("npub1sn0wdenkukak0d9dfczzeacvhkrgz92ak56egt7vdgzn8pv2wfqqhrjdv9.fips.", dns.TypeA)
	b, _ = m.Pack()
	f.Add(b)
	var hosts Hosts
	r := &Resolver{Hosts: hosts}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := r.AnswerWire(b)
		if out == nil {
			return
		}
		var m dns.Msg
		if err := m.Unpack(out); err != nil {
			t.Fatalf("own reply does not parse: %v", err)
		}
		if !m.Response || !m.Authoritative || len(m.Question) != 1 {
			t.Fatalf("bad reply %v", &m)
		}
	})
}

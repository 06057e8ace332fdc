package dns

import (
	"net"
	"strings"

	"github.com/fips-go/fips/control/identity"
	"github.com/miekg/dns"
)

// DefaultTTL is dns.ttl's default, in seconds.
const DefaultTTL = 300

// Zone is the suffix the responder answers for.
const Zone = "fips"

// NameLookup maps a hostname to a key; *HostsFile and Hosts satisfy it.
type NameLookup interface {
	Lookup(name string) (identity.PublicKey, bool)
}

// Resolver answers `.fips` queries. It does no I/O of its own. All fields
// are optional; set them before first use and do not change them after.
type Resolver struct {
	// Hosts is consulted first (the hosts file).
	Hosts NameLookup
	// Alias is consulted next (peers[].alias from the config).
	Alias func(name string) (identity.PublicKey, bool)
	// Prime is called with the key of every AAAA answer (the identity
	// cache). It runs on the serving goroutine.
	Prime func(pk identity.PublicKey)
	// TTL of answers; 0 means DefaultTTL.
	TTL uint32
}

// Label returns what precedes ".fips" in name (ASCII case-insensitive, one
// trailing dot allowed), or false if name is not in the zone.
func Label(name string) (string, bool) {
	name = strings.TrimSuffix(name, ".")
	const suf = "." + Zone
	if len(name) < len(suf) || !strings.EqualFold(name[len(name)-len(suf):], suf) {
		return "", false
	}
	return name[:len(name)-len(suf)], true
}

// Resolve maps a query name to a key: hosts file, then peer alias, then the
// label as an npub.
func (r *Resolver) Resolve(name string) (identity.PublicKey, bool) {
	label, ok := Label(name)
	if !ok || label == "" {
		return identity.PublicKey{}, false
	}
	if r.Hosts != nil {
		if pk, ok := r.Hosts.Lookup(label); ok {
			return pk, true
		}
	}
	if r.Alias != nil {
		if pk, ok := r.Alias(label); ok {
			return pk, true
		}
	}
	// Lower-cased so that mixed case (e.g. DNS 0x20 randomisation) still
	// decodes; bech32 itself refuses mixed case.
	pk, err := identity.DecodeNpub(strings.ToLower(label))
	if err != nil {
		return identity.PublicKey{}, false
	}
	return pk, true
}

// Answer builds the reply to q, or returns nil when q should be dropped
// (it has no question, or is itself a response). Only the first question is considered and its class
// is not checked, as upstream does. The reply is authoritative: one AAAA
// record for an AAAA query of a resolvable name, no records (NOERROR) for
// other types of a resolvable name, NXDOMAIN for anything else.
func (r *Resolver) Answer(q *dns.Msg) *dns.Msg {
	if q == nil || len(q.Question) == 0 || q.Response {
		return nil // a response is never answered (fips-go; upstream does)
	}
	m := new(dns.Msg)
	m.SetReply(q)
	m.Question = q.Question[:1]
	m.Authoritative = true
	qq := q.Question[0]
	pk, ok := r.Resolve(qq.Name)
	switch {
	case !ok:
		m.Rcode = dns.RcodeNameError
	case qq.Qtype == dns.TypeAAAA:
		ttl := r.TTL
		if ttl == 0 {
			ttl = DefaultTTL
		}
		ip := pk.NodeAddr().IPv6().As16()
		m.Answer = []dns.RR{&dns.AAAA{
			Hdr:  dns.RR_Header{Name: qq.Name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl},
			AAAA: net.IP(ip[:]),
		}}
		if r.Prime != nil {
			r.Prime(pk)
		}
	}
	return m
}

// AnswerWire is Answer on wire format; nil means send nothing (unparsable
// query, no question, or an unpackable reply).
func (r *Resolver) AnswerWire(b []byte) []byte {
	q := new(dns.Msg)
	if err := q.Unpack(b); err != nil {
		return nil
	}
	m := r.Answer(q)
	if m == nil {
		return nil
	}
	out, err := m.Pack()
	if err != nil {
		return nil
	}
	return out
}

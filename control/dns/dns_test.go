package dns

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/miekg/dns"
	"go.uber.org/goleak"
)

func newKey(t testing.TB) identity.PublicKey {
	t.Helper()
	id, err := identity.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id.PublicKey()
}

func TestValidateHostname(t *testing.T) {
	for _, h := range []string{"gateway", "core-vm", "a", "node1", "my-peer-2", "A", "GATEWAY", "a1b2c3", strings.Repeat("x", 63), "npub"} {
		if err := ValidateHostname(h); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
	for _, h := range []string{"", "-starts", "ends-", "has space", "has.dot", "has_underscore", strings.Repeat("x", 64), "npub1foo", "NPUB1bar", "héllo"} {
		if err := ValidateHostname(h); !errors.Is(err, ErrInvalidHostname) {
			t.Errorf("%q: got %v", h, err)
		}
	}
}

func TestParseHosts(t *testing.T) {
	a, b, c := newKey(t), newKey(t), newKey(t)
	in := "# comment\n\n   \n  # indented comment\n" +
		"gateway " + a.Npub() + "\n" +
		"Core-VM\t" + strings.ToUpper(b.Npub()) + "  \r\n" +
		"inline " + a.Npub() + " # not a comment\n" +
		"onlyone\n" +
		"bad_name " + a.Npub() + "\n" +
		"npub1x " + a.Npub() + "\n" +
		"badkey npub1qqqq\n" +
		"gateway " + c.Npub() // duplicate, last wins, no final newline
	type skip struct {
		line int
		err  error
	}
	var skipped []skip
	h, err := ParseHosts(strings.NewReader(in), func(line int, text string, err error) {
		if text != strings.TrimSpace(text) || text == "" {
			t.Errorf("line %d text %q", line, text)
		}
		skipped = append(skipped, skip{line, err})
	})
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 2 {
		t.Fatalf("len %d", h.Len())
	}
	if pk, ok := h.Lookup("GATEWAY"); !ok || pk != c {
		t.Errorf("gateway: %v %v", pk, ok)
	}
	if s, ok := h.LookupNpub("core-vm"); !ok || s != b.Npub() {
		t.Errorf("core-vm: %v %v", s, ok)
	}
	if n, ok := h.NameOfKey(b); !ok || n != "core-vm" {
		t.Errorf("NameOf b: %q %v", n, ok)
	}
	if n, ok := h.NameOf(c.NodeAddr()); !ok || n != "gateway" {
		t.Errorf("NameOf c: %q %v", n, ok)
	}
	if _, ok := h.Lookup("inline"); ok {
		t.Error("inline-comment line accepted")
	}
	wantLines := []int{7, 8, 9, 10, 11}
	if len(skipped) != len(wantLines) {
		t.Fatalf("skipped %v", skipped)
	}
	for i, s := range skipped {
		if s.line != wantLines[i] || s.err == nil {
			t.Errorf("skip %d: %+v", i, s)
		}
	}
	if !errors.Is(skipped[0].err, ErrMalformedLine) || !errors.Is(skipped[1].err, ErrMalformedLine) ||
		!errors.Is(skipped[2].err, ErrInvalidHostname) || !errors.Is(skipped[3].err, ErrInvalidHostname) ||
		!errors.Is(skipped[4].err, identity.ErrInvalidBech32) {
		t.Errorf("reasons: %+v", skipped)
	}
	if _, err := ParseHosts(strings.NewReader("a \xff\n"), nil); !errors.Is(err, ErrNotUTF8) {
		t.Errorf("non-UTF-8: %v", err)
	}
}

func TestHostsMerge(t *testing.T) {
	a, b := newKey(t), newKey(t)
	var base, file Hosts
	if err := base.Insert("x", a.Npub()); err != nil {
		t.Fatal(err)
	}
	if err := file.Insert("X", b.Npub()); err != nil {
		t.Fatal(err)
	}
	base.Merge(file)
	if pk, _ := base.Lookup("x"); pk != b {
		t.Error("file entry did not win")
	}
}

func TestHostsFileReload(t *testing.T) {
	a, b := newKey(t), newKey(t)
	path := filepath.Join(t.TempDir(), "hosts")
	f := OpenHostsFile(path, nil)
	if f.Hosts().Len() != 0 || f.Reload() {
		t.Fatal("missing file")
	}
	t0 := time.Unix(1_700_000_000, 0)
	write := func(s string, mt time.Time) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	write("gw "+a.Npub()+"\n", t0)
	if !f.Reload() {
		t.Fatal("no reload on appearance")
	}
	if pk, ok := f.Lookup("gw"); !ok || pk != a {
		t.Fatal("gw not loaded")
	}
	if f.Reload() {
		t.Fatal("reload without change")
	}
	write("gw "+b.Npub()+"\n", t0) // same mtime: not noticed
	if f.Reload() {
		t.Fatal("reload with same mtime")
	}
	write("gw "+b.Npub()+"\n", t0.Add(time.Second))
	if !f.Reload() {
		t.Fatal("no reload on mtime change")
	}
	if pk, _ := f.Lookup("GW"); pk != b {
		t.Fatal("gw not updated")
	}
	if n, ok := f.NameOf(b.NodeAddr()); !ok || n != "gw" {
		t.Fatal("NameOf")
	}
	os.Remove(path)
	if !f.Reload() || f.Hosts().Len() != 0 {
		t.Fatal("removal")
	}
}

func query(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

func TestLabel(t *testing.T) {
	for in, want := range map[string]string{"a.fips": "a", "a.fips.": "a", "a.FIPS.": "a", "A.b.Fips": "A.b"} {
		if got, ok := Label(in); !ok || got != want {
			t.Errorf("%q: %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"fips", "fips.", "a.fips..", "a.fipsx", "afips", "a.com."} {
		if got, ok := Label(in); ok {
			t.Errorf("%q: %q", in, got)
		}
	}
}

func TestAnswer(t *testing.T) {
	hostKey, aliasKey, npubKey, both := newKey(t), newKey(t), newKey(t), newKey(t)
	var hosts Hosts
	if err := hosts.Insert("gateway", hostKey.Npub()); err != nil {
		t.Fatal(err)
	}
	if err := hosts.Insert("shared", both.Npub()); err != nil {
		t.Fatal(err)
	}
	var primed []identity.PublicKey
	r := &Resolver{
		Hosts: hosts,
		Alias: func(name string) (identity.PublicKey, bool) {
			switch strings.ToLower(name) {
			case "peer":
				return aliasKey, true
			case "shared":
				return aliasKey, true // hosts file wins
			}
			return identity.PublicKey{}, false
		},
		Prime: func(pk identity.PublicKey) { primed = append(primed, pk) },
	}
	aaaa := []struct {
		name string
		want identity.PublicKey
	}{
		{npubKey.Npub() + ".fips.", npubKey},
		{npubKey.Npub() + ".FIPS", npubKey},
		{strings.ToUpper(npubKey.Npub()) + ".fips.", npubKey},
		{"gateway.fips.", hostKey},
		{"GateWay.Fips.", hostKey},
		{"peer.fips.", aliasKey},
		{"shared.fips.", both},
	}
	for _, tc := range aaaa {
		primed = nil
		q := query(tc.name, dns.TypeAAAA)
		m := r.Answer(q)
		if m.Rcode != dns.RcodeSuccess || !m.Authoritative || !m.Response || m.Id != q.Id || len(m.Answer) != 1 {
			t.Fatalf("%s: %v", tc.name, m)
		}
		rr := m.Answer[0].(*dns.AAAA)
		want := tc.want.NodeAddr().IPv6()
		if rr.Hdr.Ttl != DefaultTTL || rr.Hdr.Name != tc.name || !net.IP(want.AsSlice()).Equal(rr.AAAA) {
			t.Errorf("%s: %v", tc.name, rr)
		}
		if len(primed) != 1 || primed[0] != tc.want {
			t.Errorf("%s: primed %v", tc.name, primed)
		}
		// Other types: NOERROR, empty, no priming.
		for _, qt := range []uint16{dns.TypeA, dns.TypeTXT, dns.TypeANY, dns.TypeMX} {
			primed = nil
			m := r.Answer(query(tc.name, qt))
			if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 || !m.Authoritative || len(primed) != 0 {
				t.Errorf("%s type %d: %v", tc.name, qt, m)
			}
		}
	}
	for _, name := range []string{"nope.fips.", "example.com.", "fips.", "gateway.fips.x.", "a.gateway.fips.",
		npubKey.Npub()[:20] + ".fips.", "npub1" + strings.Repeat("q", 58) + ".fips.", "npubkey.fips."} {
		for _, qt := range []uint16{dns.TypeAAAA, dns.TypeA} {
			m := r.Answer(query(name, qt))
			if m.Rcode != dns.RcodeNameError || len(m.Answer) != 0 || !m.Authoritative {
				t.Errorf("%s: %v", name, m)
			}
		}
	}
	// TTL from config.
	r.TTL = 60
	if m := r.Answer(query("gateway.fips.", dns.TypeAAAA)); m.Answer[0].Header().Ttl != 60 {
		t.Error("ttl")
	}
	// Only the first question counts; class is ignored.
	q := query("nope.fips.", dns.TypeAAAA)
	q.Question = append(q.Question, dns.Question{Name: "gateway.fips.", Qtype: dns.TypeAAAA, Qclass: dns.ClassINET})
	if m := r.Answer(q); m.Rcode != dns.RcodeNameError || len(m.Question) != 1 {
		t.Errorf("multi: %v", m)
	}
	q = query("gateway.fips.", dns.TypeAAAA)
	q.Question = append(q.Question, dns.Question{Name: "nope.fips.", Qtype: dns.TypeAAAA, Qclass: dns.ClassINET})
	if m := r.Answer(q); m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
		t.Errorf("multi: %v", m)
	}
	q = query("gateway.fips.", dns.TypeAAAA)
	q.Question[0].Qclass = dns.ClassCHAOS
	if m := r.Answer(q); m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
		t.Errorf("chaos: %v", m)
	}
	// No question: dropped. Garbage: dropped.
	if m := r.Answer(new(dns.Msg)); m != nil {
		t.Error("no question answered")
	}
	if r.AnswerWire([]byte{1, 2, 3}) != nil {
		t.Error("garbage answered")
	}
	// Zero-value resolver still resolves npubs.
	if m := (&Resolver{}).Answer(query(npubKey.Npub()+".fips.", dns.TypeAAAA)); len(m.Answer) != 1 {
		t.Error("zero resolver")
	}
}

func TestServerEndToEnd(t *testing.T) {
	defer goleak.VerifyNone(t)
	k := newKey(t)
	var hosts Hosts
	if err := hosts.Insert("gw", k.Npub()); err != nil {
		t.Fatal(err)
	}
	primed := make(chan identity.PublicKey, 10)
	r := &Resolver{Hosts: hosts, Prime: func(pk identity.PublicKey) { primed <- pk }}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		s, err := Listen(context.Background(), addr, r, nil)
		if err != nil {
			if strings.HasPrefix(addr, "[") {
				t.Logf("no IPv6 loopback: %v", err)
				continue
			}
			t.Fatal(err)
		}
		c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
		m, _, err := c.Exchange(query("GW.fips.", dns.TypeAAAA), s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Answer) != 1 || !net.IP(k.NodeAddr().IPv6().AsSlice()).Equal(m.Answer[0].(*dns.AAAA).AAAA) {
			t.Fatalf("%s: %v", addr, m)
		}
		if pk := <-primed; pk != k {
			t.Fatal("not primed")
		}
		m, _, err = c.Exchange(query("x.fips.", dns.TypeAAAA), s.Addr().String())
		if err != nil || m.Rcode != dns.RcodeNameError {
			t.Fatalf("nx: %v %v", m, err)
		}
		// Queries arriving on the ignored interface (loopback here) get
		// no answer where the arrival interface is known.
		if s.p4 != nil || s.p6 != nil {
			lo := loopbackIndex(t)
			s.IgnoreIfIndex(lo)
			c.Timeout = 300 * time.Millisecond
			if _, _, err := c.Exchange(query("gw.fips.", dns.TypeAAAA), s.Addr().String()); err == nil {
				t.Error("query on ignored interface answered")
			}
			s.IgnoreIfIndex(0)
			c.Timeout = 2 * time.Second
			if _, _, err := c.Exchange(query("gw.fips.", dns.TypeAAAA), s.Addr().String()); err != nil {
				t.Error(err)
			}
			<-primed
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Context cancellation also stops it.
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Listen(ctx, "127.0.0.1:0", r, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	s.Close()
}

func loopbackIndex(t *testing.T) int {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			return i.Index
		}
	}
	t.Skip("no loopback interface")
	return 0
}

// TestServerIgnoresResponses: a datagram that is itself a DNS response
// (QR set) — a reflection from another responder, or one spoofed to make
// two responders bounce packets forever — is never answered, and is
// counted; the queries around it are still answered.
func TestServerIgnoresResponses(t *testing.T) {
	defer goleak.VerifyNone(t)
	k := newKey(t)
	var hosts Hosts
	if err := hosts.Insert("gw", k.Npub()); err != nil {
		t.Fatal(err)
	}
	r := &Resolver{Hosts: hosts}
	if m := r.Answer(func() *dns.Msg { q := query("gw.fips.", dns.TypeAAAA); q.Response = true; return q }()); m != nil {
		t.Errorf("Answer replied to a response: %v", m)
	}
	s, err := Listen(context.Background(), "127.0.0.1:0", r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("udp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(m *dns.Msg) {
		t.Helper()
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// A full answer to gw.fips, as a responder would send it.
	resp := r.Answer(query("gw.fips.", dns.TypeAAAA))
	resp.Id = 1
	for range 3 {
		send(resp)
	}
	await := func(cond func(Stats) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond(s.Stats()) {
			if time.Now().After(deadline) {
				t.Fatalf("stats %+v", s.Stats())
			}
			time.Sleep(time.Millisecond)
		}
	}
	await(func(st Stats) bool { return st.ResponsesIgnored == 3 })
	q := query("gw.fips.", dns.TypeAAAA)
	q.Id = 2
	send(q)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var got dns.Msg
	if err := got.Unpack(buf[:n]); err != nil || got.Id != 2 || len(got.Answer) != 1 {
		t.Fatalf("first datagram back is not the answer to the query: %v %v", &got, err)
	}
	// The answer is counted just after it is sent.
	await(func(st Stats) bool { return st.Answered == 1 })
	if st := s.Stats(); st.ResponsesIgnored != 3 || st.Unparsable != 0 {
		t.Errorf("stats %+v", st)
	}
}

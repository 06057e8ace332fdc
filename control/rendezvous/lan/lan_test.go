package lan

import (
	"crypto/rand"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/fips-go/fips/control/identity"
)

func TestSplitServiceTypeAndInstance(t *testing.T) {
	s, d, err := SplitServiceType("_fips._udp.local.")
	if err != nil || s != "_fips._udp" || d != "local." {
		t.Fatalf("%q %q %v", s, d, err)
	}
	if s, d, err := SplitServiceType("_fips-test._udp.lab.example."); err != nil || s != "_fips-test._udp" || d != "lab.example." {
		t.Errorf("%q %q %v", s, d, err)
	}
	for _, bad := range []string{"fips.local.", "_fips.local.", "_fips._sctp.local.", ""} {
		if _, _, err := SplitServiceType(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := InstanceName("npub1abcdefghijklmnopqrstuvwxyz"); got != "fips-npub1abcdefghijk" {
		t.Errorf("instance %q", got)
	}
}

func TestAcceptFilters(t *testing.T) {
	own, _ := identity.Generate(rand.Reader)
	other, _ := identity.Generate(rand.Reader)
	n := 0
	ign := func() { n++ }
	v4 := net.IPv4(192, 168, 1, 20)
	txt := []string{"npub=" + other.Npub(), "v=1", "scope=lab"}
	got := Accept(txt, 2121, v4, &net.IPAddr{IP: net.ParseIP("2001:db8::5")}, own.Npub(), "lab", ign)
	if len(got) != 2 || got[0].PublicKey != other.PublicKey() || got[0].Addr.String() != "192.168.1.20:2121" ||
		got[1].Addr.String() != "[2001:db8::5]:2121" || got[0].Scope != "lab" {
		t.Fatalf("accepted %+v", got)
	}
	for name, c := range map[string]struct {
		txt   []string
		port  int
		scope string
		v6    *net.IPAddr
		v4    net.IP
	}{
		"no npub":       {[]string{"v=1"}, 2121, "", nil, v4},
		"bad npub":      {[]string{"npub=npub1xyz"}, 2121, "", nil, v4},
		"own npub":      {[]string{"npub=" + own.Npub()}, 2121, "", nil, v4},
		"scope":         {txt, 2121, "other", nil, v4},
		"port":          {txt[:1], 0, "", nil, v4},
		"zoneless fe80": {txt[:1], 2121, "", &net.IPAddr{IP: net.ParseIP("fe80::1")}, nil},
	} {
		before := n
		if got := Accept(c.txt, c.port, c.v4, c.v6, own.Npub(), c.scope, ign); len(got) != 0 || n != before+1 {
			t.Errorf("%s: accepted %+v", name, got)
		}
	}
	// No scope of our own accepts every scope; a zoned link-local keeps its zone.
	got = Accept(txt, 2121, nil, &net.IPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}, own.Npub(), "", ign)
	if len(got) != 1 || got[0].Addr.Addr().Zone() != "eth0" {
		t.Errorf("zoned link-local: %+v", got)
	}
}

// TestHostCapPerQuery: one host answering a query with 64 fresh npubs
// hands over maxPerHost of them (the rest counted as host_capped), and a
// second host's answer in the same query is still taken.
func TestHostCapPerQuery(t *testing.T) {
	own, _ := identity.Generate(rand.Reader)
	l := &LAN{cfg: Config{Identity: own}}
	perHost := map[netip.Addr]int{}
	taken := 0
	for i := range 64 {
		id, _ := identity.Generate(rand.Reader)
		txt := []string{"npub=" + id.Npub(), "v=1"}
		for _, d := range Accept(txt, 2121+i, net.IPv4(192, 168, 1, 66), nil, own.Npub(), "", func() {}) {
			if l.hostRoom(perHost, d) {
				taken++
			}
		}
	}
	honest, _ := identity.Generate(rand.Reader)
	ds := Accept([]string{"npub=" + honest.Npub()}, 2121, net.IPv4(192, 168, 1, 20), nil, own.Npub(), "", func() {})
	if len(ds) != 1 || !l.hostRoom(perHost, ds[0]) {
		t.Fatal("the other host's answer was not taken")
	}
	if st := l.Stats(); taken != maxPerHost || st.HostCapped != 64-maxPerHost {
		t.Fatalf("took %d from the flooding host (host_capped %d), want %d (%d)", taken, st.HostCapped, maxPerHost, 64-maxPerHost)
	}
}

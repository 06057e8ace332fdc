package rendezvous

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/rendezvous/relaytest"
)

var (
	nsMaster = Namespace{Identifier: AdvertIdentifier, App: AdvertIdentifier}
	nsNext   = Namespace{Identifier: AdvertIdentifierNext, App: AdvertIdentifierNext}
)

// A master-only, a next-only and a dual node on one relay: each branch's
// node finds the dual node under its own namespace and never the other
// branch's node; the dual node finds both. The next node's advert is what
// upstream next publishes: d tag, protocol tag and body identifier all
// fips-overlay-v1-next.
func TestNamespacesSeparateBranches(t *testing.T) {
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	srv := startSTUN(t)
	start := func(nss ...Namespace) (*Service, *identity.Identity) {
		id := newID(t)
		cfg := testConfig(t, id, relay.URL, srv.addr())
		cfg.Namespaces = nss
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.Start(context.Background())
		t.Cleanup(s.Close)
		s.SetEndpoints([]Endpoint{{EndpointUDP, "nat"}})
		return s, id
	}
	master, idm := start(nsMaster)
	next, idn := start(nsNext)
	dual, idd := start(nsMaster, nsNext)

	waitFor(t, 5*time.Second, "each node caches what its namespaces hold", func() bool {
		_, m := master.CachedAdvert(idd.PublicKey())
		_, n := next.CachedAdvert(idd.PublicKey())
		_, dm := dual.CachedAdvert(idm.PublicKey())
		_, dn := dual.CachedAdvert(idn.PublicKey())
		return m && n && dm && dn
	})
	if _, ok := master.CachedAdvert(idn.PublicKey()); ok {
		t.Error("the master node cached the next node's advert")
	}
	if _, ok := next.CachedAdvert(idm.PublicKey()); ok {
		t.Error("the next node cached the master node's advert")
	}
	// A fetch by author stays in the node's namespaces too.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := master.FetchAdvert(ctx, idn.PublicKey()); !errors.Is(err, ErrMissingAdvert) {
		t.Errorf("master fetching the next node's advert: %v", err)
	}

	waitFor(t, 5*time.Second, "four adverts stored", func() bool { return len(relay.Stored(AdvertKind)) == 4 })
	perAuthor := map[string][]string{}
	for _, ev := range relay.Stored(AdvertKind) {
		d := ev.Tags.GetD()
		proto := ev.Tags.GetFirst([]string{"protocol", ""})
		if proto == nil || (*proto)[1] != d {
			t.Errorf("advert d=%q protocol %v", d, proto)
		}
		a, err := DecodeAdvertContent([]byte(ev.Content))
		if err != nil || a.Identifier != d {
			t.Errorf("advert d=%q body identifier %q (%v)", d, a.Identifier, err)
		}
		perAuthor[ev.PubKey] = append(perAuthor[ev.PubKey], d)
	}
	want := map[string]int{idm.PublicKey().Hex(): 1, idn.PublicKey().Hex(): 1, idd.PublicKey().Hex(): 2}
	for author, n := range want {
		if len(perAuthor[author]) != n {
			t.Errorf("author %s published %v", author[:8], perAuthor[author])
		}
	}
	if got := perAuthor[idn.PublicKey().Hex()]; len(got) != 1 || got[0] != AdvertIdentifierNext {
		t.Errorf("next node published under %v", got)
	}
}

// An advert is valid only in its own namespace: a body identifier of the
// other branch or a foreign protocol tag is refused.
func TestParseAdvertEventIn(t *testing.T) {
	k := keysOf(newID(t))
	build := func(body, app string) OverlayAdvert {
		a := OverlayAdvert{Identifier: body, Version: 1, Endpoints: []Endpoint{{EndpointTCP, "8.8.8.8:443"}}}
		ev, err := BuildAdvertEvent(k.PublicHex, a, app, 3600, 1_700_000_000_000)
		if err != nil {
			t.Fatal(err)
		}
		if err := ev.Sign(k.SecretHex); err != nil {
			t.Fatal(err)
		}
		got, err := ParseAdvertEventIn(&ev, nsNext)
		if err != nil {
			return OverlayAdvert{}
		}
		return got
	}
	if a := build(AdvertIdentifierNext, AdvertIdentifierNext); a.Identifier != AdvertIdentifierNext {
		t.Error("next's own advert refused")
	}
	if a := build(AdvertIdentifier, AdvertIdentifierNext); a.Identifier != "" {
		t.Error("a master body accepted in next's namespace")
	}
	if a := build(AdvertIdentifierNext, AdvertIdentifier); a.Identifier != "" {
		t.Error("master's app accepted in next's namespace")
	}
}

func TestNamespacesChecked(t *testing.T) {
	id := newID(t)
	for name, nss := range map[string][]Namespace{
		"empty identifier": {{App: "x"}},
		"empty app":        {{Identifier: "x"}},
		"twice":            {nsNext, nsNext},
	} {
		cfg := testConfig(t, id, "ws://127.0.0.1:1", "stun:127.0.0.1:1")
		cfg.Namespaces = nss
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

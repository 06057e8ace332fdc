package rendezvous

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestPubliclyUsable(t *testing.T) {
	for _, c := range []struct {
		e    Endpoint
		want bool
	}{
		{Endpoint{"udp", "nat"}, true},
		{Endpoint{"udp", "NAT"}, true},
		{Endpoint{"tcp", "nat"}, false},
		{Endpoint{"tor", "abc.onion:8443"}, true},
		{Endpoint{"udp", "8.8.8.8:2121"}, true},
		{Endpoint{"udp", "8.8.8.8:0"}, false},
		{Endpoint{"udp", "127.0.0.1:2121"}, false},
		{Endpoint{"udp", "10.1.2.3:2121"}, false},
		{Endpoint{"udp", "100.64.0.1:2121"}, false},
		{Endpoint{"udp", "192.0.2.1:2121"}, false},
		{Endpoint{"udp", "198.51.100.7:2121"}, false},
		{Endpoint{"udp", "203.0.113.45:2121"}, false},
		{Endpoint{"udp", "[fd00::1]:2121"}, false},
		{Endpoint{"udp", "[fe80::1]:2121"}, false},
		{Endpoint{"udp", "[2001:4860::1]:2121"}, true},
		{Endpoint{"tcp", "relay.example.org:443"}, true},
		{Endpoint{"tcp", "localhost:443"}, false},
		{Endpoint{"tcp", "example.org"}, false},
		{Endpoint{"udp", ""}, false},
		{Endpoint{"ble", "8.8.8.8:1"}, false},
	} {
		if got := PubliclyUsable(c.e); got != c.want {
			t.Errorf("PubliclyUsable(%v) = %v, want %v", c.e, got, c.want)
		}
	}
}

func TestValidateAdvert(t *testing.T) {
	ok := OverlayAdvert{Identifier: AdvertIdentifier, Version: 1,
		Endpoints:    []Endpoint{{"udp", "nat"}, {"udp", "10.0.0.1:2121"}, {"tcp", "8.8.4.4:443"}},
		SignalRelays: []string{"wss://r"}, StunServers: []string{"stun:s:3478"}}
	got, err := ValidateAdvert(ok)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Endpoints) != 2 || got.Endpoints[1].Addr != "8.8.4.4:443" {
		t.Errorf("private endpoint not filtered: %v", got.Endpoints)
	}
	direct := OverlayAdvert{Identifier: AdvertIdentifier, Version: 1, Endpoints: []Endpoint{{"udp", "8.8.8.8:1"}},
		SignalRelays: []string{"wss://r"}, StunServers: []string{"s"}}
	got, err = ValidateAdvert(direct)
	if err != nil || got.SignalRelays != nil || got.StunServers != nil {
		t.Errorf("non-NAT advert keeps signalRelays/stunServers: %+v %v", got, err)
	}
	for name, a := range map[string]OverlayAdvert{
		"identifier":  {Identifier: "x", Version: 1, Endpoints: ok.Endpoints},
		"version":     {Identifier: AdvertIdentifier, Version: 2, Endpoints: ok.Endpoints},
		"no endpoint": {Identifier: AdvertIdentifier, Version: 1},
		"all private": {Identifier: AdvertIdentifier, Version: 1, Endpoints: []Endpoint{{"udp", "10.0.0.1:1"}}},
		"nat relays":  {Identifier: AdvertIdentifier, Version: 1, Endpoints: []Endpoint{{"udp", "nat"}}, StunServers: []string{"s"}},
		"nat stun":    {Identifier: AdvertIdentifier, Version: 1, Endpoints: []Endpoint{{"udp", "nat"}}, SignalRelays: []string{"r"}},
	} {
		if _, err := ValidateAdvert(a); !errors.Is(err, ErrInvalidAdvert) {
			t.Errorf("%s: err = %v, want ErrInvalidAdvert", name, err)
		}
	}
	if _, err := DecodeAdvertContent([]byte(`{"identifier":"fips-overlay-v1","version":1,"endpoints":[{"transport":"quic","addr":"8.8.8.8:1"},{"transport":"udp","addr":"8.8.8.8:1"}]}`)); !errors.Is(err, ErrInvalidAdvert) {
		t.Errorf("unknown transport accepted: %v", err)
	}
}

func signedAdvert(t *testing.T, k Keys, a OverlayAdvert, app string, ttl, nowMs uint64) nostr.Event {
	t.Helper()
	ev, err := BuildAdvertEvent(k.PublicHex, a, app, ttl, nowMs)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Sign(k.SecretHex); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestAdvertEventShapeAndParse(t *testing.T) {
	k := keysOf(newID(t))
	a := OverlayAdvert{Identifier: AdvertIdentifier, Version: 1, Endpoints: []Endpoint{{"udp", "nat"}},
		SignalRelays: []string{"wss://relay.example"}, StunServers: []string{"stun:stun.example:3478"}}
	now := uint64(1_717_171_717_171)
	ev := signedAdvert(t, k, a, "fips-overlay-v1", 3600, now)
	if ev.Kind != 37195 || ev.Tags[0][0] != "d" || ev.Tags[0][1] != "fips-overlay-v1" || ev.Tags[1][0] != "protocol" ||
		ev.Tags[2][0] != "version" || ev.Tags[2][1] != "1" || ev.Tags[3][0] != "expiration" {
		t.Fatalf("tags = %v", ev.Tags)
	}
	if ev.Tags[3][1] != strconv.FormatUint((now+3600_000)/1000, 10) {
		t.Errorf("expiration = %s", ev.Tags[3][1])
	}
	if ok, err := ev.CheckSignature(); !ok || err != nil || !ev.CheckID() {
		t.Fatalf("go-nostr rejects our advert: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(ev.Content), &m); err != nil {
		t.Fatal(err)
	}
	if m["version"] != float64(1) || m["signalRelays"] == nil {
		t.Errorf("content = %s", ev.Content)
	}
	got, err := ParseAdvertEvent(&ev, "fips-overlay-v1")
	if err != nil || !got.HasNAT() {
		t.Fatalf("parse: %v %+v", err, got)
	}
	if _, err := ParseAdvertEvent(&ev, "other-app"); !errors.Is(err, ErrInvalidAdvert) {
		t.Errorf("app mismatch accepted: %v", err)
	}
	bad := ev
	bad.Content = ev.Content + " "
	if _, err := ParseAdvertEvent(&bad, "fips-overlay-v1"); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("tampered content accepted: %v", err)
	}
	bad = ev
	last := "0"
	if ev.Sig[len(ev.Sig)-1] == '0' {
		last = "1"
	}
	bad.Sig = ev.Sig[:len(ev.Sig)-1] + last
	if _, err := ParseAdvertEvent(&bad, "fips-overlay-v1"); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("bad signature accepted: %v", err)
	}
}

func TestValidUntil(t *testing.T) {
	k := keysOf(newID(t))
	a := OverlayAdvert{Identifier: AdvertIdentifier, Version: 1, Endpoints: []Endpoint{{"udp", "8.8.8.8:1"}}}
	now := uint64(1_800_000_000_000)
	ev := signedAdvert(t, k, a, AdvertIdentifier, 3600, now)
	until, ok := ValidUntilMs(&ev, 7200_000, now)
	if !ok || until != (now+3600_000)/1000*1000 {
		t.Errorf("valid until %d %v", until, ok)
	}
	// The created_at window caps a far-future expiration.
	ev2 := signedAdvert(t, k, a, AdvertIdentifier, 100_000, now)
	if until, _ := ValidUntilMs(&ev2, 7200_000, now); until != now/1000*1000+7200_000 {
		t.Errorf("grace window not applied: %d", until)
	}
	if _, ok := ValidUntilMs(&ev, 7200_000, now+3600_001); ok {
		t.Error("expired advert still valid")
	}
}

func TestAdvertCacheBoundsAndReplacement(t *testing.T) {
	c := NewAdvertCache(2)
	now := uint64(1000)
	ins := func(author string, created int64, until uint64) bool {
		return c.Insert(CachedAdvert{AuthorHex: author, CreatedAt: created, ValidUntilMs: until}, now)
	}
	if !ins("a", 10, 5000) || !ins("b", 10, 3000) {
		t.Fatal("insert failed")
	}
	if ins("a", 9, 9000) {
		t.Error("older advert replaced a newer one")
	}
	if !ins("a", 10, 6000) {
		t.Error("same created_at not accepted (upstream replaces on >=)")
	}
	if ins("x", 1, 1000) {
		t.Error("already-expired advert cached")
	}
	ins("c", 10, 4000) // over the cap: b (received before a was replaced) goes
	if _, ok := c.Get("b", now); ok || c.Len() != 2 || c.Evicted != 1 {
		t.Errorf("eviction: len %d evicted %d", c.Len(), c.Evicted)
	}
	if c.Rejected != 2 {
		t.Errorf("rejected = %d, want 2", c.Rejected)
	}
	c.Prune(4500)
	if _, ok := c.Get("c", 4500); ok || c.Len() != 1 {
		t.Errorf("expired entry kept: len %d", c.Len())
	}
}

func TestInboxAndSignalRelays(t *testing.T) {
	ev := &nostr.Event{Tags: nostr.Tags{{"r", "wss://a"}, {"relay", "wss://b"}, {"r", "wss://a"}, {"x", "wss://c"}}}
	if got := InboxRelays(ev); len(got) != 2 || got[0] != "wss://a" || got[1] != "wss://b" {
		t.Errorf("InboxRelays = %v", got)
	}
	got := SignalRelays([]string{"wss://A/", "wss://z"}, []string{"wss://b"}, []string{"wss://c", "wss://a"},
		[]string{"wss://a", "wss://b", "wss://c"})
	want := []string{"wss://a", "wss://b", "wss://c"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("SignalRelays = %v, want %v", got, want)
	}
	if got := SignalRelays([]string{"wss://z"}, nil, nil, []string{"wss://a"}); len(got) != 0 {
		t.Errorf("relay outside the pool used: %v", got)
	}
}

package rendezvous

import (
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/pion/stun/v3"
)

func FuzzDecodeAdvertContent(f *testing.F) {
	f.Add([]byte(`{"identifier":"fips-overlay-v1","version":1,"endpoints":[{"transport":"udp","addr":"nat"}],"signalRelays":["wss://r"],"stunServers":["s:1"]}`))
	f.Add([]byte(`{"identifier":"fips-overlay-v1","version":1,"endpoints":[{"transport":"tcp","addr":"[2001:db8::1]:443"}]}`))
	f.Add([]byte(`{"endpoints":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAdvertContent(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidAdvert) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		v, err := ValidateAdvert(a)
		if err != nil {
			if !errors.Is(err, ErrInvalidAdvert) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, e := range v.Endpoints {
			if !PubliclyUsable(e) {
				t.Fatalf("unusable endpoint kept: %v", e)
			}
		}
		if v.HasNAT() && (len(v.SignalRelays) == 0 || len(v.StunServers) == 0) {
			t.Fatal("nat advert without relays or STUN servers")
		}
	})
}

func FuzzDecodeSignal(f *testing.F) {
	o := testOffer(1_717_171_717_171, "npub1a", "npub1b")
	b, _ := json.Marshal(o)
	f.Add(b)
	f.Add([]byte(`{"type":"answer","localAddresses":[],"accepted":true,"punch":{"startAtMs":1,"intervalMs":2,"durationMs":3}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := DecodeOffer(b); err != nil && !errors.Is(err, ErrProtocol) {
			t.Fatalf("untyped offer error %v", err)
		}
		a, err := DecodeAnswer(b)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("untyped answer error %v", err)
			}
			return
		}
		o := testOffer(1_717_171_717_171, "npub1a", "npub1b")
		if err := ValidateAnswer(&o, &a, a.SenderNpub, 1_717_171_717_171, 120_000); err != nil && !errors.Is(err, ErrProtocol) {
			t.Fatalf("untyped validation error %v", err)
		}
	})
}

func FuzzUnwrapSignal(f *testing.F) {
	a, b := newID(f), newID(f)
	gw, err := WrapSignal(keysOf(a), b.PublicKey().Hex(), []byte(`{"type":"offer"}`), 120, 1_717_171_717_171)
	if err != nil {
		f.Fatal(err)
	}
	raw, _ := json.Marshal(gw)
	f.Add(raw)
	f.Add([]byte(`{"kind":21059,"content":"AAAA","tags":[["p","00"]]}`))
	k := keysOf(b)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev nostr.Event
		if json.Unmarshal(raw, &ev) != nil {
			return
		}
		if _, err := UnwrapSignal(k, &ev); err != nil && !errors.Is(err, ErrInvalidEvent) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzParseBindingResponse(f *testing.F) {
	req, _ := BindingRequest()
	ok, _ := stun.Build(stun.NewTransactionIDSetter(req.TransactionID), stun.BindingSuccess,
		stun.XORMappedAddress{IP: []byte{198, 51, 100, 7}, Port: 40001})
	f.Add(ok.Raw)
	f.Add(req.Raw)
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseBindingResponse(b, req.TransactionID); err != nil && !errors.Is(err, ErrSTUN) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzAdvertEvent(f *testing.F) {
	f.Add([]byte(`{"kind":37195,"tags":[["protocol","fips-overlay-v1"]],"content":"{}"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev nostr.Event
		if json.Unmarshal(raw, &ev) != nil {
			return
		}
		if _, err := ParseAdvertEvent(&ev, AdvertIdentifier); err != nil && !errors.Is(err, ErrInvalidEvent) && !errors.Is(err, ErrInvalidAdvert) {
			t.Fatalf("untyped error %v", err)
		}
		_, _ = ValidUntilMs(&ev, 7_200_000, 1_800_000_000_000)
		_ = InboxRelays(&ev)
	})
}

// Whatever a relay sends reaches go-nostr's envelope parser first; it must
// not take the node down.
func FuzzRelayMessage(f *testing.F) {
	f.Add([]byte(`["EVENT","fips:1",{"id":"00","pubkey":"00","created_at":1,"kind":1,"tags":[],"content":"","sig":"00"}]`))
	f.Add([]byte(`["EOSE","fips:1"]`))
	f.Add([]byte(`["OK","abc",false,"blocked"]`))
	f.Add([]byte(`["CLOSED","fips:1","error"]`))
	f.Add([]byte(`["NOTICE","hi"]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if env, ok := parseRelayMessage(b); ok {
			if e, isEv := env.(*nostr.EventEnvelope); isEv {
				_ = CheckEvent(&e.Event)
			}
		}
	})
}

// FuzzPlanTargets feeds a decoded answer's candidates (peer input) to the
// planner: at most MaxPunchTargets distinct targets, none unpunchable,
// every one of them among what the peer offered, and the tally adds up.
func FuzzPlanTargets(f *testing.F) {
	f.Add([]byte(`{"type":"answer","localAddresses":[{"protocol":"udp","ip":"192.168.1.20","port":1},{"protocol":"udp","ip":"::ffff:10.0.0.1","port":2}],"reflexiveAddress":{"protocol":"udp","ip":"198.51.100.1","port":3}}`), "192.168.1.10")
	f.Add([]byte(`{"type":"answer","localAddresses":[{"protocol":"udp","ip":"127.0.0.1","port":0}],"reflexiveAddress":null}`), "fd00::1")
	f.Fuzz(func(t *testing.T, b []byte, ours string) {
		a, err := DecodeAnswer(b)
		if err != nil {
			return
		}
		ourLocal := []TraversalAddress{{Protocol: "udp", IP: ours, Port: 4000}}
		got, tally := PlanTargets(ourLocal, &TraversalAddress{Protocol: "udp", IP: "203.0.113.9", Port: 4000}, a.LocalAddresses, a.ReflexiveAddress)
		if len(got) > MaxPunchTargets || tally.Admitted > MaxPunchTargets || len(got) > tally.Admitted {
			t.Fatalf("%d targets, tally %+v", len(got), tally)
		}
		offered := len(a.LocalAddresses)
		if a.ReflexiveAddress != nil {
			offered++
		}
		refused := tally.Unparsable + tally.ZeroPort + tally.Unroutable + tally.OffSubnet
		if tally.Reflexive != "" {
			refused++
		}
		if tally.Offered != offered || refused > offered {
			t.Fatalf("tally %+v for %d offered", tally, offered)
		}
		seen := map[string]bool{}
		for _, c := range append(slices.Clone(a.LocalAddresses), derefOr(a.ReflexiveAddress)...) {
			if ip, err := netip.ParseAddr(c.IP); err == nil {
				seen[netip.AddrPortFrom(ip.Unmap(), c.Port).String()] = true
			}
		}
		for i, ap := range got {
			if NeverPunchable(ap.Addr()) || ap.Port() == 0 || !seen[ap.String()] || slices.Contains(got[:i], ap) {
				t.Fatalf("target %v planned from %+v", ap, a)
			}
		}
	})
}

func derefOr(a *TraversalAddress) []TraversalAddress {
	if a == nil {
		return nil
	}
	return []TraversalAddress{*a}
}

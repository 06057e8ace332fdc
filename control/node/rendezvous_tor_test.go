package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/fallback/tcp"
	"github.com/fips-go/fips/fallback/tor"
)

// fakeTor is a Tor transport without Tor: a stream transport of type
// "tor" whose onion service is its loopback listener, and which resolves
// the peer's onion to that peer's listener.
type fakeTor struct {
	*tcp.Transport
	onion string
	peers map[string]*fakeTor // "onion:443" → its transport
}

func (f *fakeTor) OnionAddress() string   { return f.onion }
func (f *fakeTor) AdvertisedPort() uint16 { return 443 }

func (f *fakeTor) ResolveAddr(_ context.Context, s string) (transport.Addr, error) {
	p := f.peers[s]
	if p == nil {
		return transport.Addr{}, fmt.Errorf("%w: %s", transport.ErrInvalidAddress, s)
	}
	ap, err := netip.ParseAddrPort(p.LocalAddr())
	return transport.AddrFromIP(ap), err
}

func newFakeTor(t *testing.T, key byte) *fakeTor {
	o := tcp.Defaults()
	o.Kind, o.BindAddr = "tor", "127.0.0.1:0"
	tr, err := tcp.New(2, "", o, nil)
	if err != nil {
		t.Fatal(err)
	}
	var k [32]byte
	k[0] = key
	return &fakeTor{Transport: tr, onion: tor.OnionAddress(k), peers: map[string]*fakeTor{}}
}

// A node advertises its Tor transport's onion (with advertised_port) on
// Nostr; a node that knows it only by npub dials that tor endpoint
// through its own Tor transport, as upstream's adverts allow.
func TestRendezvousTorEndpoint(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	relayURL, stunSrv, ida, idb, stopLab := rdvLab(t)
	defer stopLab()
	ta, tb := newFakeTor(t, 1), newFakeTor(t, 2)
	tb.peers[ta.onion+":443"] = ta
	var logB lockedBuffer
	a := rdvTestNodeWith(t, relayURL, stunSrv, ida, RendezvousOptions{Policy: "configured_only",
		Advertised: []AdvertisedTransport{{Transport: 2, Kind: "tor", Public: true}}}, slog.New(slog.NewTextHandler(io.Discard, nil)), []transport.Transport{ta})
	b := rdvTestNodeWith(t, relayURL, stunSrv, idb, RendezvousOptions{Policy: "configured_only",
		Advertised: []AdvertisedTransport{{Transport: 2, Kind: "tor", Public: true}},
		Peers:      []NostrPeer{{PublicKey: ida.PublicKey(), AutoReconnect: true}}},
		slog.New(logging.New(&logB, logging.Options{Level: slog.LevelDebug})), []transport.Transport{tb})
	defer runRdvNodes(t, a, b)()
	for deadline := time.Now().Add(20 * time.Second); !rdvLinked(a, idb) || !rdvLinked(b, ida); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no link through the advertised tor endpoint:\n%s", logB.String())
		}
	}
	want := "dialling peer at its advertised endpoint peer=" + ida.Npub() + " transport=tor addr=" + ta.onion + ":443"
	if !strings.Contains(logB.String(), want) {
		t.Errorf("no line %q:\n%s", want, logB.String())
	}
	for _, p := range b.Snapshot().Peers {
		if p.Npub == ida.Npub() && p.TransportID != 2 {
			t.Errorf("linked over transport %d, want the tor one", p.TransportID)
		}
	}
}

package node

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/udp"
	"github.com/fips-go/fips/fallback/tcp"
)

// TestConnectRefusesUnreachableDestinations: `connect` to port 0, to the
// unspecified or a multicast address, or to an IPv6 address over an
// IPv4-only UDP transport is refused with an error instead of answering
// ok for a dial that can never reach anyone. Nothing is dialled: the
// refusals come before the event loop (which this node does not run).
func TestConnectRefusesUnreachableDestinations(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	uo := udp.Defaults()
	uo.BindAddr = "127.0.0.1:0"
	u, err := udp.New(1, "", uo, log)
	if err != nil {
		t.Fatal(err)
	}
	to := tcp.Defaults()
	tc, err := tcp.New(2, "", to, log)
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Options{Identity: id, Log: log, Transports: []transport.Transport{u, tc}})
	if err != nil {
		t.Fatal(err)
	}
	npub, _ := otherNpub(t)
	for _, c := range []struct{ transport, address, want string }{
		{"udp", "192.0.2.1:0", "invalid transport address: port 0 is not a destination"},
		{"tcp", "192.0.2.1:0", "invalid address 192.0.2.1:0: invalid transport address: port 0 is not a destination"},
		{"udp", "[2001:db8::1]:2121", "cannot resolve [2001:db8::1]:2121: udp: resolve \"[2001:db8::1]:2121\": invalid transport address: 2001:db8::1 is an IPv6 address but this transport's socket is IPv4 only"},
		{"udp", "0.0.0.0:2121", "invalid transport address: 0.0.0.0 is the unspecified address"},
		{"tcp", "[::]:2121", "invalid address [::]:2121: invalid transport address: :: is the unspecified address"},
		{"udp", "224.0.0.1:2121", "invalid transport address: 224.0.0.1 is a multicast address"},
	} {
		params, _ := json.Marshal(map[string]string{"npub": npub, "address": c.address, "transport": c.transport})
		v, err := n.apiConnect(context.Background(), params)
		if err == nil {
			t.Errorf("connect %s %s answered ok: %v", c.transport, c.address, v)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("connect %s %s: %q, want it to contain %q", c.transport, c.address, err, c.want)
		}
	}
}

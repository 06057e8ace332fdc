package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/udp"
)

// droppingUDP is a UDP transport whose kernel drop counter the test sets.
type droppingUDP struct {
	*udp.Transport
	drops uint64
}

func (d *droppingUDP) Stats() transport.Stats {
	s := d.Transport.Stats()
	s.KernelDrops = d.drops
	return s
}

// TestKernelDropsFirstObserved: upstream's "Kernel recv drops first
// observed on transport" is logged (WARN, transport_id) and counted once
// when a transport's kernel drop counter starts growing, not on every
// tick it keeps growing, and again once it grows after a quiet tick.
func TestKernelDropsFirstObserved(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(logging.New(&buf, logging.Options{}))
	uo := udp.Defaults()
	uo.BindAddr = "127.0.0.1:0"
	u, err := udp.New(3, "", uo, log)
	if err != nil {
		t.Fatal(err)
	}
	tr := &droppingUDP{Transport: u}
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Options{Identity: id, Log: log, Transports: []transport.Transport{tr}})
	if err != nil {
		t.Fatal(err)
	}
	const line = " WARN fips::node::dataplane::forwarding: Kernel recv drops first observed on transport transport_id=3\n"
	for i, step := range []struct {
		drops  uint64
		events uint64
	}{{0, 0}, {5, 1}, {9, 1}, {12, 1}, {12, 1}, {13, 2}} {
		tr.drops = step.drops
		n.sampleKernelDrops()
		if got := uint64(strings.Count(buf.String(), line)); n.dropEvents != step.events || got != step.events {
			t.Fatalf("tick %d (drops %d): %d events, %d lines; want %d\n%s", i, step.drops, n.dropEvents, got, step.events, buf.String())
		}
	}
}

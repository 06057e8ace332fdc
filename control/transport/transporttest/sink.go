// Package transporttest holds helpers for testing transports.
package transporttest

import (
	"testing"
	"time"

	"github.com/fips-go/fips/control/transport"
)

// Wait is how long Next waits for a packet before failing the test.
const Wait = 5 * time.Second

// Sink collects the packets a transport delivers. Accept, when set,
// decides what Deliver returns; every packet is collected either way.
type Sink struct {
	C      chan transport.Packet
	Accept func(transport.Packet) bool
}

// NewSink returns a Sink buffering up to capacity packets.
func NewSink(capacity int) *Sink { return &Sink{C: make(chan transport.Packet, capacity)} }

// Deliver is the transport's delivery function.
func (s *Sink) Deliver(p transport.Packet) bool {
	ok := true
	if s.Accept != nil {
		ok = s.Accept(p)
	}
	s.C <- p
	return ok
}

// Next returns the next delivered packet, failing t after Wait.
func (s *Sink) Next(t testing.TB) transport.Packet {
	t.Helper()
	select {
	case p := <-s.C:
		return p
	case <-time.After(Wait):
		t.Fatal("timed out waiting for a packet")
		return transport.Packet{}
	}
}

package peer

import (
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/transport"
)

// Connection is an outbound handshake in flight, for show_connections.
type Connection struct {
	LinkID     uint64
	Transport  transport.ID
	Addr       transport.Addr
	Direction  Direction
	Started    time.Time
	LastSent   time.Time
	Resends    int
	Expected   identity.PublicKey // zero on an anonymous dial
	Anonymous  bool               // a v1 dial naming no key (DialAnonymous)
	Rekey      bool
	OurIndex   uint32
	NextResend time.Time
}

// Connections calls f for each handshake in flight.
func (m *Manager) Connections(f func(Connection)) {
	for _, l := range m.legs {
		f(Connection{LinkID: l.linkID, Transport: l.t, Addr: l.addr, Direction: Outbound, Started: l.started,
			LastSent: l.lastSent, Resends: l.resends, Expected: l.expect, Rekey: l.rekeyOf != nil,
			OurIndex: l.ourIndex, NextResend: l.nextResend, Anonymous: l.anonymous})
	}
}

// ConnectionCount is the number of handshakes in flight.
func (m *Manager) ConnectionCount() int { return len(m.legs) }

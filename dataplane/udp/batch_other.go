//go:build !linux

package udp

import (
	"errors"
	"fmt"
	"net"

	"github.com/fips-go/fips/control/transport"
)

// Conn is the portable form: one datagram per system call, no GSO or GRO.
type Conn struct {
	c *net.UDPConn
}

// Open wraps c; batch bounds nothing here but is checked as on Linux.
func Open(c *net.UDPConn, batch int) (*Conn, error) {
	if batch < 1 || batch > 1024 {
		return nil, fmt.Errorf("udp: batch size %d out of range [1, 1024]", batch)
	}
	return &Conn{c: c}, nil
}

// GSO is false: every datagram is its own send.
func (c *Conn) GSO() bool { return false }

// SetGSORefused does nothing: there is no GSO here to refuse.
func (c *Conn) SetGSORefused(func(error)) {}

// GRO is false: every datagram is its own message.
func (c *Conn) GRO() bool { return false }

// ReadBatch reads one datagram into ms[0].
func (c *Conn) ReadBatch(ms []Message) (int, uint64, error) {
	if len(ms) == 0 {
		return 0, 0, nil
	}
	n, from, err := c.c.ReadFromUDPAddrPort(ms[0].Buf)
	if err != nil {
		return 0, 0, err
	}
	// net names a link-local source's zone by its interface; a Message
	// carries the index, as on Linux.
	ms[0].N, ms[0].Addr, ms[0].Segment, ms[0].Trunc = n, transport.AddrFromIP(from).IP, 0, false
	return 1, 0, nil
}

// WriteBatch sends each message on its own; the first error is returned
// after the rest went.
func (c *Conn) WriteBatch(ms []Message) (int, error) {
	sent := 0
	var first error
	for i := range ms {
		if _, err := c.c.WriteToUDPAddrPort(ms[i].Buf, transport.NetAddrPort(ms[i].Addr)); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		sent++
	}
	return sent, first
}

// IsClosed reports whether err means the socket was closed.
func IsClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

// Writer sends on a Conn from one goroutine; here every write is its own
// system call, so it is the Conn itself.
type Writer struct{ c *Conn }

func (c *Conn) defaultWriter() *Writer { return &Writer{c: c} }

// NewWriter makes a Writer; batch is ignored.
func (c *Conn) NewWriter(int) *Writer { return &Writer{c: c} }

// GSO is false.
func (w *Writer) GSO() bool { return false }

// WriteBatch is Conn.WriteBatch.
func (w *Writer) WriteBatch(ms []Message) (int, error) { return w.c.WriteBatch(ms) }

//go:build !linux

package udp

import (
	"fmt"
	"net"

	plain "github.com/fips-go/fips/fallback/udp"
)

// Conn is the portable form: fallback/udp's plain socket, one datagram
// per system call, no GSO or GRO.
type Conn struct {
	io *plain.Conn
}

// Open wraps c; batch bounds nothing here but is checked as on Linux.
func Open(c *net.UDPConn, batch int) (*Conn, error) {
	if batch < 1 || batch > 1024 {
		return nil, fmt.Errorf("udp: batch size %d out of range [1, 1024]", batch)
	}
	return &Conn{io: plain.Open(c)}, nil
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
	n, from, err := c.io.Read(ms[0].Buf)
	if err != nil {
		return 0, 0, err
	}
	ms[0].N, ms[0].Addr, ms[0].Segment, ms[0].Trunc = n, from, 0, false
	return 1, 0, nil
}

// WriteBatch sends each message on its own; the first error is returned
// after the rest went.
func (c *Conn) WriteBatch(ms []Message) (int, error) {
	sent := 0
	var first error
	for i := range ms {
		if err := c.io.Write(ms[i].Buf, ms[i].Addr); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		sent++
	}
	return sent, first
}

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

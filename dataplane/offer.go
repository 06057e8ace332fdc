package dataplane

import "github.com/fips-go/fips/control/transport"

// Offered is what Offer did with a datagram.
type Offered uint8

// What Offer did.
const (
	// Taken: the worker consumed it.
	Taken Offered = iota
	// Delivered: a pooled copy went to the node.
	Delivered
	// Refused: the node refused the copy (its queue was full or it has
	// stopped); the buffer is released.
	Refused
	// TooLarge: it does not fit the pool's buffers; nothing was delivered.
	TooLarge
)

// Offer is the step every reader takes for each datagram it receives:
// its worker (nil: none) runs it to completion, or a copy in a buffer of
// bufs is delivered with p's metadata. p.Data is the reader's own buffer,
// valid only during the call; p.Buf is ignored.
func Offer(w transport.DataWorker, bufs *transport.BufferPool, deliver transport.Deliver, p transport.Packet) Offered {
	if w != nil && w.Receive(p.Transport, p.From, p.Data, p.Arrived, p.CE) {
		return Taken
	}
	buf, data, ok := bufs.Copy(p.Data)
	if !ok {
		return TooLarge
	}
	p.Data, p.Buf = data, buf
	if !deliver(p) {
		buf.Release()
		return Refused
	}
	return Delivered
}

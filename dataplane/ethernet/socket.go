package ethernet

import (
	"errors"

	"github.com/fips-go/fips/control/transport"
)

// errLinkDown wraps the read error a packet socket reports when its
// interface goes down or away (ENETDOWN).
var errLinkDown = errors.New("ethernet: interface down")

// frame is one frame received or to send, its Ethernet header left to the
// kernel (a SOCK_DGRAM packet socket): Buf starts with the FIPS frame
// type.
type frame struct {
	Buf []byte // receive: the buffer to fill (its length is the limit); send: the frame
	N   int    // receive: bytes received
	MAC transport.MAC
	// Trunc: the frame was longer than Buf. Outgoing: the kernel looped
	// back one this host sent (not FIPS traffic for us).
	Trunc, Outgoing bool
}

// link is what the transport needs of an interface: its packet socket
// (batched reads for one goroutine, writers for the others), its MAC and
// MTU. packetSocket on Linux, nothing elsewhere.
type link interface {
	readBatch(fs []frame) (int, error)
	newWriter(batch int) frameWriter
	hwAddr() transport.MAC
	ifMTU() int
	// index is the interface's index (a recreated interface has a new
	// one) and up whether it was up, both when the link was opened.
	index() int
	up() bool
	// drops reads, and resets, how many frames the kernel dropped for a
	// full receive buffer since the last call.
	drops() (uint64, error)
	close() error
}

// frameWriter is one goroutine's batched send state on a link.
type frameWriter interface {
	writeBatch(fs []frame) (sent int, err error)
}

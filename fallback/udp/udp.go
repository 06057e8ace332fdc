// Package udp is portable plain-socket UDP I/O: one datagram per read and
// per write on a net.UDPConn, with no GSO or GRO. The UDP transport
// (dataplane/udp) runs on it where there is no batched I/O — everywhere
// but Linux — behind the same Conn API its recvmmsg/sendmmsg I/O has.
//
// Addresses take control/transport's form: a link-local IPv6 address
// carries its interface as its zone, the decimal index, received and
// sent alike.
package udp

import (
	"net"
	"net/netip"

	"github.com/fips-go/fips/control/transport"
)

// Conn is one UDP socket, read and written one datagram per system call.
type Conn struct {
	c *net.UDPConn
}

// Open wraps c.
func Open(c *net.UDPConn) *Conn { return &Conn{c: c} }

// Read reads one datagram into b and returns its length and source.
func (c *Conn) Read(b []byte) (n int, from netip.AddrPort, err error) {
	n, from, err = c.c.ReadFromUDPAddrPort(b)
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	// net names a link-local source's zone by its interface; the
	// batched I/O names it by its index, and so does this.
	return n, transport.AddrFromIP(from).IP, nil
}

// Write sends b to to as one datagram.
func (c *Conn) Write(b []byte, to netip.AddrPort) error {
	_, err := c.c.WriteToUDPAddrPort(b, transport.NetAddrPort(to))
	return err
}

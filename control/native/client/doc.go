// Package client is a Go client of the FIPS native datagram API
// (node.native_api), for programs that send and receive datagrams
// addressed by public key and port, with no TUN device.
//
// It speaks upstream's local protocol, so it works against a fips-go or
// an upstream node. An address is an npub and a port, written
// "npub1...:4242" (ParseAddr, Addr.String); ports below 1024 are
// refused by the node. Usage:
//
//	// A server: hold port 4242 and serve each peer's flow.
//	l, err := client.Listen(client.DefaultSocket(), 4242)
//	...
//	for {
//		c, err := l.Accept() // c.RemoteAddr() is the peer's npub:port
//		...
//		n, err := c.Recv(buf) // one datagram
//		err = c.Send(buf[:n]) // one datagram back to the same peer
//	}
//
//	// A client: open a flow to a peer's port from an ephemeral one.
//	peer, err := client.ParseAddr("npub1...:4242")
//	c, err := client.Dial(client.DefaultSocket(), 0, peer)
//	err = c.Send([]byte("hello"))
//
// A Conn is one flow, a descriptor the node created: Send writes one
// datagram whole (EMSGSIZE above MaxPayload), Recv reads one (a zero
// length is an empty datagram; io.EOF means the node went away, never
// that the peer finished). Close releases the flow and its port. Nothing
// confirms delivery: datagrams a full queue, a slow reader or a missing
// session drop are lost silently (see docs/native-api.md).
//
// Refusals carry the errno the node named, matched with errors.Is:
// syscall.EADDRINUSE (port or flow held), syscall.EADDRNOTAVAIL (a
// reserved port, or no ephemeral port free), syscall.EMFILE (the node's
// or this client's flow ceiling), syscall.EINVAL (a malformed address or
// command), syscall.ECONNREFUSED (anything else, or a node shutting
// down), syscall.ETIMEDOUT (no reply within five seconds).
//
// The package is built on Linux, macOS and FreeBSD only: the API passes
// descriptors with SCM_RIGHTS, which Windows lacks.
package client
